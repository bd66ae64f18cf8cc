// One test for each of Kueue's MultiKueue bugs (spec multikueue.md §16) that applies to admitd,
// named after it, showing admitd does not have it, and the checklist items (§17) that need a
// worker's state set by hand. A manager and two worker admitds on loopback; the tests play the
// worker clusters' job side through the workers' API.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "integration/multikueue_fixture.h"

namespace admitd::testing {
namespace {

class MultiKueueBugsTest : public MultiKueueTest {
 protected:
  // The winner of `name`, once the manager admitted it.
  std::string AdmittedOn(const std::string& name) {
    v1::Workload wl;
    EXPECT_TRUE(WaitFor([&] {
      wl = GetOn(manager_, name);
      return IsConditionTrue(wl, "Admitted") && !wl.status().cluster_name().empty();
    })) << wl.DebugString();
    return wl.status().cluster_name();
  }

  static std::string Other(const std::string& w) { return w == "w1" ? "w2" : "w1"; }

  bool Connected(const std::string& w) {
    return manager_.server->metrics().Value("admitd_multikueue_worker_connected",
                                            {{"cluster", w}}) == 1;
  }

  void SetActive(Node& n, const std::string& name, bool active) {
    v1::SetActiveRequest req;
    req.set_namespace_(kNs);
    req.set_name(name);
    req.set_active(active);
    v1::SetActiveResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(n.client->admission->SetActive(&ctx, req, &resp).ok());
  }

  void SubmitOn(Node& n, const std::string& name, int cpus) {
    v1::SubmitRequest req;
    *req.mutable_workload() = Workload(kNs, name, "lq", 1, {{"cpu", absl::StrCat(cpus)}});
    v1::SubmitResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(n.client->admission->Submit(&ctx, req, &resp).ok());
  }

  std::vector<std::string> Nominated(const std::string& name) {
    const v1::Workload wl = GetOn(manager_, name);
    return {wl.status().nominated_cluster_names().begin(),
            wl.status().nominated_cluster_names().end()};
  }
};

// #12999: a transient reconnect evicted long-admitted workloads, because the grace was measured
// from the check's old Ready time. admitd measures it from the first loss.
TEST_F(MultiKueueBugsTest, Kueue12999_AShortOutageLongAfterAdmissionEvictsNothing) {
  Submit("a", 1);
  const std::string w = AdmittedOn("a");
  absl::SleepFor(absl::Seconds(4));  // Ready for longer than workerLostTimeout (3 s)
  StopNode(workers_[w]);
  ASSERT_TRUE(WaitFor([&] { return !Connected(w); }));
  StartNode(workers_[w], w);
  ASSERT_TRUE(WaitFor([&] { return Connected(w); }));
  absl::SleepFor(absl::Seconds(1));
  const v1::Workload wl = GetOn(manager_, "a");
  EXPECT_TRUE(IsConditionTrue(wl, "Admitted")) << wl.DebugString();
  EXPECT_EQ(wl.status().cluster_name(), w);
  EXPECT_EQ(wl.status().requeue_state().count(), 0);
}

// #11515: copies were left on a temporarily unavailable worker when the manager's workload went
// away meanwhile. admitd collects them when the worker is back.
TEST_F(MultiKueueBugsTest, Kueue11515_ACopyLeftOnAWorkerThatWasDownIsRemovedOnReconnect) {
  Submit("b", 1);
  const std::string w = AdmittedOn("b");
  StopNode(workers_[w]);
  ASSERT_TRUE(WaitFor([&] { return !Connected(w); }));
  v1::DeleteWorkloadRequest del;
  del.set_namespace_(kNs);
  del.set_name("b");
  v1::DeleteWorkloadResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(manager_.client->admission->Delete(&ctx, del, &resp).ok());
  StartNode(workers_[w], w);
  EXPECT_TRUE(WaitFor([&] { return GetOn(workers_[w], "b").metadata().name().empty(); }));
}

// #7350 (a manager eviction did nothing) and #15682 (the manager held its quota forever once the
// remote was removed): the winner's copy is deactivated, and once the worker released it the
// manager's quota goes back and the copy is removed.
TEST_F(MultiKueueBugsTest, Kueue7350_Kueue15682_AManagerEvictionStopsTheCopyAndFreesTheQuota) {
  Submit("c", 1);
  const std::string w = AdmittedOn("c");
  SetActive(manager_, "c", false);
  v1::Workload copy;
  ASSERT_TRUE(WaitFor([&] {
    copy = GetOn(workers_[w], "c");
    return copy.spec().has_active() && !copy.spec().active() && IsConditionTrue(copy, "Evicted");
  })) << copy.DebugString();
  // The copy still runs (its quota is held there): so does the manager's reservation.
  EXPECT_TRUE(HoldsQuota(GetOn(manager_, "c")));
  Release(workers_[w], "c", /*finished=*/false);  // the worker's job stopped
  v1::Workload wl;
  EXPECT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "c");
    return !HoldsQuota(wl);
  })) << wl.DebugString();
  EXPECT_TRUE(WaitFor([&] { return GetOn(workers_[w], "c").metadata().name().empty(); }));
}

