// Finisher: finishes unary RPCs off the sequencer thread.
//
// Finishing an RPC writes its response to the socket (a system call per call). Done on the
// sequencer thread, those writes would sit between one batch's fsync and the next; handed to the
// Finisher's thread, they overlap with the next batch. Posts that arrive while the thread is busy
// are taken together, so a batch of answers costs one wake-up.
//
// Thread safety: Post may be called from any thread.
#ifndef ADMITD_SERVER_FINISHER_H_
#define ADMITD_SERVER_FINISHER_H_

#include <grpcpp/grpcpp.h>

#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace admitd {

class Finisher {
 public:
  Finisher();
  ~Finisher();  // finishes everything posted, then joins
  Finisher(const Finisher&) = delete;
  Finisher& operator=(const Finisher&) = delete;

  // Calls reactor->Finish(status) soon, on the Finisher's thread.
  void Post(grpc::ServerUnaryReactor* reactor, grpc::Status status);

 private:
  void Run();

  absl::Mutex mu_;
  std::vector<std::pair<grpc::ServerUnaryReactor*, grpc::Status>> pending_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_FINISHER_H_
