#include "server/sequencer.h"

#include "server/metrics.h"

#include <pthread.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/watch_hub.h"

namespace admitd {
namespace {

// A workload that is neither waiting nor holding an unfinished reservation: Admit --wait ends.
bool Settled(const engine::Engine& engine, const std::string& key) {
  v1::GetWorkloadRequest get;
  size_t slash = key.find('/');
  get.set_namespace_(key.substr(0, slash));
  get.set_name(key.substr(slash + 1));
  absl::StatusOr<v1::Workload> workload = engine.GetWorkload(get);
  if (!workload.ok()) return true;  // deleted
  v1::WorkloadState state = engine::StateOf(*workload);
  return state != v1::WORKLOAD_STATE_PENDING && state != v1::WORKLOAD_STATE_QUOTA_RESERVED;
}

}  // namespace

Sequencer::Sequencer(engine::Engine* engine, store::Store* store, WatchHub* hub,
                     SequencerOptions options)
    : engine_(engine),
      store_(store),
      hub_(hub),
      options_(std::move(options)),
      // Applied batches allowed to wait for the store at once: one being written and one queued
      // behind it, or as many as the store's pipeline takes and one more.
      max_in_flight_(store->pipeline() != nullptr ? store->pipeline()->depth() + 1 : 2) {
  if (options_.metrics != nullptr) {
    MetricsRegistry& r = options_.metrics->registry();
    // The failure counters exist from the start at 0, so a first failure is an increase.
    r.Counter("admitd_commit_failures_total", "Batches the store failed to commit.", {});
    for (const char* result : {"ok", "failed"}) {
      r.Counter("admitd_store_recovery_attempts_total",
                "Attempts to make the store take writes again after a failed commit.",
                {{"result", result}});
    }
    batch_commands_ = &r.Histogram("admitd_sequencer_batch_commands",
                                   "Commands applied per sequencer batch.", {},
                                   {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096});
    batch_seconds_ = &r.Histogram(
        "admitd_sequencer_batch_seconds",
        "Time the sequencer spent on a batch: applying its commands, scheduling cycles and "
        "preparing answers (the commit is not included).",
        {}, kLatencyBuckets);
    store_commit_seconds_ = &r.Histogram(
        "admitd_store_commit_seconds",
        "Time to write one batch to RocksDB as one WriteBatch, fsync included.", {},
        kLatencyBuckets);
    commit_seconds_ = &r.Histogram(
        "admitd_commit_seconds",
        "Time from a batch reaching the committer to its answers being sent: the store write "
        "with its fsync, the watch events' publication and the answers.",
        {}, kLatencyBuckets);
  }
}

Sequencer::~Sequencer() { Stop(); }

void Sequencer::Start() {
  absl::MutexLock lock(&mu_);
  if (started_) return;
  started_ = true;
  committer_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "admitd-commit");
    RunCommitter();
  });
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "admitd-seq");
    Run();
  });
}

void Sequencer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  {
    absl::MutexLock lock(&mu_);
    committer_stop_ = true;
  }
  if (committer_.joinable()) committer_.join();
  // Commands that arrived after the threads ended (or without threads) are refused.
  std::deque<Command> rest;
  {
    absl::MutexLock lock(&mu_);
    rest.swap(queue_);
  }
  absl::Status unavailable = absl::UnavailableError("admitd is shutting down");
  for (Command& cmd : rest) cmd.respond(unavailable);
}

void Sequencer::Enqueue(Command command) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_ && health_.ok()) {
      queue_.push_back(std::move(command));
      return;
    }
  }
  absl::Status refused = health().ok() ? absl::UnavailableError("admitd is shutting down")
                                       : health();
  command.respond(refused);
}

void Sequencer::WaitForWorkload(const std::string& key, absl::Time deadline,
                                std::function<void(engine::Engine&, bool)> done) {
  absl::MutexLock lock(&mu_);
  new_waiters_.push_back({key, Waiter{deadline, std::move(done)}});
}

void Sequencer::ReleaseWaiters() {
  absl::MutexLock lock(&mu_);
  release_waiters_ = true;
  // An empty command wakes the loop, whose next batch answers the waiters.
  queue_.push_back(Command{[](engine::Engine&, absl::Time) {}, nullptr,
                           [](const absl::Status&) {}});
}

absl::Time Sequencer::Now() const {
  return options_.clock() + absl::Nanoseconds(clock_offset_ns_.load(std::memory_order_acquire));
}