// #11378: AllAtOnce nominated again while an eviction was still in progress, and copies were
// made before the nomination was stored. admitd nominates only once the eviction is over.
TEST_F(MultiKueueBugsTest, Kueue11378_NoNominationWhileTheEvictionIsInProgress) {
  Submit("d", 1);
  const std::string w = AdmittedOn("d");
  SetActive(workers_[w], "d", false);  // the worker evicts its copy
  v1::Workload wl;
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "d");
    return IsConditionTrue(wl, "Evicted");
  })) << wl.DebugString();
  // The worker has not released its copy: the manager's eviction is not over.
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(Nominated("d").empty());
    EXPECT_TRUE(GetOn(workers_[Other(w)], "d").metadata().name().empty());
    absl::SleepFor(absl::Milliseconds(100));
  }
  Release(workers_[w], "d", /*finished=*/false);
  EXPECT_FALSE(AdmittedOn("d").empty());
  EXPECT_GE(GetOn(manager_, "d").status().requeue_state().count(), 1);
}

// #10428: a worker whose availability changed did not make the workloads that depend on it be
// looked at again. Here both workers are full, so the copies wait; a worker that goes and comes
// back is dropped from and added to the nominations without any other change.
TEST_F(MultiKueueBugsTest, Kueue10428_AWorkerGoingAndComingBackIsFollowedByTheNominations) {
  for (auto& [name, w] : workers_) SubmitOn(w, "local", 4);  // each worker is full
  Submit("e", 1);
  ASSERT_TRUE(WaitFor([&] {
    return Nominated("e") == std::vector<std::string>{"w1", "w2"};
  }));
  StopNode(workers_["w1"]);
  EXPECT_TRUE(WaitFor([&] { return Nominated("e") == std::vector<std::string>{"w2"}; }));
  StartNode(workers_["w1"], "w1");
  EXPECT_TRUE(WaitFor([&] {
    return Nominated("e") == std::vector<std::string>{"w1", "w2"} &&
           !GetOn(workers_["w1"], "e").metadata().name().empty();
  }));
}

