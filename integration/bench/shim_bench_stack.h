// shim_bench's processes: the test Kubernetes API server (integration/kube/apiserver.py, with the
// custom resource definitions and simulated controllers the kinds of the run need), admitd and
// admitd-shim (`--integrations` those kinds, no webhook), started on 127.0.0.1 with their output
// in a temporary directory, then watched, measured (CPU time, memory) and stopped.
//
//   ShimBenchStack stack(options);
//   if (!stack.Start(deadline, &error)) ...;
//   CpuSample before = stack.Cpu();  ...  stack.Stop();
//
// Thread safety: Abandon may be called from another thread (the watchdog) at any time; the rest
// from one thread.
#ifndef ADMITD_INTEGRATION_BENCH_SHIM_BENCH_STACK_H_
#define ADMITD_INTEGRATION_BENCH_SHIM_BENCH_STACK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "integration/bench/bench_process.h"
#include "integration/bench/shim_bench_kinds.h"
#include "integration/bench/shim_bench_report.h"

namespace admitd::bench {

struct StackOptions {
  std::string admitd, shim, python;  // the binaries, and the API server's interpreter
  std::vector<const BenchKind*> kinds;
  // Extra arguments (a `--controllers` among those of the API server is merged with the kinds').
  std::vector<std::string> apiserver_args, shim_args;
  std::string lease_namespace;   // the shim's Lease's
  std::string object_namespace;  // where the objects and their pods are
  int history_size = 10000;      // the API server's watch history
  bool keep_logs = false;        // keep the temporary directory (its path is printed)
};

// The test API server's arguments for `kinds`: `--crd` the custom resources' definitions, and
// `--controllers` the simulated controllers theirs need merged with those of `extra`, whose
// other arguments follow.
std::vector<std::string> ApiServerKindArgs(const std::vector<const BenchKind*>& kinds,
                                           const std::vector<std::string>& extra);

class ShimBenchStack {
 public:
  explicit ShimBenchStack(StackOptions options) : options_(std::move(options)) {}
  ~ShimBenchStack() { Stop(); }

  // Starts the API server, admitd and the shim, each waited for (the shim until it leads) until
  // `deadline`; false with what went wrong in `*error`.
  bool Start(absl::Time deadline, std::string* error);
  // Whether all three were started.
  bool started() const { return apiserver_ && admitd_ && shim_; }
  // false with which one exited and the end of its log in `*dead`.
  bool Alive(std::string* dead);
  // CPU seconds of the three and of this process.
  CpuSample Cpu() const;
  double ShimCpu() const;
  // Current (VmRSS) and peak (VmHWM) resident memory of the shim, API server and admitd, in KiB.
  void Rss(int64_t out[3]) const;
  void PeakRss(int64_t out[3]) const;
  // The last `n` bytes of the shim's log.
  std::string ShimLogTail(size_t n) const;

  const std::string& admitd_address() const { return admitd_address_; }
  const std::string& shim_metrics_url() const { return shim_metrics_url_; }
  std::string kubeconfig() const { return tmp_ + "/kubeconfig"; }

  // SIGTERM the shim, admitd and the API server in turn (SIGKILL after 10 s), and remove the
  // temporary directory (unless kept).
  void Stop();
  // The watchdog's: SIGKILL all three and remove the temporary directory (unless kept).
  void Abandon();

 private:
  const StackOptions options_;
  mutable absl::Mutex mu_;
  std::string tmp_;
  std::unique_ptr<Child> apiserver_, admitd_, shim_;
  std::string admitd_address_;
  std::string shim_metrics_url_;
};

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_SHIM_BENCH_STACK_H_
