// DecodeAhead: decodes the stored workloads for Engine::FinishRestore on a thread of its own, a
// few batches ahead of the engine, so that decoding and the engine's indexing share two cores at
// start-up; when the engine finds no batch ready it decodes the next one itself rather than
// wait. At most `batches_ahead` batches of `batch` decoded workloads are in flight at any time,
// and the messages the engine is done with are decoded into again.
//
//   DecodeAhead decoder;
//   ADMITD_RETURN_IF_ERROR(engine.FinishRestore(revision, &decoder));
//
// Thread safety: the WorkloadDecoder calls come from one thread (the engine's). The destructor
// stops the decoding thread and waits for it, so a FinishRestore that failed half-way leaves
// nothing running.
#ifndef ADMITD_SERVER_DECODE_AHEAD_H_
#define ADMITD_SERVER_DECODE_AHEAD_H_

#include <cstddef>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/engine/workload_decoder.h"

namespace admitd {

class DecodeAhead final : public engine::WorkloadDecoder {
 public:
  explicit DecodeAhead(size_t batch = 256, size_t batches_ahead = 4);
  ~DecodeAhead() override;
  DecodeAhead(const DecodeAhead&) = delete;
  DecodeAhead& operator=(const DecodeAhead&) = delete;

  // Starts the decoding thread (none for an empty list).
  void Start(std::vector<absl::string_view> encodings) override;
  // Takes the next batch when the one at hand is used up: decoded by the thread, or here when
  // none is ready and one is left to claim. A call past the end of Start's list gets a
  // DecodedWorkload without a workload.
  engine::DecodedWorkload Next() override;
  void Recycle(std::shared_ptr<v1::Workload> spare) override;

 private:
  using Batch = std::vector<engine::DecodedWorkload>;
  void Run();
  // Decodes batch number `batch` (into `spares` while they last).
  Batch Decode(size_t batch, std::vector<std::shared_ptr<v1::Workload>>* spares) const;
  std::vector<std::shared_ptr<v1::Workload>> TakeSpares() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t batch_;
  const size_t batches_ahead_;
  std::vector<absl::string_view> encodings_;  // set by Start before the thread starts
  size_t batches_ = 0;                        // how many batches encodings_ makes

  absl::Mutex mu_;
  // Batches are claimed in order, by the thread or the engine's side, at most batches_ahead_
  // past the one the engine takes next, and wait in ready_ by number until it takes them.
  size_t claimed_ ABSL_GUARDED_BY(mu_) = 0;
  size_t taken_batches_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<size_t, Batch> ready_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<v1::Workload>> spares_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;

  // The engine's side: the batch it takes from, and the messages it recycled since it took it.
  Batch current_;
  size_t at_ = 0;
  size_t taken_ = 0;
  std::vector<std::shared_ptr<v1::Workload>> recycled_;

  std::thread thread_;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_DECODE_AHEAD_H_
