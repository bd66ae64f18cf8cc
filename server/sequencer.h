// Sequencer: the one thread that owns the Engine, and the committer behind it.
//
// RPC handlers enqueue Commands. The sequencer drains the queue in batches: it applies every
// command of the batch to the engine, runs scheduling cycles (unless scheduling is manual), lets
// each command read the answer it needs, and hands the batch's changes to the committer thread,
// which writes them to the Store as one WriteBatch with one fsync, publishes the watch events, and
// only then answers the commands. Concurrent callers therefore share fsyncs (group commit), and
// an answered write is durable. While one batch is being synced the sequencer already applies
// the next (a two-stage pipeline): its answers still wait for its own commit, which follows the
// previous one. A store whose commits wait on other machines (store::CommitPipeline: the
// leader's store of an HA group) has several batches on their way at once; the committer still
// answers them in order.
//
// A failed commit (a full disk, an I/O error) leaves the engine ahead of the disk. The failed
// batch, any batch applied behind it and every command until the store takes writes again are
// answered UNAVAILABLE. Repair runs by itself: once nothing is in flight the sequencer rebuilds
// the engine from the store (SequencerOptions::reload, the startup recovery), so it never holds
// a batch that failed to commit; the committer then probes the store (Store::Recover) with
// backoff; when a probe succeeds the engine is rebuilt again if the store changed, and commands
// are taken again (health() is OK).
//
// Thread safety: Enqueue, WaitForAdmission and the accessors may be called from any thread.
//
//   Sequencer seq(&engine, store.get(), &hub, options);
//   seq.Start();
//   seq.Enqueue(Command{.apply = [&](Engine& e, absl::Time now) { result = e.Submit(req, now); },
//                       .prepare = [&](Engine& e) { answer = ...read e... },
//                       .respond = [&](const absl::Status& commit) { Reply(...); }});
#ifndef ADMITD_SERVER_SEQUENCER_H_
#define ADMITD_SERVER_SEQUENCER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/histogram.h"
#include "common/trace/trace_context.h"
#include "server/engine/engine.h"
#include "server/trace_recorder.h"
#include "store/store.h"

namespace admitd {

class WatchHub;

struct Command {
  // Runs on the sequencer thread inside a batch. Keep the result in the closure's captures.
  std::function<void(engine::Engine& engine, absl::Time now)> apply;
  // Optional. Runs on the sequencer thread after the batch's scheduling cycles and before its
  // commit: the last moment the command may read the engine for its answer.
  std::function<void(engine::Engine& engine)> prepare;
  // Runs exactly once, after the batch was committed, on the committer thread: `commit` is the
  // batch's status, or why the command never ran. It must not touch the engine.
  std::function<void(const absl::Status& commit)> respond;
  // The server span of the call this command serves (invalid when not traced): the batch's
  // span links to it.
  tracing::SpanContext trace;
};

struct SequencerOptions {
  // Cycles and timed work (Engine::Tick) run only through RunSchedulingCycles.
  bool manual_scheduling = false;
  // The clock moves on only through AdvanceClock (on top of `clock`); tests step time with it.
  bool manual_clock = false;
  // Commands applied per batch at most; the rest wait for the next batch.
  size_t max_batch_commands = 4096;
  // Scheduling cycles run in one batch at most before committing; the sequencer goes on cycling
  // in the next batch, so long drains still commit (and answer) regularly.
  int max_cycles_per_batch = 256;
  // ... and for this long at most (checked after each cycle).
  absl::Duration max_cycle_time_per_batch = absl::Milliseconds(20);
  // CompactEvents runs after this many commits.
  int compact_every_commits = 64;
  std::function<absl::Time()> clock = [] { return absl::Now(); };
  // Counts what each committed batch did; may be null.
  class Metrics* metrics = nullptr;
  // Records each batch and the workload changes it committed as spans; may be null.
  class TraceRecorder* traces = nullptr;
  // Rebuilds `engine` from the store (the startup recovery) after a failed commit. Null: the
  // sequencer cannot repair itself and refuses every command until it is restarted.
  std::function<absl::Status(engine::Engine* engine)> reload;
  // Called when health() changes (a commit failed; the store takes writes again), from the
  // sequencer's threads, without its locks held.
  std::function<void(const absl::Status& health)> on_health_change;
  // After a failed commit the store is probed after `recover_backoff_initial`, then twice as
  // long after each failed probe, up to `recover_backoff_max`.
  absl::Duration recover_backoff_initial = absl::Milliseconds(100);
  absl::Duration recover_backoff_max = absl::Seconds(5);
};

struct SequencerStats {
  uint64_t batches = 0;
  uint64_t commits = 0;
  uint64_t commands = 0;
  uint64_t cycles = 0;
  uint64_t changes = 0;
  // Time the sequencer spent in each phase of its batches.
  absl::Duration apply_time;
  absl::Duration cycle_time;
  absl::Duration commit_time;
  absl::Duration respond_time;
};

class Sequencer {
 public:
  // `engine`, `store` and `hub` must outlive the Sequencer; the engine must have finished
  // recovery. `hub` may be null.
  Sequencer(engine::Engine* engine, store::Store* store, WatchHub* hub, SequencerOptions options);
  ~Sequencer();  // Stop()s

