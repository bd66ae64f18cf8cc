// MultiKueue across real admitd servers on loopback: a manager dispatching to two workers
// (docs/multikueue.md). The tests play the worker clusters' job side by hand: they finish,
// evict and release the copies through the workers' API, as a worker shim would.
#include <chrono>
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
namespace {

constexpr char kNs[] = "team";

struct Node {
  std::unique_ptr<AdmitdServer> server;
  std::unique_ptr<Client> client;
  Config config;
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

  void TearDown() override {
    for (Node* n : {&manager_, &workers_["w1"], &workers_["w2"]}) {
      if (n->server) n->server->Shutdown(absl::Seconds(1));
    }
    std::filesystem::remove_all(root_);
  }

  void StartNode(Node& n, const std::string& name) {
    n.config.listen = "127.0.0.1:0";
    n.config.data_dir = absl::StrCat(root_, "/", name);
    absl::StatusOr<std::unique_ptr<AdmitdServer>> s = AdmitdServer::Start(n.config);
    ASSERT_TRUE(s.ok()) << s.status();
    n.server = *std::move(s);
    n.client = std::make_unique<Client>(n.server->address());
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

TEST_F(MultiKueueTest, AllAtOnceOneWinnerAndItsFinishFinishesTheManagerWorkload) {
  Submit("job-a", 2);
  v1::Workload wl;
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "job-a");
    return IsConditionTrue(wl, "Admitted");
  })) << wl.DebugString();
  const std::string winner = wl.status().cluster_name();
  ASSERT_TRUE(winner == "w1" || winner == "w2") << winner;
  const std::string loser = winner == "w1" ? "w2" : "w1";
  EXPECT_EQ(wl.status().nominated_cluster_names_size(), 0);
  ASSERT_NE(Check(wl), nullptr);
  EXPECT_EQ(Check(wl)->state(), "Ready");
  EXPECT_EQ(Check(wl)->message(), absl::StrCat("The workload was admitted on \"", winner, "\""));
  // The copy runs in the winner only, carrying this manager's origin.
  v1::Workload copy = GetOn(workers_[winner], "job-a");
  EXPECT_TRUE(IsConditionTrue(copy, "Admitted"));
  EXPECT_EQ(copy.metadata().labels().at("kueue.x-k8s.io/multikueue-origin"), "multikueue");
  EXPECT_EQ(copy.metadata().labels().at("admitd.io/job-cluster"), winner);
  EXPECT_TRUE(WaitFor([&] { return GetOn(workers_[loser], "job-a").metadata().name().empty(); }));
  // Kueue's counters: a copy to each worker, one admission in the winner; both connected.
  const Metrics& m = manager_.server->metrics();
  for (const char* w : {"w1", "w2"}) {
    EXPECT_EQ(m.Value("kueue_multikueue_workloads_dispatched_total",
                      {{"cluster_queue", "cq"}, {"cluster", w}}),
              1)
        << w;
    EXPECT_EQ(m.Value("admitd_multikueue_worker_connected", {{"cluster", w}}), 1) << w;
  }
  EXPECT_EQ(m.Value("kueue_multikueue_workloads_admitted_total",
                    {{"cluster_queue", "cq"}, {"cluster", winner}}),
            1);
  EXPECT_EQ(m.Value("kueue_multikueue_workloads_admitted_total",
                    {{"cluster_queue", "cq"}, {"cluster", loser}}),
            0);

  // The job finishes in the worker: the manager's workload finishes with its reason and message.
  Release(workers_[winner], "job-a", /*finished=*/true, "Job finished successfully");
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "job-a");
    return IsConditionTrue(wl, "Finished");
  }));
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() != "Finished") continue;
    EXPECT_EQ(c.reason(), "Succeeded");
    EXPECT_EQ(c.message(), "Job finished successfully");
  }
  // Then the copy goes.
  EXPECT_TRUE(WaitFor([&] { return GetOn(workers_[winner], "job-a").metadata().name().empty(); }));
}

