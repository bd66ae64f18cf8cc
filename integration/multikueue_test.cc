// MultiKueue across real admitd servers on loopback: a manager dispatching to two workers
// (docs/multikueue.md). The tests play the worker clusters' job side by hand: they finish,
// evict and release the copies through the workers' API, as a worker shim would.
#include <string>
#include <vector>

#include "integration/multikueue_fixture.h"

namespace admitd::testing {
namespace {

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
  SubmitJob("deploy-x", "", "apps/v1", "Deployment");
  const std::map<std::string, std::string> want = {
      {"job-local",
       "The owner is not managed by Kueue: Expecting spec.managedBy to be "
       "\"kueue.x-k8s.io/multikueue\" not \"\", Previously: \"Pending\""},
      {"job-ctrl",
       "The owner is not managed by Kueue: Expecting spec.managedBy to be "
       "\"kueue.x-k8s.io/multikueue\" not \"kubernetes.io/job-controller\", Previously: "
       "\"Pending\""},
      {"deploy-x",
       "No multikueue adapter found for owner kind \"apps/v1, Kind=Deployment\", Previously: "
       "\"Pending\""}};
  for (const auto& entry : want) {
    const std::string& name = entry.first;  // lambdas below capture it
    const std::string& message = entry.second;
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

class IncrementalTest : public MultiKueueTest {
 protected:
  void ConfigureManager(Config& config) override {
    config.multikueue_dispatcher = "kueue.x-k8s.io/multikueue-dispatcher-incremental";
    config.multikueue_step_size = 1;
    config.multikueue_round_timeout = absl::Seconds(2);
  }

  std::vector<std::string> Nominated(const std::string& name) {
    const v1::Workload wl = GetOn(manager_, name);
    return {wl.status().nominated_cluster_names().begin(),
            wl.status().nominated_cluster_names().end()};
  }
};

// Spec §17 item 4, with a 2 s round: one worker per round in the config's order, the rounds
// continue across a manager restart, and an admission stops them.
TEST_F(IncrementalTest, OneWorkerPerRoundAcrossARestartUntilOneAdmits) {
  // Both workers full: the copies wait.
  for (auto& [name, w] : workers_) {
    v1::SubmitRequest req;
    *req.mutable_workload() = Workload(kNs, "local", "lq", 1, {{"cpu", "4"}});
    v1::SubmitResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(w.client->admission->Submit(&ctx, req, &resp).ok());
  }
  Submit("inc", 1);
  ASSERT_TRUE(WaitFor([&] { return Nominated("inc") == std::vector<std::string>{"w1"}; }));
  const absl::Time first = absl::Now();
  EXPECT_TRUE(WaitFor([&] { return !GetOn(workers_["w1"], "inc").metadata().name().empty(); }));
  EXPECT_TRUE(GetOn(workers_["w2"], "inc").metadata().name().empty());
  // A restart in the middle of the round does not start the next round at once.
  StopNode(manager_);
  StartNode(manager_, "manager");
  absl::SleepFor(absl::Milliseconds(300));
  if (absl::Now() - first < absl::Milliseconds(1500)) {
    EXPECT_EQ(Nominated("inc"), std::vector<std::string>{"w1"});
  }
  ASSERT_TRUE(WaitFor([&] {
    return Nominated("inc") == std::vector<std::string>({"w1", "w2"});
  }));
  EXPECT_GE(absl::Now() - first, absl::Milliseconds(1900));
  EXPECT_TRUE(WaitFor([&] { return !GetOn(workers_["w2"], "inc").metadata().name().empty(); }));
  // w2 frees its quota: the copy there is admitted, and it wins.
  v1::DeleteWorkloadRequest del;
  del.set_namespace_(kNs);
  del.set_name("local");
  v1::DeleteWorkloadResponse dresp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(workers_["w2"].client->admission->Delete(&ctx, del, &dresp).ok());
  v1::Workload wl;
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "inc");
    return IsConditionTrue(wl, "Admitted");
  })) << wl.DebugString();
  EXPECT_EQ(wl.status().cluster_name(), "w2");
  EXPECT_EQ(wl.status().nominated_cluster_names_size(), 0);
  EXPECT_TRUE(WaitFor([&] { return GetOn(workers_["w1"], "inc").metadata().name().empty(); }));
}

}  // namespace
}  // namespace admitd::testing
