#include "integration/bench/bench_common.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace admitd::bench {

Watcher::Watcher(std::shared_ptr<grpc::Channel> channel, std::string ns, Handler handler)
    : stub_(v1::AdmissionService::NewStub(channel)), ns_(std::move(ns)),
      handler_(std::move(handler)) {}

Watcher::~Watcher() { Stop(); }

bool Watcher::Start(absl::Duration timeout) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  v1::ListWorkloadsRequest list;
  list.set_namespace_(ns_);
  list.set_page_size(1);
  v1::ListWorkloadsResponse listed;
  grpc::Status status = stub_->List(&ctx, list, &listed);
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    error_ = absl::StrCat("List: ", status.error_message());
    return false;
  }
  revision_ = listed.revision();
  thread_ = std::thread([this] { Run(); });
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(
      absl::Condition(
          +[](Watcher* w) { return w->synced_ || !w->error_.empty(); }, this),
      timeout) && synced_;
}

void Watcher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (ctx_ != nullptr) ctx_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

std::string Watcher::error() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

void Watcher::Run() {
  int failures = 0;
  while (true) {
    grpc::ClientContext ctx;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      ctx_ = &ctx;
    }
    v1::WatchRequest req;
    req.set_since_revision(revision_);
    req.add_kinds(v1::OBJECT_KIND_WORKLOAD);
    req.set_namespace_(ns_);
    auto reader = stub_->Watch(&ctx, req);
    v1::WatchEvent ev;
    while (reader->Read(&ev)) {
      if (ev.type() == v1::WatchEvent::SYNCED) {
        absl::MutexLock lock(&mu_);
        synced_ = true;
        continue;
      }
      revision_ = ev.revision();
      failures = 0;
      handler_(ev, absl::Now());
    }
    grpc::Status status = reader->Finish();
    absl::MutexLock lock(&mu_);
    ctx_ = nullptr;
    if (stopping_) return;
    reconnects_++;
    if (++failures > 20) {
      error_ = absl::StrCat("Watch ended: ", status.error_message());
      return;
    }
    mu_.Unlock();
    absl::SleepFor(absl::Milliseconds(10 * failures));
    mu_.Lock();
  }
}

Timer::Timer() : thread_([this] { Run(); }) {}

Timer::~Timer() { Stop(); }

void Timer::At(absl::Time when, std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  const bool earliest = items_.empty() || when < items_.top().when;
  items_.push(Item{when, seq_++, std::move(fn)});
  if (earliest) cv_.Signal();
}

void Timer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void Timer::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (items_.empty()) {
      cv_.Wait(&mu_);
      continue;
    }
    const absl::Time when = items_.top().when;
    if (when > absl::Now()) {
      cv_.WaitWithDeadline(&mu_, when);
      continue;
    }
    std::function<void()> fn = std::move(const_cast<Item&>(items_.top()).fn);
    items_.pop();
    mu_.Unlock();
    fn();
    mu_.Lock();
  }
}

Summary Summarize(std::vector<double> values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  auto at = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
    return values[std::min(i, values.size() - 1)];
  };
  s.p50 = at(0.50);
  s.p99 = at(0.99);
  s.max = values.back();
  return s;
}

double CpuSeconds(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  std::getline(in, stat);
  // Fields after the command name (which may hold spaces) start at state, field 3.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double utime = -1, stime = -1;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) absl::SimpleAtod(field, &utime);
    if (i == 15) absl::SimpleAtod(field, &stime);
  }
  if (utime < 0 || stime < 0) return -1;
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

ThreadUses ThreadUseByName(int pid) {
  ThreadUses out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), ec)) {
    const std::string dir = task.path().string();
    std::ifstream stat_in(dir + "/stat");
    std::string stat;
    std::getline(stat_in, stat);
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    ThreadUse& use = out[stat.substr(open + 1, close - open - 1)];
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      double ticks = 0;
      if ((i == 14 || i == 15) && absl::SimpleAtod(field, &ticks)) use.cpu_s += ticks / tick;
    }
    std::ifstream status(dir + "/status");
    std::string line;
    while (std::getline(status, line)) {
      int64_t n = 0;
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 &&
          absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(24)), &n)) {
        use.voluntary += n;
      } else if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0 &&
                 absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(27)), &n)) {
        use.involuntary += n;
      }
    }
  }
  return out;
}

ThreadUses Difference(const ThreadUses& from, const ThreadUses& to) {
  ThreadUses out;
  for (const auto& [name, use] : to) {
    ThreadUse d = use;
    if (auto it = from.find(name); it != from.end()) {
      d.cpu_s -= it->second.cpu_s;
      d.voluntary -= it->second.voluntary;
      d.involuntary -= it->second.involuntary;
    }
    out[name] = d;
  }
  return out;
}

double OwnCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace admitd::bench