absl::Status Sequencer::AdvanceClock(absl::Duration by) {
  if (!options_.manual_clock) {
    return absl::FailedPreconditionError(
        "the clock moves only with --manual-clock (and --manual-scheduling)");
  }
  if (by < absl::ZeroDuration()) return absl::InvalidArgumentError("the clock never goes back");
  // The offset is int64 nanoseconds (about 292 years): an advance beyond that is refused, where
  // adding it would wrap the clock around into the past.
  const absl::Status too_far = absl::OutOfRangeError(
      "the clock cannot be advanced more than 292 years in total");
  if (by > absl::Nanoseconds(std::numeric_limits<int64_t>::max())) return too_far;
  const int64_t add = absl::ToInt64Nanoseconds(by);
  int64_t offset = clock_offset_ns_.load(std::memory_order_acquire);
  int64_t next;
  do {
    if (__builtin_add_overflow(offset, add, &next)) return too_far;
  } while (!clock_offset_ns_.compare_exchange_weak(offset, next, std::memory_order_acq_rel));
  return absl::OkStatus();
}

SequencerStats Sequencer::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::Status Sequencer::health() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

void Sequencer::Run() {
  std::vector<Command> batch;
  std::vector<std::pair<std::string, Waiter>> arrivals;
  while (true) {
    batch.clear();
    arrivals.clear();
    bool stop = false;
    bool settle_waiters = false;
    Repair repair_step = Repair::kNone;
    // While a failed commit is being repaired nothing is applied, so timed work and cycles
    // must not wake the loop.
    const bool degraded = !health().ok();
    {
      // Values the wait condition reads are copied: absl may evaluate it on other threads.
      // Timed engine work (a backoff ending, a maximum execution time passing) wakes the loop
      // like a command would; the engine's deadline is on the server clock, the wait on real
      // time.
      const absl::Time now = Now();
      const absl::Time next_deadline =
          options_.manual_scheduling || degraded ? absl::InfiniteFuture() : engine_->NextDeadline();
      const bool tick_due = next_deadline <= now;
      const bool want_cycles =
          (cycles_wanted_ && !options_.manual_scheduling && !degraded) || tick_due;
      const bool have_waiters = !waiters_.empty() || !fresh_waiter_keys_.empty();
      absl::Time wake = absl::InfiniteFuture();
      for (const auto& [key, waiter] : waiters_) wake = std::min(wake, waiter.deadline);
      if (next_deadline != absl::InfiniteFuture() && !tick_due) {
        wake = std::min(wake, absl::Now() + (next_deadline - now));
      }
      // Waiters to answer (new ones, committed changes to show them, deadlines passed) are
      // answered before the next batch, once nothing uncommitted is left in the engine.
      const bool need_settle = have_waiters && (!fresh_waiter_keys_.empty() ||
                                                !unnotified_.empty() || wake <= absl::Now());
      absl::MutexLock lock(&mu_);
      auto ready = [this, want_cycles, have_waiters,
                    need_settle]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        if (in_flight_ == 0 &&
            (repair_ == Repair::kReload || repair_ == Repair::kReloadAfterProbe)) {
          return true;
        }
        if (need_settle) return in_flight_ == 0;
        if (in_flight_ >= max_in_flight_) return false;  // the committer is behind: wait for it
        return want_cycles || stopping_ || !queue_.empty() || !new_waiters_.empty() ||
               (have_waiters && !committed_changes_.empty());
      };
      mu_.AwaitWithDeadline(absl::Condition(&ready), wake);
      if (in_flight_ < max_in_flight_) {
        // ProcessBatch moves the vector on to the committer, so it starts empty each time:
        // one allocation of the right size instead of a regrowth per doubling (each of which
        // also made glibc consolidate its free lists).
        batch.reserve(std::min(queue_.size(), options_.max_batch_commands));
        while (!queue_.empty() && batch.size() < options_.max_batch_commands) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
      arrivals.swap(new_waiters_);
      // Only a change of a workload someone already waits for can settle a waiter (new waiters
      // are checked against the engine); the others are dropped here, so that a sequencer that
      // never idles does not pile up every committed change's snapshot until it does.
      for (engine::Change& c : committed_changes_) {
        if (waiters_.count(c.key) > 0) unnotified_.push_back(std::move(c));
      }
      committed_changes_.clear();
      // Waiters read the engine, which must then hold nothing uncommitted (after a failed
      // commit: not before the engine was rebuilt from the store).
      settle_waiters = in_flight_ == 0 && repair_ != Repair::kReload && !engine_stale_;
      if (in_flight_ == 0 && (repair_ == Repair::kReload || repair_ == Repair::kReloadAfterProbe)) {
        repair_step = repair_;
      }
      stop = stopping_ && queue_.empty() && batch.empty();
    }
    if (repair_step != Repair::kNone) RepairEngine(repair_step);
    for (auto& [key, waiter] : arrivals) {
      fresh_waiter_keys_.push_back(key);
      waiters_.emplace(key, std::move(waiter));
    }
    if (settle_waiters) {
      NotifyWaiters(unnotified_, Now());
      unnotified_.clear();
    }
    if (stop) break;
    const bool tick_due =
        !options_.manual_scheduling && !degraded && engine_->NextDeadline() <= Now();
    if (batch.empty() && (degraded || !(cycles_wanted_ && !options_.manual_scheduling)) &&
        !tick_due) {
      continue;
    }
    ProcessBatch(batch);
  }
  // Let the committer finish, then whoever still waits gets the state as it stands (the
  // committed state: an engine a failed commit left ahead of the disk is rebuilt first).
  Repair repair;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &in_flight_));
    repair = repair_;
  }
  if (repair == Repair::kReload) RepairEngine(repair);
  for (auto& [key, waiter] : waiters_) waiter.done(*engine_, /*timed_out=*/true);
  waiters_.clear();
}

