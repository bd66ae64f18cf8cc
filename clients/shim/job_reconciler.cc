#include "clients/shim/job_reconciler.h"

#include <openssl/sha.h>

#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/shim/elastic_pods.h"
#include "clients/shim/job_multikueue.h"
#include "clients/shim/job_status.h"
#include "clients/shim/podset_info.h"
#include "clients/shim/reconcile_util.h"
#include "common/log.h"
#include "google/protobuf/util/message_differencer.h"

namespace admitd::shim {
namespace {

using google::protobuf::util::MessageDifferencer;
using reconcile::Admitted;
using reconcile::Finished;
using reconcile::FromGrpc;
using reconcile::Live;
using reconcile::Meta;
using reconcile::OwnedByManagedKind;
using reconcile::Reserved;
using reconcile::SameContainers;
using reconcile::SameTolerations;
using reconcile::SetDeadline;
using reconcile::Str;




std::string JobPath(const std::string& ns, const std::string& name) {
  return absl::StrCat("/apis/batch/v1/namespaces/", ns, "/jobs/", name);
}







}  // namespace

std::string ContainersDigest(const nlohmann::json& pod_template) {
  const nlohmann::json spec = pod_template.value("spec", nlohmann::json::object());
  const std::string text =
      nlohmann::json{{"containers", spec.value("containers", nlohmann::json::array())},
                     {"initContainers", spec.value("initContainers", nlohmann::json::array())}}
          .dump();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), 16));
}

JobReconciler::JobReconciler(const KubeClient& kube, AdmitdLink& admitd, const Informer& jobs,
                             const Informer& pods, EventRecorder& events,
                             JobReconcilerOptions options)
    : kube_(kube),
      admitd_(admitd),
      jobs_(jobs),
      pods_(pods),
      events_(events),
      options_(std::move(options)) {}

absl::Status JobReconciler::Reconcile(const std::string& key) {
  ++counters_.reconciles;
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return absl::OkStatus();
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  std::optional<nlohmann::json> job = jobs_.Get(key);
  std::vector<v1::Workload> workloads = admitd_.WorkloadsOf(kJobOwnerKind, ns, name);
  if (!Live(job)) {
    return Finalize(ns, name, workloads);
  }
  if (options_.excluded_namespaces.count(ns)) return absl::OkStatus();
  const nlohmann::json labels = Meta(*job).value("labels", nlohmann::json::object());
  if (Str(labels, "kueue.x-k8s.io/queue-name").empty() &&
      !options_.manage_jobs_without_queue_name) {
    return absl::OkStatus();
  }
  if (OwnedByManagedKind(*job)) return absl::OkStatus();
  // A Job that uses a prebuilt Workload never gets one of its own.
  if (std::string prebuilt = PrebuiltWorkloadName(*job); !prebuilt.empty()) {
    return ReconcilePrebuilt(*job, prebuilt);
  }

  // Workloads of an earlier Job of the same name go.
  const std::string uid = Str(Meta(*job), "uid");
  std::vector<v1::Workload> owned;
  for (v1::Workload& wl : workloads) {
    if (ControllerOwner(wl)->uid() == uid) {
      owned.push_back(std::move(wl));
    } else if (absl::Status s = DeleteWorkload(wl); !s.ok()) {
      return s;
    }
  }

  absl::StatusOr<v1::Workload> built = Build(key, *job);
  if (!built.ok()) {
    ADMITD_LOG(kWarning, "job cannot be read", {{"job", key}, {"error", built.status().ToString()}});
    return absl::OkStatus();  // nothing to do until the Job changes
  }

  const nlohmann::json annotations = Meta(*job).value("annotations", nlohmann::json::object());
  if (options_.workload.elastic_jobs && Str(annotations, "kueue.x-k8s.io/elastic-job") == "true") {
    return ReconcileElastic(*job, *built, std::move(owned));
  }

  // One Workload that matches the Job (§1.7 step 1, §1.8).
  const v1::Workload* match = nullptr;
  std::vector<const v1::Workload*> others;
  for (const v1::Workload& wl : owned) {
    if (match == nullptr && Equivalent(*job, *built, wl)) {
      match = &wl;
    } else {
      others.push_back(&wl);
    }
  }
  const bool suspended = IsSuspended(*job);
  if (match == nullptr && !others.empty()) {
    const v1::Workload& first = *others.front();
    if (suspended && !Reserved(first) && !Finished(first)) {
      // A pending Workload follows the suspended Job's changes (Kueue updates it in place).
      if (absl::Status s = DeleteWorkload(first); !s.ok()) return s;
      absl::Status s = Submit(*job, *built, /*record_created=*/false);
      if (s.ok()) {
        events_.Record(*job, "Normal", "UpdatedWorkload",
                       absl::StrCat("Updated not matching Workload for suspended job: ", ns, "/",
                                    built->metadata().name()),
                       kJobController);
      }
      return s;
    }
  }
  // A running Job without a matching Workload runs outside any quota: stop it (Kueue does so
  // whether or not a Workload exists); it is submitted once its pods are gone.
  if (match == nullptr && !suspended && !JobFinished(*job)) {
    const bool one = others.size() == 1;
    if (absl::Status s = Stop(*job, one ? others.front() : nullptr,
                              one ? "No matching Workload; restoring pod templates according "
                                    "to existent Workload"
                                  : "Missing Workload; unable to restore pod templates");
        !s.ok()) {
      return s;
    }
    if (others.empty()) return absl::OkStatus();  // submitted once no pod is active
  }
  for (const v1::Workload* wl : others) {
    if (absl::Status s = DeleteWorkload(*wl); !s.ok()) return s;
    events_.Record(*job, "Normal", "DeletedWorkload",
                   absl::StrCat("Deleted not matching Workload: ", ns, "/", wl->metadata().name()),
                   kJobController);
  }
  if (match == nullptr && !others.empty()) {
    return absl::AbortedError("not matching Workloads deleted: reconcile again");
  }
  return ReconcileWith(*job, *built, match, /*elastic=*/false);
}

