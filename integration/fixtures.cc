#include "integration/fixtures.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace admitd::testing {

v1::ApplyRequest Flavor(const std::string& name) {
  v1::ApplyRequest req;
  req.mutable_object()->mutable_resource_flavor()->mutable_metadata()->set_name(name);
  return req;
}

v1::ApplyRequest ClusterQueue(const std::string& name, const std::vector<std::string>& flavors,
                              const std::map<std::string, std::string>& resources,
                              const std::string& strategy) {
  v1::ApplyRequest req;
  v1::ClusterQueue* cq = req.mutable_object()->mutable_cluster_queue();
  cq->mutable_metadata()->set_name(name);
  cq->mutable_spec()->set_queueing_strategy(strategy);
  cq->mutable_spec()->mutable_namespace_selector();  // {} selects every namespace
  v1::ResourceGroup* group = cq->mutable_spec()->add_resource_groups();
  for (const auto& [resource, quota] : resources) group->add_covered_resources(resource);
  for (const std::string& flavor : flavors) {
    v1::FlavorQuotas* fq = group->add_flavors();
    fq->set_name(flavor);
    for (const auto& [resource, quota] : resources) {
      v1::ResourceQuota* rq = fq->add_resources();
      rq->set_name(resource);
      rq->set_nominal_quota(quota);
    }
  }
  return req;
}

v1::ApplyRequest LocalQueue(const std::string& ns, const std::string& name,
                            const std::string& cluster_queue) {
  v1::ApplyRequest req;
  v1::LocalQueue* lq = req.mutable_object()->mutable_local_queue();
  lq->mutable_metadata()->set_namespace_(ns);
  lq->mutable_metadata()->set_name(name);
  lq->mutable_spec()->set_cluster_queue(cluster_queue);
  return req;
}

v1::Workload Workload(const std::string& ns, const std::string& name, const std::string& queue,
                      int count, const std::map<std::string, std::string>& requests, int priority) {
  v1::Workload wl;
  wl.mutable_metadata()->set_namespace_(ns);
  wl.mutable_metadata()->set_name(name);
  wl.mutable_spec()->set_queue_name(queue);
  if (priority != 0) wl.mutable_spec()->set_priority(priority);
  v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(count);
  v1::Container* c = ps->mutable_template_()->mutable_spec()->add_containers();
  c->set_name("c");
  for (const auto& [resource, quantity] : requests) {
    (*c->mutable_resources()->mutable_requests())[resource] = quantity;
  }
  return wl;
}

v1::Workload ElasticJobWorkload(const std::string& ns, int j, int count, const std::string& queue) {
  v1::Workload wl = Workload(ns, absl::StrCat("job-", j), queue, count, {{"cpu", "1"}});
  v1::ObjectMeta* meta = wl.mutable_metadata();
  (*meta->mutable_annotations())["kueue.x-k8s.io/elastic-job"] = "true";
  (*meta->mutable_labels())["kueue.x-k8s.io/job-uid"] = absl::StrCat("uid-", j);
  v1::OwnerReference* owner = meta->add_owner_references();
  owner->set_api_version("batch/v1");
  owner->set_kind("Job");
  owner->set_name(absl::StrCat("job-", j));
  owner->set_uid(absl::StrCat("uid-", j));
  owner->set_controller(true);
  return wl;
}

v1::ResizeRequest ElasticJobResize(const std::string& ns, int j, int count, int64_t generation) {
  v1::ResizeRequest req;
  req.set_namespace_(ns);
  req.mutable_job()->set_api_version("batch/v1");
  req.mutable_job()->set_kind("Job");
  req.mutable_job()->set_name(absl::StrCat("job-", j));
  req.mutable_job()->set_uid(absl::StrCat("uid-", j));
  req.set_generation(generation);
  v1::PodSetCount* ps = req.add_pod_sets();
  ps->set_name("main");
  ps->set_count(count);
  return req;
}

bool IsConditionTrue(const v1::Workload& wl, const std::string& type) {
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == type) return c.status() == "True";
  }
  return false;
}

