#include "integration/bench/shim_bench_stack.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "integration/bench/bench_common.h"

namespace admitd::bench {

std::vector<std::string> ApiServerKindArgs(const std::vector<const BenchKind*>& kinds,
                                           const std::vector<std::string>& extra) {
  std::vector<std::string> crds, controllers, rest;
  auto add = [](std::vector<std::string>* to, const std::string& v) {
    if (!v.empty() && std::find(to->begin(), to->end(), v) == to->end()) to->push_back(v);
  };
  for (const BenchKind* k : kinds) {
    for (const std::string& c : k->crds) add(&crds, c);
    add(&controllers, k->controller);
  }
  for (size_t i = 0; i < extra.size(); ++i) {
    std::string value;
    if (extra[i].rfind("--controllers=", 0) == 0) {
      value = extra[i].substr(sizeof("--controllers=") - 1);
    } else if (extra[i] == "--controllers" && i + 1 < extra.size()) {
      value = extra[++i];
    } else {
      rest.push_back(extra[i]);
      continue;
    }
    for (absl::string_view c : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      add(&controllers, std::string(c));
    }
  }
  std::vector<std::string> out;
  if (!crds.empty()) out.push_back("--crd=" + absl::StrJoin(crds, ","));
  if (!controllers.empty()) out.push_back("--controllers=" + absl::StrJoin(controllers, ","));
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

bool ShimBenchStack::Start(absl::Time deadline, std::string* error) {
  char dir[] = "/tmp/shim-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    *error = "mkdtemp failed";
    return false;
  }
  {
    absl::MutexLock lock(&mu_);
    tmp_ = dir;
  }
  const absl::Time start_deadline = std::min(deadline, absl::Now() + absl::Seconds(30));

  std::vector<std::string> api = {
      options_.python, ADMITD_SOURCE_DIR "/integration/kube/apiserver.py", "--port", "0",
      "--kubeconfig-out", tmp_ + "/kubeconfig", "--namespace", options_.lease_namespace,
      "--namespace", options_.object_namespace, "--bookmark-interval", "1",
      // Room in the watch history for every write of the run.
      "--history-size", absl::StrCat(options_.history_size)};
  for (std::string& a : ApiServerKindArgs(options_.kinds, options_.apiserver_args)) {
    api.push_back(std::move(a));
  }
  {
    absl::MutexLock lock(&mu_);
    apiserver_ = Child::Spawn("apiserver.py", api, tmp_ + "/apiserver.log");
  }
  if (!apiserver_ || apiserver_->WaitForLog("listening ", start_deadline).empty()) {
    *error = absl::StrCat("the test API server did not start: ",
                          apiserver_ ? apiserver_->Log() : "spawn failed");
    return false;
  }

  {
    absl::MutexLock lock(&mu_);
    admitd_ = Child::Spawn(
        "admitd", {options_.admitd, "--listen", "127.0.0.1:0", "--data-dir", tmp_ + "/data"},
        tmp_ + "/admitd.log");
  }
  const std::string admitd_log = admitd_ ? admitd_->WaitForLog("msg=serving", start_deadline) : "";
  admitd_address_ = FieldAfter(admitd_log, "msg=listening addr=");
  if (admitd_address_.empty()) {
    *error = absl::StrCat("admitd did not start: ", admitd_ ? admitd_->Log() : "spawn failed");
    return false;
  }

  std::vector<std::string> integrations;
  for (const BenchKind* k : options_.kinds) integrations.push_back(k->integration);
  std::vector<std::string> shim = {options_.shim,
                                   "--admitd",
                                   admitd_address_,
                                   "--cluster",
                                   "bench",
                                   "--kubeconfig",
                                   tmp_ + "/kubeconfig",
                                   "--leader-election-namespace",
                                   options_.lease_namespace,
                                   "--identity",
                                   "shim-bench",
                                   "--health-listen",
                                   "127.0.0.1:0",
                                   "--webhook-listen=",
                                   "--log-level",
                                   "info",
                                   "--integrations=" + absl::StrJoin(integrations, ",")};
  shim.insert(shim.end(), options_.shim_args.begin(), options_.shim_args.end());
  {
    absl::MutexLock lock(&mu_);
    shim_ = Child::Spawn("admitd-shim", shim, tmp_ + "/shim.log");
  }
  // "leading" is logged once the lease is held and every cache has synced.
  const std::string shim_log = shim_ ? shim_->WaitForLog("msg=leading", start_deadline) : "";
  if (shim_log.empty()) {
    *error =
        absl::StrCat("admitd-shim did not start leading: ", shim_ ? shim_->Log() : "spawn failed");
    return false;
  }
  shim_metrics_url_ = absl::StrCat("http://", FieldAfter(shim_log, "health="), "/metrics");
  return true;
}

bool ShimBenchStack::Alive(std::string* dead) {
  absl::MutexLock lock(&mu_);
  for (Child* c : {apiserver_.get(), admitd_.get(), shim_.get()}) {
    if (c != nullptr && !c->Running()) {
      const std::string log = c->Log();
      *dead = absl::StrCat(c->name(), " exited; its log ends:\n",
                           log.substr(log.size() > 3000 ? log.size() - 3000 : 0));
      return false;
    }
  }
  return true;
}

CpuSample ShimBenchStack::Cpu() const {
  CpuSample s;
  s.shim = CpuSeconds(shim_->pid());
  s.apiserver = CpuSeconds(apiserver_->pid());
  s.admitd = CpuSeconds(admitd_->pid());
  s.bench = OwnCpuSeconds();
  return s;
}

double ShimBenchStack::ShimCpu() const { return CpuSeconds(shim_->pid()); }

void ShimBenchStack::Rss(int64_t out[3]) const {
  out[0] = CurrentRssKib(shim_->pid());
  out[1] = CurrentRssKib(apiserver_->pid());
  out[2] = CurrentRssKib(admitd_->pid());
}

void ShimBenchStack::PeakRss(int64_t out[3]) const {
  out[0] = PeakRssKib(shim_->pid());
  out[1] = PeakRssKib(apiserver_->pid());
  out[2] = PeakRssKib(admitd_->pid());
}

std::string ShimBenchStack::ShimLogTail(size_t n) const {
  if (!shim_) return "";
  const std::string log = shim_->Log();
  return log.substr(log.size() > n ? log.size() - n : 0);
}

void ShimBenchStack::Stop() {
  // The shim first (it talks to both), then admitd, then the API server.
  for (std::unique_ptr<Child>* c : {&shim_, &admitd_, &apiserver_}) {
    if (*c) (*c)->Stop(absl::Seconds(10));
  }
  absl::MutexLock lock(&mu_);
  shim_.reset();
  admitd_.reset();
  apiserver_.reset();
  if (!tmp_.empty()) {
    if (options_.keep_logs) {
      std::printf("logs kept in %s (apiserver.log, admitd.log, shim.log)\n", tmp_.c_str());
    } else {
      std::error_code ec;
      std::filesystem::remove_all(tmp_, ec);
    }
    tmp_.clear();
  }
}

void ShimBenchStack::Abandon() {
  absl::MutexLock lock(&mu_);
  for (Child* c : {shim_.get(), admitd_.get(), apiserver_.get()}) {
    if (c != nullptr) c->Signal(SIGKILL);
  }
  if (!tmp_.empty() && !options_.keep_logs) {
    std::error_code ec;
    std::filesystem::remove_all(tmp_, ec);
  }
}

}  // namespace admitd::bench
