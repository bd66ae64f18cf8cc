#include "integration/bench/simulate_run.h"

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/engine/engine.h"

namespace admitd::bench {
namespace {

// What the server's sequencer uses by default (server/sequencer.h): commands applied per batch,
// and scheduling cycles run per batch before it commits and goes on cycling in the next one.
// The sequencer also cuts a batch's cycles after 20 ms of real time; virtual time has none.
constexpr size_t kMaxBatchCommands = 4096;
constexpr int kMaxCyclesPerBatch = 256;
// Batches at one instant that change nothing before the simulation gives up on it (an engine
// that keeps asking for cycles without doing anything would otherwise never let time move).
constexpr int kMaxIdleBatches = 1000;

// Where virtual time starts: any fixed instant, so that runs are reproducible.
const absl::Time kEpoch = absl::FromUnixSeconds(1735689600);  // 2025-01-01T00:00:00Z

double ProcessCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

class Simulation {
 public:
  Simulation(const Plan& plan, double scale, bool fair_sharing)
      // The server's engine options are EngineOptions' defaults unless its config says
      // otherwise (server/server.cc); admitd-bench's config says only fairSharing.
      : plan_(plan), scale_(scale), ledger_(plan), engine_(Options(fair_sharing)) {}

  static engine::EngineOptions Options(bool fair_sharing) {
    engine::EngineOptions options;
    options.fair_sharing = fair_sharing;
    return options;
  }

  RunReport Run() {
    const double cpu_start = ProcessCpuMs();
    RunReport report;
    report.simulated = true;
    report.workloads = static_cast<int>(plan_.workloads.size());
    report.scale = scale_;
    report.work_bound_ms = plan_.work_bound_ms / scale_;
    report.arrival_bound_ms = plan_.arrival_bound_ms / scale_;

    if (Setup()) {
      for (size_t i = 0; i < plan_.workloads.size(); ++i) {
        const double arrival_ms = static_cast<double>(plan_.workloads[i].arrival_ms) / scale_;
        Schedule(kEpoch + absl::Milliseconds(arrival_ms), Event::kArrival, static_cast<int>(i));
      }
      while (!stuck_) {
        absl::Time next = engine_.NextDeadline();
        if (!events_.empty()) next = std::min(next, events_.top().at);
        if (next == absl::InfiniteFuture()) break;
        RunInstant(next);
      }
    }

    const size_t finished = ledger_.finished();
    report.wall_ms = absl::ToDoubleMilliseconds(ledger_.last_finish() - kEpoch);
    if (finished < plan_.workloads.size()) {
      report.wall_ms = absl::ToDoubleMilliseconds(now_ - kEpoch);
      ledger_.Violation(absl::StrCat("only ", finished, " of ", plan_.workloads.size(),
                                     " workloads finished when nothing was left to happen"));
    }
    report.events = changes_read_;
    report.rpc_errors = errors_;
    report.batches = batches_;
    report.cycles = cycles_;
    ledger_.Report(&report);
    report.cpu_ms = ProcessCpuMs() - cpu_start;
    return report;
  }

 private:
  struct Event {
    enum Kind : uint8_t { kArrival, kFinish, kStop };
    absl::Time at;
    uint64_t seq;  // events at one instant happen in the order they were scheduled
    Kind kind;
    int workload;
    uint32_t generation;  // of a finish: the admission it ends
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  void Schedule(absl::Time at, Event::Kind kind, int workload, uint32_t generation = 0) {
    events_.push(Event{at, seq_++, kind, workload, generation});
  }

  bool Setup() {
    for (const auto& request : SetupRequests(plan_)) {
      absl::StatusOr<v1::ApplyResponse> applied = engine_.Apply(request.second, kEpoch);
      if (!applied.ok()) {
        ledger_.Violation(
            absl::StrCat("Apply ", request.first, ": ", applied.status().message()));
        return false;
      }
    }
    engine_.TakeChanges();
    return true;
  }

