// recovery_bench: how long admitd takes to restart on a large store, and how much memory it
// needs, measured per 100,000 workloads so that growth can be checked for linearity.
//
//   build/integration/recovery_bench [--workloads 1000000] [--queues 1000] [--cohorts 10]
//                                    [--events 100000] [--data-dir DIR] [--keep]
//                                    [--report-every 100000]
//
// First it builds a store: one ResourceFlavor, the Cohorts, the ClusterQueues (each in cohort
// q % cohorts, with nominal quota for half the workloads it receives), one LocalQueue per
// ClusterQueue, then the workloads (1 pod of 1 CPU and 1 Gi, round-robin over the LocalQueues),
// produced by a real Engine (Apply, Submit, RunCycle) and committed to a real RocksDB store in
// batches of 10,000 submissions with fsync off. The stored objects are what admitd's committer
// stores for the same changes (server/sequencer_commit.cc: each object changed in a batch in its
// last state, Kubernetes Events not stored). Only the batches of the last --events submissions
// are also logged as watch events, and the log is then compacted to the store's retention: the
// newest 100,000 events, which is what admitd's log holds (Open counts them; recovery reads none).
//
// Then it runs itself again with --recover-only in a child process, so the peak RSS is that of a
// fresh process: the child opens the store and rebuilds an Engine with RestoreFromStore, the same
// code admitd runs at startup (server/recovery.h), printing elapsed time and RSS every
// --report-every workloads, FinishRestore's time, the totals, the peak RSS (VmHWM) and how the
// last interval compares with the first and the CPU time used; the last line is a one-line JSON
// summary.
//
// With --data-dir the store is built there (else in a temporary directory under /tmp); with
// --keep it is kept afterwards, and a directory that already holds a store is reused as it is.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "server/engine/engine.h"
#include "server/recovery.h"
#include "store/store.h"

namespace admitd {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);
constexpr int kSubmitsPerBatch = 10000;

struct Args {
  int64_t workloads = 1000000;
  int queues = 1000;
  int cohorts = 10;
  int64_t events = 100000;
  int64_t report_every = 100000;
  std::string data_dir;
  bool keep = false;
  bool recover_only = false;
};

// VmRSS and VmHWM of this process, in MiB.
struct Memory {
  double rss_mib = 0;
  double peak_mib = 0;
};

// User plus system CPU time this process has used, in seconds: on a shared machine it varies
// less than the elapsed time.
double CpuSeconds() {
  struct rusage usage = {};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

Memory ReadMemory() {
  Memory m;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    double kib = 0;
    if (line.rfind("VmRSS:", 0) == 0 && std::sscanf(line.c_str() + 6, "%lf", &kib) == 1) {
      m.rss_mib = kib / 1024;
    } else if (line.rfind("VmHWM:", 0) == 0 && std::sscanf(line.c_str() + 6, "%lf", &kib) == 1) {
      m.peak_mib = kib / 1024;
    }
  }
  return m;
}

void Die(const absl::Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
  std::exit(1);
}

// ---- Building the store ------------------------------------------------------------------