  void Start();
  // Answers every queued command, then joins the thread. Later Enqueues answer UNAVAILABLE.
  void Stop();

  // Queues `command`. Its respond runs exactly once, with UNAVAILABLE when the sequencer is
  // stopped or failed (then apply never runs).
  void Enqueue(Command command);

  // Calls `done` once, on the sequencer thread, when the workload leaves the pending state (it
  // is admitted, has a reservation, is finished or deleted) or `deadline` passes. `done` gets the
  // engine; the caller reads the workload from it.
  void WaitForWorkload(const std::string& key, absl::Time deadline,
                       std::function<void(engine::Engine& engine, bool timed_out)> done);

  // Answers every Admit waiter now and any later one at once (shutdown: lets RPCs drain).
  void ReleaseWaiters();

  // The server's time: `clock` plus every AdvanceClock so far.
  absl::Time Now() const;
  // Moves Now() forward by `by` (>= 0). FAILED_PRECONDITION unless manual_clock is set;
  // OUT_OF_RANGE (and no move) when the advances would add up to more than 292 years.
  absl::Status AdvanceClock(absl::Duration by);
  bool manual_clock() const { return options_.manual_clock; }

  SequencerStats stats() const;
  // UNAVAILABLE from a failed commit until the store takes writes again and the engine was
  // rebuilt from it; OK otherwise.
  absl::Status health() const;

 private:
  struct Waiter {
    absl::Time deadline;
    std::function<void(engine::Engine&, bool)> done;
  };
  // One applied batch on its way to disk.
  struct Pending {
    std::vector<engine::Change> changes;
    std::vector<v1::PodDirective> directives;  // published with the batch's events
    std::vector<Command> commands;
    absl::Status refused;  // not OK: commit nothing, answer this
    // For the trace recorder (when there is one): the batch's phases and the calls it serves.
    BatchTimes times;
    std::vector<tracing::SpanContext> served;
  };

  // A batch's changes as the store writes them, and the event headers the hub publishes once
  // it is durable (sequencer_commit.cc).
  struct Encoded {
    std::shared_ptr<store::Batch> batch;
    std::vector<v1::WatchEvent> headers;
    std::vector<size_t> evented;  // the change each header belongs to (pods have none)
  };
  // A batch the committer started in the store's pipeline (or answers without the store), in
  // the order it finishes them.
  struct Started {
    Pending pending;
    Encoded encoded;
    bool in_store = false;         // finished by the store's pipeline
    absl::Status answer;           // the answer of a batch not in the store
    std::shared_ptr<bool> ready;   // guarded by mu_: finishing will not block
    absl::Time start;
  };

  // What a failed commit still needs before commands are taken again.
  enum class Repair {
    kNone,
    kReload,            // rebuild the engine from the store once nothing is in flight
    kProbe,             // the committer probes the store at next_probe_
    kReloadAfterProbe,  // the store takes writes: rebuild the engine if needed, then serve
  };