bool HoldsQuota(const v1::Workload& wl) {
  return wl.status().has_admission() && IsConditionTrue(wl, "QuotaReserved") &&
         !IsConditionTrue(wl, "Finished");
}

Client::Client(const std::string& address)
    : Client(grpc::CreateChannel(address, grpc::InsecureChannelCredentials())) {}

Client::Client(std::shared_ptr<grpc::Channel> c)
    : channel(std::move(c)),
      queues(v1::QueueService::NewStub(channel)),
      admission(v1::AdmissionService::NewStub(channel)) {}

absl::StatusOr<std::vector<v1::Workload>> ListWorkloads(Client& client, const std::string& ns,
                                                        uint64_t* revision) {
  std::vector<v1::Workload> out;
  v1::ListWorkloadsRequest list;
  list.set_namespace_(ns);
  list.set_page_size(1000);
  uint64_t first_revision = 0;
  bool same_revision = true;
  do {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ListWorkloadsResponse page;
    grpc::Status s = client.admission->List(&ctx, list, &page);
    if (!s.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                          absl::StrCat("List workloads: ", s.error_message()));
    }
    if (first_revision == 0) first_revision = page.revision();
    same_revision = same_revision && page.revision() == first_revision;
    out.insert(out.end(), page.workloads().begin(), page.workloads().end());
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());
  if (revision != nullptr) *revision = same_revision ? first_revision : 0;
  return out;
}

std::vector<std::string> FieldViolations(const grpc::Status& status) {
  std::vector<std::string> out;
  google::rpc::Status details;
  if (!details.ParseFromString(status.error_details())) return out;
  for (const auto& any : details.details()) {
    google::rpc::BadRequest bad;
    if (any.UnpackTo(&bad)) {
      for (const auto& v : bad.field_violations()) {
        out.push_back(absl::StrCat(v.field(), ": ", v.description()));
      }
    }
  }
  return out;
}

std::string ErrorReason(const grpc::Status& status) {
  google::rpc::Status details;
  if (!details.ParseFromString(status.error_details())) return "";
  for (const auto& any : details.details()) {
    google::rpc::ErrorInfo info;
    if (any.UnpackTo(&info)) return info.reason();
  }
  return "";
}

absl::StatusOr<std::unique_ptr<Process>> Process::Start(const std::string& binary,
                                                        const std::string& data_dir,
                                                        const std::vector<std::string>& extra_args,
                                                        absl::Duration timeout,
                                                        const std::string& ready) {
  auto process = std::unique_ptr<Process>(new Process());
  static int counter = 0;
  process->log_path_ = absl::StrCat(data_dir, ".", getpid(), ".", counter++, ".log");
  std::vector<std::string> args = {binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    int fd = open(process->log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  process->pid_ = pid;
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    std::string log = process->Log();
    size_t at = log.find("msg=listening addr=");
    if (at != std::string::npos && log.find(ready) != std::string::npos) {
      size_t start = at + std::string("msg=listening addr=").size();
      process->address_ = log.substr(start, log.find(' ', start) - start);
      return process;
    }
    int wstatus;
    if (waitpid(pid, &wstatus, WNOHANG) == pid) {
      process->pid_ = -1;
      return absl::InternalError(absl::StrCat("admitd exited early:\n", log));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::DeadlineExceededError(absl::StrCat("admitd did not start:\n", process->Log()));
}

Process::~Process() {
  if (pid_ > 0) Kill(SIGKILL);
}

int Process::Kill(int signal) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, signal);
  int wstatus = 0;
  waitpid(pid_, &wstatus, 0);
  pid_ = -1;
  return wstatus;
}

absl::StatusOr<int> Process::WaitForExit(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("the process has ended already");
  const absl::Time until = absl::Now() + timeout;
  while (true) {
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return wstatus;
    }
    if (absl::Now() >= until) return absl::DeadlineExceededError("the process still runs");
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::string Process::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int64_t PeakRssKib(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      int64_t kib = -1;
      fields >> kib;
      return kib;
    }
  }
  return -1;
}

}  // namespace admitd::testing
