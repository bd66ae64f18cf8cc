// The MultiKueue test fixture: a manager admitd and two worker admitds ("w1", "w2") as real
// servers on loopback, the manager's ClusterQueue "cq" guarded by the MultiKueue check "mk" over
// both workers, and helpers that play the manager cluster's shim (SubmitJob) and the worker
// clusters' job side (Release, UpdateRemoteJob) through the servers' public API.
#ifndef ADMITD_INTEGRATION_MULTIKUEUE_FIXTURE_H_
#define ADMITD_INTEGRATION_MULTIKUEUE_FIXTURE_H_

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "integration/fixtures.h"
#include "server/server.h"

namespace admitd::testing {

inline constexpr char kNs[] = "team";

struct Node {
  std::unique_ptr<AdmitdServer> server;
  std::unique_ptr<Client> client;
  Config config;
  bool restarting = false;  // stopped by StopNode: StartNode reuses its address
};

class MultiKueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = absl::StrCat(::testing::TempDir(), "/multikueue-", getpid(), "-",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    for (const char* name : {"w1", "w2"}) {
      Node& w = workers_[name];
      StartNode(w, name);
      ApplyOk(w, Flavor("default"));
      ApplyOk(w, ClusterQueue("cq", {"default"}, {{"cpu", "4"}}));
      ApplyOk(w, LocalQueue(kNs, "lq", "cq"));
    }
    manager_.config.multikueue_worker_lost_timeout = absl::Seconds(3);
    manager_.config.multikueue_reconnect_backoff = absl::Milliseconds(100);
    ConfigureManager(manager_.config);
    StartNode(manager_, "manager");
    ApplyOk(manager_, Flavor("default"));
    v1::ApplyRequest cq = ClusterQueue("cq", {"default"}, {{"cpu", "10"}});
    cq.mutable_object()->mutable_cluster_queue()->mutable_spec()
        ->mutable_admission_checks_strategy()->add_admission_checks()->set_name("mk");
    ApplyOk(manager_, cq);
    ApplyOk(manager_, LocalQueue(kNs, "lq", "cq"));
    v1::ApplyRequest ac;
    auto* check = ac.mutable_object()->mutable_admission_check();
    check->mutable_metadata()->set_name("mk");
    check->mutable_spec()->set_controller_name("kueue.x-k8s.io/multikueue");
    check->mutable_spec()->mutable_parameters()->set_api_group("kueue.x-k8s.io");
    check->mutable_spec()->mutable_parameters()->set_kind("MultiKueueConfig");
    check->mutable_spec()->mutable_parameters()->set_name("workers");
    ApplyOk(manager_, ac);
    v1::ApplyRequest config;
    auto* mkconfig = config.mutable_object()->mutable_multi_kueue_config();
    mkconfig->mutable_metadata()->set_name("workers");
    mkconfig->mutable_spec()->add_clusters("w1");
    mkconfig->mutable_spec()->add_clusters("w2");
    ApplyOk(manager_, config);
    for (auto& [name, w] : workers_) ApplyCluster(name, w.server->address());
    ASSERT_TRUE(WaitFor([&] { return CheckActive() == "True/Active"; })) << CheckActive();
  }

  // A test fixture's changes to the manager's configuration, before it starts.
  virtual void ConfigureManager(Config& config) { (void)config; }

  void TearDown() override {
    for (Node* n : {&manager_, &workers_["w1"], &workers_["w2"]}) {
      if (n->server) n->server->Shutdown(absl::Seconds(1));
    }
    std::filesystem::remove_all(root_);
  }

  // Starts `n` (again: on the address it had, with its store).
  void StartNode(Node& n, const std::string& name) {
    if (!n.restarting) n.config.listen = "127.0.0.1:0";
    n.restarting = false;
    n.config.data_dir = absl::StrCat(root_, "/", name);
    absl::StatusOr<std::unique_ptr<AdmitdServer>> s = AdmitdServer::Start(n.config);
    ASSERT_TRUE(s.ok()) << s.status();
    n.server = *std::move(s);
    n.client = std::make_unique<Client>(n.server->address());
  }

  // Stops `n` at once (its address and store are kept for StartNode).
  void StopNode(Node& n) {
    n.config.listen = n.server->address();
    n.restarting = true;
    n.server->Shutdown(absl::Milliseconds(100));
    n.server.reset();
  }