// #11206, #11297: one hung worker (its Watch never answered) or a lock held while connecting
// stopped dispatch to every worker. admitd's links are independent: a worker that accepts
// connections and never answers delays nobody.
TEST_F(MultiKueueBugsTest, Kueue11206_Kueue11297_AHungWorkerBlocksNobody) {
  const int hung = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(hung, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(hung, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(hung, 16), 0);  // connections complete in the kernel; nothing answers
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(hung, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ApplyCluster("w3", absl::StrCat("127.0.0.1:", ntohs(addr.sin_port)));
  v1::ApplyRequest config;
  auto* mkconfig = config.mutable_object()->mutable_multi_kueue_config();
  mkconfig->mutable_metadata()->set_name("workers");
  for (const char* c : {"w3", "w1", "w2"}) mkconfig->mutable_spec()->add_clusters(c);
  ApplyOk(manager_, config);
  const absl::Time start = absl::Now();
  Submit("f", 1);
  const std::string w = AdmittedOn("f");
  EXPECT_TRUE(w == "w1" || w == "w2") << w;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(CheckActive(), "True/SomeActiveClusters");
  close(hung);
}

// #13094: after a manager restart during a worker outage, workloads admitted there were retried
// only "eventually" (the broken cluster never counted as disconnected). admitd retries them once
// the grace runs out, counted from the restart for a loss nobody saw begin.
TEST_F(MultiKueueBugsTest, Kueue13094_AManagerRestartedDuringAWorkerOutageRetriesAfterTheGrace) {
  Submit("g", 1);
  const std::string w = AdmittedOn("g");
  StopNode(manager_);
  StopNode(workers_[w]);
  StartNode(manager_, "manager");
  const absl::Time restarted = absl::Now();
  absl::SleepFor(absl::Seconds(1));
  v1::Workload wl = GetOn(manager_, "g");
  EXPECT_TRUE(IsConditionTrue(wl, "Admitted")) << wl.DebugString();
  EXPECT_EQ(wl.status().cluster_name(), w);
  // Once workerLostTimeout (3 s) has passed it goes to the other worker.
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "g");
    return wl.status().cluster_name() == Other(w) && IsConditionTrue(wl, "Admitted");
  })) << wl.DebugString();
  EXPECT_GE(absl::Now() - restarted, absl::Seconds(3));
}

