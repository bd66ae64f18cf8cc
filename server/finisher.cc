#include "server/finisher.h"

#include <pthread.h>

namespace admitd {

Finisher::Finisher() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "admitd-finish");
    Run();
  });
}

Finisher::~Finisher() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void Finisher::Post(grpc::ServerUnaryReactor* reactor, grpc::Status status) {
  absl::MutexLock lock(&mu_);
  pending_.emplace_back(reactor, std::move(status));
}

void Finisher::Run() {
  std::vector<std::pair<grpc::ServerUnaryReactor*, grpc::Status>> batch;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Finisher* f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu_) {
            return f->stopping_ || !f->pending_.empty();
          },
          this));
      if (pending_.empty() && stopping_) return;
      batch.swap(pending_);
    }
    for (auto& [reactor, status] : batch) reactor->Finish(status);
    batch.clear();
  }
}

}  // namespace admitd