// The store writes of one batch of engine changes, as admitd's committer makes them: each object
// changed in the batch once, in its last state, serialized; Kubernetes Events are logged only.
// With `log_events`, every kept change is also logged as its WatchEvent (ADDED kept for an object
// the batch created), as the committer logs it. `changes` must not be empty.
store::Batch ToBatch(const std::vector<engine::Change>& changes, bool log_events) {
  absl::flat_hash_map<std::pair<int, std::string>, size_t> last_of;
  std::vector<bool> added(changes.size(), false);
  std::vector<size_t> kept;
  for (size_t i = 0; i < changes.size(); ++i) {
    const engine::Change& change = changes[i];
    auto it = last_of.find(std::make_pair(static_cast<int>(change.kind), change.key));
    if (it == last_of.end()) {
      last_of.emplace(std::make_pair(static_cast<int>(change.kind), change.key), i);
      continue;
    }
    added[i] = added[it->second] || changes[it->second].type == v1::WatchEvent::ADDED;
    it->second = i;
  }
  kept.reserve(last_of.size());
  for (const auto& entry : last_of) kept.push_back(entry.second);
  std::sort(kept.begin(), kept.end());

  store::Batch batch;
  batch.revision = changes.back().revision;
  for (size_t index : kept) {
    const engine::Change& change = changes[index];
    store::ObjectWrite write;
    write.kind = change.kind;
    write.key = change.key;
    write.deleted = change.type == v1::WatchEvent::DELETED;
    if (change.pod) {
      if (!write.deleted) write.value = change.pod->SerializeAsString();
      batch.writes.push_back(std::move(write));
      continue;
    }
    if (log_events) {
      v1::WatchEvent event;
      event.set_revision(change.revision);
      event.set_commit_revision(batch.revision);
      event.set_type(added[index] && change.type != v1::WatchEvent::DELETED
                         ? v1::WatchEvent::ADDED
                         : change.type);
      event.set_kind(change.kind);
      event.set_reason(change.reason);
      event.set_message(change.event ? change.event->note : change.message);
      if (change.workload) {
        *event.mutable_workload() = *change.workload;
      } else if (change.event) {
        *event.mutable_event() = engine::ToEvent(*change.event);
      } else {
        *event.mutable_queue_object() = *change.queue_object;
      }
      batch.events.push_back({change.revision, event.SerializeAsString()});
    }
    if (change.event) continue;
    if (!write.deleted) {
      write.value = change.workload ? change.workload->SerializeAsString()
                                    : change.queue_object->SerializeAsString();
    }
    batch.writes.push_back(std::move(write));
  }
  return batch;
}

void MustApply(engine::Engine& engine, const v1::ApplyRequest& request, absl::Time now) {
  absl::StatusOr<v1::ApplyResponse> applied = engine.Apply(request, now);
  Die(applied.status(), "apply");
}

void ApplyQueues(const Args& args, engine::Engine& engine) {
  const std::string per_queue = absl::StrCat((args.workloads / args.queues + 1) / 2);
  v1::ApplyRequest flavor;
  flavor.mutable_object()->mutable_resource_flavor()->mutable_metadata()->set_name("default");
  MustApply(engine, flavor, kT0);
  for (int c = 0; c < args.cohorts; ++c) {
    v1::ApplyRequest cohort;
    cohort.mutable_object()->mutable_cohort()->mutable_metadata()->set_name(
        absl::StrCat("cohort-", c));
    MustApply(engine, cohort, kT0);
  }
  for (int q = 0; q < args.queues; ++q) {
    v1::ApplyRequest request;
    v1::ClusterQueue* cq = request.mutable_object()->mutable_cluster_queue();
    cq->mutable_metadata()->set_name(absl::StrFormat("cq-%04d", q));
    cq->mutable_spec()->set_cohort_name(absl::StrCat("cohort-", q % args.cohorts));
    cq->mutable_spec()->mutable_namespace_selector();
    v1::ResourceGroup* group = cq->mutable_spec()->add_resource_groups();
    group->add_covered_resources("cpu");
    group->add_covered_resources("memory");
    v1::FlavorQuotas* quotas = group->add_flavors();
    quotas->set_name("default");
    v1::ResourceQuota* cpu = quotas->add_resources();
    cpu->set_name("cpu");
    cpu->set_nominal_quota(per_queue);
    v1::ResourceQuota* memory = quotas->add_resources();
    memory->set_name("memory");
    memory->set_nominal_quota(absl::StrCat(per_queue, "Gi"));
    MustApply(engine, request, kT0);

    v1::ApplyRequest lq;
    v1::LocalQueue* local = lq.mutable_object()->mutable_local_queue();
    local->mutable_metadata()->set_namespace_(absl::StrCat("team-", q % args.cohorts));
    local->mutable_metadata()->set_name(absl::StrFormat("lq-%04d", q));
    local->mutable_spec()->set_cluster_queue(cq->metadata().name());
    MustApply(engine, lq, kT0);
  }
}

