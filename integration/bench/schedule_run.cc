#include "integration/bench/schedule_run.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "integration/fixtures.h"

namespace admitd::bench {
namespace {

class ScheduleRun {
 public:
  ScheduleRun(const std::string& address, const Plan& plan, double scale)
      : client_(address), plan_(plan), scale_(scale), ledger_(plan) {}

  RunReport Run(absl::Duration timeout) {
    RunReport report;
    report.workloads = static_cast<int>(plan_.workloads.size());
    report.scale = scale_;
    report.work_bound_ms = plan_.work_bound_ms / scale_;
    report.arrival_bound_ms = plan_.arrival_bound_ms / scale_;

    const absl::Time setup_start = absl::Now();
    if (!Setup()) {
      report.violation_count = static_cast<int64_t>(ledger_.violations().size());
      report.violations = ledger_.violations();
      return report;
    }
    report.setup_ms = absl::ToDoubleMilliseconds(absl::Now() - setup_start);

    Watcher watcher(client_.channel, "",
                    [this](const v1::WatchEvent& ev, absl::Time at) { OnEvent(ev, at); });
    if (!watcher.Start(absl::Seconds(30))) {
      ledger_.Violation(absl::StrCat("watch did not start: ", watcher.error()));
      report.violation_count = 1;
      report.violations = ledger_.violations();
      return report;
    }

    {
      Timer timer;
      timer_ = &timer;
      start_ = absl::Now();
      call_deadline_ = start_ + timeout + absl::Seconds(10);
      for (size_t i = 0; i < plan_.workloads.size(); ++i) {
        const absl::Time at =
            start_ + absl::Milliseconds(static_cast<double>(plan_.workloads[i].arrival_ms) / scale_);
        timer.At(at, [this, i] { Submit(static_cast<int>(i)); });
      }
      {
        absl::MutexLock lock(&mu_);
        mu_.AwaitWithDeadline(absl::Condition(
                                  +[](ScheduleRun* r) {
                                    return r->ledger_.finished() == r->plan_.workloads.size();
                                  },
                                  this),
                              start_ + timeout);
      }
      timer.Stop();
      // Every call ends by call_deadline_; callbacks touch this object, so wait for all of them.
      while (!in_flight_.WaitZero(absl::Seconds(60))) {
        std::fprintf(stderr, "admitd-bench: still waiting for calls in flight\n");
      }
      // Let the last events of in-flight calls arrive before the watch stops.
      absl::SleepFor(absl::Milliseconds(50));
      watcher.Stop();
      absl::MutexLock lock(&mu_);
      timer_ = nullptr;
      ledger_.CheckQuota();
    }

    absl::MutexLock lock(&mu_);
    const size_t finished = ledger_.finished();
    report.wall_ms = absl::ToDoubleMilliseconds(ledger_.last_finish() - start_);
    if (finished < plan_.workloads.size()) {
      report.wall_ms = absl::ToDoubleMilliseconds(absl::Now() - start_);
      ledger_.Violation(absl::StrCat("only ", finished, " of ", plan_.workloads.size(),
                                     " workloads finished within ", absl::FormatDuration(timeout)));
    }
    report.watch_reconnects = watcher.reconnects();
    report.events = events_;
    report.rpc_errors = rpc_errors_;
    report.refused_retried = refused_.load();
    if (!watcher.error().empty()) ledger_.Violation(watcher.error());
    // Lifecycle invariants over the whole run, the classes and the violations.
    ledger_.Report(&report);
    report.submit_rpc_ms = Summarize(std::move(submit_ms_));
    report.release_rpc_ms = Summarize(std::move(release_ms_));
    return report;
  }

 private:
  // Sends `requests` all at once (admitd batches them, as it batches Submits) and waits for
  // every answer; false when one failed.
  bool ApplyAll(const std::vector<std::pair<std::string, v1::ApplyRequest>>& requests) {
    InFlight applies;
    std::atomic<bool> failed{false};
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    for (const auto& [what, request] : requests) {
      applies.Add();
      AsyncCall<v1::ApplyRequest, v1::ApplyResponse>(
          request, deadline,
          [this](grpc::ClientContext* c, const v1::ApplyRequest* q, v1::ApplyResponse* r,
                 std::function<void(grpc::Status)> cb) {
            client_.queues->async()->Apply(c, q, r, std::move(cb));
          },
          [this, what = what, &applies, &failed](const grpc::Status& status,
                                                 const v1::ApplyResponse&) {
            if (!status.ok()) {
              failed.store(true);
              absl::MutexLock lock(&mu_);
              ledger_.Violation(absl::StrCat("Apply ", what, ": ", status.error_message()));
            }
            applies.Done();
          },
          &refused_);
    }
    // Every call has the deadline, so every callback runs before `applies` goes away.
    applies.WaitZero(absl::InfiniteDuration());
    return !failed.load();
  }

  // The queue objects, in three rounds of concurrent Applies: the flavor and the cohorts, then
  // the ClusterQueues that name them, then the LocalQueues that name those.
  bool Setup() {
    std::vector<std::pair<std::string, v1::ApplyRequest>> rounds[3];
    for (auto& request : SetupRequests(plan_)) {
      const v1::QueueObject& object = request.second.object();
      const int round = object.has_cluster_queue() ? 1 : object.has_local_queue() ? 2 : 0;
      rounds[round].push_back(std::move(request));
    }
    for (const auto& round : rounds) {
      if (!ApplyAll(round)) return false;
    }
    return true;
  }

