#include "server/multikueue/dispatcher.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "server/metrics.h"
#include "server/sequencer.h"
#include "server/watch_hub.h"

namespace admitd::multikueue {
namespace {

std::string Key(const v1::ObjectMeta& meta) {
  return absl::StrCat(meta.namespace_(), "/", meta.name());
}

const v1::Condition* FindCondition(const v1::Workload& wl, const std::string& type) {
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

bool IsTrue(const v1::Workload& wl, const std::string& type) {
  const v1::Condition* c = FindCondition(wl, type);
  return c != nullptr && c->status() == "True";
}

absl::Time TimeOf(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

bool HoldsReservation(const v1::Workload& wl) {
  return IsTrue(wl, "QuotaReserved") && !IsTrue(wl, "Finished");
}

// The manager reservation a copy belongs to: the QuotaReserved transition time.
std::string ReservationId(const v1::Workload& wl) {
  const v1::Condition* c = FindCondition(wl, "QuotaReserved");
  if (c == nullptr) return "";
  return absl::StrCat(c->last_transition_time().seconds(), ".", c->last_transition_time().nanos());
}

const v1::AdmissionCheckState* CheckState(const v1::Workload& wl, const std::string& check) {
  for (const v1::AdmissionCheckState& c : wl.status().admission_checks()) {
    if (c.name() == check) return &c;
  }
  return nullptr;
}

constexpr char kElasticJobAnnotation[] = "kueue.x-k8s.io/elastic-job";
constexpr char kReplacementForAnnotation[] = "kueue.x-k8s.io/workload-slice-replacement-for";

std::string AnnotationOf(const v1::Workload& wl, const std::string& name);

bool IsElastic(const v1::Workload& wl) { return AnnotationOf(wl, kElasticJobAnnotation) == "true"; }

// The manager scaled an elastic workload down: every count at most the copy's, one lower.
bool ScaledDown(const v1::Workload& local, const v1::Workload& copy) {
  if (local.spec().pod_sets_size() != copy.spec().pod_sets_size()) return false;
  bool lower = false;
  for (int i = 0; i < local.spec().pod_sets_size(); ++i) {
    const v1::PodSet& l = local.spec().pod_sets(i);
    const v1::PodSet& c = copy.spec().pod_sets(i);
    if (l.name() != c.name() || l.count() > c.count()) return false;
    lower = lower || l.count() < c.count();
  }
  return lower;
}

std::string AnnotationOf(const v1::Workload& wl, const std::string& name) {
  auto it = wl.metadata().annotations().find(name);
  return it == wl.metadata().annotations().end() ? "" : it->second;
}

// Why MultiKueue cannot run the workload's job in a worker (Kueue's Rejected messages, without
// the ", Previously" part), or nothing. A workload without an owner is dispatched as it is:
// its submitter follows the copies itself.
std::optional<std::string> RejectionOf(const v1::Workload& wl) {
  const v1::OwnerReference* owner = nullptr;
  for (const v1::OwnerReference& o : wl.metadata().owner_references()) {
    if (o.controller()) owner = &o;
  }
  if (owner == nullptr && !wl.metadata().owner_references().empty()) {
    owner = &wl.metadata().owner_references(0);
  }
  if (owner == nullptr) return std::nullopt;
  if (owner->api_version() == "batch/v1" && owner->kind() == "Job") {
    const std::string& managed_by = wl.remote_job().managed_by();
    if (managed_by == engine::kMultiKueueControllerName) return std::nullopt;
    return absl::StrCat("The owner is not managed by Kueue: Expecting spec.managedBy to be \"",
                        engine::kMultiKueueControllerName, "\" not \"", managed_by, "\"");
  }
  // Go's GroupVersionKind as text: "group/version, Kind=K", "/v1, Kind=Pod" for the core group.
  const std::string gv = absl::StrContains(owner->api_version(), '/')
                             ? owner->api_version()
                             : absl::StrCat("/", owner->api_version());
  return absl::StrCat("No multikueue adapter found for owner kind \"", gv, ", Kind=",
                      owner->kind(), "\"");
}

}  // namespace

Dispatcher::Dispatcher(Sequencer* sequencer, WatchHub* hub, DispatcherOptions options)
    : sequencer_(sequencer), hub_(hub), options_(std::move(options)) {}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::Start() {
  next_gc_ = absl::Now() + options_.gc_interval;
  Subscribe();
  thread_ = std::thread([this] { Run(); });
}

void Dispatcher::Subscribe() {
  WatchFilter filter;
  filter.kinds = {v1::OBJECT_KIND_WORKLOAD, v1::OBJECT_KIND_ADMISSION_CHECK,
                  v1::OBJECT_KIND_MULTIKUEUE_CONFIG, v1::OBJECT_KIND_MULTIKUEUE_CLUSTER};
  uint64_t revision = 0;
  subscription_ = hub_->Subscribe(
      std::move(filter),
      [this] {
        absl::MutexLock lock(&mu_);
        hub_pending_ = true;
      },
      &revision);
  // The state as of now, read in the sequencer; the hub's later events land on top of it (an
  // object is only replaced by a newer resource_version).
  auto snapshot = std::make_shared<Local>();
  Command command;
  command.apply = [snapshot](engine::Engine& engine, absl::Time) {
    for (v1::ObjectKind kind : {v1::OBJECT_KIND_ADMISSION_CHECK, v1::OBJECT_KIND_MULTIKUEUE_CONFIG,
                                v1::OBJECT_KIND_MULTIKUEUE_CLUSTER}) {
      v1::ListObjectsRequest req;
      req.set_kind(kind);
      do {
        absl::StatusOr<v1::ListObjectsResponse> page = engine.List(req);
        if (!page.ok()) break;
        for (const v1::QueueObject& o : page->objects()) {
          if (o.has_admission_check()) snapshot->checks[o.admission_check().metadata().name()] = o.admission_check();
          if (o.has_multi_kueue_config()) snapshot->configs[o.multi_kueue_config().metadata().name()] = o.multi_kueue_config();
          if (o.has_multi_kueue_cluster()) snapshot->clusters[o.multi_kueue_cluster().metadata().name()] = o.multi_kueue_cluster();
        }
        req.set_page_token(page->next_page_token());
      } while (!req.page_token().empty());
    }
    v1::ListWorkloadsRequest req;
    req.set_page_size(5000);
    do {
      absl::StatusOr<v1::ListWorkloadsResponse> page = engine.ListWorkloads(req);
      if (!page.ok()) break;
      for (const v1::Workload& wl : page->workloads()) {
        if (wl.status().admission_checks().empty() && wl.status().cluster_name().empty()) continue;
        snapshot->workloads[Key(wl.metadata())] = wl;
      }
      req.set_page_token(page->next_page_token());
    } while (!req.page_token().empty());
  };
  command.respond = [this, snapshot](const absl::Status&) {
    absl::MutexLock lock(&mu_);
    hub_pending_ = true;
    pending_snapshot_ = snapshot;
  };
  sequencer_->Enqueue(std::move(command));
}

void Dispatcher::Stop() {
  if (stopped_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  for (auto& [name, link] : links_) link->Stop();
  links_.clear();
  if (subscription_ != nullptr) hub_->Unsubscribe(subscription_);
}

std::map<std::string, bool> Dispatcher::WorkerStates() const {
  absl::MutexLock lock(&mu_);
  return worker_states_;
}

void Dispatcher::Mark(const std::string& key) {
  absl::MutexLock lock(&mu_);
  dirty_.insert(key);
}

void Dispatcher::WakeAt(absl::Time at, const std::string& key) { timers_.emplace(at, key); }

void Dispatcher::Run() {
  while (!stopped_.load()) {
    std::set<std::string> dirty;
    std::vector<std::tuple<std::string, bool, std::string>> states;
    bool hub = false;
    std::shared_ptr<Local> snapshot;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time next = timers_.empty() ? absl::Now() + absl::Milliseconds(200)
                                              : std::min(timers_.begin()->first,
                                                         absl::Now() + absl::Milliseconds(200));
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopped_.load() || hub_pending_ || !dirty_.empty() || !states_.empty();
      };
      mu_.AwaitWithDeadline(absl::Condition(&ready), next);
      dirty.swap(dirty_);
      states.swap(states_);
      hub = hub_pending_;
      hub_pending_ = false;
      snapshot = std::move(pending_snapshot_);
    }
    if (stopped_.load()) break;
    if (snapshot != nullptr) {
      // Objects the hub already brought newer are kept.
      auto merge = [](auto& into, auto& from) {
        for (auto& [k, v] : from) {
          auto it = into.find(k);
          if (it == into.end() ||
              it->second.metadata().resource_version() < v.metadata().resource_version()) {
            into[k] = v;
          }
        }
      };
      merge(local_.checks, snapshot->checks);
      merge(local_.configs, snapshot->configs);
      merge(local_.clusters, snapshot->clusters);
      merge(local_.workloads, snapshot->workloads);
      snapshot_loaded_ = true;
      for (const auto& [k, wl] : local_.workloads) dirty.insert(k);
      SyncLinks();
    }
    if (hub) DrainHub();
    {
      absl::MutexLock lock(&mu_);
      dirty.insert(dirty_.begin(), dirty_.end());
      dirty_.clear();
    }
    const absl::Time now = sequencer_->Now();
    for (auto& [cluster, connected, message] : states) {
      {
        absl::MutexLock lock(&mu_);
        worker_states_[cluster] = connected;
      }
      // The state is stored; every workload that may depend on this worker is looked at again
      // (kueue#10428), and so is every copy it holds (collection after a reconnect).
      Command command;
      const std::string name = cluster;
      const bool c = connected;
      const std::string m = message;
      command.apply = [name, c, m](engine::Engine& engine, absl::Time at) {
        (void)engine.SetWorkerConnection(name, c, m, at);
      };
      command.respond = [](const absl::Status&) {};
      sequencer_->Enqueue(std::move(command));
      for (const auto& [k, wl] : local_.workloads) dirty.insert(k);
      if (WorkerLink* link = LinkOf(cluster); link != nullptr) {
        for (const std::string& k : link->Keys()) dirty.insert(k);
      }
    }
    while (!timers_.empty() && timers_.begin()->first <= absl::Now()) {
      dirty.insert(timers_.begin()->second);
      timers_.erase(timers_.begin());
    }
    if (options_.gc_interval > absl::ZeroDuration() && absl::Now() >= next_gc_) {
      next_gc_ = absl::Now() + options_.gc_interval;
      for (auto& [name, link] : links_) {
        if (!link->connected()) continue;
        for (const std::string& k : link->Keys()) dirty.insert(k);
      }
    }
    if (!snapshot_loaded_) {
      // Nothing is decided before the state is known; keep what was asked for.
      absl::MutexLock lock(&mu_);
      dirty_.insert(dirty.begin(), dirty.end());
      continue;
    }
    for (const std::string& key : dirty) Reconcile(key, now);
  }
}

void Dispatcher::DrainHub() {
  std::deque<EventPtr> events;
  absl::Status closed;
  if (!subscription_->Take(&events, &closed)) {
    if (closed.code() == absl::StatusCode::kResourceExhausted) {
      // Fell behind the hub: start over from a fresh subscription and snapshot.
      ADMITD_LOG(kWarning, "multikueue dispatcher fell behind the watch hub; resubscribing");
      hub_->Unsubscribe(subscription_);
      snapshot_loaded_ = false;
      Subscribe();
      return;
    }
  }
  for (const EventPtr& ev : events) {
    const bool deleted = ev->type() == v1::WatchEvent::DELETED;
    if (ev->has_workload()) {
      ApplyWorkload(ev->workload(), deleted);
    } else if (ev->has_queue_object()) {
      ApplyQueueObject(ev->queue_object(), deleted);
    }
  }
}

void Dispatcher::ApplyQueueObject(const v1::QueueObject& o, bool deleted) {
  auto apply = [deleted](auto& table, const auto& object) {
    const std::string& name = object.metadata().name();
    auto it = table.find(name);
    if (it != table.end() &&
        it->second.metadata().resource_version() > object.metadata().resource_version()) {
      return;
    }
    if (deleted) {
      table.erase(name);
    } else {
      table[name] = object;
    }
  };
  if (o.has_admission_check()) apply(local_.checks, o.admission_check());
  if (o.has_multi_kueue_config()) apply(local_.configs, o.multi_kueue_config());
  if (o.has_multi_kueue_cluster()) {
    apply(local_.clusters, o.multi_kueue_cluster());
    SyncLinks();
  }
  // Which workloads a check, config or cluster change touches is cheap to over-approximate.
  for (const auto& [k, wl] : local_.workloads) Mark(k);
}

void Dispatcher::ApplyWorkload(const v1::Workload& wl, bool deleted) {
  const std::string key = Key(wl.metadata());
  auto it = local_.workloads.find(key);
  if (it != local_.workloads.end() &&
      it->second.metadata().resource_version() > wl.metadata().resource_version()) {
    return;
  }
  if (deleted) {
    if (it == local_.workloads.end()) return;
    local_.workloads.erase(it);
  } else if (CheckOf(wl).empty() && wl.status().cluster_name().empty()) {
    if (it == local_.workloads.end()) return;
    local_.workloads.erase(it);  // no longer dispatched: its copies go
  } else {
    local_.workloads[key] = wl;
  }
  Mark(key);
}

void Dispatcher::SyncLinks() {
  for (auto it = links_.begin(); it != links_.end();) {
    auto c = local_.clusters.find(it->first);
    if (c == local_.clusters.end() ||
        c->second.spec().admitd().SerializeAsString() !=
            it->second->endpoint().SerializeAsString()) {
      it->second->Stop();
      if (options_.metrics != nullptr) {
        options_.metrics->Set("admitd_multikueue_worker_connected",
                              "1 while the manager is connected to the worker's admitd.",
                              {{"cluster", it->first}}, 0);
      }
      it = links_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [cluster_name, cluster] : local_.clusters) {
    const std::string name = cluster_name;  // lambdas cannot capture a structured binding
    if (links_.count(name) > 0) continue;
    WorkerLinkOptions o;
    o.name = name;
    o.endpoint = cluster.spec().admitd();
    o.origin = options_.origin;
    o.backoff_base = options_.reconnect_backoff;
    o.max_backoff = options_.max_reconnect_backoff;
    o.metrics = options_.metrics;
    o.on_state = [this, name](bool connected, const std::string& message) {
      if (options_.metrics != nullptr) {
        options_.metrics->Set("admitd_multikueue_worker_connected",
                              "1 while the manager is connected to the worker's admitd.",
                              {{"cluster", name}}, connected ? 1 : 0);
      }
      absl::MutexLock lock(&mu_);
      states_.emplace_back(name, connected, message);
    };
    o.on_copy = [this](const std::string& key) { Mark(key); };
    auto link = std::make_unique<WorkerLink>(std::move(o));
    link->Start();
    links_[name] = std::move(link);
  }
}

bool Dispatcher::HasReplacement(const WorkerLink& link, const std::string& key) const {
  for (const std::string& other : link.Keys()) {
    std::optional<v1::Workload> c = link.Copy(other);
    if (c && !IsTrue(*c, "Finished") && AnnotationOf(*c, kReplacementForAnnotation) == key) {
      return true;
    }
  }
  return false;
}

WorkerLink* Dispatcher::LinkOf(const std::string& cluster) {
  auto it = links_.find(cluster);
  return it == links_.end() ? nullptr : it->second.get();
}

std::string Dispatcher::CheckOf(const v1::Workload& wl) const {
  for (const v1::AdmissionCheckState& c : wl.status().admission_checks()) {
    auto it = local_.checks.find(c.name());
    if (it != local_.checks.end() &&
        it->second.spec().controller_name() == engine::kMultiKueueControllerName) {
      return c.name();
    }
  }
  return "";
}

std::vector<std::string> Dispatcher::ClustersOf(const std::string& check) const {
  auto ac = local_.checks.find(check);
  if (ac == local_.checks.end()) return {};
  auto config = local_.configs.find(ac->second.spec().parameters().name());
  if (config == local_.configs.end()) return {};
  return {config->second.spec().clusters().begin(), config->second.spec().clusters().end()};
}

absl::Time Dispatcher::LostSince(const std::string& cluster, absl::Time now) const {
  auto it = local_.clusters.find(cluster);
  if (it == local_.clusters.end() || !it->second.status().has_disconnected_since()) return now;
  return TimeOf(it->second.status().disconnected_since());
}

v1::Workload Dispatcher::MakeCopy(const v1::Workload& wl, const std::string& cluster) const {
  v1::Workload copy;
  v1::ObjectMeta* meta = copy.mutable_metadata();
  meta->set_name(wl.metadata().name());
  meta->set_namespace_(wl.metadata().namespace_());
  meta->set_uid(wl.metadata().uid());
  *meta->mutable_labels() = wl.metadata().labels();
  *meta->mutable_annotations() = wl.metadata().annotations();
  // The worker's own Workload controller must not treat the owner-less copy as orphaned, and
  // the worker cluster's shim is the one allowed to act on it there.
  meta->mutable_labels()->erase("kueue.x-k8s.io/job-uid");
  meta->mutable_labels()->erase("admitd.io/pod-cluster");
  (*meta->mutable_labels())["admitd.io/job-cluster"] = cluster;
  (*meta->mutable_labels())[kOriginLabel] = options_.origin;
  (*meta->mutable_annotations())[kReservationAnnotation] = ReservationId(wl);
  *copy.mutable_spec() = wl.spec();
  return copy;
}

void Dispatcher::DeleteCopy(WorkerLink& link, const v1::Workload& copy) {
  link.Delete(copy.metadata().namespace_(), copy.metadata().name(), copy.metadata().uid());
}

void Dispatcher::Write(const std::string& key,
                       std::function<absl::Status(engine::Engine&, absl::Time)> write) {
  {
    absl::MutexLock lock(&mu_);
    if (!writing_.insert(key).second) return;  // one at a time; the answer marks it again
  }
  auto result = std::make_shared<absl::Status>();
  Command command;
  command.apply = [write = std::move(write), result](engine::Engine& engine, absl::Time now) {
    *result = write(engine, now);
  };
  command.respond = [this, key, result](const absl::Status& commit) {
    if (!result->ok() && result->code() != absl::StatusCode::kFailedPrecondition) {
      ADMITD_LOG(kWarning, "multikueue write failed",
                 {{"workload", key}, {"error", std::string(result->message())}});
    }
    absl::MutexLock lock(&mu_);
    writing_.erase(key);
    dirty_.insert(key);
  };
  sequencer_->Enqueue(std::move(command));
}

void Dispatcher::Reconcile(const std::string& key, absl::Time now) {
  {
    absl::MutexLock lock(&mu_);
    if (writing_.count(key) > 0) return;  // looked at again once the write is answered
  }
  auto local = local_.workloads.find(key);
  const v1::Workload* wl = local == local_.workloads.end() ? nullptr : &local->second;
  const std::string check = wl == nullptr ? "" : CheckOf(*wl);
  const v1::AdmissionCheckState* state = check.empty() ? nullptr : CheckState(*wl, check);
  // The copies of this workload in every worker, connected or not (a disconnected worker's
  // copy is its last known state).
  std::map<std::string, v1::Workload> copies;
  for (auto& [name, link] : links_) {
    if (std::optional<v1::Workload> c = link->Copy(key); c.has_value()) copies[name] = *c;
  }
  auto withdraw_all = [&]() {
    for (const auto& [cluster, copy] : copies) {
      WorkerLink* link = LinkOf(cluster);
      if (link == nullptr || !link->connected()) continue;
      // An elastic slice being replaced on the worker stays until its replacement took over
      // there (Kueue keeps a replaced slice's remote objects, multikueue.md §15).
      if (IsElastic(copy) && !IsTrue(copy, "Finished") && HasReplacement(*link, key)) continue;
      DeleteCopy(*link, copy);
    }
  };
  // Gone, finished, without a reservation or without a MultiKueue check: no copy is kept.
  if (wl == nullptr || state == nullptr || !HoldsReservation(*wl)) {
    withdraw_all();
    return;
  }
  if (state->state() == "Rejected") return;
  const engine::DispatchTarget target{wl->metadata().namespace_(), wl->metadata().name(),
                                      wl->metadata().uid(), check};
  const std::string reservation = ReservationId(*wl);

  // A job MultiKueue cannot run in a worker is rejected before any copy is made.
  if (state->state() == "Pending" && wl->status().cluster_name().empty()) {
    if (std::optional<std::string> why = RejectionOf(*wl); why.has_value()) {
      const std::string message = absl::StrCat(*why, ", Previously: \"Pending\"");
      Write(key, [target, message](engine::Engine& engine, absl::Time at) {
        v1::SetAdmissionCheckStateRequest req;
        req.set_namespace_(target.ns);
        req.set_name(target.name);
        req.set_check(target.check);
        req.set_state("Rejected");
        req.set_message(message);
        return engine.SetAdmissionCheckState(req, at).status();
      });
      return;
    }
  }

  // The admitting worker's job status comes back first, whatever happens next (an eviction
  // must show the job inactive here; a finish must show its last status).
  if (auto winner = copies.find(wl->status().cluster_name());
      winner != copies.end() && !winner->second.remote_job().status().empty() &&
      winner->second.remote_job().status() != wl->remote_job().status() &&
      ReservationId(*wl) == AnnotationOf(winner->second, kReservationAnnotation)) {
    const std::string uid = wl->metadata().uid(), status = winner->second.remote_job().status();
    Write(key, [target, uid, status](engine::Engine& engine, absl::Time at) {
      v1::UpdateRemoteJobRequest req;
      req.set_namespace_(target.ns);
      req.set_name(target.name);
      req.set_uid(uid);
      req.set_status(status);
      return engine.UpdateRemoteJob(req, at).status();
    });
    return;
  }

  // Evicted here (preemption, deactivation, a Retry): the copy that runs is deactivated; once no
  // worker runs it the quota goes back (and the copies go with the reservation).
  if (IsTrue(*wl, "Evicted")) {
    bool running = false;
    for (const auto& [cluster, copy] : copies) {
      if (!IsTrue(copy, "Admitted") || IsTrue(copy, "Finished")) continue;
      WorkerLink* link = LinkOf(cluster);
      if (link != nullptr && link->connected()) {
        running = true;
        const bool active = !copy.spec().has_active() || copy.spec().active();
        if (active) link->Deactivate(copy.metadata().namespace_(), copy.metadata().name(),
                                     copy.metadata().uid());
      } else {
        // An unreachable worker may still run it: its grace runs out first.
        const absl::Time until = LostSince(cluster, now) + options_.worker_lost_timeout;
        if (until > now) {
          running = true;
          WakeAt(until, key);
        }
      }
    }
    if (!running) {
      const std::string uid = wl->metadata().uid();
      Write(key, [target, uid](engine::Engine& engine, absl::Time at) {
        v1::ReleaseQuotaRequest req;
        req.set_namespace_(target.ns);
        req.set_name(target.name);
        req.set_uid(uid);
        req.mutable_stopped();
        return engine.ReleaseQuota(req, at).status();
      });
    }
    return;
  }

  // Copies of an earlier reservation are stale: withdrawn, never adopted.
  for (auto it = copies.begin(); it != copies.end();) {
    auto a = it->second.metadata().annotations().find(kReservationAnnotation);
    if (a == it->second.metadata().annotations().end() || a->second != reservation) {
      WorkerLink* link = LinkOf(it->first);
      if (link != nullptr && link->connected()) DeleteCopy(*link, it->second);
      it = copies.erase(it);
    } else {
      ++it;
    }
  }

  const std::string& cluster_name = wl->status().cluster_name();
  if (state->state() == "Ready" && !cluster_name.empty()) {
    auto winner = copies.find(cluster_name);
    WorkerLink* link = LinkOf(cluster_name);
    const bool reachable = link != nullptr && link->connected();
    if (winner != copies.end() && IsTrue(winner->second, "Finished") && !IsElastic(*wl) &&
        FindCondition(winner->second, "Finished")->reason() == "OutOfSync") {
      // The worker's job no longer matches its copy: dispatched again, never finished here.
      const std::string message = absl::StrCat(
          "Remote workload on worker cluster \"", cluster_name,
          "\" is out of sync with its user job, resetting for re-dispatch, Previously: \"Ready\"");
      Write(key, [target, message](engine::Engine& engine, absl::Time at) {
        return engine.RetryDispatch(target, message, engine::DispatchEvent::kWarning, at).status();
      });
      return;
    }
    if (winner != copies.end() && IsTrue(winner->second, "Finished")) {
      const v1::Condition* f = FindCondition(winner->second, "Finished");
      const std::string reason = f->reason(), message = f->message();
      const std::string uid = wl->metadata().uid();
      Write(key, [target, uid, reason, message](engine::Engine& engine, absl::Time at) {
        v1::ReleaseQuotaRequest req;
        req.set_namespace_(target.ns);
        req.set_name(target.name);
        req.set_uid(uid);
        req.mutable_finished()->set_succeeded(reason == "Succeeded");
        if (reason != "Succeeded" && reason != "Failed") req.mutable_finished()->set_reason(reason);
        req.mutable_finished()->set_message(message);
        return engine.ReleaseQuota(req, at).status();
      });
      return;
    }
    if (winner != copies.end() && IsTrue(winner->second, "Evicted")) {
      const std::string message =
          absl::StrCat("Workload evicted on worker cluster: \"", cluster_name,
                       "\", resetting for re-admission. Previously: \"Ready\"");
      Write(key, [target, message](engine::Engine& engine, absl::Time at) {
        return engine.RetryDispatch(target, message, engine::DispatchEvent::kNormal, at).status();
      });
      return;
    }
    if (!reachable) {
      const absl::Time until = LostSince(cluster_name, now) + options_.worker_lost_timeout;
      if (until > now) {
        WakeAt(until, key);  // within the grace: nothing changes
        return;
      }
      Write(key, [target](engine::Engine& engine, absl::Time at) {
        return engine.RetryDispatch(target, "Admitting remote lost, Previously: \"Ready\"",
                                    engine::DispatchEvent::kNone, at)
            .status();
      });
      return;
    }
    if (winner == copies.end() || !IsTrue(winner->second, "Admitted")) {
      Write(key, [target](engine::Engine& engine, absl::Time at) {
        return engine
            .RetryDispatch(target, "Admitting remote no longer exists, Previously: \"Ready\"",
                           engine::DispatchEvent::kNone, at)
            .status();
      });
      return;
    }
    // The winner runs: every other copy goes, and the winner gets the job to create.
    for (const auto& [cluster, copy] : copies) {
      if (cluster == cluster_name) continue;
      if (WorkerLink* l = LinkOf(cluster); l != nullptr && l->connected()) DeleteCopy(*l, copy);
    }
    const v1::Workload& copy = winner->second;
    if (IsElastic(*wl) && ScaledDown(*wl, copy)) {
      link->ScaleDown(copy.metadata().namespace_(), copy.metadata().name(), wl->spec().pod_sets());
    }
    if (!wl->remote_job().manifest().empty() &&
        copy.remote_job().manifest() != wl->remote_job().manifest()) {
      link->HandOverJob(copy.metadata().namespace_(), copy.metadata().name(),
                        copy.metadata().uid(), wl->remote_job().manifest());
    }
    return;
  }
  if (state->state() == "Ready") {
    Write(key, [target](engine::Engine& engine, absl::Time at) {
      return engine
          .RetryDispatch(target,
                         "Admission check is Ready but no admitting cluster is recorded; this is "
                         "unexpected, please report it, Previously: \"Ready\"",
                         engine::DispatchEvent::kNone, at)
          .status();
    });
    return;
  }
  if (state->state() != "Pending") return;  // Retry: the eviction is on its way

  // First admitted wins: the earliest Admitted transition among the copies of this reservation.
  const v1::Workload* winner = nullptr;
  std::string winner_cluster;
  for (const auto& [cluster, copy] : copies) {
    WorkerLink* link = LinkOf(cluster);
    if (link == nullptr || !link->connected() || !IsTrue(copy, "Admitted") ||
        IsTrue(copy, "Finished") || IsTrue(copy, "Evicted")) {
      continue;
    }
    if (winner == nullptr || TimeOf(FindCondition(copy, "Admitted")->last_transition_time()) <
                                 TimeOf(FindCondition(*winner, "Admitted")->last_transition_time())) {
      winner = &copy;
      winner_cluster = cluster;
    }
  }
  if (winner != nullptr) {
    for (const auto& [cluster, copy] : copies) {
      if (cluster == winner_cluster) continue;
      if (WorkerLink* l = LinkOf(cluster); l != nullptr && l->connected()) DeleteCopy(*l, copy);
    }
    const std::string cluster_queue = wl->status().admission().cluster_queue();
    Metrics* metrics = options_.metrics;
    Write(key, [target, winner_cluster, cluster_queue, metrics](engine::Engine& engine,
                                                                 absl::Time at) {
      absl::Status s = engine.RecordWorkerAdmission(target, winner_cluster, at).status();
      if (s.ok() && metrics != nullptr) {
        metrics->Add("kueue_multikueue_workloads_admitted_total",
                     "Workloads admitted in a worker cluster (the check turned Ready).",
                     {{"cluster_queue", cluster_queue}, {"cluster", winner_cluster}});
      }
      return s;
    });
    return;
  }

  // Nominate once every other check is Ready.
  for (const v1::AdmissionCheckState& c : wl->status().admission_checks()) {
    if (c.name() != check && c.state() != "Ready") return;
  }
  // An elastic scale-up slice goes to the worker its predecessor runs in, and nowhere else.
  if (!wl->status().cluster_name().empty()) {
    const std::string& cluster = wl->status().cluster_name();
    for (const auto& [c, copy] : copies) {
      if (c == cluster) continue;
      if (WorkerLink* l = LinkOf(c); l != nullptr && l->connected()) DeleteCopy(*l, copy);
    }
    WorkerLink* link = LinkOf(cluster);
    if (link != nullptr && link->connected() && copies.count(cluster) == 0) {
      link->Submit(MakeCopy(*wl, cluster), wl->status().admission().cluster_queue());
    }
    return;
  }
  const std::vector<std::string> clusters = ClustersOf(check);
  std::vector<std::string> nominated(wl->status().nominated_cluster_names().begin(),
                                     wl->status().nominated_cluster_names().end());
  std::vector<std::string> want;
  if (options_.dispatcher_name == kIncremental) {
    want = nominated;
    const absl::Time round_end =
        wl->status().has_nomination_time()
            ? TimeOf(wl->status().nomination_time()) + options_.round_timeout
            : now;
    if (want.empty() || now >= round_end) {
      int added = 0;
      for (const std::string& c : clusters) {
        if (added >= options_.step_size) break;
        if (std::find(want.begin(), want.end(), c) != want.end()) continue;
        want.push_back(c);
        ++added;
      }
      if (added > 0) WakeAt(now + options_.round_timeout, key);
    } else {
      WakeAt(round_end, key);
    }
  } else {
    for (const std::string& c : clusters) {
      if (WorkerLink* l = LinkOf(c); l != nullptr && l->connected()) want.push_back(c);
    }
    std::sort(want.begin(), want.end());
  }
  if (want != nominated) {
    Write(key, [target, want](engine::Engine& engine, absl::Time at) {
      return engine.NominateClusters(target, want, at).status();
    });
    return;  // copies follow the stored nominations
  }
  for (const std::string& c : nominated) {
    WorkerLink* link = LinkOf(c);
    if (link == nullptr || !link->connected() || copies.count(c) > 0) continue;
    link->Submit(MakeCopy(*wl, c), wl->status().admission().cluster_queue());
  }
  for (const auto& [cluster, copy] : copies) {
    if (std::find(nominated.begin(), nominated.end(), cluster) != nominated.end()) continue;
    if (WorkerLink* l = LinkOf(cluster); l != nullptr && l->connected()) DeleteCopy(*l, copy);
  }
}

}  // namespace admitd::multikueue