// Workload i: a Job's workload of one 1-CPU, 1-Gi pod in LocalQueue i % queues.
v1::SubmitRequest MakeSubmit(const Args& args, int64_t i) {
  const int q = static_cast<int>(i % args.queues);
  v1::SubmitRequest request;
  v1::Workload* wl = request.mutable_workload();
  v1::ObjectMeta* meta = wl->mutable_metadata();
  meta->set_namespace_(absl::StrCat("team-", q % args.cohorts));
  meta->set_name(absl::StrFormat("job-%07d", i));
  (*meta->mutable_labels())["kueue.x-k8s.io/job-uid"] = absl::StrFormat("uid-%07d", i);
  v1::OwnerReference* owner = meta->add_owner_references();
  owner->set_api_version("batch/v1");
  owner->set_kind("Job");
  owner->set_name(absl::StrFormat("job-%07d", i));
  owner->set_uid(absl::StrFormat("uid-%07d", i));
  owner->set_controller(true);
  wl->mutable_spec()->set_queue_name(absl::StrFormat("lq-%04d", q));
  v1::PodSet* pod_set = wl->mutable_spec()->add_pod_sets();
  pod_set->set_name("main");
  pod_set->set_count(1);
  v1::Container* container = pod_set->mutable_template_()->mutable_spec()->add_containers();
  container->set_name("worker");
  (*container->mutable_resources()->mutable_requests())["cpu"] = "1";
  (*container->mutable_resources()->mutable_requests())["memory"] = "1Gi";
  return request;
}

void BuildStore(const Args& args) {
  const absl::Time start = absl::Now();
  store::StoreOptions options;
  options.path = args.data_dir;
  options.sync = false;
  absl::StatusOr<std::unique_ptr<store::Store>> store = store::Store::Open(options);
  Die(store.status(), "opening the store");
  auto engine = std::make_unique<engine::Engine>();
  Die(engine->FinishRestore((*store)->revision()), "starting the engine");

  ApplyQueues(args, *engine);
  Die((*store)->Commit(ToBatch(engine->TakeChanges(), /*log_events=*/false)), "commit");
  uint64_t written = 0;
  int64_t admitted = 0;
  for (int64_t first = 0; first < args.workloads; first += kSubmitsPerBatch) {
    const int64_t end = std::min<int64_t>(first + kSubmitsPerBatch, args.workloads);
    const absl::Time now = kT0 + absl::Seconds(1 + first / kSubmitsPerBatch);
    for (int64_t i = first; i < end; ++i) {
      absl::StatusOr<v1::SubmitResponse> submitted =
          engine->Submit(MakeSubmit(args, i), now, engine::Engine::Answer::kReference);
      Die(submitted.status(), "submit");
    }
    engine::CycleStats cycle;
    do {
      cycle = engine->RunCycle(now);
      admitted += cycle.admitted;
    } while (cycle.more);
    store::Batch batch = ToBatch(engine->TakeChanges(), end + args.events > args.workloads);
    written += batch.writes.size();
    Die((*store)->Commit(batch), "commit");
    if (end % args.report_every == 0 || end == args.workloads) {
      std::printf("  built %7lld workloads (%lld admitted) in %5.1fs\n",
                  static_cast<long long>(end), static_cast<long long>(admitted),
                  absl::ToDoubleSeconds(absl::Now() - start));
      std::fflush(stdout);
    }
  }
  absl::StatusOr<uint64_t> compacted = (*store)->CompactEvents();
  Die(compacted.status(), "compacting the event log");
  const uint64_t revision = (*store)->revision();
  engine.reset();
  Die((*store)->Close(), "closing the store");
  uintmax_t bytes = 0;
  for (const auto& f : std::filesystem::directory_iterator(args.data_dir)) {
    if (f.is_regular_file()) bytes += f.file_size();
  }
  std::printf("built the store in %.1fs: %lld workloads (%lld admitted), %llu object writes, "
              "revision %llu, %llu MiB on disk\n",
              absl::ToDoubleSeconds(absl::Now() - start), static_cast<long long>(args.workloads),
              static_cast<long long>(admitted), static_cast<unsigned long long>(written),
              static_cast<unsigned long long>(revision),
              static_cast<unsigned long long>(bytes >> 20));
  std::fflush(stdout);
}

// ---- Recovering ------------------------------------------------------------------------------

struct Sample {
  uint64_t workloads = 0;
  double seconds = 0;
  double rss_mib = 0;
};

