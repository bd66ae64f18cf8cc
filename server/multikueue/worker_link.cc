#include "server/multikueue/worker_link.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/connection.h"
#include "common/log.h"
#include "common/workload_list.h"
#include "server/metrics.h"

namespace admitd::multikueue {
namespace {

// Writes to one worker made at once (each waits for the worker's commit).
constexpr int kOpsThreads = 8;

std::string Key(const v1::Workload& wl) {
  return absl::StrCat(wl.metadata().namespace_(), "/", wl.metadata().name());
}

}  // namespace

WorkerLink::WorkerLink(WorkerLinkOptions options) : options_(std::move(options)) {}

WorkerLink::~WorkerLink() { Stop(); }

void WorkerLink::Start() {
  ConnectionOptions connection;
  const v1::WorkerAdmitd& e = options_.endpoint;
  connection.target = e.address();
  connection.tls = e.tls();
  connection.ca_file = e.ca_file();
  connection.cert_file = e.cert_file();
  connection.key_file = e.key_file();
  connection.server_name = e.server_name();
  connection.token_file = e.token_file();
  grpc::ChannelArguments args;
  // Keepalive finds a worker that vanished without closing the connection.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  args.SetMaxReceiveMessageSize(64 << 20);
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = Connect(connection, args);
  if (!channel.ok()) {
    // A credential file that cannot be read: the cluster stays disconnected, saying why.
    SetConnected(false, absl::StrCat("load client config failed: ", channel.status().message()));
    return;
  }
  channel_ = *channel;
  stub_ = v1::AdmissionService::NewStub(channel_);
  watch_thread_ = std::thread([this] { RunWatch(); });
  for (int i = 0; i < kOpsThreads; ++i) ops_threads_.emplace_back([this] { RunOps(); });
}

void WorkerLink::Stop() {
  if (stopped_.exchange(true)) return;
  {
    absl::MutexLock lock(&mu_);
    if (watch_context_ != nullptr) watch_context_->TryCancel();
  }
  if (watch_thread_.joinable()) watch_thread_.join();
  for (std::thread& t : ops_threads_) t.join();
  ops_threads_.clear();
}

std::optional<v1::Workload> WorkerLink::Copy(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = copies_.find(key);
  if (it == copies_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> WorkerLink::Keys() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> keys;
  for (const auto& [key, wl] : copies_) keys.push_back(key);
  return keys;
}

void WorkerLink::Submit(v1::Workload copy, const std::string& cluster_queue) {
  Op op{Op::Kind::kSubmit, std::move(copy), "", "", "", "", cluster_queue};
  Enqueue(std::move(op));
}

void WorkerLink::Delete(const std::string& ns, const std::string& name, const std::string& uid) {
  Enqueue(Op{Op::Kind::kDelete, {}, ns, name, uid});
}

void WorkerLink::Deactivate(const std::string& ns, const std::string& name,
                            const std::string& uid) {
  Enqueue(Op{Op::Kind::kDeactivate, {}, ns, name, uid});
}

void WorkerLink::HandOverJob(const std::string& ns, const std::string& name,
                             const std::string& uid, const std::string& manifest) {
  Enqueue(Op{Op::Kind::kHandOver, {}, ns, name, uid, manifest});
}

void WorkerLink::ScaleDown(const std::string& ns, const std::string& name,
                           const google::protobuf::RepeatedPtrField<v1::PodSet>& pod_sets) {
  Op op{Op::Kind::kScaleDown, {}, ns, name, ""};
  *op.copy.mutable_spec()->mutable_pod_sets() = pod_sets;
  Enqueue(std::move(op));
}

void WorkerLink::Enqueue(Op op) {
  op.key = op.kind == Op::Kind::kSubmit ? Key(op.copy) : absl::StrCat(op.ns, "/", op.name);
  absl::MutexLock lock(&mu_);
  // The same write already waiting is not queued twice.
  if (!queued_.emplace(static_cast<int>(op.kind), op.key).second) return;
  ops_.push_back(std::move(op));
}

bool WorkerLink::Mine(const v1::Workload& wl) const {
  auto it = wl.metadata().labels().find(kMultiKueueOriginLabel);
  return it != wl.metadata().labels().end() && it->second == options_.origin;
}

void WorkerLink::Apply(const v1::Workload& wl, bool deleted) {
  const std::string key = Key(wl);
  {
    absl::MutexLock lock(&mu_);
    if (deleted || !Mine(wl)) {
      if (copies_.erase(key) == 0) return;
    } else {
      copies_[key] = wl;
    }
  }
  if (options_.on_copy) options_.on_copy(key);
}

void WorkerLink::SetConnected(bool connected, const std::string& message) {
  connected_.store(connected);
  {
    absl::MutexLock lock(&mu_);
    if (reported_ && last_connected_ == connected && connected) return;
    reported_ = true;
    last_connected_ = connected;
  }
  if (options_.on_state) options_.on_state(connected, message);
}

void WorkerLink::Sleep(absl::Duration d) {
  for (absl::Time until = absl::Now() + d; absl::Now() < until && !stopped_.load();) {
    absl::SleepFor(std::min(absl::Milliseconds(50), until - absl::Now()));
  }
}

grpc::Status WorkerLink::Session() {
  // List every workload of this origin, then watch from the list's revision.
  std::map<std::string, v1::Workload> listed;
  uint64_t revision = 0;
  ListAllOptions list;
  list.call_timeout = options_.call_timeout;
  list.stopped = [this] { return stopped_.load(); };
  grpc::Status listed_status = ListAllWorkloads(
      *stub_,
      [&](v1::Workload wl) {
        if (Mine(wl)) listed[Key(wl)] = std::move(wl);
      },
      &revision, list);
  if (!listed_status.ok()) return listed_status;
  std::vector<std::string> changed;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, wl] : copies_) {
      if (listed.count(key) == 0) changed.push_back(key);
    }
    for (const auto& [key, wl] : listed) changed.push_back(key);
    copies_ = std::move(listed);
  }
  v1::WatchRequest req;
  req.set_since_revision(revision);
  req.add_kinds(v1::OBJECT_KIND_WORKLOAD);
  grpc::ClientContext ctx;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_.load()) return grpc::Status(grpc::StatusCode::CANCELLED, "stopped");
    watch_context_ = &ctx;
  }
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader = stub_->Watch(&ctx, req);
  v1::WatchEvent ev;
  bool synced = false;
  while (reader->Read(&ev)) {
    if (ev.type() == v1::WatchEvent::SYNCED) {
      if (!synced) {
        synced = true;
        SetConnected(true, "Connected");
        // Every copy listed (or gone) since the last session is looked at again.
        if (options_.on_copy) {
          for (const std::string& key : changed) options_.on_copy(key);
        }
      }
      continue;
    }
    if (ev.has_workload()) Apply(ev.workload(), ev.type() == v1::WatchEvent::DELETED);
  }
  grpc::Status s = reader->Finish();
  absl::MutexLock lock(&mu_);
  watch_context_ = nullptr;
  return s;
}