absl::Status JobReconciler::ReconcilePrebuilt(const nlohmann::json& job,
                                              const std::string& prebuilt) {
  const nlohmann::json meta = Meta(job);
  const std::string ns = Str(meta, "namespace"), name = Str(meta, "name"), uid = Str(meta, "uid");
  std::optional<v1::Workload> wl = admitd_.Workload(ns, prebuilt);
  const bool elastic = options_.workload.elastic_jobs &&
                       Str(Meta(job).value("annotations", nlohmann::json::object()),
                           "kueue.x-k8s.io/elastic-job") == "true";
  // An elastic Job whose copy is being replaced by a scale-up slice waits to be moved to it.
  if (elastic && (!wl || Finished(*wl)) && HasReplacement(ns, prebuilt)) return absl::OkStatus();
  if (!wl) {
    // A MultiKueue worker's Job goes with its copy: the manager withdrew it. Any other Job
    // waits for its Workload.
    if (!IsMultiKueueWorkerJob(job)) return absl::OkStatus();
    absl::StatusOr<nlohmann::json> r = kube_.DeleteUid(JobPath(ns, name), uid, "Background");
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
    ++counters_.withdrawn;
    ADMITD_LOG(kInfo, "multikueue job deleted: its copy was withdrawn",
               {{"job", ns + "/" + name}, {"workload", prebuilt}});
    return absl::OkStatus();
  }
  const v1::OwnerReference* owner = ControllerOwner(*wl);
  if (owner != nullptr && owner->uid() != uid) return absl::OkStatus();  // another Job's
  if (owner == nullptr) {
    // Adoption binds the Workload to this Job's uid for good, so the Job must be the one the
    // API server holds now: after a re-dispatch to this cluster the informer may still hold the
    // Job deleted a moment ago, with the same name as the one made for the new copy.
    if (absl::StatusOr<bool> current = IsCurrent(ns, name, uid); !current.ok()) {
      return current.status();
    } else if (!*current) {
      return absl::OkStatus();  // the informer's next event of this name reconciles again
    }
  }
  v1::UpdateRemoteJobRequest req;
  req.set_namespace_(ns);
  req.set_name(prebuilt);
  req.set_uid(wl->metadata().uid());
  if (owner == nullptr) {
    v1::OwnerReference* adopt = req.mutable_adopt();
    adopt->set_api_version("batch/v1");
    adopt->set_kind(kJobOwnerKind);
    adopt->set_name(name);
    adopt->set_uid(uid);
    adopt->set_controller(true);
  }
  // A MultiKueue copy reports the Job's status to its manager (before any finish below).
  const std::string status = job.value("status", nlohmann::json::object()).dump();
  if (wl->metadata().labels().count(kMultiKueueOriginLabel) &&
      wl->remote_job().status() != status) {
    req.set_status(status);
  }
  if (req.has_adopt() || req.has_status()) {
    v1::UpdateRemoteJobResponse resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    grpc::Status s = admitd_.admission().UpdateRemoteJob(&ctx, req, &resp);
    admitd_.ReportCall(s);
    if (!s.ok()) return FromGrpc("update remote job", s);
    admitd_.Remember(resp.workload());
    if (req.has_status()) ++counters_.reported;
    if (req.has_adopt()) {
      ADMITD_LOG(kInfo, "prebuilt workload adopted",
                 {{"job", ns + "/" + name}, {"uid", uid}, {"workload", ns + "/" + prebuilt}});
    }
    wl = resp.workload();
  }
  absl::StatusOr<v1::Workload> built = Build(ns + "/" + name, job);
  if (!built.ok()) return absl::OkStatus();
  if (elastic && IsMultiKueueWorkerJob(job) && Admitted(*wl) && !Finished(*wl) &&
      wl->spec().pod_sets_size() > 0) {
    // The manager resizes the copy; the Job follows it (KEP-77 across clusters).
    const nlohmann::json& spec = job.value("spec", nlohmann::json::object());
    if (spec.value("parallelism", 1) != wl->spec().pod_sets(0).count()) {
      return PatchJob(job, {{"spec", {{"parallelism", wl->spec().pod_sets(0).count()}}}});
    }
  }
  // An elastic Job's counts follow its slices, not the other way round.
  if (!elastic && !Finished(*wl) && !Equivalent(job, *built, *wl)) {
    v1::ReleaseQuotaRequest out_of_sync;
    out_of_sync.set_namespace_(ns);
    out_of_sync.set_name(prebuilt);
    out_of_sync.set_uid(wl->metadata().uid());
    out_of_sync.mutable_finished()->set_reason("OutOfSync");
    out_of_sync.mutable_finished()->set_message(
        "The prebuilt workload is out of sync with its user job");
    return ReleaseQuota(out_of_sync);
  }
  if (absl::Status s = ReconcileWith(job, *built, &*wl, elastic); !s.ok()) return s;
  if (elastic && !IsSuspended(job) && Admitted(*wl) && !ConditionTrue(*wl, "Evicted")) {
    return Ungate(job, {*wl});
  }
  return absl::OkStatus();
}