int RecoverOnly(const Args& args) {
  const absl::Time start = absl::Now();
  const Memory at_start = ReadMemory();
  store::StoreOptions options;
  options.path = args.data_dir;
  absl::StatusOr<std::unique_ptr<store::Store>> store = store::Store::Open(options);
  Die(store.status(), "opening the store");
  const absl::Time opened = absl::Now();
  const double open_s = absl::ToDoubleSeconds(opened - start);
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  std::printf("recovery (pid %d, GLIBC_TUNABLES=%s): store opened in %.3fs at revision %llu, "
              "RSS %.0f MiB\n",
              getpid(), tunables != nullptr ? tunables : "", open_s,
              static_cast<unsigned long long>((*store)->revision()), ReadMemory().rss_mib);
  std::printf("  %10s %9s %9s %9s %9s\n", "workloads", "elapsed", "interval", "RSS MiB", "+MiB");
  std::vector<Sample> samples = {{0, 0, ReadMemory().rss_mib}};
  absl::Time loaded = opened;
  RestoreProgress progress;
  progress.every = static_cast<uint64_t>(args.report_every);
  progress.on_workloads = [&](uint64_t workloads) {
    Sample s{workloads, absl::ToDoubleSeconds(absl::Now() - opened), ReadMemory().rss_mib};
    std::printf("  %10llu %8.3fs %8.3fs %9.0f %9.0f\n", static_cast<unsigned long long>(workloads),
                s.seconds, s.seconds - samples.back().seconds, s.rss_mib,
                s.rss_mib - samples.back().rss_mib);
    std::fflush(stdout);
    samples.push_back(s);
  };
  progress.on_loaded = [&](uint64_t) { loaded = absl::Now(); };

  engine::Engine engine;
  uint64_t objects = 0;
  Die(RestoreFromStore(**store, &engine, &objects, &progress), "recovering");
  const absl::Time finished = absl::Now();
  const double cpu_s = CpuSeconds();
  const Memory after = ReadMemory();

  const double load_s = absl::ToDoubleSeconds(loaded - opened);
  const double finish_s = absl::ToDoubleSeconds(finished - loaded);
  const double total_s = absl::ToDoubleSeconds(finished - start);
  int64_t workloads = 0, pending = 0;
  for (const auto& [kind, count] : engine.ObjectCounts()) {
    if (kind == "Workload") workloads = count;
  }
  for (const engine::PendingCount& p : engine.PendingCounts()) pending += p.active + p.inadmissible;
  std::printf("  loaded %llu objects in %.3fs; FinishRestore %.3fs; RSS %.0f MiB\n",
              static_cast<unsigned long long>(objects), load_s, finish_s, after.rss_mib);
  std::printf("  %lld workloads: %lld holding quota, %lld pending\n",
              static_cast<long long>(workloads), static_cast<long long>(workloads - pending),
              static_cast<long long>(pending));
  // Linearity: the last interval against the first, in time and in memory.
  double time_ratio = 0, rss_ratio = 0;
  if (samples.size() >= 3) {
    const Sample &a = samples[0], &b = samples[1];
    const Sample &y = samples[samples.size() - 2], &z = samples.back();
    time_ratio = (z.seconds - y.seconds) / (b.seconds - a.seconds);
    rss_ratio = (z.rss_mib - y.rss_mib) / (b.rss_mib - a.rss_mib);
    std::printf("  last %lld vs first: time x%.2f, memory x%.2f\n",
                static_cast<long long>(args.report_every), time_ratio, rss_ratio);
  }
  std::printf("  total %.3fs (open %.3fs + load %.3fs + FinishRestore %.3fs), CPU %.3fs, "
              "peak RSS %.0f MiB (%.0f MiB at start)\n",
              total_s, open_s, load_s, finish_s, cpu_s, after.peak_mib, at_start.rss_mib);
  // What comes next on a restarted server: a scheduling cycle over every queue, and an operator
  // listing every workload (the workloads restored encoded must stay so when only read).
  const absl::Time cycle_start = absl::Now();
  engine.RunCycle(cycle_start);
  engine.TakeChanges();
  const double cycle_s = absl::ToDoubleSeconds(absl::Now() - cycle_start);
  const double cycle_rss = ReadMemory().rss_mib;
  const absl::Time list_start = absl::Now();
  v1::ListWorkloadsRequest list;
  list.set_page_size(500);
  uint64_t listed = 0;
  do {
    absl::StatusOr<v1::ListWorkloadsResponse> page = engine.ListWorkloads(list);
    Die(page.status(), "listing workloads");
    listed += page->workloads_size();
    list.set_page_token(page->next_page_token());
  } while (!list.page_token().empty());
  const double list_s = absl::ToDoubleSeconds(absl::Now() - list_start);
  const Memory listed_memory = ReadMemory();
  std::printf("  then: one scheduling cycle %.3fs (RSS %.0f MiB); listing all %llu workloads "
              "%.3fs (RSS %.0f MiB, peak %.0f MiB)\n",
              cycle_s, cycle_rss, static_cast<unsigned long long>(listed), list_s,
              listed_memory.rss_mib, listed_memory.peak_mib);
  std::printf("{\"bench\":\"recovery\",\"workloads\":%lld,\"objects\":%llu,\"open_s\":%.3f,"
              "\"load_s\":%.3f,\"finish_restore_s\":%.3f,\"total_s\":%.3f,\"cpu_s\":%.3f,"
              "\"peak_rss_mib\":%.0f,\"last_vs_first_time\":%.2f,\"last_vs_first_rss\":%.2f,"
              "\"first_cycle_s\":%.3f,\"list_all_s\":%.3f,\"rss_after_list_mib\":%.0f}\n",
              static_cast<long long>(workloads), static_cast<unsigned long long>(objects), open_s,
              load_s, finish_s, total_s, cpu_s, after.peak_mib, time_ratio, rss_ratio, cycle_s,
              list_s, listed_memory.rss_mib);
  std::fflush(stdout);
  Die((*store)->Close(), "closing the store");
  // Freeing the engine's millions of allocations would take seconds and measures nothing.
  _exit(0);
}

