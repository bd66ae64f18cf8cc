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
#include "server/multikueue/copy_rules.h"
#include "server/sequencer.h"
#include "server/watch_hub.h"

namespace admitd::multikueue {

// The dispatcher reads workloads through these.
using namespace rules;  // NOLINT


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
  };
  command.respond = [this, snapshot](const absl::Status&) { ReadWorkloadPage(snapshot, ""); };
  sequencer_->Enqueue(std::move(command));
}

void Dispatcher::ReadWorkloadPage(std::shared_ptr<Local> snapshot, std::string token) {
  // One page a command: a store of many workloads is read between other commands, not in one
  // long stop of the sequencer (100,000 workloads take most of a second to copy).
  auto next = std::make_shared<std::string>();
  Command command;
  command.apply = [snapshot, token, next](engine::Engine& engine, absl::Time) {
    v1::ListWorkloadsRequest req;
    req.set_page_size(2000);
    req.set_page_token(token);
    absl::StatusOr<v1::ListWorkloadsResponse> page = engine.ListWorkloads(req);
    if (!page.ok()) return;
    for (const v1::Workload& wl : page->workloads()) {
      if (wl.status().admission_checks().empty() && wl.status().cluster_name().empty()) continue;
      snapshot->workloads[Key(wl.metadata())] = wl;
    }
    *next = page->next_page_token();
  };
  command.respond = [this, snapshot, next](const absl::Status& commit) {
    if (commit.ok() && !next->empty()) {
      ReadWorkloadPage(snapshot, *next);
      return;
    }
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
        it->second.spec().controller_name() == kMultiKueueControllerName) {
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
  (*meta->mutable_labels())[kMultiKueueOriginLabel] = options_.origin;
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


}  // namespace admitd::multikueue