  // Everything that happens at `now`, batch after batch as the sequencer would run them: the
  // commands due, the timed work due, cycles while the engine wants more (cut into batches of
  // kMaxCyclesPerBatch), then the batch's changes read as a watch would read them. Reading
  // them may schedule more at this very instant (the release of an evicted workload).
  void RunInstant(absl::Time now) {
    now_ = now;
    int idle = 0;
    bool cycles_wanted = false;
    while (true) {
      const bool commands_due = !events_.empty() && events_.top().at <= now;
      const bool tick_due = engine_.NextDeadline() <= now;
      if (!commands_due && !tick_due && !cycles_wanted) return;
      size_t commands = 0;
      while (commands < kMaxBatchCommands && !events_.empty() && events_.top().at <= now) {
        const Event event = events_.top();
        events_.pop();
        Apply(event, now);
        ++commands;
      }
      if (engine_.NextDeadline() <= now) engine_.Tick(now);
      cycles_wanted = false;
      if (engine_.HasPendingHeads()) {
        engine::CycleStats cycle;
        int cycles = 0;
        do {
          cycle = engine_.RunCycle(now);
          ++cycles;
        } while (cycle.more && cycles < kMaxCyclesPerBatch);
        cycles_ += cycles;
        cycles_wanted = cycle.more;
      }
      ++batches_;
      if (ReadChanges(now) == 0 && commands == 0) {
        if (++idle >= kMaxIdleBatches) {
          ledger_.Violation(absl::StrCat("the engine kept asking for cycles at ",
                                         absl::FormatTime(now), " without changing anything"));
          stuck_ = true;
          return;
        }
      } else {
        idle = 0;
      }
    }
  }

  void Apply(const Event& event, absl::Time now) {
    const int i = event.workload;
    switch (event.kind) {
      case Event::kArrival: {
        ledger_.Submitted(i, now);
        auto submitted = engine_.Submit(SubmitRequestFor(plan_, i), now,
                                        engine::Engine::Answer::kReference);
        if (!submitted.ok()) Failed("Submit", i, submitted.status());
        break;
      }
      case Event::kFinish: {
        if (!ledger_.BeginFinish(i, event.generation)) break;
        auto released = engine_.ReleaseQuota(ReleaseRequestFor(plan_, i, /*finished=*/true), now,
                                             engine::Engine::Answer::kReference);
        if (!released.ok()) Failed("ReleaseQuota(finished)", i, released.status());
        break;
      }
      case Event::kStop: {
        auto released = engine_.ReleaseQuota(ReleaseRequestFor(plan_, i, /*finished=*/false),
                                             now, engine::Engine::Answer::kReference);
        if (!released.ok()) {
          Failed("ReleaseQuota(stopped)", i, released.status());
        } else {
          ledger_.StopApplied(i);
        }
        break;
      }
    }
  }

  void Failed(const char* what, int i, const absl::Status& status) {
    ++errors_;
    ledger_.Violation(absl::StrCat(what, " ", plan_.workloads[i].name, ": ", status.message()));
  }

  // Reads the batch's changes (each workload's as one commit leaves it), then checks the quota
  // as at the end of a commit. Returns how many changes there were.
  size_t ReadChanges(absl::Time now) {
    const std::vector<engine::Change> changes = engine_.TakeChanges();
    for (const engine::Change& change : changes) {
      if (change.kind != v1::OBJECT_KIND_WORKLOAD || change.workload == nullptr) continue;
      const int i = ledger_.Find(change.key);
      if (i < 0) continue;
      ++changes_read_;
      const Observation seen = ledger_.Observe(i, *change.workload, now);
      if (seen.admitted) {
        const double runtime_ms = static_cast<double>(plan_.workloads[i].runtime_ms) / scale_;
        Schedule(now + absl::Milliseconds(runtime_ms), Event::kFinish, i, seen.generation);
      }
      if (seen.stop) Schedule(now, Event::kStop, i);
    }
    ledger_.CheckQuota();
    return changes.size();
  }

  const Plan& plan_;
  const double scale_;
  ScheduleLedger ledger_;
  engine::Engine engine_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  absl::Time now_ = kEpoch;
  bool stuck_ = false;
  int64_t changes_read_ = 0;
  int64_t errors_ = 0;
  int64_t batches_ = 0;
  int64_t cycles_ = 0;
};

}  // namespace

RunReport SimulateSchedule(const Plan& plan, double scale, bool fair_sharing) {
  Simulation simulation(plan, scale, fair_sharing);
  return simulation.Run();
}

}  // namespace admitd::bench