  void Run();
  void RunCommitter();
  // The committer's ways through one batch: the store's Commit, or its pipeline's Start and,
  // later, Finish. FinishBatch answers the batch's commands after the store's answer.
  void CommitNow(Pending pending);
  void StartInPipeline(Pending pending, std::deque<Started>* started);
  void FinishFromPipeline(Started started);
  void FinishBatch(Pending& pending, absl::Status commit, absl::Time start);
  // The store's answer `commit` for a batch whose write began at `write_start`: timed, and
  // published when OK; after a failure, the status to answer with (CommitFailed).
  absl::Status Stored(Pending& pending, Encoded& encoded, absl::Status commit,
                      absl::Time write_start);
  // The store refused a batch: commands are refused until it takes writes again. The status to
  // answer with.
  absl::Status CommitFailed(const absl::Status& error);
  // Sequencer thread, nothing in flight: the kReload and kReloadAfterProbe steps.
  void RepairEngine(Repair step);
  // Committer thread: one Store::Recover probe (the kProbe step).
  void ProbeStore();
  // Publishes logged events the hub has not seen (a batch a reopened store turned out to hold).
  void PublishMissedEvents();
  void NotifyHealth(const absl::Status& health);
  // Applies and schedules one batch (possibly empty: then it only cycles) and hands it to the
  // committer.
  void ProcessBatch(std::vector<Command>& batch);
  // The last state of each object `changes` touch, as one store batch.
  Encoded Encode(const std::vector<engine::Change>& changes) const;
  // Publishes a durable batch's events and directives to the watch hub.
  void Publish(Encoded& encoded, const std::vector<engine::Change>& changes,
               const std::vector<v1::PodDirective>& directives);
  void NotifyWaiters(const std::vector<engine::Change>& changes, absl::Time now);

  // Constant after construction.
  engine::Engine* const engine_;
  store::Store* const store_;
  WatchHub* const hub_;
  const SequencerOptions options_;
  const int max_in_flight_;
  // The histograms of options_.metrics (null without metrics), looked up once.
  prometheus::Histogram* batch_commands_ = nullptr;
  prometheus::Histogram* batch_seconds_ = nullptr;
  prometheus::Histogram* store_commit_seconds_ = nullptr;
  prometheus::Histogram* commit_seconds_ = nullptr;

  mutable absl::Mutex mu_;
  std::deque<Command> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, Waiter>> new_waiters_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool release_waiters_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status health_ ABSL_GUARDED_BY(mu_);
  SequencerStats stats_ ABSL_GUARDED_BY(mu_);

  // The committer's queue: at most max_in_flight_ applied batches wait for the store.
  std::deque<Pending> to_commit_ ABSL_GUARDED_BY(mu_);
  // Committed batches' changes, for waiters; `in_flight_` counts batches not yet committed.
  std::vector<engine::Change> committed_changes_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool committer_stop_ ABSL_GUARDED_BY(mu_) = false;
  Repair repair_ ABSL_GUARDED_BY(mu_) = Repair::kNone;
  absl::Time next_probe_ ABSL_GUARDED_BY(mu_);  // real time (absl::Now), not the server clock
  absl::Duration probe_backoff_ ABSL_GUARDED_BY(mu_);
  int failed_probes_ ABSL_GUARDED_BY(mu_) = 0;

  // Owned by the sequencer thread.
  std::multimap<std::string, Waiter> waiters_;
  std::vector<engine::Change> unnotified_;  // committed changes not yet shown to waiters
  std::vector<std::string> fresh_waiter_keys_;  // waiters added since the last batch
  bool cycles_wanted_ = false;
  // A reload failed: the engine may hold changes that were never committed.
  bool engine_stale_ = false;
  int commits_since_compaction_ = 0;

  std::atomic<int64_t> clock_offset_ns_{0};

  std::thread thread_;
  std::thread committer_;
};

}  // namespace admitd

#endif  // ADMITD_SERVER_SEQUENCER_H_