void WorkerLink::RunWatch() {
  int failures = 0;
  while (!stopped_.load()) {
    const absl::Time started = absl::Now();
    grpc::Status s = Session();
    if (stopped_.load()) break;
    const std::string message = s.ok() ? "the watch ended" : s.error_message();
    const bool was_connected = connected_.load();
    SetConnected(false, message.empty() ? "connection lost" : message);
    // A watch that ran reconnects at once; failed attempts back off.
    if (was_connected || absl::Now() - started > absl::Seconds(30)) {
      failures = 0;
      continue;
    }
    ++failures;
    absl::Duration wait = options_.backoff_base;
    for (int i = 1; i < failures && wait < options_.max_backoff; ++i) wait *= 2;
    wait = std::min(wait, options_.max_backoff);
    ADMITD_LOG(kInfo, "multikueue worker unreachable",
               {{"cluster", options_.name}, {"error", message},
                {"retry_in", absl::FormatDuration(wait)}});
    Sleep(wait);
  }
}

void WorkerLink::RunOps() {
  while (!stopped_.load()) {
    Op op;
    {
      absl::MutexLock lock(&mu_);
      // The oldest write whose copy has no write in flight: one copy's writes stay in order.
      auto next = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return std::find_if(ops_.begin(), ops_.end(),
                            [this](const Op& o) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                              return in_flight_.count(o.key) == 0;
                            });
      };
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopped_.load() || next() != ops_.end();
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(200));
      auto it = next();
      if (it == ops_.end()) continue;
      op = std::move(*it);
      ops_.erase(it);
      queued_.erase({static_cast<int>(op.kind), op.key});
      in_flight_.insert(op.key);
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
    grpc::Status s;
    std::string key;
    switch (op.kind) {
      case Op::Kind::kSubmit: {
        key = Key(op.copy);
        v1::SubmitRequest req;
        *req.mutable_workload() = std::move(op.copy);
        v1::SubmitResponse resp;
        s = stub_->Submit(&ctx, req, &resp);
        if (s.ok() && resp.created() && options_.metrics != nullptr) {
          options_.metrics->Add("kueue_multikueue_workloads_dispatched_total",
                                "Copies of workloads created in worker clusters.",
                                {{"cluster_queue", op.cluster_queue}, {"cluster", options_.name}});
        }
        break;
      }
      case Op::Kind::kDelete: {
        key = absl::StrCat(op.ns, "/", op.name);
        v1::DeleteWorkloadRequest req;
        req.set_namespace_(op.ns);
        req.set_name(op.name);
        req.set_uid(op.uid);
        v1::DeleteWorkloadResponse resp;
        s = stub_->Delete(&ctx, req, &resp);
        if (s.error_code() == grpc::StatusCode::NOT_FOUND) s = grpc::Status::OK;
        break;
      }
      case Op::Kind::kDeactivate: {
        key = absl::StrCat(op.ns, "/", op.name);
        v1::SetActiveRequest req;
        req.set_namespace_(op.ns);
        req.set_name(op.name);
        req.set_uid(op.uid);
        req.set_active(false);
        v1::SetActiveResponse resp;
        s = stub_->SetActive(&ctx, req, &resp);
        if (s.error_code() == grpc::StatusCode::NOT_FOUND) s = grpc::Status::OK;
        break;
      }
      case Op::Kind::kScaleDown: {
        key = absl::StrCat(op.ns, "/", op.name);
        v1::ResizeRequest req;
        req.set_namespace_(op.ns);
        req.set_name(op.name);
        for (const v1::PodSet& ps : op.copy.spec().pod_sets()) {
          v1::PodSetCount* c = req.add_pod_sets();
          c->set_name(ps.name());
          c->set_count(ps.count());
        }
        v1::ResizeResponse resp;
        s = stub_->Resize(&ctx, req, &resp);
        if (s.error_code() == grpc::StatusCode::NOT_FOUND) s = grpc::Status::OK;
        break;
      }
      case Op::Kind::kHandOver: {
        key = absl::StrCat(op.ns, "/", op.name);
        v1::UpdateRemoteJobRequest req;
        req.set_namespace_(op.ns);
        req.set_name(op.name);
        req.set_uid(op.uid);
        req.set_manifest(std::move(op.manifest));
        v1::UpdateRemoteJobResponse resp;
        s = stub_->UpdateRemoteJob(&ctx, req, &resp);
        if (s.error_code() == grpc::StatusCode::NOT_FOUND) s = grpc::Status::OK;
        break;
      }
    }
    if (!s.ok()) {
      ADMITD_LOG(kInfo, "multikueue write to a worker failed",
                 {{"cluster", options_.name}, {"workload", key}, {"error", s.error_message()}});
      // The dispatcher looks at the workload again (after a pause, so a worker that refuses
      // is not hammered).
      Sleep(absl::Milliseconds(500));
    }
    {
      absl::MutexLock lock(&mu_);
      in_flight_.erase(op.key);
    }
    if (!s.ok() && options_.on_copy) options_.on_copy(key);
  }
}

}  // namespace admitd::multikueue