TEST_F(MultiKueueTest, AWorkerEvictionRetriesAndDispatchesAgain) {
  Submit("job-b", 2);
  v1::Workload wl;
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "job-b");
    return IsConditionTrue(wl, "Admitted");
  }));
  const std::string first = wl.status().cluster_name();
  // The worker evicts its copy (here by deactivating it); its job stops and gives the quota back.
  {
    v1::SetActiveRequest req;
    req.set_namespace_(kNs);
    req.set_name("job-b");
    req.set_active(false);
    v1::SetActiveResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(workers_[first].client->admission->SetActive(&ctx, req, &resp).ok());
  }
  // The manager keeps its quota until no worker runs the job.
  ASSERT_TRUE(WaitFor([&] { return IsConditionTrue(GetOn(manager_, "job-b"), "Evicted"); }));
  wl = GetOn(manager_, "job-b");
  EXPECT_TRUE(HoldsQuota(wl));
  EXPECT_EQ(wl.status().cluster_name(), "");
  bool saw_retry_message = false;
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == "Evicted") {
      saw_retry_message =
          c.message() == absl::StrCat("Evicted due to AdmissionCheck in Retry state: \"mk\" "
                                      "(Workload evicted on worker cluster: \"",
                                      first, "\", resetting for re-admission. Previously: "
                                             "\"Ready\")");
    }
  }
  EXPECT_TRUE(saw_retry_message) << wl.DebugString();
  Release(workers_[first], "job-b", /*finished=*/false);
  // Released at once, requeued without backoff and admitted again through a worker.
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "job-b");
    return IsConditionTrue(wl, "Admitted") && !wl.status().cluster_name().empty();
  })) << wl.DebugString();
  int evictions = 0;
  for (const auto& e : wl.status().scheduling_stats().evictions()) {
    if (e.reason() == "AdmissionCheck") evictions += e.count();
  }
  EXPECT_EQ(evictions, 1);
}

TEST_F(MultiKueueTest, AWorkerLostLongerThanTheTimeoutGivesTheWorkloadToAnother) {
  Submit("job-c", 2);
  v1::Workload wl;
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "job-c");
    return IsConditionTrue(wl, "Admitted");
  }));
  const std::string lost = wl.status().cluster_name();
  const std::string other = lost == "w1" ? "w2" : "w1";
  workers_[lost].server->Shutdown(absl::Seconds(1));
  workers_[lost].server.reset();
  // Within workerLostTimeout (3 s here) nothing changes.
  absl::SleepFor(absl::Seconds(1));
  wl = GetOn(manager_, "job-c");
  EXPECT_TRUE(IsConditionTrue(wl, "Admitted"));
  EXPECT_EQ(wl.status().cluster_name(), lost);
  // After it, the workload goes to the worker that is left.
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "job-c");
    return IsConditionTrue(wl, "Admitted") && wl.status().cluster_name() == other;
  })) << wl.DebugString();
  // The lost worker's cluster says so.
  v1::GetObjectRequest req;
  req.set_kind(v1::OBJECT_KIND_MULTIKUEUE_CLUSTER);
  req.set_name(lost);
  v1::QueueObject mkc;
  grpc::ClientContext ctx;
  ASSERT_TRUE(manager_.client->queues->Get(&ctx, req, &mkc).ok());
  EXPECT_TRUE(mkc.multi_kueue_cluster().status().has_disconnected_since());
  EXPECT_EQ(CheckActive(), "True/SomeActiveClusters");
  EXPECT_EQ(manager_.server->metrics().Value("admitd_multikueue_worker_connected",
                                             {{"cluster", lost}}),
            0);
}

TEST_F(MultiKueueTest, TheWinnerAloneGetsTheJobAndItsStatusComesBack) {
  SubmitJob("job-m", "kueue.x-k8s.io/multikueue");
  v1::Workload wl;
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "job-m");
    return IsConditionTrue(wl, "Admitted");
  })) << wl.DebugString();
  const std::string winner = wl.status().cluster_name();
  const std::string loser = winner == "w1" ? "w2" : "w1";
  // The winning copy gets the manifest (the worker shim's signal to create the job); the copy
  // carries no owner of the manager's and no job-uid.
  v1::Workload copy;
  ASSERT_TRUE(WaitFor([&] {
    copy = GetOn(workers_[winner], "job-m");
    return !copy.remote_job().manifest().empty();
  })) << copy.DebugString();
  EXPECT_EQ(copy.remote_job().manifest(), wl.remote_job().manifest());
  EXPECT_EQ(copy.metadata().owner_references_size(), 0);
  EXPECT_EQ(copy.metadata().labels().count("kueue.x-k8s.io/job-uid"), 0u);
  EXPECT_TRUE(WaitFor([&] { return GetOn(workers_[loser], "job-m").metadata().name().empty(); }));

  // The worker cluster's shim adopts the copy for the job it created and reports its status.
  v1::UpdateRemoteJobRequest adopt;
  adopt.set_namespace_(kNs);
  adopt.set_name("job-m");
  adopt.mutable_adopt()->set_api_version("batch/v1");
  adopt.mutable_adopt()->set_kind("Job");
  adopt.mutable_adopt()->set_name("job-m");
  adopt.mutable_adopt()->set_uid("worker-job-uid");
  adopt.set_status(R"({"active":1})");
  ASSERT_TRUE(UpdateRemoteJob(workers_[winner], adopt).ok());
  copy = GetOn(workers_[winner], "job-m");
  ASSERT_EQ(copy.metadata().owner_references_size(), 1);
  EXPECT_TRUE(copy.metadata().owner_references(0).controller());
  EXPECT_EQ(copy.metadata().labels().at("kueue.x-k8s.io/job-uid"), "worker-job-uid");
  ASSERT_TRUE(WaitFor([&] {
    return GetOn(manager_, "job-m").remote_job().status() == R"({"active":1})";
  }));
  // Another job cannot take the copy.
  adopt.mutable_adopt()->set_uid("another");
  adopt.clear_status();
  EXPECT_EQ(UpdateRemoteJob(workers_[winner], adopt).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  // The last status arrives before the finish, and both reach the manager.
  v1::UpdateRemoteJobRequest last;
  last.set_namespace_(kNs);
  last.set_name("job-m");
  last.set_status(R"({"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]})");
  ASSERT_TRUE(UpdateRemoteJob(workers_[winner], last).ok());
  Release(workers_[winner], "job-m", /*finished=*/true, "Job finished successfully");
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "job-m");
    return IsConditionTrue(wl, "Finished");
  }));
  EXPECT_EQ(wl.remote_job().status(), last.status());
}

