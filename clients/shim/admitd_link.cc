#include "clients/shim/admitd_link.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/client.h"
#include "clients/shim/framework/multikueue.h"
#include "common/status.h"
#include "common/workload_list.h"

namespace admitd::shim {
namespace {

std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

std::string Key(const v1::Workload& wl) {
  return Key(wl.metadata().namespace_(), wl.metadata().name());
}

std::string OwnerKey(const std::string& kind, const std::string& ns, const std::string& name) {
  return kind + "/" + ns + "/" + name;
}

// UNAVAILABLE "<what>: <message>", with the retry delay admitd advised in `s` (if any).
absl::Status CallError(const std::string& what, const grpc::Status& s) {
  absl::Status status = absl::UnavailableError(absl::StrCat(what, ": ", s.error_message()));
  if (std::optional<absl::Duration> delay = clients::RetryDelayOf(s)) {
    return WithRetryDelay(std::move(status), *delay);
  }
  return status;
}

std::shared_ptr<grpc::Channel> ChannelTo(const ConnectionOptions& admitd) {
  grpc::ChannelArguments args;
  // Notice a dead connection under a long watch within 40 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  args.SetMaxReceiveMessageSize(64 << 20);
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = Connect(admitd, args);
  // Options Connect refuses were refused at start (Shim::Start); a file gone since then gets a
  // TLS channel that verifies against the system's CAs, never plaintext.
  return channel.ok() ? *std::move(channel)
                      : grpc::CreateCustomChannel(admitd.target, grpc::SslCredentials({}), args);
}

}  // namespace

const v1::Condition* FindCondition(const v1::Workload& workload, const std::string& type) {
  for (const v1::Condition& c : workload.status().conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

bool ConditionTrue(const v1::Workload& workload, const std::string& type) {
  const v1::Condition* c = FindCondition(workload, type);
  return c != nullptr && c->status() == "True";
}

const v1::OwnerReference* ControllerOwner(const v1::Workload& workload) {
  const auto& refs = workload.metadata().owner_references();
  for (const v1::OwnerReference& r : refs) {
    if (r.controller()) return &r;
  }
  return refs.empty() ? nullptr : &refs[0];
}

AdmitdLink::AdmitdLink(AdmitdLinkOptions options, WorkloadHandler on_workload,
                       EventHandler on_event)
    : options_(std::move(options)),
      on_workload_(std::move(on_workload)),
      on_event_(std::move(on_event)),
      channel_(ChannelTo(options_.admitd)),
      admission_(v1::AdmissionService::NewStub(channel_)),
      queues_(v1::QueueService::NewStub(channel_)) {}

AdmitdLink::~AdmitdLink() { Stop(); }

bool AdmitdLink::Cached(const v1::Workload& wl) const {
  if (options_.pod_workloads) {
    auto pods = wl.metadata().labels().find(kPodClusterLabel);
    if (pods != wl.metadata().labels().end() && pods->second == options_.cluster) return true;
  }
  auto it = wl.metadata().labels().find(kJobClusterLabel);
  if (it == wl.metadata().labels().end() || it->second != options_.cluster) return false;
  // A MultiKueue manager's copy, before and after a Job of this cluster adopts it.
  if (wl.metadata().labels().count(kMultiKueueOriginLabel)) return true;
  const v1::OwnerReference* owner = ControllerOwner(wl);
  return owner != nullptr && options_.owner_kinds.count({owner->api_version(), owner->kind()});
}

void AdmitdLink::ReportCall(const grpc::Status& status) {
  const bool unreachable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                           status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  absl::MutexLock lock(&mu_);
  if (!unreachable) {
    reachable_.store(true);
    unreachable_reason_.clear();
    return;
  }
  if (reachable_.exchange(false)) unreachable_since_ = absl::Now();
  unreachable_reason_ = status.error_message();
}

std::string AdmitdLink::UnreachableReason() const {
  absl::MutexLock lock(&mu_);
  if (reachable_.load()) return "";
  return absl::StrCat("unreachable since ", absl::FormatTime(unreachable_since_), ": ",
                      unreachable_reason_);
}

absl::Status AdmitdLink::List() {
  std::map<std::string, v1::Workload> fresh;
  uint64_t revision = 0;
  ListAllOptions list;
  list.on_call = [this](const grpc::Status& s) { ReportCall(s); };
  grpc::Status listed = ListAllWorkloads(
      *admission_,
      [&](v1::Workload wl) {
        if (Cached(wl)) fresh[Key(wl)] = std::move(wl);
      },
      &revision, list);
  if (!listed.ok()) return CallError("list workloads", listed);

  std::map<std::string, v1::ResourceFlavor> flavors;
  std::string token;
  do {
    v1::ListObjectsRequest req;
    req.set_kind(v1::OBJECT_KIND_RESOURCE_FLAVOR);
    req.set_page_token(token);
    v1::ListObjectsResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    grpc::Status s = queues_->List(&ctx, req, &resp);
    ReportCall(s);
    if (!s.ok()) return CallError("list flavors", s);
    for (const v1::QueueObject& o : resp.objects()) {
      flavors[o.resource_flavor().metadata().name()] = o.resource_flavor();
    }
    token = resp.next_page_token();
  } while (!token.empty());

  std::vector<std::pair<v1::Workload, bool>> changes;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, wl] : workloads_) {
      if (!fresh.count(key)) changes.emplace_back(wl, true);
    }
    for (const auto& [key, wl] : fresh) {
      auto it = workloads_.find(key);
      if (it == workloads_.end() ||
          it->second.metadata().resource_version() != wl.metadata().resource_version()) {
        changes.emplace_back(wl, false);
      }
    }
    workloads_ = std::move(fresh);
    by_owner_.clear();
    for (const auto& [key, wl] : workloads_) IndexLocked(wl, true);
    flavors_ = std::move(flavors);
    revision_ = revision;
  }
  ++lists_;
  synced_.store(true);
  if (on_workload_) {
    for (const auto& [wl, deleted] : changes) on_workload_(wl, deleted);
  }
  return absl::OkStatus();
}

