#include "integration/crashloop/load.h"

#include <chrono>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "admitd/v1/pod_service.grpc.pb.h"

namespace admitd::crashloop {
namespace {

using testing::HoldsQuota;

constexpr int kMaxLive = 8;     // submitted workloads a worker keeps live
constexpr int kMaxPending = 4;  // beyond this many waiting, it finishes one unadmitted
constexpr int kMaxImports = 1;  // imported workloads live at once (they may exceed quota)
constexpr int kMaxGroups = 2;   // pod groups in flight
constexpr int kJobs = 2;        // elastic jobs per worker
constexpr int kMaxJobPods = 5;

// Kueue's pod labels and annotations (docs/api.md, PodService).
constexpr char kQueueNameLabel[] = "kueue.x-k8s.io/queue-name";
constexpr char kManagedLabel[] = "kueue.x-k8s.io/managed";
constexpr char kGroupNameLabel[] = "kueue.x-k8s.io/pod-group-name";
constexpr char kGroupTotalCount[] = "kueue.x-k8s.io/pod-group-total-count";
constexpr char kAdmissionGate[] = "kueue.x-k8s.io/admission";

// Requests of one pod, each in another of Kubernetes' spellings; `milli` and `bytes` spell the
// same amounts for an Import's usage.
struct PodShape {
  const char* cpu;
  const char* memory;
  int64_t milli;
  int64_t bytes;
};
constexpr PodShape kShapes[] = {
    {"250m", "256Mi", 250, 256LL << 20}, {"0.5", "512Mi", 500, 512LL << 20},
    {"1", "1Gi", 1000, 1LL << 30},       {"1500m", "1.5Gi", 1500, 3LL << 29},
    {"750m", "100M", 750, 100000000},    {"2", "2e9", 2000, 2000000000},
};

enum class Outcome { kAcked, kRefused, kCutOff, kGone };

class Worker {
 public:
  Worker(const std::string& address, uint64_t seed, WorkerLedger* ledger,
         const std::atomic<bool>* stop, std::atomic<int64_t>* acked)
      : rng_(seed),
        client_(address),
        pods_(v1::PodService::NewStub(client_.channel)),
        ledger_(*ledger),
        stop_(*stop),
        acked_(*acked) {
    for (size_t i = 0; i < ledger_.workloads.size(); ++i) {
      if (!ledger_.workloads[i].done && !ledger_.workloads[i].broken) workloads_.push_back(i);
    }
    for (size_t i = 0; i < ledger_.groups.size(); ++i) {
      if (!ledger_.groups[i].done && !ledger_.groups[i].broken) groups_.push_back(i);
    }
  }

  void Run() {
    while (!stop_.load() && Step()) {
    }
  }

 private:
  // One random action; false once the server is gone.
  bool Step() {
    const int r = Uniform(20);
    if (r < 4) return SubmitWorkload();
    if (r < 9) return ProgressWorkload();
    if (r < 12) return DeleteWorkload();
    if (r < 13) return ImportWorkload();
    if (r < 16) return ResizeJob();
    return StepGroup();
  }