TEST_F(MultiKueueTest, AJobNotManagedByMultiKueueIsRejected) {
  SubmitJob("job-local", "");
  SubmitJob("job-ctrl", "kubernetes.io/job-controller");
  SubmitJob("pod-x", "", "v1", "Pod");
  const std::map<std::string, std::string> want = {
      {"job-local",
       "The owner is not managed by Kueue: Expecting spec.managedBy to be "
       "\"kueue.x-k8s.io/multikueue\" not \"\", Previously: \"Pending\""},
      {"job-ctrl",
       "The owner is not managed by Kueue: Expecting spec.managedBy to be "
       "\"kueue.x-k8s.io/multikueue\" not \"kubernetes.io/job-controller\", Previously: "
       "\"Pending\""},
      {"pod-x", "No multikueue adapter found for owner kind \"/v1, Kind=Pod\", Previously: "
                "\"Pending\""}};
  for (const auto& [name, message] : want) {
    v1::Workload wl;
    ASSERT_TRUE(WaitFor([&] {
      wl = GetOn(manager_, name);
      return Check(wl) != nullptr && Check(wl)->state() == "Rejected";
    })) << wl.DebugString();
    EXPECT_EQ(Check(wl)->message(), message);
    // Rejected deactivates it; no worker ever got a copy.
    ASSERT_TRUE(WaitFor([&] { return !GetOn(manager_, name).spec().active(); }));
    for (auto& [w, node] : workers_) EXPECT_TRUE(GetOn(node, name).metadata().name().empty()) << w;
  }
}

TEST_F(MultiKueueTest, UpdateRemoteJobRefusesWhatIsNotAJsonObject) {
  SubmitJob("job-v", "kueue.x-k8s.io/multikueue");
  v1::UpdateRemoteJobRequest req;
  req.set_namespace_(kNs);
  req.set_name("job-v");
  req.set_status("[1, 2]");
  req.set_manifest("{not json");
  req.mutable_adopt()->set_kind("Job");
  v1::UpdateRemoteJobResponse resp;
  grpc::ClientContext ctx;
  grpc::Status s = manager_.client->admission->UpdateRemoteJob(&ctx, req, &resp);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const std::string details = s.error_message();
  EXPECT_NE(details.find("must be a JSON object"), std::string::npos) << details;
  EXPECT_NE(details.find("not array"), std::string::npos) << details;
  // Nothing changed.
  const v1::Workload wl = GetOn(manager_, "job-v");
  EXPECT_TRUE(wl.remote_job().status().empty());
  EXPECT_NE(wl.remote_job().manifest(), "{not json");
  // A Submit with a manifest that is not JSON is refused as well.
  v1::SubmitRequest bad;
  *bad.mutable_workload() = Workload(kNs, "job-bad", "lq", 1, {{"cpu", "1"}});
  bad.mutable_workload()->mutable_remote_job()->set_manifest("nope");
  v1::SubmitResponse sresp;
  grpc::ClientContext sctx;
  EXPECT_EQ(manager_.client->admission->Submit(&sctx, bad, &sresp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace admitd::testing
