#include "server/metrics.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/engine/conditions.h"

namespace admitd {
namespace {

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string FormatValue(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) return absl::StrCat(static_cast<int64_t>(v));
  return absl::StrCat(v);
}

std::string ClusterQueueOf(const v1::Workload& wl) {
  if (wl.status().has_admission()) return wl.status().admission().cluster_queue();
  return "";
}

std::string ConditionReason(const v1::Workload& wl, const char* type) {
  const v1::Condition* c = engine::FindCondition(wl, type);
  return c == nullptr ? "" : c->reason();
}

}  // namespace

void Metrics::Update(const std::string& name, const std::string& help, const char* type,
                     const MetricLabels& labels, double value, bool add) {
  absl::MutexLock lock(&mu_);
  Family& f = families_[name];
  if (f.type.empty()) {
    f.help = help;
    f.type = type;
  }
  double& v = f.series[labels];
  v = add ? v + value : value;
}

void Metrics::Add(const std::string& name, const std::string& help, const MetricLabels& labels,
                  double value) {
  Update(name, help, "counter", labels, value, true);
}

void Metrics::Set(const std::string& name, const std::string& help, const MetricLabels& labels,
                  double value) {
  Update(name, help, "gauge", labels, value, false);
}

double Metrics::Value(const std::string& name, const MetricLabels& labels) const {
  absl::MutexLock lock(&mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto s = f->second.series.find(labels);
  return s == f->second.series.end() ? 0 : s->second;
}

std::string Metrics::Render() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    absl::StrAppend(&out, "# HELP ", name, " ", f.help, "\n# TYPE ", name, " ", f.type, "\n");
    for (const auto& [labels, value] : f.series) {
      out += name;
      if (!labels.empty()) {
        out += "{";
        for (size_t i = 0; i < labels.size(); ++i) {
          absl::StrAppend(&out, i ? "," : "", labels[i].first, "=\"", Escape(labels[i].second),
                          "\"");
        }
        out += "}";
      }
      absl::StrAppend(&out, " ", FormatValue(value), "\n");
    }
  }
  return out;
}

void Metrics::CountChanges(const std::vector<engine::Change>& changes) {
  for (const engine::Change& c : changes) {
    if (c.kind == v1::OBJECT_KIND_POD && c.pod) {
      if (c.reason == "PodGated") {
        Add("admitd_pods_gated_total", "Pods first reported with the admission gate.",
            {{"cluster", c.pod->cluster()}});
      } else if (c.reason == "PodUngated") {
        Add("admitd_pods_ungated_total", "Pods reported with the admission gate removed.",
            {{"cluster", c.pod->cluster()}});
      }
      continue;
    }
    if (c.kind != v1::OBJECT_KIND_WORKLOAD || !c.workload) continue;
    const v1::Workload& wl = *c.workload;
    const std::string cq = ClusterQueueOf(wl);
    Add("admitd_workload_changes_total", "Workload changes committed, by what happened.",
        {{"reason", c.reason}});
    if (c.reason == "Admitted") {
      Add("admitd_admitted_workloads_total", "Workloads admitted.", {{"cluster_queue", cq}});
    } else if (c.reason == "QuotaReserved") {
      Add("admitd_quota_reserved_workloads_total", "Workloads that got a quota reservation.",
          {{"cluster_queue", cq}});
    } else if (c.reason == "Evicted") {
      Add("admitd_evicted_workloads_total", "Workloads evicted, by eviction reason.",
          {{"cluster_queue", cq}, {"reason", ConditionReason(wl, engine::kEvicted)}});
      const std::string preempted = ConditionReason(wl, engine::kPreempted);
      if (!preempted.empty() && engine::IsConditionTrue(wl, engine::kPreempted)) {
        Add("admitd_preempted_workloads_total", "Workloads preempted, by preemption reason.",
            {{"cluster_queue", cq}, {"reason", preempted}});
      }
    } else if (c.reason == "Finished") {
      Add("admitd_finished_workloads_total", "Workloads finished, by reason.",
          {{"reason", ConditionReason(wl, engine::kFinished)}});
    } else if (c.reason == "SliceCreated") {
      Add("admitd_workload_slices_created_total",
          "Workload slices created by a scale-up (KEP-77).",
          {{"local_queue", absl::StrCat(wl.metadata().namespace_(), "/", wl.spec().queue_name())}});
    } else if (c.reason == engine::kReasonWorkloadSliceReplaced) {
      Add("admitd_replaced_workload_slices_total",
          "Workload slices finished because a newer slice of the job was admitted.",
          {{"cluster_queue", cq}});
    } else if (c.reason == "Resized") {
      Add("admitd_resized_workloads_total", "Workloads whose pod counts changed in place.",
          {{"cluster_queue", cq}});
    }
  }
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, const Metrics* metrics, std::function<absl::Status()> ready) {
  std::pair<std::string, std::string> hp = absl::StrSplit(address, absl::MaxSplits(':', 1));
  int port = 0;
  if (hp.second.empty() || !absl::SimpleAtoi(hp.second, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-listen: \"", address, "\" is not host:port"));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string host = hp.first.empty() ? "0.0.0.0" : hp.first;
  if (int rc = getaddrinfo(host.c_str(), hp.second.c_str(), &hints, &res); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-listen: cannot resolve \"", host, "\": ", gai_strerror(rc)));
  }
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->metrics_ = metrics;
  server->ready_ = std::move(ready);
  server->fd_ = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(server->fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const bool ok = server->fd_ >= 0 && bind(server->fd_, res->ai_addr, res->ai_addrlen) == 0 &&
                  listen(server->fd_, 16) == 0;
  freeaddrinfo(res);
  if (!ok) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-listen: cannot listen on ", address, ": ", std::strerror(errno)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(server->fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  server->port_ = ntohs(bound.ss_family == AF_INET6
                            ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
}

void MetricsServer::Serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    // The request line is all that matters; read until the end of the headers or 8 KiB.
    std::string request;
    char buf[1024];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
      pollfd c{conn, POLLIN, 0};
      if (poll(&c, 1, 1000) <= 0) break;
      const ssize_t n = read(conn, buf, sizeof(buf));
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    std::string status = "404 Not Found", body = "not found\n";
    const std::string type = "text/plain; version=0.0.4; charset=utf-8";
    if (request.rfind("GET /metrics", 0) == 0) {
      status = "200 OK";
      body = metrics_->Render();
    } else if (request.rfind("GET /healthz", 0) == 0) {
      status = "200 OK";
      body = "ok\n";
    } else if (request.rfind("GET /readyz", 0) == 0) {
      const absl::Status ready = ready_ ? ready_() : absl::OkStatus();
      status = ready.ok() ? "200 OK" : "503 Service Unavailable";
      body = ready.ok() ? "ready\n" : absl::StrCat(ready.message(), "\n");
    }
    const std::string response =
        absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                     "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
    size_t sent = 0;
    while (sent < response.size()) {
      const ssize_t n = write(conn, response.data() + sent, response.size() - sent);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    close(conn);
  }
}

}  // namespace admitd