bool JobReconciler::HasReplacement(const std::string& ns, const std::string& name) const {
  const std::string key = ns + "/" + name;
  for (const std::string& k : admitd_.CopyKeys()) {
    const size_t slash = k.find('/');
    std::optional<v1::Workload> c = admitd_.Workload(k.substr(0, slash), k.substr(slash + 1));
    if (!c || Finished(*c)) continue;
    auto it = c->metadata().annotations().find(kReplacementForAnnotation);
    if (it != c->metadata().annotations().end() && it->second == key) return true;
  }
  return false;
}

absl::StatusOr<bool> JobReconciler::IsCurrent(const std::string& ns, const std::string& name,
                                              const std::string& uid) const {
  absl::StatusOr<nlohmann::json> live = kube_.Get(JobPath(ns, name));
  if (!live.ok()) {
    if (live.status().code() == absl::StatusCode::kNotFound) return false;
    return live.status();
  }
  return Str(Meta(*live), "uid") == uid && Live(std::optional<nlohmann::json>(*live));
}

absl::StatusOr<v1::Workload> JobReconciler::Build(const std::string& key,
                                                  const nlohmann::json& job) {
  const std::string uid = Str(Meta(job), "uid"), rv = Str(Meta(job), "resourceVersion");
  {
    absl::MutexLock lock(&built_mu_);
    auto it = built_.find(key);
    if (it != built_.end() && it->second.uid == uid && it->second.resource_version == rv &&
        !rv.empty()) {
      return it->second.workload;
    }
  }
  absl::StatusOr<v1::Workload> built = WorkloadForJob(job, options_.workload);
  if (!built.ok()) return built;
  (*built->mutable_metadata()->mutable_labels())[kJobClusterLabel] = options_.cluster;
  const nlohmann::json& spec = job.contains("spec") ? job["spec"] : nlohmann::json::object();
  // A MultiKueue manager's Job travels with its Workload to the worker that admits it; of
  // another Job, a MultiKueue check needs to know who manages it (to reject it).
  if (ManagedByMultiKueue(job)) {
    *built->mutable_remote_job() = RemoteJobFor(job);
  } else if (std::string managed_by = spec.is_object() ? Str(spec, "managedBy") : "";
             !managed_by.empty()) {
    built->mutable_remote_job()->set_managed_by(managed_by);
  }
  (*built->mutable_metadata()->mutable_annotations())[kContainersDigestAnnotation] =
      ContainersDigest(spec.is_object() ? spec.value("template", nlohmann::json::object())
                                        : nlohmann::json::object());
  absl::MutexLock lock(&built_mu_);
  built_[key] = Built{uid, rv, *built};
  return built;
}