// Spec §17 item 2: two workers admit within 50 ms; the earlier Admitted transition wins and the
// other copy goes.
TEST_F(MultiKueueBugsTest, TwoWorkersAdmittingAlmostAtOnceTheEarlierWins) {
  for (auto& [name, w] : workers_) SubmitOn(w, "local", 4);  // both full: the copies wait
  Submit("h", 1);
  ASSERT_TRUE(WaitFor([&] {
    return !GetOn(workers_["w1"], "h").metadata().name().empty() &&
           !GetOn(workers_["w2"], "h").metadata().name().empty();
  }));
  for (const char* w : {"w2", "w1"}) {  // w2 first
    v1::DeleteWorkloadRequest del;
    del.set_namespace_(kNs);
    del.set_name("local");
    v1::DeleteWorkloadResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(workers_[w].client->admission->Delete(&ctx, del, &resp).ok());
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(AdmittedOn("h"), "w2");
  EXPECT_TRUE(WaitFor([&] { return GetOn(workers_["w1"], "h").metadata().name().empty(); }));
}

// Spec §17 item 3: a copy that only reserved quota on its worker (a check there still pending)
// changes nothing on the manager; once the worker admits it, it wins.
TEST_F(MultiKueueBugsTest, ACopyOnlyReservedOnItsWorkerChangesNothing) {
  for (auto& [name, w] : workers_) {
    v1::ApplyRequest ac;
    auto* check = ac.mutable_object()->mutable_admission_check();
    check->mutable_metadata()->set_name("prov");
    check->mutable_spec()->set_controller_name("example.com/provisioning");
    ApplyOk(w, ac);
    v1::ApplyRequest cq = ClusterQueue("cq", {"default"}, {{"cpu", "4"}});
    cq.mutable_object()->mutable_cluster_queue()->mutable_spec()
        ->mutable_admission_checks_strategy()->add_admission_checks()->set_name("prov");
    ApplyOk(w, cq);
  }
  Submit("i", 1);
  ASSERT_TRUE(WaitFor([&] {
    return IsConditionTrue(GetOn(workers_["w1"], "i"), "QuotaReserved") &&
           IsConditionTrue(GetOn(workers_["w2"], "i"), "QuotaReserved");
  }));
  absl::SleepFor(absl::Milliseconds(500));
  v1::Workload wl = GetOn(manager_, "i");
  EXPECT_FALSE(IsConditionTrue(wl, "Admitted"));
  EXPECT_EQ(Check(wl)->state(), "Pending");
  EXPECT_TRUE(wl.status().cluster_name().empty());
  v1::SetAdmissionCheckStateRequest ready;
  ready.set_namespace_(kNs);
  ready.set_name("i");
  ready.set_check("prov");
  ready.set_state("Ready");
  v1::SetAdmissionCheckStateResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(workers_["w2"].client->admission->SetAdmissionCheckState(&ctx, ready, &resp).ok());
  EXPECT_EQ(AdmittedOn("i"), "w2");
}

// Spec §17 item 10: the worker's job no longer matches its copy (the copy finished OutOfSync):
// Retry with Kueue's message; the manager's workload is not finished.
TEST_F(MultiKueueBugsTest, ARemoteOutOfSyncRetriesAndNeverFinishesTheManagerWorkload) {
  Submit("j", 1);
  const std::string w = AdmittedOn("j");
  v1::ReleaseQuotaRequest req;
  req.set_namespace_(kNs);
  req.set_name("j");
  req.mutable_finished()->set_reason("OutOfSync");
  req.mutable_finished()->set_message("The prebuilt workload is out of sync with its user job");
  v1::ReleaseQuotaResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(workers_[w].client->admission->ReleaseQuota(&ctx, req, &resp).ok());
  v1::Workload wl;
  ASSERT_TRUE(WaitFor([&] {
    wl = GetOn(manager_, "j");
    return wl.status().requeue_state().count() >= 1;
  })) << wl.DebugString();
  EXPECT_FALSE(IsConditionTrue(wl, "Finished"));
  bool found = false;
  for (const v1::Condition& c : wl.status().conditions()) {
    if (c.type() == "Evicted" || c.type() == "Requeued") found = found || !c.message().empty();
  }
  EXPECT_TRUE(found);
  // Its events say why.
  grpc::ClientContext wctx;
  v1::WatchRequest watch;
  watch.set_from_oldest(true);
  watch.add_kinds(v1::OBJECT_KIND_EVENT);
  watch.set_namespace_(kNs);
  std::unique_ptr<grpc::ClientReader<v1::WatchEvent>> reader =
      manager_.client->admission->Watch(&wctx, watch);
  v1::WatchEvent ev;
  const std::string want = absl::StrCat("Remote workload on worker cluster \"", w,
                                        "\" is out of sync with its user job, resetting for "
                                        "re-dispatch, Previously: \"Ready\"");
  bool warned = false;
  while (reader->Read(&ev)) {
    if (ev.type() == v1::WatchEvent::SYNCED) break;
    warned = warned || (ev.event().reason() == "MultiKueue" && ev.event().type() == "Warning" &&
                        ev.event().note() == want);
  }
  wctx.TryCancel();
  EXPECT_TRUE(warned) << want;
}

// Spec §17 item 13: collection removes only this manager's orphans; a workload of another origin
// (another manager) and a worker's own are untouched.
TEST_F(MultiKueueBugsTest, CollectionLeavesOtherOriginsAlone) {
  v1::SubmitRequest other;
  *other.mutable_workload() = Workload(kNs, "other-origin", "lq", 1, {{"cpu", "1"}});
  (*other.mutable_workload()->mutable_metadata()->mutable_labels())
      ["kueue.x-k8s.io/multikueue-origin"] = "another-manager";
  v1::SubmitResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(workers_["w1"].client->admission->Submit(&ctx, other, &resp).ok());
  SubmitOn(workers_["w1"], "own", 1);
  // An orphan of this manager's origin, as a manager that lost its workload would leave it.
  v1::SubmitRequest orphan;
  *orphan.mutable_workload() = Workload(kNs, "orphan", "lq", 1, {{"cpu", "1"}});
  (*orphan.mutable_workload()->mutable_metadata()->mutable_labels())
      ["kueue.x-k8s.io/multikueue-origin"] = "multikueue";
  grpc::ClientContext octx;
  ASSERT_TRUE(workers_["w1"].client->admission->Submit(&octx, orphan, &resp).ok());
  EXPECT_TRUE(WaitFor([&] { return GetOn(workers_["w1"], "orphan").metadata().name().empty(); }));
  EXPECT_FALSE(GetOn(workers_["w1"], "other-origin").metadata().name().empty());
  EXPECT_FALSE(GetOn(workers_["w1"], "own").metadata().name().empty());
}

}  // namespace
}  // namespace admitd::testing