// Runs this binary with --recover-only on the same store and waits for it.
int RecoverInChild(const Args& args) {
  std::vector<std::string> argv_strings = {
      "recovery_bench", "--recover-only", "--data-dir", args.data_dir,
      "--report-every", absl::StrCat(args.report_every)};
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    return 1;
  }
  if (pid == 0) {
    execv("/proc/self/exe", argv.data());
    std::perror("execv");
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    std::perror("waitpid");
    return 1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "the recovering process failed (wait status %d)\n", status);
    return 1;
  }
  return 0;
}

bool ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    bool ok = true;
    if (flag == "--workloads") {
      ok = absl::SimpleAtoi(value(), &args->workloads) && args->workloads > 0;
    } else if (flag == "--queues") {
      ok = absl::SimpleAtoi(value(), &args->queues) && args->queues > 0;
    } else if (flag == "--cohorts") {
      ok = absl::SimpleAtoi(value(), &args->cohorts) && args->cohorts > 0;
    } else if (flag == "--events") {
      ok = absl::SimpleAtoi(value(), &args->events) && args->events >= 0;
    } else if (flag == "--report-every") {
      ok = absl::SimpleAtoi(value(), &args->report_every) && args->report_every > 0;
    } else if (flag == "--data-dir") {
      args->data_dir = value();
      ok = !args->data_dir.empty();
    } else if (flag == "--keep") {
      args->keep = true;
    } else if (flag == "--recover-only") {
      args->recover_only = true;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad or unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  return true;
}

int Main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) return 2;
  if (args.recover_only) {
    if (args.data_dir.empty()) {
      std::fprintf(stderr, "--recover-only needs --data-dir\n");
      return 2;
    }
    return RecoverOnly(args);
  }
  if (args.data_dir.empty()) {
    args.data_dir = absl::StrCat("/tmp/recovery_bench_", getpid());
  }
  const bool exists = std::filesystem::exists(args.data_dir + "/CURRENT");
  if (exists && args.keep) {
    std::printf("reusing the store in %s\n", args.data_dir.c_str());
  } else {
    std::filesystem::remove_all(args.data_dir);
    std::printf("building a store of %lld workloads over %d ClusterQueues in %d cohorts in %s\n",
                static_cast<long long>(args.workloads), args.queues, args.cohorts,
                args.data_dir.c_str());
    std::fflush(stdout);
    BuildStore(args);
  }
  const int rc = RecoverInChild(args);
  if (!args.keep) std::filesystem::remove_all(args.data_dir);
  return rc;
}

}  // namespace
}  // namespace admitd

int main(int argc, char** argv) { return admitd::Main(argc, argv); }