absl::Status JobReconciler::Finalize(const std::string& ns, const std::string& name,
                                     const std::vector<v1::Workload>& workloads) {
  {
    absl::MutexLock lock(&built_mu_);
    built_.erase(ns + "/" + name);
  }
  // Kueue finishes them (OwnerNotFound) and the garbage collector deletes them: here, at once.
  for (const v1::Workload& wl : workloads) {
    if (absl::Status s = DeleteWorkload(wl); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status JobReconciler::ReconcileElastic(const nlohmann::json& job, const v1::Workload& built,
                                             std::vector<v1::Workload> owned) {
  std::vector<v1::Workload> live;
  for (v1::Workload& wl : owned) {
    if (!Finished(wl)) live.push_back(std::move(wl));
  }
  if (live.empty() || JobFinished(job)) {
    return ReconcileWith(job, built, live.empty() ? nullptr : &live.back(), true);
  }
  // A parallelism change resizes the chain: in place, or a new slice (admitd decides).
  const v1::Workload& newest = live.back();
  bool same = newest.spec().pod_sets_size() == built.spec().pod_sets_size();
  for (int i = 0; same && i < built.spec().pod_sets_size(); ++i) {
    same = newest.spec().pod_sets(i).count() == built.spec().pod_sets(i).count();
  }
  if (!same) {
    const nlohmann::json meta = Meta(job);
    v1::ResizeRequest req;
    req.set_namespace_(Str(meta, "namespace"));
    req.mutable_job()->set_api_version("batch/v1");
    req.mutable_job()->set_kind("Job");
    req.mutable_job()->set_name(Str(meta, "name"));
    req.mutable_job()->set_uid(Str(meta, "uid"));
    req.set_generation(meta.value("generation", int64_t{1}));
    for (const v1::PodSet& ps : built.spec().pod_sets()) {
      v1::PodSetCount* c = req.add_pod_sets();
      c->set_name(ps.name());
      c->set_count(ps.count());
    }
    v1::ResizeResponse resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    grpc::Status s = admitd_.admission().Resize(&ctx, req, &resp);
    admitd_.ReportCall(s);
    if (!s.ok()) return FromGrpc("resize", s);
    ++counters_.resizes;
    for (const v1::Workload& wl : resp.workloads()) admitd_.Remember(wl);
    return absl::OkStatus();  // the next reconcile sees the new counts
  }
  // The slice that counts: the newest holding a reservation (a scale-up waits behind it).
  const v1::Workload* current = &live.back();
  for (auto it = live.rbegin(); it != live.rend(); ++it) {
    if (Reserved(*it)) {
      current = &*it;
      break;
    }
  }
  if (absl::Status s = ReconcileWith(job, built, current, true); !s.ok()) return s;
  if (!IsSuspended(job) && Admitted(*current) && !ConditionTrue(*current, "Evicted")) {
    return Ungate(job, {*current});
  }
  return absl::OkStatus();
}

absl::Status JobReconciler::ReconcileWith(const nlohmann::json& job, const v1::Workload& built,
                                          const v1::Workload* wl, bool elastic) {
  // A MultiKueue manager's Job shows the status of the Job that runs in the worker.
  if (wl != nullptr && !wl->remote_job().status().empty() && ManagedByMultiKueue(job)) {
    const nlohmann::json remote =
        nlohmann::json::parse(wl->remote_job().status(), nullptr, /*allow_exceptions=*/false);
    if (std::optional<nlohmann::json> patch = MirrorStatusPatch(job, remote)) {
      absl::Status s = PatchJob(job, *std::move(patch), /*status=*/true);
      if (s.ok()) ++counters_.mirrored;
      return s;  // the Job's next version is reconciled again
    }
  }
  if (wl != nullptr && Finished(*wl)) return absl::OkStatus();
  const std::string ns = Str(Meta(job), "namespace");
  if (std::optional<JobFinish> finish = JobFinished(job)) {
    if (wl == nullptr) return absl::OkStatus();  // a finished Job never gets a Workload
    v1::ReleaseQuotaRequest req;
    req.set_namespace_(ns);
    req.set_name(wl->metadata().name());
    req.set_uid(wl->metadata().uid());
    req.mutable_finished()->set_succeeded(finish->succeeded);
    req.mutable_finished()->set_message(finish->message);
    if (absl::Status s = ReleaseQuota(req); !s.ok()) return s;
    events_.Record(job, "Normal", "FinishedWorkload",
                   absl::StrCat("Workload '", ns, "/", wl->metadata().name(),
                                "' is declared finished"),
                   kJobController);
    return absl::OkStatus();
  }
  if (wl == nullptr) {
    if (JobActive(job) && !elastic) return absl::OkStatus();  // wait for its pods to go
    return Submit(job, built);
  }

  // Reclaimable pods (§2.5), capped to the pod set's count.
  if (int n = JobReclaimablePods(job); n > 0 && wl->spec().pod_sets_size() > 0) {
    n = std::min(n, wl->spec().pod_sets(0).count());
    const std::string pod_set = wl->spec().pod_sets(0).name();
    int reported = 0;
    for (const v1::ReclaimablePod& p : wl->status().reclaimable_pods()) {
      if (p.name() == pod_set) reported = p.count();
    }
    if (n != reported && Reserved(*wl)) {
      v1::ReleaseQuotaRequest req;
      req.set_namespace_(ns);
      req.set_name(wl->metadata().name());
      req.set_uid(wl->metadata().uid());
      v1::ReclaimablePod* p = req.mutable_reclaimable()->add_pods();
      p->set_name(pod_set);
      p->set_count(n);
      return ReleaseQuota(req);
    }
  }

  if (const v1::Condition* evicted = FindCondition(*wl, "Evicted");
      evicted != nullptr && evicted->status() == "True") {
    if (absl::Status s = Stop(job, wl, evicted->message()); !s.ok()) return s;
    if (Reserved(*wl) && !JobActive(job)) {
      v1::ReleaseQuotaRequest req;
      req.set_namespace_(ns);
      req.set_name(wl->metadata().name());
      req.set_uid(wl->metadata().uid());
      req.mutable_stopped();
      return ReleaseQuota(req);
    }
    return absl::OkStatus();  // quota goes back once the Job's pods are gone
  }
  if (IsSuspended(job)) {
    return Admitted(*wl) ? Start(job, *wl, elastic) : absl::OkStatus();
  }
  if (!Admitted(*wl) && !elastic) return Stop(job, wl, "Not admitted by cluster queue");
  return reconcile::ReportPodsReady(admitd_, *wl, JobPodsReady(job));
}

absl::Status JobReconciler::Submit(const nlohmann::json& job, const v1::Workload& built,
                                   bool record_created) {
  v1::SubmitRequest req;
  *req.mutable_workload() = built;
  v1::SubmitResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  grpc::Status s = admitd_.admission().Submit(&ctx, req, &resp);
  admitd_.ReportCall(s);
  if (!s.ok()) return FromGrpc("submit", s);
  admitd_.Remember(resp.workload());
  if (resp.created()) ++counters_.submits;
  if (resp.created() && record_created) {
    events_.Record(job, "Normal", "CreatedWorkload",
                   absl::StrCat("Created Workload: ", built.metadata().namespace_(), "/",
                                built.metadata().name()),
                   kJobController);
  }
  return absl::OkStatus();
}

absl::Status JobReconciler::DeleteWorkload(const v1::Workload& wl) {
  absl::Status s = reconcile::DeleteWorkload(admitd_, wl);
  if (s.ok()) ++counters_.deletes;
  return s;
}

absl::Status JobReconciler::ReleaseQuota(const v1::ReleaseQuotaRequest& req) {
  absl::Status s = reconcile::ReleaseQuota(admitd_, req);
  if (s.ok()) ++counters_.releases;
  return s;
}

absl::Status JobReconciler::Start(const nlohmann::json& job, const v1::Workload& wl,
                                  bool elastic) {
  absl::StatusOr<std::map<std::string, v1::ResourceFlavor>> flavors =
      reconcile::AdmittedFlavors(admitd_, wl);
  if (!flavors.ok()) return flavors.status();
  absl::StatusOr<std::vector<PodSetInfo>> infos = PodSetInfos(wl, *flavors);
  absl::StatusOr<nlohmann::json> patch =
      infos.ok() ? StartPatch(job, *infos, elastic) : absl::StatusOr<nlohmann::json>(infos.status());
  if (!patch.ok()) {
    // Permanent (Kueue finishes the Workload with reason FailedToStart).
    v1::ReleaseQuotaRequest req;
    req.set_namespace_(wl.metadata().namespace_());
    req.set_name(wl.metadata().name());
    req.set_uid(wl.metadata().uid());
    req.mutable_finished()->set_succeeded(false);
    req.mutable_finished()->set_message(std::string(patch.status().message()));
    return ReleaseQuota(req);
  }
  absl::Status s = PatchJob(job, *patch);
  if (!s.ok()) return s;
  ++counters_.starts;
  events_.Record(job, "Normal", "Started",
                 absl::StrCat("Admitted by clusterQueue ", wl.status().admission().cluster_queue()),
                 kJobController);
  return absl::OkStatus();
}

absl::Status JobReconciler::Stop(const nlohmann::json& job, const v1::Workload* wl,
                                 const std::string& message) {
  StopPlan plan;
  if (wl != nullptr) {
    plan = PlanStop(job, *wl);
  } else {
    // No template to restore; the other steps as always (startTime must go before a start may
    // change the template).
    const nlohmann::json& spec = job.contains("spec") ? job["spec"] : nlohmann::json::object();
    if (!spec.is_object() || !spec.value("suspend", false)) {
      plan.suspend = {{"metadata", {{"annotations", {{"kueue.x-k8s.io/stopping", "true"}}}}},
                      {"spec", {{"suspend", true}}}};
    }
    const nlohmann::json status = job.value("status", nlohmann::json::object());
    plan.clear_start_time =
        status.is_object() && status.contains("startTime") && !status["startTime"].is_null();
    plan.restore = {{"metadata", {{"annotations", {{"kueue.x-k8s.io/stopping", nullptr}}}}}};
  }
  nlohmann::json current = job;
  auto apply = [&](const nlohmann::json& patch, bool status) -> absl::Status {
    nlohmann::json after = current;
    after.merge_patch(patch);
    if (after == current) return absl::OkStatus();
    nlohmann::json body = patch;
    body["metadata"]["resourceVersion"] = Str(Meta(current), "resourceVersion");
    const std::string path = JobPath(Str(Meta(current), "namespace"), Str(Meta(current), "name"));
    absl::StatusOr<nlohmann::json> r = kube_.Patch(status ? path + "/status" : path, body);
    if (!r.ok()) return r.status();
    current = *std::move(r);
    return absl::OkStatus();
  };
  if (!plan.suspend.is_null()) {
    if (absl::Status s = apply(plan.suspend, false); !s.ok()) return s;
    ++counters_.stops;
    events_.Record(job, "Normal", "Stopped", message, kJobController);
  }
  if (plan.clear_start_time) {
    if (absl::Status s = apply({{"status", {{"startTime", nullptr}}}}, true); !s.ok()) return s;
  }
  if (!plan.restore.is_null()) {
    if (absl::Status s = apply(plan.restore, false); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status JobReconciler::PatchJob(const nlohmann::json& job, nlohmann::json patch,
                                     bool status) {
  nlohmann::json after = job;
  after.merge_patch(patch);
  if (after == job) return absl::OkStatus();
  const nlohmann::json meta = Meta(job);
  patch["metadata"]["resourceVersion"] = Str(meta, "resourceVersion");
  std::string path = JobPath(Str(meta, "namespace"), Str(meta, "name"));
  if (status) path += "/status";
  return kube_.Patch(path, patch).status();
}

absl::Status JobReconciler::Ungate(const nlohmann::json& job,
                                   const std::vector<v1::Workload>& slices) {
  const v1::Workload& slice = slices.front();
  auto chain_it = slice.metadata().annotations().find("kueue.x-k8s.io/workload-slice-name");
  const std::string chain = chain_it != slice.metadata().annotations().end()
                                ? chain_it->second
                                : slice.metadata().name();
  const std::string uid = Str(Meta(job), "uid");
  std::vector<nlohmann::json> pods = pods_.Select([&](const nlohmann::json& pod) {
    for (const nlohmann::json& ref : Meta(pod).value("ownerReferences", nlohmann::json::array())) {
      if (Str(ref, "uid") == uid) return true;
    }
    return false;
  });
  std::map<std::string, int> admitted;
  for (const v1::PodSet& ps : slice.spec().pod_sets()) admitted[ps.name()] = ps.count();
  std::map<std::string, const nlohmann::json*> by_name;
  for (const nlohmann::json& pod : pods) by_name[Str(Meta(pod), "name")] = &pod;
  for (const std::string& name : PodsToUngate(pods, chain, admitted)) {
    const nlohmann::json& pod = *by_name[name];
    absl::StatusOr<nlohmann::json> r = kube_.Patch(
        absl::StrCat("/api/v1/namespaces/", Str(Meta(pod), "namespace"), "/pods/", name),
        UngatePatch(pod));
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) return r.status();
    ++counters_.ungated;
  }
  return absl::OkStatus();
}

bool JobReconciler::Equivalent(const nlohmann::json& job, const v1::Workload& built,
                               const v1::Workload& wl) const {
  const v1::WorkloadSpec& a = built.spec();
  const v1::WorkloadSpec& b = wl.spec();
  if (a.has_maximum_execution_time_seconds() != b.has_maximum_execution_time_seconds() ||
      a.maximum_execution_time_seconds() != b.maximum_execution_time_seconds()) {
    return false;
  }
  if (a.pod_sets_size() != b.pod_sets_size()) return false;
  const bool reserved = Reserved(wl);
  for (int i = 0; i < a.pod_sets_size(); ++i) {
    const v1::PodSet& x = a.pod_sets(i);
    const v1::PodSet& y = b.pod_sets(i);
    bool count_ok = x.count() == y.count();
    // A partially admitted Job runs with its admitted count.
    if (!count_ok && reserved && i < wl.status().admission().pod_set_assignments_size()) {
      count_ok = x.count() == wl.status().admission().pod_set_assignments(i).count();
    }
    if (!count_ok) return false;
    if (x.has_min_count() != y.has_min_count() || x.min_count() != y.min_count()) return false;
    if (!Admitted(wl) && !SameTolerations(x.template_().spec(), y.template_().spec())) {
      return false;
    }
  }
  // Containers and init containers, whole: by the digest recorded at submission when there is
  // one, else as far as the Workload keeps them.
  auto want = built.metadata().annotations().find(kContainersDigestAnnotation);
  auto have = wl.metadata().annotations().find(kContainersDigestAnnotation);
  if (have != wl.metadata().annotations().end()) return have->second == want->second;
  for (int i = 0; i < a.pod_sets_size(); ++i) {
    const v1::PodSpec& x = a.pod_sets(i).template_().spec();
    const v1::PodSpec& y = b.pod_sets(i).template_().spec();
    if (!SameContainers(x.containers(), y.containers()) ||
        !SameContainers(x.init_containers(), y.init_containers())) {
      return false;
    }
  }
  (void)job;
  return true;
}

}  // namespace admitd::shim