  void Submit(int i) {
    v1::SubmitRequest req = SubmitRequestFor(plan_, i);
    const absl::Time sent = absl::Now();
    {
      absl::MutexLock lock(&mu_);
      ledger_.Submitted(i, sent);
    }
    in_flight_.Add();
    AsyncCall<v1::SubmitRequest, v1::SubmitResponse>(
        std::move(req), call_deadline_,
        [this](grpc::ClientContext* c, const v1::SubmitRequest* q, v1::SubmitResponse* r,
               std::function<void(grpc::Status)> cb) {
          client_.admission->async()->Submit(c, q, r, std::move(cb));
        },
        [this, i, sent](const grpc::Status& status, const v1::SubmitResponse&) {
          const double ms = absl::ToDoubleMilliseconds(absl::Now() - sent);
          {
            absl::MutexLock lock(&mu_);
            submit_ms_.push_back(ms);
            if (!status.ok()) {
              ++rpc_errors_;
              ledger_.Violation(absl::StrCat("Submit ", plan_.workloads[i].name, ": ",
                                             status.error_message()));
            }
          }
          in_flight_.Done();
        },
        &refused_);
  }

  void Release(int i, bool finished) {
    v1::ReleaseQuotaRequest req = ReleaseRequestFor(plan_, i, finished);
    const absl::Time sent = absl::Now();
    in_flight_.Add();
    AsyncCall<v1::ReleaseQuotaRequest, v1::ReleaseQuotaResponse>(
        std::move(req), call_deadline_,
        [this](grpc::ClientContext* c, const v1::ReleaseQuotaRequest* q,
               v1::ReleaseQuotaResponse* r, std::function<void(grpc::Status)> cb) {
          client_.admission->async()->ReleaseQuota(c, q, r, std::move(cb));
        },
        [this, i, sent, finished](const grpc::Status& status, const v1::ReleaseQuotaResponse&) {
          const double ms = absl::ToDoubleMilliseconds(absl::Now() - sent);
          {
            absl::MutexLock lock(&mu_);
            release_ms_.push_back(ms);
            if (!status.ok()) {
              ++rpc_errors_;
              ledger_.Violation(absl::StrCat("ReleaseQuota(", finished ? "finished" : "stopped",
                                             ") ", plan_.workloads[i].name, ": ",
                                             status.error_message()));
            }
          }
          in_flight_.Done();
        },
        &refused_);
  }

  // The finish timer of admission `generation` of workload i.
  void MaybeFinish(int i, uint32_t generation) {
    {
      absl::MutexLock lock(&mu_);
      if (!ledger_.BeginFinish(i, generation)) return;
    }
    Release(i, /*finished=*/true);
  }

  // Watch events are level-triggered: the server publishes an object once per commit, in its
  // last state, so several transitions may arrive as one event; the ledger reads them from the
  // workload's conditions.
  void OnEvent(const v1::WatchEvent& ev, absl::Time at) {
    if (!ev.has_workload()) return;
    const v1::Workload& wl = ev.workload();
    const v1::ObjectMeta& meta = wl.metadata();
    const int i = ledger_.Find(absl::StrCat(meta.namespace_(), "/", meta.name()));
    if (i < 0) return;  // not this run's
    if (trace_) {
      std::fprintf(stderr, "%llu %llu %s %s/%s %s\n",
                   static_cast<unsigned long long>(ev.revision()),
                   static_cast<unsigned long long>(ev.commit_revision()), ev.reason().c_str(),
                   meta.namespace_().c_str(), meta.name().c_str(), LedgerFlags(wl).c_str());
    }
    bool stop = false;
    {
      absl::MutexLock lock(&mu_);
      ++events_;
      // A later commit began: the previous one ended with an event this watch did not receive.
      if (open_commit_ != 0 && ev.commit_revision() != open_commit_) ledger_.CheckQuota();
      open_commit_ = ev.commit_revision();
      EndOfEvent end(this, ev);
      const Observation seen = ledger_.Observe(i, wl, at);
      if (seen.admitted && timer_ != nullptr) {
        const double runtime_ms = static_cast<double>(plan_.workloads[i].runtime_ms) / scale_;
        const uint32_t generation = seen.generation;
        timer_->At(at + absl::Milliseconds(runtime_ms),
                   [this, i, generation] { MaybeFinish(i, generation); });
      }
      stop = seen.stop;
    }
    if (stop) Release(i, /*finished=*/false);
  }

  // Closes the commit when this event was its last (or the server does not say: then every
  // event is checked).
  struct EndOfEvent {
    EndOfEvent(ScheduleRun* run, const v1::WatchEvent& ev) : run(run), ev(ev) {}
    ~EndOfEvent() {
      if (ev.commit_revision() == 0 || ev.revision() == ev.commit_revision()) {
        run->ledger_.CheckQuota();
        run->open_commit_ = 0;
      }
    }
    ScheduleRun* run;
    const v1::WatchEvent& ev;
  };

  const bool trace_ = std::getenv("ADMITD_BENCH_TRACE") != nullptr;
  testing::Client client_;
  const Plan& plan_;
  const double scale_;
  InFlight in_flight_;
  std::atomic<int64_t> refused_{0};  // calls refused unrun and sent again

  absl::Mutex mu_;
  ScheduleLedger ledger_;
  Timer* timer_ = nullptr;
  absl::Time start_;
  absl::Time call_deadline_ = absl::InfiniteFuture();
  uint64_t open_commit_ = 0;
  std::vector<double> submit_ms_, release_ms_;
  int64_t events_ = 0;
  int64_t rpc_errors_ = 0;
};

}  // namespace

RunReport RunSchedule(const std::string& address, const Plan& plan, double scale,
                      absl::Duration timeout) {
  ScheduleRun run(address, plan, scale);
  return run.Run(timeout);
}

}  // namespace admitd::bench