void Sequencer::ProcessBatch(std::vector<Command>& batch) {
  const absl::Time now = Now();
  const absl::Status health_now = health();
  const absl::Time t0 = absl::Now();
  if (health_now.ok()) {
    for (Command& cmd : batch) cmd.apply(*engine_, now);
    if (!options_.manual_scheduling && engine_->NextDeadline() <= now) engine_->Tick(now);
  }
  const absl::Time t1 = absl::Now();
  int cycles = 0;
  cycles_wanted_ = false;
  if (health_now.ok() && !options_.manual_scheduling && engine_->HasPendingHeads()) {
    engine::CycleStats cycle;
    // A long drain is cut into batches by count and by time, so it commits (and answers the
    // commands waiting on it) regularly however many ClusterQueues a cycle visits.
    const absl::Time cycle_deadline = absl::Now() + options_.max_cycle_time_per_batch;
    do {
      const absl::Time cycle_start = absl::Now();
      cycle = engine_->RunCycle(now);
      ++cycles;
      if (options_.metrics != nullptr) {
        options_.metrics->CountCycle(cycle, absl::Now() - cycle_start);
      }
    } while (cycle.more && cycles < options_.max_cycles_per_batch &&
             absl::Now() < cycle_deadline);
    cycles_wanted_ = cycle.more;
  }
  Pending pending;
  // The snapshots stay in the engine while the commands prepare their answers, which borrow them.
  pending.changes = engine_->TakeChanges(/*keep_snapshots=*/true);
  pending.directives = engine_->TakeDirectiveUpdates(now);
  const absl::Time t2 = absl::Now();
  if (health_now.ok()) {
    for (Command& cmd : batch) {
      if (cmd.prepare) cmd.prepare(*engine_);
    }
  }
  engine_->ForgetSnapshots();
  pending.refused = health_now;
  pending.commands = std::move(batch);
  const absl::Time t3 = absl::Now();
  if (batch_commands_ != nullptr) {
    batch_commands_->Observe(static_cast<double>(pending.commands.size()));
    batch_seconds_->Observe(absl::ToDoubleSeconds(t3 - t0));
  }
  if (options_.traces != nullptr) {
    pending.times = BatchTimes{t0, t1, t2, t3};
    pending.times.commands = static_cast<int>(pending.commands.size());
    pending.times.cycles = cycles;
    for (const Command& cmd : pending.commands) {
      if (cmd.trace.sampled) pending.served.push_back(cmd.trace);
    }
  }
  absl::MutexLock lock(&mu_);
  stats_.batches++;
  stats_.commands += pending.commands.size();
  stats_.cycles += cycles;
  stats_.changes += pending.changes.size();
  stats_.apply_time += t1 - t0;
  stats_.cycle_time += t2 - t1;
  stats_.respond_time += t3 - t2;
  ++in_flight_;
  to_commit_.push_back(std::move(pending));
}

