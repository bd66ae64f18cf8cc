// EngineDriver: runs the API's calls against an in-process Engine the way the
// server does, minus gRPC and RocksDB: each request is checked as its service
// checks it (server/request_checks.h), then applied to the engine; after each
// call the scheduling cycles run as the sequencer runs them, and every Change
// becomes a watch event offered to the Watch filters opened so far. Every
// answer and event is serialized and parsed back, as a client would receive it,
// and a message that does not survive that (invalid UTF-8 in a string field)
// aborts.
//
// Used by the fuzz targets (requests_fuzz, pods_fuzz) and by make_seeds, which
// writes their seeds.
//
//   EngineDriver driver;                          // flavor, ClusterQueue,
//   LocalQueue ns/lq driver.Call(Rpc::kSubmit, serialized_submit_request);
//
// Thread safety: none; one thread owns a driver.
#ifndef ADMITD_FUZZ_ENGINE_DRIVER_H_
#define ADMITD_FUZZ_ENGINE_DRIVER_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "server/engine/engine.h"
#include "server/watch_filter.h"

namespace admitd::fuzz {

// Every RPC that reaches the engine, in selector order (a record's selector
// modulo kCount).
enum class Rpc : uint8_t {
  kSubmit,
  kAdmit,
  kReleaseQuota,
  kGetWorkload,
  kListWorkloads,
  kDeleteWorkload,
  kWatch,
  kSetActive,
  kSetAdmissionCheckState,
  kResize,
  kApply,
  kGetObject,
  kListObjects,
  kDeleteObject,
  kRunSchedulingCycles,
  kImport,
  kReportPods,
  kListDirectives,
  kCount,
};

class EngineDriver {
 public:
  // A fresh engine with ResourceFlavor "default", ClusterQueue "cq" (cpu 4,
  // memory 8Gi, every namespace) and LocalQueue ns/lq, so that workloads have
  // somewhere to go.
  explicit EngineDriver(engine::EngineOptions options = {});

  // Parses `payload` as the request of `rpc` (a payload that does not parse is
  // what gRPC would refuse, and is skipped), checks it, calls the engine and
  // runs the scheduling cycles.
  void Call(Rpc rpc, absl::string_view payload);

  engine::Engine& engine() { return engine_; }

 private:
  // The sequencer's work after a batch: due timed work, cycles until nothing
  // moves (bounded as the sequencer bounds them), then the Changes and
  // directive updates as watch events.
  void Settle();
  void Publish(const v1::WatchEvent& event);

  engine::Engine engine_;
  absl::Time now_;
  int64_t clock_offset_ns_ = 0;  // RunSchedulingCycles' advance, as the sequencer keeps it
  std::vector<WatchFilter> watches_;
};

// Serializes `message` and parses it back into a new message of its type;
// aborts when that fails (what a gRPC client would fail to read).
void CheckWireRoundTrip(const google::protobuf::Message& message);

}  // namespace admitd::fuzz

#endif  // ADMITD_FUZZ_ENGINE_DRIVER_H_