void AdmitdLink::ApplyWorkload(const v1::Workload& wl, bool deleted, bool answered) {
  if (!Cached(wl)) return;
  {
    absl::MutexLock lock(&mu_);
    auto it = workloads_.find(Key(wl));
    // The owner index follows the cached version: whatever that one indexed goes first.
    if (deleted) {
      // A Workload of the same name made since (and answered to this shim first) stays.
      if (it != workloads_.end() && it->second.metadata().uid() == wl.metadata().uid()) {
        IndexLocked(it->second, false);
        workloads_.erase(it);
      }
    } else if (it == workloads_.end()) {
      if (answered && revision_ >= wl.metadata().resource_version()) return;  // deleted since
      IndexLocked(workloads_[Key(wl)] = wl, true);
    } else {
      if (it->second.metadata().resource_version() > wl.metadata().resource_version()) return;
      IndexLocked(it->second, false);
      IndexLocked(it->second = wl, true);
    }
  }
  if (on_workload_) on_workload_(wl, deleted);
}

void AdmitdLink::Remember(const v1::Workload& wl) { ApplyWorkload(wl, false, /*answered=*/true); }

void AdmitdLink::Forget(const std::string& ns, const std::string& name, const std::string& uid) {
  absl::MutexLock lock(&mu_);
  auto it = workloads_.find(Key(ns, name));
  if (it == workloads_.end() || it->second.metadata().uid() != uid) return;
  IndexLocked(it->second, false);
  workloads_.erase(it);
}

void AdmitdLink::IndexLocked(const v1::Workload& wl, bool add) {
  const v1::OwnerReference* owner = ControllerOwner(wl);
  if (owner == nullptr) return;
  const std::string key = OwnerKey(owner->kind(), wl.metadata().namespace_(), owner->name());
  if (add) {
    by_owner_[key].insert(Key(wl));
  } else if (auto it = by_owner_.find(key); it != by_owner_.end()) {
    it->second.erase(Key(wl));
    if (it->second.empty()) by_owner_.erase(it);
  }
}