  int Uniform(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  std::string Queue() { return absl::StrCat("lq-", Uniform(kClusterQueues)); }
  std::string NewName(const char* kind) {
    return absl::StrCat(ledger_.prefix, kind, ledger_.next_name++);
  }
  static void Deadline(grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  // What an answer means for the write (or read) `what`.
  Outcome Classify(const grpc::Status& s, const std::string& what, bool write = true) {
    if (s.ok()) return Outcome::kAcked;
    switch (s.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:
        if (write) ++ledger_.cut_off;
        return Outcome::kGone;
      case grpc::StatusCode::DEADLINE_EXCEEDED:
      case grpc::StatusCode::CANCELLED:
      case grpc::StatusCode::UNKNOWN:
      case grpc::StatusCode::INTERNAL:
        if (write) ++ledger_.cut_off;
        return Outcome::kCutOff;
      default:
        ledger_.refusals.push_back(
            absl::StrCat(what, ": ", s.error_code(), " ", s.error_message()));
        return Outcome::kRefused;
    }
  }
  void Acked(Op op) {
    ++ledger_.acked[op];
    acked_.fetch_add(1);
  }
  // Ends a write on tracked object `t`: on an acknowledgement the cut-off state becomes the
  // acknowledged one, on a refusal it is dropped; otherwise it stays for the restart to resolve.
  template <typename T>
  bool Finish(T& t, Outcome outcome, Op op) {
    if (outcome == Outcome::kAcked) {
      t.acked = *t.cut_off;
      t.cut_off.reset();
      Acked(op);
    } else if (outcome == Outcome::kRefused) {
      t.cut_off.reset();
    }
    return outcome != Outcome::kGone;
  }

  // ---- submitted and imported workloads ------------------------------------------------------
  int CountLive(bool imported, bool pending_only) {
    int n = 0;
    for (size_t i : workloads_) {
      const TrackedWorkload& t = ledger_.workloads[i];
      if (t.imported != imported || t.done) continue;
      const bool live = t.acked.phase == WorkloadState::kLive || t.cut_off.has_value();
      if (live && (!pending_only || !t.acked.holds_quota)) ++n;
    }
    return n;
  }
  // A random usable workload in `phase`, or null.
  TrackedWorkload* Pick(WorkloadState::Phase phase) {
    std::vector<size_t> fit;
    for (size_t i : workloads_) {
      const TrackedWorkload& t = ledger_.workloads[i];
      if (t.Ready() && t.acked.phase == phase) fit.push_back(i);
    }
    return fit.empty() ? nullptr : &ledger_.workloads[fit[Uniform(static_cast<int>(fit.size()))]];
  }
  TrackedWorkload& Track(TrackedWorkload t) {
    ledger_.workloads.push_back(std::move(t));
    workloads_.push_back(ledger_.workloads.size() - 1);
    return ledger_.workloads.back();
  }

  bool SubmitWorkload() {
    if (CountLive(false, false) >= kMaxLive) return true;
    TrackedWorkload t;
    t.name = NewName("w");
    t.uid = t.name + "-uid";
    t.queue = Queue();
    t.count = 1 + Uniform(4);
    const PodShape& shape = kShapes[Uniform(static_cast<int>(std::size(kShapes)))];
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload(kNamespace, t.name, t.queue, t.count,
                                                {{"cpu", shape.cpu}, {"memory", shape.memory}});
    req.mutable_workload()->mutable_metadata()->set_uid(t.uid);
    t.cut_off = WorkloadState{WorkloadState::kLive, 0, false};
    TrackedWorkload& tracked = Track(std::move(t));
    grpc::ClientContext ctx;
    Deadline(&ctx);
    v1::SubmitResponse resp;
    const Outcome outcome =
        Classify(client_.admission->Submit(&ctx, req, &resp), "Submit " + tracked.name);
    if (outcome == Outcome::kAcked) tracked.cut_off->holds_quota = HoldsQuota(resp.workload());
    if (outcome == Outcome::kRefused) tracked.done = true;
    return Finish(tracked, outcome, Op::kSubmit);
  }

  bool ImportWorkload() {
    if (CountLive(true, false) >= kMaxImports) return true;
    TrackedWorkload t;
    t.name = NewName("i");
    t.uid = t.name + "-uid";
    const int q = Uniform(kClusterQueues);
    t.queue = absl::StrCat("lq-", q);
    t.count = 1 + Uniform(2);
    t.imported = true;
    const PodShape& shape = kShapes[Uniform(static_cast<int>(std::size(kShapes)))];
    v1::ImportRequest req;
    v1::Workload* wl = req.add_workloads();
    *wl = testing::Workload(kNamespace, t.name, t.queue, t.count,
                            {{"cpu", shape.cpu}, {"memory", shape.memory}});
    wl->mutable_metadata()->set_uid(t.uid);
    v1::Admission* admission = wl->mutable_status()->mutable_admission();
    admission->set_cluster_queue(absl::StrCat("cq-", q));
    v1::PodSetAssignment* psa = admission->add_pod_set_assignments();
    psa->set_name("main");
    psa->set_count(t.count);
    const std::string flavor = Uniform(2) == 0 ? "fa" : "fb";
    (*psa->mutable_flavors())["cpu"] = flavor;
    (*psa->mutable_flavors())["memory"] = flavor;
    (*psa->mutable_resource_usage())["cpu"] = absl::StrCat(shape.milli * t.count, "m");
    (*psa->mutable_resource_usage())["memory"] = absl::StrCat(shape.bytes * t.count);
    t.cut_off = WorkloadState{WorkloadState::kLive, 0, true};
    TrackedWorkload& tracked = Track(std::move(t));
    grpc::ClientContext ctx;
    Deadline(&ctx);
    v1::ImportResponse resp;
    const Outcome outcome =
        Classify(client_.queues->Import(&ctx, req, &resp), "Import " + tracked.name);
    if (outcome == Outcome::kRefused) tracked.done = true;
    return Finish(tracked, outcome, Op::kImport);
  }

  // Finishes an admitted workload (or reports some of its pods reclaimable), or one that waits
  // when too many do.
  bool ProgressWorkload() {
    TrackedWorkload* t = Pick(WorkloadState::kLive);
    if (t == nullptr) return true;
    if (!t->acked.holds_quota) {
      grpc::ClientContext ctx;
      Deadline(&ctx);
      v1::GetWorkloadRequest req;
      req.set_namespace_(kNamespace);
      req.set_name(t->name);
      v1::Workload wl;
      const Outcome outcome =
          Classify(client_.admission->Get(&ctx, req, &wl), "Get " + t->name, false);
      if (outcome == Outcome::kGone) return false;
      if (outcome != Outcome::kAcked) return true;
      ++ledger_.reads;
      // A read is answered after the commit it saw: the reservation is durable.
      t->acked.holds_quota = HoldsQuota(wl);
      if (!t->acked.holds_quota && CountLive(false, true) <= kMaxPending) return true;
    }
    v1::ReleaseQuotaRequest req;
    req.set_namespace_(kNamespace);
    req.set_name(t->name);
    req.set_uid(t->uid);
    Op op = Op::kFinish;
    if (t->acked.holds_quota && t->count >= 2 && t->acked.reclaimable == 0 && Uniform(3) == 0) {
      op = Op::kReclaim;
      v1::ReclaimablePod* pod = req.mutable_reclaimable()->add_pods();
      pod->set_name("main");
      pod->set_count(1);
      t->cut_off = t->acked;
      t->cut_off->reclaimable = 1;
    } else {
      req.mutable_finished()->set_succeeded(Uniform(4) != 0);
      t->cut_off = WorkloadState{WorkloadState::kFinished, t->acked.reclaimable, false};
    }
    grpc::ClientContext ctx;
    Deadline(&ctx);
    v1::ReleaseQuotaResponse resp;
    return Finish(*t,
                  Classify(client_.admission->ReleaseQuota(&ctx, req, &resp),
                           absl::StrCat("ReleaseQuota ", OpName(op), " ", t->name)),
                  op);
  }

  // Deletes a finished workload, now and then a live one (its quota goes back).
  bool DeleteWorkload() {
    TrackedWorkload* t = Pick(WorkloadState::kFinished);
    if (t == nullptr || Uniform(10) == 0) t = Pick(WorkloadState::kLive);
    if (t == nullptr) return true;
    v1::DeleteWorkloadRequest req;
    req.set_namespace_(kNamespace);
    req.set_name(t->name);
    req.set_uid(t->uid);
    t->cut_off = WorkloadState{};
    grpc::ClientContext ctx;
    Deadline(&ctx);
    v1::DeleteWorkloadResponse resp;
    const Outcome outcome =
        Classify(client_.admission->Delete(&ctx, req, &resp), "Delete " + t->name);
    const bool alive = Finish(*t, outcome, Op::kDelete);
    if (outcome == Outcome::kAcked) t->done = true;
    return alive;
  }

  // ---- elastic jobs ---------------------------------------------------------------------------
  bool ResizeJob() {
    TrackedJob& t = ledger_.jobs[Uniform(static_cast<int>(ledger_.jobs.size()))];
    if (!t.Ready()) return true;
    grpc::ClientContext ctx;
    Deadline(&ctx);
    if (!t.acked.exists) {
      v1::SubmitRequest req;
      *req.mutable_workload() = testing::ElasticJobWorkload(kNamespace, t.number, 2, t.queue);
      t.cut_off = JobState{true, 2, ""};
      v1::SubmitResponse resp;
      return Finish(t,
                    Classify(client_.admission->Submit(&ctx, req, &resp),
                             absl::StrCat("Submit job-", t.number)),
                    Op::kSubmit);
    }
    int count = 1 + Uniform(kMaxJobPods);
    if (count == t.acked.count) count = count % kMaxJobPods + 1;
    // A generation is never sent twice: one cut off may have named a slice.
    v1::ResizeRequest req = testing::ElasticJobResize(kNamespace, t.number, count, ++t.generation);
    t.cut_off = JobState{true, count, t.acked.slice};
    v1::ResizeResponse resp;
    const Outcome outcome = Classify(client_.admission->Resize(&ctx, req, &resp),
                                     absl::StrCat("Resize job-", t.number, " to ", count));
    if (outcome == Outcome::kAcked && resp.outcome() == v1::ResizeResponse::SLICE_CREATED &&
        resp.workloads_size() > 0) {
      t.cut_off->slice = resp.workloads(resp.workloads_size() - 1).metadata().name();
    }
    if (outcome == Outcome::kCutOff || outcome == Outcome::kGone) {
      t.cut_off->slice = "";  // the name of a slice it may have made is unknown
    }
    return Finish(t, outcome, Op::kResize);
  }

  // ---- pod groups -----------------------------------------------------------------------------
  v1::PodObservation Pod(const TrackedGroup& g, int i, GroupState::Phase phase) {
    v1::PodObservation p;
    p.set_namespace_(kNamespace);
    p.set_name(absl::StrCat(g.name, "-", i));
    p.set_uid(absl::StrCat(g.name, "-", i, "-uid"));
    p.set_resource_version(++ledger_.resource_version);
    p.mutable_creation_timestamp()->set_seconds(1700000000 + i);
    (*p.mutable_labels())[kQueueNameLabel] = g.queue;
    (*p.mutable_labels())[kManagedLabel] = "true";
    (*p.mutable_labels())[kGroupNameLabel] = g.name;
    (*p.mutable_annotations())[kGroupTotalCount] = absl::StrCat(g.pods);
    p.add_finalizers(kManagedLabel);
    v1::Container* c = p.mutable_spec()->add_containers();
    c->set_name("c");
    (*c->mutable_resources()->mutable_requests())["cpu"] = "500m";
    (*c->mutable_resources()->mutable_requests())["memory"] = "256Mi";
    if (phase == GroupState::kCreated) {
      p.set_phase(v1::POD_PHASE_PENDING);
      p.add_scheduling_gates()->set_name(kAdmissionGate);
    } else {
      p.set_node_name("node-1");
      p.set_phase(phase == GroupState::kRunning ? v1::POD_PHASE_RUNNING : v1::POD_PHASE_SUCCEEDED);
    }
    return p;
  }

  // Whether `directives` ask to ungate every pod of `g`.
  static bool AllUngated(const TrackedGroup& g,
                         const google::protobuf::RepeatedPtrField<v1::PodDirective>& directives) {
    int n = 0;
    for (const v1::PodDirective& d : directives) {
      if (d.action() == v1::PodDirective::UNGATE && d.pod().name().rfind(g.name + "-", 0) == 0) {
        ++n;
      }
    }
    return n >= g.pods;
  }

  bool StepGroup() {
    std::vector<size_t> ready;
    for (size_t i : groups_) {
      if (ledger_.groups[i].Ready()) ready.push_back(i);
    }
    v1::ReportPodsRequest req;
    req.set_cluster(ledger_.cluster);
    TrackedGroup* g = nullptr;
    if (static_cast<int>(groups_.size()) < kMaxGroups && (ready.empty() || Uniform(3) == 0)) {
      TrackedGroup fresh;
      fresh.name = NewName("g");
      fresh.queue = Queue();
      fresh.pods = 2 + Uniform(2);
      ledger_.groups.push_back(std::move(fresh));
      groups_.push_back(ledger_.groups.size() - 1);
      g = &ledger_.groups.back();
    } else if (!ready.empty()) {
      g = &ledger_.groups[ready[Uniform(static_cast<int>(ready.size()))]];
    } else {
      return true;
    }
    GroupState::Phase next = GroupState::kCreated;
    switch (g->acked.phase) {
      case GroupState::kAbsent:
        next = GroupState::kCreated;
        break;
      case GroupState::kCreated:
        if (!g->ungate_seen) {
          grpc::ClientContext ctx;
          Deadline(&ctx);
          v1::ListDirectivesRequest list;
          list.set_cluster(ledger_.cluster);
          v1::ListDirectivesResponse resp;
          const Outcome outcome =
              Classify(pods_->ListDirectives(&ctx, list, &resp), "ListDirectives", false);
          if (outcome == Outcome::kGone) return false;
          ++ledger_.reads;
          g->ungate_seen = outcome == Outcome::kAcked && AllUngated(*g, resp.directives());
          if (!g->ungate_seen) return true;  // not admitted yet
        }
        next = GroupState::kRunning;
        break;
      case GroupState::kRunning:
        next = GroupState::kFinished;
        break;
      case GroupState::kFinished:
        next = GroupState::kAbsent;
        break;
    }
    for (int i = 0; i < g->pods; ++i) {
      if (next == GroupState::kAbsent) {
        v1::PodDeletion* d = req.add_deleted();
        d->set_namespace_(kNamespace);
        d->set_name(absl::StrCat(g->name, "-", i));
        d->set_uid(absl::StrCat(g->name, "-", i, "-uid"));
        d->set_resource_version(++ledger_.resource_version);
      } else {
        *req.add_pods() = Pod(*g, i, next);
      }
    }
    g->cut_off = GroupState{next};
    grpc::ClientContext ctx;
    Deadline(&ctx);
    v1::ReportPodsResponse resp;
    const std::string what = absl::StrCat("ReportPods ", g->name);
    Outcome outcome = Classify(pods_->ReportPods(&ctx, req, &resp), what);
    if (outcome == Outcome::kAcked && resp.errors_size() > 0) {
      ledger_.refusals.push_back(absl::StrCat(what, ": ", resp.errors(0).message()));
      outcome = Outcome::kRefused;
    }
    if (outcome == Outcome::kAcked && next == GroupState::kCreated) {
      g->ungate_seen = AllUngated(*g, resp.directives());
    }
    const bool alive = Finish(*g, outcome, Op::kReportPods);
    if (g->acked.phase == GroupState::kAbsent && !g->cut_off.has_value()) {
      g->done = true;  // deleted, or never created
      for (size_t k = 0; k < groups_.size(); ++k) {
        if (&ledger_.groups[groups_[k]] == g) groups_.erase(groups_.begin() + k);
      }
    }
    return alive;
  }

  std::mt19937_64 rng_;
  testing::Client client_;
  std::unique_ptr<v1::PodService::Stub> pods_;
  WorkerLedger& ledger_;
  const std::atomic<bool>& stop_;
  std::atomic<int64_t>& acked_;
  std::vector<size_t> workloads_;  // indices of ledger_.workloads not done
  std::vector<size_t> groups_;     // indices of ledger_.groups not done
};

}  // namespace

absl::Status ApplyQueues(testing::Client& client) {
  std::vector<v1::ApplyRequest> objects = {testing::Flavor("fa"), testing::Flavor("fb")};
  v1::ApplyRequest cohort;
  cohort.mutable_object()->mutable_cohort()->mutable_metadata()->set_name("pool");
  objects.push_back(cohort);
  for (int i = 0; i < kClusterQueues; ++i) {
    v1::ApplyRequest cq = testing::ClusterQueue(absl::StrCat("cq-", i), {"fa", "fb"},
                                                {{"cpu", "10"}, {"memory", "20Gi"}});
    v1::ClusterQueueSpec* spec = cq.mutable_object()->mutable_cluster_queue()->mutable_spec();
    spec->set_cohort_name("pool");
    // The second flavor is smaller: workloads spill over into it and borrow across the cohort.
    for (v1::ResourceQuota& rq :
         *spec->mutable_resource_groups(0)->mutable_flavors(1)->mutable_resources()) {
      rq.set_nominal_quota(rq.name() == "cpu" ? "5" : "10Gi");
    }
    objects.push_back(cq);
    objects.push_back(
        testing::LocalQueue(kNamespace, absl::StrCat("lq-", i), absl::StrCat("cq-", i)));
  }
  for (const v1::ApplyRequest& req : objects) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ApplyResponse resp;
    grpc::Status s = client.queues->Apply(&ctx, req, &resp);
    if (!s.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                          absl::StrCat("Apply: ", s.error_message()));
    }
  }
  return absl::OkStatus();
}

WorkerLedger NewWorkerLedger(int worker, const std::string& run) {
  WorkerLedger ledger;
  ledger.worker = worker;
  ledger.prefix = absl::StrCat(run, "-", worker, "-");
  ledger.cluster = absl::StrCat("c", worker);
  // Job numbers unique in the run: the run's prefix is not part of a Job's name.
  const int base = static_cast<int>(std::hash<std::string>()(run) % 10000) * 1000;
  for (int k = 0; k < kJobs; ++k) {
    TrackedJob job;
    job.number = base + worker * kJobs + k;
    job.queue = absl::StrCat("lq-", (worker + k) % kClusterQueues);
    ledger.jobs.push_back(job);
  }
  return ledger;
}

void RunWorker(const std::string& address, uint64_t seed, WorkerLedger* ledger,
               const std::atomic<bool>* stop, std::atomic<int64_t>* acked) {
  Worker(address, seed, ledger, stop, acked).Run();
}

}  // namespace admitd::crashloop
