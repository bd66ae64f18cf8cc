// Pieces shared by admitd-bench's modes: async unary calls (retried when admitd refuses them
// unrun and advises a delay), a Watch follower that reconnects, a timer thread, and latency
// summaries.
#ifndef ADMITD_INTEGRATION_BENCH_BENCH_COMMON_H_
#define ADMITD_INTEGRATION_BENCH_BENCH_COMMON_H_

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admitd/v1/admission_service.grpc.pb.h"
#include "admitd/v1/queue_service.grpc.pb.h"
#include "clients/client.h"
#include "integration/fixtures.h"

namespace admitd::bench {

// Starts one unary call through the callback API; `done` runs on a gRPC thread. `start` is
// called with (context, request, response, callback).
// Every call has a deadline, so that a run that gives up can wait for all of its calls to end
// before the state their callbacks touch goes away.
// With `refused`, a call admitd refused without running it (overloaded: RESOURCE_EXHAUSTED with a
// RetryInfo) is sent again after the advised delay and up to half as long again, as long as that
// is before the deadline, and counted there; `done` sees only the last attempt.
template <typename Req, typename Resp, typename Start>
void AsyncCall(Req req, absl::Time deadline, Start start,
               std::function<void(const grpc::Status&, const Resp&)> done,
               std::atomic<int64_t>* refused = nullptr) {
  struct Call {
    grpc::ClientContext ctx;
    Req req;
    Resp resp;
  };
  auto* call = new Call;
  call->ctx.set_deadline(absl::ToChronoTime(deadline));
  call->req = std::move(req);
  start(&call->ctx, &call->req, &call->resp,
        [call, deadline, start, done = std::move(done), refused](grpc::Status status) mutable {
          std::optional<absl::Duration> delay;
          if (refused != nullptr && clients::RefusedWithRetry(status)) {
            delay = clients::WithJitter(*clients::RetryDelayOf(status));
          }
          if (!delay || absl::Now() + *delay >= deadline) {
            done(status, call->resp);
            delete call;
            return;
          }
          refused->fetch_add(1, std::memory_order_relaxed);
          auto* alarm = new grpc::Alarm;
          alarm->Set(absl::ToChronoTime(absl::Now() + *delay),
                     [alarm, req = std::move(call->req), deadline, start = std::move(start),
                      done = std::move(done), refused](bool) mutable {
                       AsyncCall<Req, Resp, Start>(std::move(req), deadline, std::move(start),
                                                   std::move(done), refused);
                       delete alarm;
                     });
          delete call;
        });
}

// Counts calls in flight so the end of a run can wait for them.
class InFlight {
 public:
  void Add() {
    absl::MutexLock lock(&mu_);
    ++n_;
  }
  void Done() {
    absl::MutexLock lock(&mu_);
    --n_;
  }
  bool WaitZero(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(+[](int* n) { return *n == 0; }, &n_), timeout);
  }

 private:
  absl::Mutex mu_;
  int n_ = 0;
};

// Follows AdmissionService.Watch for workload events from a revision on, reconnecting from the
// last revision seen when the server cuts it off (a watcher that falls too far behind is
// dropped with RESOURCE_EXHAUSTED).
class Watcher {
 public:
  using Handler = std::function<void(const v1::WatchEvent&, absl::Time received)>;
  Watcher(std::shared_ptr<grpc::Channel> channel, std::string ns, Handler handler);
  ~Watcher();
  // Reads the current revision with a List, starts following from there and waits for SYNCED.
  bool Start(absl::Duration timeout);
  void Stop();
  int reconnects() const { return reconnects_.load(); }
  std::string error() const;

 private:
  void Run();

  std::unique_ptr<v1::AdmissionService::Stub> stub_;
  const std::string ns_;
  const Handler handler_;
  std::thread thread_;
  mutable absl::Mutex mu_;
  grpc::ClientContext* ctx_ = nullptr;
  bool stopping_ = false;
  bool synced_ = false;
  std::string error_;
  uint64_t revision_ = 0;
  std::atomic<int> reconnects_{0};
};

// Runs callbacks at given times on one thread.
class Timer {
 public:
  Timer();
  ~Timer();
  void At(absl::Time when, std::function<void()> fn);
  void Stop();

 private:
  struct Item {
    absl::Time when;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Item& o) const {
      return when != o.when ? when > o.when : seq > o.seq;
    }
  };
  void Run();
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> items_;
  uint64_t seq_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

struct Summary {
  size_t count = 0;
  double mean = 0, p50 = 0, p99 = 0, max = 0;
};
Summary Summarize(std::vector<double> values);

// VmHWM of a process in KiB, or -1.
using testing::PeakRssKib;
// User + system CPU seconds a process used so far, or -1.
double CpuSeconds(int pid);
// User + system CPU seconds this process used so far.
double OwnCpuSeconds();

// What a process's threads used so far, summed by thread name (threads of one pool share a
// name): CPU seconds and context switches, voluntary (the thread blocked: a wait, a hand-off)
// and involuntary (it was preempted).
struct ThreadUse {
  double cpu_s = 0;
  int64_t voluntary = 0, involuntary = 0;
  int64_t switches() const { return voluntary + involuntary; }
};
using ThreadUses = std::map<std::string, ThreadUse>;
ThreadUses ThreadUseByName(int pid);
// `to` minus `from`, name by name (a thread pool that appeared in between counts from zero).
ThreadUses Difference(const ThreadUses& from, const ThreadUses& to);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_BENCH_COMMON_H_