  void ApplyOk(Node& n, const v1::ApplyRequest& req) {
    grpc::ClientContext ctx;
    v1::ApplyResponse resp;
    grpc::Status s = n.client->queues->Apply(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  void ApplyCluster(const std::string& name, const std::string& address) {
    v1::ApplyRequest req;
    auto* mkc = req.mutable_object()->mutable_multi_kueue_cluster();
    mkc->mutable_metadata()->set_name(name);
    mkc->mutable_spec()->mutable_admitd()->set_address(address);
    ApplyOk(manager_, req);
  }

  std::string CheckActive() {
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_ADMISSION_CHECK);
    req.set_name("mk");
    v1::QueueObject out;
    grpc::ClientContext ctx;
    if (!manager_.client->queues->Get(&ctx, req, &out).ok()) return "missing";
    for (const v1::Condition& c : out.admission_check().status().conditions()) {
      if (c.type() == "Active") return absl::StrCat(c.status(), "/", c.reason());
    }
    return "none";
  }

  static bool WaitFor(const std::function<bool()>& done, absl::Duration limit = absl::Seconds(20)) {
    for (absl::Time until = absl::Now() + limit; absl::Now() < until;) {
      if (done()) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return done();
  }

  // The workload, or an empty one when it does not exist.
  static v1::Workload GetOn(Node& n, const std::string& name) {
    v1::GetWorkloadRequest req;
    req.set_namespace_(kNs);
    req.set_name(name);
    v1::Workload out;
    grpc::ClientContext ctx;
    if (!n.client->admission->Get(&ctx, req, &out).ok()) return v1::Workload();
    return out;
  }

  void Submit(const std::string& name, int cpus) {
    v1::SubmitRequest req;
    *req.mutable_workload() = Workload(kNs, name, "lq", 1, {{"cpu", absl::StrCat(cpus)}});
    v1::SubmitResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = manager_.client->admission->Submit(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // A workload as the manager cluster's shim submits it for a batch/v1 Job: owned by the Job,
  // with the Job's spec.managedBy and manifest.
  void SubmitJob(const std::string& name, const std::string& managed_by,
                 const std::string& owner_api = "batch/v1", const std::string& owner_kind = "Job") {
    v1::SubmitRequest req;
    v1::Workload* wl = req.mutable_workload();
    *wl = Workload(kNs, name, "lq", 1, {{"cpu", "1"}});
    v1::OwnerReference* owner = wl->mutable_metadata()->add_owner_references();
    owner->set_api_version(owner_api);
    owner->set_kind(owner_kind);
    owner->set_name(name);
    owner->set_uid(absl::StrCat("uid-", name));
    owner->set_controller(true);
    wl->mutable_remote_job()->set_api_version("batch/v1");
    wl->mutable_remote_job()->set_kind("Job");
    wl->mutable_remote_job()->set_managed_by(managed_by);
    wl->mutable_remote_job()->set_manifest(absl::StrCat(
        R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")", name,
        R"("},"spec":{"suspend":true}})"));
    v1::SubmitResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = manager_.client->admission->Submit(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  grpc::Status UpdateRemoteJob(Node& n, const v1::UpdateRemoteJobRequest& req) {
    v1::UpdateRemoteJobResponse resp;
    grpc::ClientContext ctx;
    return n.client->admission->UpdateRemoteJob(&ctx, req, &resp);
  }

  void Release(Node& n, const std::string& name, bool finished, const std::string& message = "") {
    v1::ReleaseQuotaRequest req;
    req.set_namespace_(kNs);
    req.set_name(name);
    if (finished) {
      req.mutable_finished()->set_succeeded(true);
      req.mutable_finished()->set_message(message);
    } else {
      req.mutable_stopped();
    }
    v1::ReleaseQuotaResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = n.client->admission->ReleaseQuota(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  const v1::AdmissionCheckState* Check(const v1::Workload& wl) {
    for (const auto& c : wl.status().admission_checks()) {
      if (c.name() == "mk") return &c;
    }
    return nullptr;
  }

  std::string root_;
  Node manager_;
  std::map<std::string, Node> workers_;
};

}  // namespace admitd::testing

#endif  // ADMITD_INTEGRATION_MULTIKUEUE_FIXTURE_H_