absl::Status AdmitdLink::WatchOnce() {
  v1::WatchRequest req;
  req.set_since_revision(revision());
  req.add_kinds(v1::OBJECT_KIND_WORKLOAD);
  req.add_kinds(v1::OBJECT_KIND_RESOURCE_FLAVOR);
  req.add_kinds(v1::OBJECT_KIND_EVENT);
  if (options_.on_namespace_deleted) req.add_kinds(v1::OBJECT_KIND_NAMESPACE);
  grpc::ClientContext ctx;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_.load()) return absl::CancelledError("stopped");
    watch_context_ = &ctx;
  }
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader = admission_->Watch(&ctx, req);
  // Events of a Workload that arrive before the Workload itself does (in the same commit).
  std::map<std::string, std::vector<v1::Event>> early;
  uint64_t early_commit = 0;
  v1::WatchEvent ev;
  while (reader->Read(&ev)) {
    // Whatever the stream delivers (a replayed event may come before SYNCED), admitd answers.
    if (!reachable_.load()) ReportCall(grpc::Status::OK);
    if (early_commit != 0 && ev.commit_revision() != early_commit) early.clear();
    if (ev.type() == v1::WatchEvent::SYNCED) continue;
    if (ev.has_workload()) {
      ApplyWorkload(ev.workload(), ev.type() == v1::WatchEvent::DELETED, /*answered=*/false);
      if (auto it = early.find(Key(ev.workload())); it != early.end()) {
        if (Cached(ev.workload()) && on_event_) {
          for (const v1::Event& e : it->second) on_event_(e);
        }
        early.erase(it);
      }
    } else if (ev.has_queue_object() && ev.queue_object().has_resource_flavor()) {
      const v1::ResourceFlavor& rf = ev.queue_object().resource_flavor();
      absl::MutexLock lock(&mu_);
      if (ev.type() == v1::WatchEvent::DELETED) {
        flavors_.erase(rf.metadata().name());
      } else {
        flavors_[rf.metadata().name()] = rf;
      }
    } else if (ev.has_queue_object() && ev.queue_object().has_namespace_()) {
      if (ev.type() == v1::WatchEvent::DELETED) {
        options_.on_namespace_deleted(ev.queue_object().namespace_().metadata().name());
      }
    } else if (ev.has_event()) {
      const v1::ObjectReference& r = ev.event().regarding();
      bool known;
      {
        absl::MutexLock lock(&mu_);
        known = workloads_.count(Key(r.namespace_(), r.name())) > 0;
      }
      if (known) {
        if (on_event_) on_event_(ev.event());
      } else {
        early[Key(r.namespace_(), r.name())].push_back(ev.event());
        early_commit = ev.commit_revision();
      }
    }
    absl::MutexLock lock(&mu_);
    revision_ = std::max(revision_, ev.revision());
  }
  grpc::Status s = reader->Finish();
  {
    absl::MutexLock lock(&mu_);
    watch_context_ = nullptr;
  }
  if (stopped_.load()) return absl::CancelledError("stopped");
  ReportCall(s);
  if (s.error_code() == grpc::StatusCode::OUT_OF_RANGE) return List();
  return absl::UnavailableError(absl::StrCat("watch: ", s.error_message()));
}

void AdmitdLink::Run() {
  absl::Duration backoff = absl::Milliseconds(500);
  while (!stopped_.load()) {
    const absl::Time started = absl::Now();
    absl::Status s = synced_.load() ? WatchOnce() : List();
    if (stopped_.load()) break;
    if (s.ok()) {
      backoff = absl::Milliseconds(500);
      continue;
    }
    // A watch that ran a while before it broke starts over with a short wait.
    if (absl::Now() - started > absl::Seconds(30)) backoff = absl::Milliseconds(500);
    // A list admitd refused without running it (overloaded) is retried when it advised.
    const std::optional<absl::Duration> advised = RetryDelayOf(s);
    const absl::Time until = absl::Now() + (advised ? *advised : backoff);
    while (absl::Now() < until && !stopped_.load()) {
      absl::SleepFor(std::min(absl::Milliseconds(50), until - absl::Now()));
    }
    if (!advised) backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void AdmitdLink::Stop() {
  stopped_.store(true);
  absl::MutexLock lock(&mu_);
  if (watch_context_ != nullptr) watch_context_->TryCancel();
}

std::vector<v1::Workload> AdmitdLink::WorkloadsOf(const std::string& kind, const std::string& ns,
                                                  const std::string& owner_name) const {
  std::vector<v1::Workload> out;
  {
    absl::MutexLock lock(&mu_);
    auto it = by_owner_.find(OwnerKey(kind, ns, owner_name));
    if (it != by_owner_.end()) {
      for (const std::string& key : it->second) out.push_back(workloads_.at(key));
    }
  }
  std::sort(out.begin(), out.end(), [](const v1::Workload& a, const v1::Workload& b) {
    const auto& ta = a.metadata().creation_timestamp();
    const auto& tb = b.metadata().creation_timestamp();
    if (ta.seconds() != tb.seconds()) return ta.seconds() < tb.seconds();
    if (ta.nanos() != tb.nanos()) return ta.nanos() < tb.nanos();
    return a.metadata().name() < b.metadata().name();
  });
  return out;
}

std::optional<v1::Workload> AdmitdLink::Workload(const std::string& ns,
                                                 const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = workloads_.find(Key(ns, name));
  if (it == workloads_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> AdmitdLink::OwnerKeys(const std::string& kind) const {
  std::vector<std::string> keys;
  const std::string prefix = kind + "/";
  absl::MutexLock lock(&mu_);
  for (auto it = by_owner_.lower_bound(prefix);
       it != by_owner_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    keys.push_back(it->first.substr(prefix.size()));
  }
  return keys;
}

std::vector<std::string> AdmitdLink::CopyKeys() const {
  std::vector<std::string> keys;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, wl] : workloads_) {
    if (wl.metadata().labels().count(kMultiKueueOriginLabel)) keys.push_back(key);
  }
  return keys;
}

std::map<std::string, v1::ResourceFlavor> AdmitdLink::Flavors() const {
  absl::MutexLock lock(&mu_);
  return flavors_;
}

uint64_t AdmitdLink::revision() const {
  absl::MutexLock lock(&mu_);
  return revision_;
}

}  // namespace admitd::shim