void Sequencer::RepairEngine(Repair step) {
  absl::Status reloaded = absl::OkStatus();
  if (step == Repair::kReload || engine_stale_ || engine_->revision() != store_->revision()) {
    const absl::Time start = absl::Now();
    reloaded = options_.reload != nullptr
                   ? options_.reload(engine_)
                   : absl::FailedPreconditionError("this sequencer cannot rebuild its engine");
    if (reloaded.ok()) {
      engine_stale_ = false;
      cycles_wanted_ = true;  // the rebuilt queues may have heads to try
      // Every waiter is checked against the rebuilt engine, not only those of later changes.
      for (const auto& [key, waiter] : waiters_) fresh_waiter_keys_.push_back(key);
      ADMITD_LOG(kInfo, "engine rebuilt from the store",
                 {{"revision", absl::StrCat(engine_->revision())},
                  {"took", absl::FormatDuration(absl::Now() - start)}});
    } else {
      engine_stale_ = true;
      ADMITD_LOG(kError, "rebuilding the engine from the store failed",
                 {{"error", reloaded.ToString()}});
    }
  }
  if (step == Repair::kReload || !reloaded.ok()) {
    absl::MutexLock lock(&mu_);
    if (step == Repair::kReload) {
      probe_backoff_ = options_.recover_backoff_initial;
      failed_probes_ = 0;
    }
    next_probe_ = absl::Now() + probe_backoff_;
    if (step != Repair::kReload) {
      probe_backoff_ = std::min(probe_backoff_ * 2, options_.recover_backoff_max);
    }
    repair_ = Repair::kProbe;
    return;
  }
  PublishMissedEvents();
  {
    absl::MutexLock lock(&mu_);
    repair_ = Repair::kNone;
    health_ = absl::OkStatus();
  }
  ADMITD_LOG(kInfo, "the store takes writes again; taking calls",
             {{"revision", absl::StrCat(engine_->revision())}});
  NotifyHealth(absl::OkStatus());
}

void Sequencer::PublishMissedEvents() {
  if (hub_ == nullptr) return;
  const uint64_t head = store_->revision();
  uint64_t after = hub_->revision();
  if (head <= after) return;
  std::vector<HubEvent> events;
  std::vector<store::LoggedEvent> logged;
  while (true) {
    logged.clear();
    if (absl::Status read = store_->ReadEvents(after, 512, &logged); !read.ok()) {
      ADMITD_LOG(kWarning, "cannot publish events the store kept from a failed commit",
                 {{"error", read.ToString()}});
      break;
    }
    if (logged.empty()) break;
    for (store::LoggedEvent& entry : logged) {
      auto event = std::make_shared<v1::WatchEvent>();
      if (event->ParseFromString(entry.value)) {
        events.push_back(HubEvent{std::move(event), grpc::Slice(entry.value)});
      }
      after = entry.revision;
    }
  }
  hub_->Publish(head, [&events](WatchHub::NamedKinds) { return std::move(events); });
}

void Sequencer::NotifyHealth(const absl::Status& health) {
  if (options_.on_health_change) options_.on_health_change(health);
}

void Sequencer::NotifyWaiters(const std::vector<engine::Change>& changes, absl::Time now) {
  if (waiters_.empty()) {
    fresh_waiter_keys_.clear();
    return;
  }
  auto finish_range = [this](const std::string& key, bool timed_out) {
    auto [begin, end] = waiters_.equal_range(key);
    for (auto it = begin; it != end; ++it) it->second.done(*engine_, timed_out);
    waiters_.erase(begin, end);
  };
  bool release_all;
  {
    absl::MutexLock lock(&mu_);
    release_all = release_waiters_;
  }
  if (release_all) {
    for (auto& [key, waiter] : waiters_) waiter.done(*engine_, /*timed_out=*/true);
    waiters_.clear();
    fresh_waiter_keys_.clear();
    return;
  }
  // Only workloads these commits changed, and waiters that just arrived, can have settled.
  std::vector<std::string> candidates;
  candidates.swap(fresh_waiter_keys_);
  for (const engine::Change& change : changes) {
    if (change.kind == v1::OBJECT_KIND_WORKLOAD && waiters_.count(change.key) > 0) {
      candidates.push_back(change.key);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (const std::string& key : candidates) {
    if (waiters_.count(key) > 0 && Settled(*engine_, key)) finish_range(key, false);
  }
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->second.deadline <= now || it->second.deadline <= absl::Now()) {
      it->second.done(*engine_, true);
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace admitd
