// admitd-crashloop's checks on hand-made server states: each violation they exist for is found,
// and a consistent state passes.
#include "integration/crashloop/checker.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::crashloop {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

void SetCondition(v1::Workload* wl, const std::string& type, const std::string& status) {
  v1::Condition* c = wl->mutable_status()->add_conditions();
  c->set_type(type);
  c->set_status(status);
}

// A workload of `count` pods in crash/lq-0; admitted in cq-0 on flavor fa with `cpu` in total
// when `cpu` is not empty.
v1::Workload Wl(const std::string& name, int count, const std::string& cpu) {
  v1::Workload wl = testing::Workload(kNamespace, name, "lq-0", count, {{"cpu", "1"}});
  wl.mutable_metadata()->set_uid(name + "-uid");
  if (!cpu.empty()) {
    v1::Admission* a = wl.mutable_status()->mutable_admission();
    a->set_cluster_queue("cq-0");
    v1::PodSetAssignment* psa = a->add_pod_set_assignments();
    psa->set_name("main");
    psa->set_count(count);
    (*psa->mutable_flavors())["cpu"] = "fa";
    (*psa->mutable_resource_usage())["cpu"] = cpu;
    SetCondition(&wl, "QuotaReserved", "True");
    SetCondition(&wl, "Admitted", "True");
  }
  return wl;
}

void Reports(v1::ClusterQueueStatus* status, const std::string& cpu, int workloads) {
  status->clear_flavors_reservation();
  status->clear_flavors_usage();
  for (auto* list : {status->mutable_flavors_reservation(), status->mutable_flavors_usage()}) {
    v1::FlavorUsage* fu = list->Add();
    fu->set_name("fa");
    v1::ResourceUsage* r = fu->add_resources();
    r->set_name("cpu");
    r->set_total(cpu);
  }
  status->set_reserving_workloads(workloads);
  status->set_admitted_workloads(workloads);
}

ServerState State(const std::vector<v1::Workload>& workloads, const std::string& cq_cpu,
                  int cq_workloads) {
  ServerState state;
  for (const v1::Workload& wl : workloads) {
    state.workloads[kNamespace + std::string("/") + wl.metadata().name()] = wl;
  }
  v1::ClusterQueue cq;
  cq.mutable_metadata()->set_name("cq-0");
  Reports(cq.mutable_status(), cq_cpu, cq_workloads);
  state.cluster_queues.push_back(cq);
  return state;
}

TEST(CheckQuotaTest, UsageIsTheExactSumOfWhatTheHoldersCharge) {
  v1::Workload half = Wl("half", 2, "1");  // one of its two pods reclaimable: 500m
  v1::ReclaimablePod* r = half.mutable_status()->add_reclaimable_pods();
  r->set_name("main");
  r->set_count(1);
  v1::Workload finished = Wl("done", 1, "4");
  SetCondition(&finished, "Finished", "True");
  const std::vector<v1::Workload> workloads = {half, Wl("whole", 3, "1.5"), finished,
                                               Wl("pending", 1, "")};
  EXPECT_THAT(CheckQuota(State(workloads, "2", 2)), IsEmpty());
  EXPECT_THAT(CheckQuota(State(workloads, "2000m", 2)), IsEmpty());
  EXPECT_THAT(CheckQuota(State(workloads, "2001m", 2)),
              ElementsAre("ClusterQueue cq-0 flavorsReservation fa/cpu: reports 2.001, its "
                          "workloads holding quota sum to 2",
                          "ClusterQueue cq-0 flavorsUsage fa/cpu: reports 2.001, its workloads "
                          "holding quota sum to 2"));
  std::vector<std::string> counts = CheckQuota(State(workloads, "2", 3));
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_THAT(counts[0], HasSubstr("reservingWorkloads 3, but 2"));
}

TEST(CheckQuotaTest, ShareOfAScaledDownPodSetIsNotRounded) {
  v1::Workload wl = Wl("thirds", 3, "1");
  wl.mutable_spec()->mutable_pod_sets(0)->set_count(2);  // scaled down in place: 2/3 of a CPU
  EXPECT_THAT(CheckQuota(State({wl}, "666m", 1))[0], HasSubstr("sum to 2/3"));
  EXPECT_THAT(CheckQuota(State({wl}, "667m", 1))[0], HasSubstr("sum to 2/3"));
}

TEST(CheckSlicesTest, TwoHoldersOfOneJobAreAViolation) {
  v1::Workload a = Wl("job-1", 2, "2"), b = Wl("job-1-slice", 3, "3");
  (*a.mutable_metadata()->mutable_labels())["kueue.x-k8s.io/job-uid"] = "uid-1";
  (*b.mutable_metadata()->mutable_labels())["kueue.x-k8s.io/job-uid"] = "uid-1";
  EXPECT_THAT(CheckSlices(State({a, b}, "5", 2)),
              ElementsAre("job uid-1 has 2 workloads holding quota: job-1, job-1-slice"));
  SetCondition(&a, "Finished", "True");
  EXPECT_THAT(CheckSlices(State({a, b}, "3", 1)), IsEmpty());
}

TrackedWorkload Tracked(const std::string& name, WorkloadState::Phase phase, bool holds = false) {
  TrackedWorkload t;
  t.name = name;
  t.uid = name + "-uid";
  t.acked.phase = phase;
  t.acked.holds_quota = holds;
  return t;
}

TEST(CheckLedgerTest, AcknowledgedWritesMustBeVisible) {
  WorkerLedger ledger;
  ledger.workloads.push_back(Tracked("lost", WorkloadState::kLive));
  ledger.workloads.push_back(Tracked("admitted", WorkloadState::kLive, /*holds=*/true));
  ledger.workloads.push_back(Tracked("deleted", WorkloadState::kAbsent));
  ledger.workloads.push_back(Tracked("kept", WorkloadState::kLive, /*holds=*/true));
  const ServerState state =
      State({Wl("admitted", 1, ""), Wl("deleted", 1, ""), Wl("kept", 1, "1")}, "1", 1);
  Resolution resolution;
  std::vector<std::string> v = CheckLedger(state, &ledger, &resolution);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_THAT(v[0], HasSubstr("submitted workload lost: acknowledged, but is gone"));
  EXPECT_THAT(v[1], HasSubstr("admitted: acknowledged, but lost its quota reservation"));
  EXPECT_THAT(v[2], HasSubstr("deleted: acknowledged, but should be gone"));
  // Reported once: a broken object is not checked again.
  EXPECT_THAT(CheckLedger(state, &ledger, &resolution), IsEmpty());
}

TEST(CheckLedgerTest, ACutOffWriteMayHaveHappenedOrNot) {
  WorkerLedger ledger;
  ledger.workloads.push_back(Tracked("finished", WorkloadState::kLive));
  ledger.workloads.back().cut_off = WorkloadState{WorkloadState::kFinished, 0, false};
  ledger.workloads.push_back(Tracked("unfinished", WorkloadState::kLive));
  ledger.workloads.back().cut_off = WorkloadState{WorkloadState::kFinished, 0, false};
  ledger.workloads.push_back(Tracked("never", WorkloadState::kAbsent));
  ledger.workloads.back().cut_off = WorkloadState{WorkloadState::kLive, 0, false};
  v1::Workload finished = Wl("finished", 1, "");
  SetCondition(&finished, "Finished", "True");
  Resolution resolution;
  EXPECT_THAT(CheckLedger(State({finished, Wl("unfinished", 1, "")}, "0", 0), &ledger, &resolution),
              IsEmpty());
  EXPECT_EQ(resolution.applied, 1);
  EXPECT_EQ(resolution.not_applied, 2);
  EXPECT_EQ(ledger.workloads[0].acked.phase, WorkloadState::kFinished);
  EXPECT_EQ(ledger.workloads[1].acked.phase, WorkloadState::kLive);
  EXPECT_FALSE(ledger.workloads[0].cut_off.has_value());
  EXPECT_TRUE(ledger.workloads[2].done);  // its Submit never happened
}

TEST(CheckLedgerTest, AResizedJobsNewestWorkloadHasTheAcknowledgedCount) {
  WorkerLedger ledger;
  TrackedJob job;
  job.number = 7;
  job.acked = JobState{true, 4, "job-job-7-abcde"};
  ledger.jobs.push_back(job);
  v1::Workload old = testing::ElasticJobWorkload(kNamespace, 7, 2);
  v1::Workload slice = testing::ElasticJobWorkload(kNamespace, 7, 4);
  slice.mutable_metadata()->set_name("job-job-7-abcde");
  (*slice.mutable_metadata()
        ->mutable_annotations())["kueue.x-k8s.io/workload-slice-replacement-for"] =
      std::string(kNamespace) + "/job-7";
  Resolution resolution;
  EXPECT_THAT(CheckLedger(State({old, slice}, "0", 0), &ledger, &resolution), IsEmpty());
  slice.mutable_spec()->mutable_pod_sets(0)->set_count(3);
  EXPECT_THAT(CheckLedger(State({old, slice}, "0", 0), &ledger, &resolution),
              ElementsAre(HasSubstr("elastic job-7: acknowledged, but newest live workload "
                                    "job-job-7-abcde has 3 pods, not 4")));
}

TEST(CheckLedgerTest, ARunningGroupsPodsAreNotAskedToBeUngatedAgain) {
  WorkerLedger ledger;
  ledger.cluster = "c0";
  TrackedGroup g;
  g.name = "g";
  g.pods = 2;
  g.acked.phase = GroupState::kRunning;
  ledger.groups.push_back(g);
  ServerState state = State({Wl("g", 2, "1")}, "1", 1);
  Resolution resolution;
  EXPECT_THAT(CheckLedger(state, &ledger, &resolution), IsEmpty());
  state.ungate.insert("c0/crash/g-1");
  EXPECT_THAT(CheckLedger(state, &ledger, &resolution),
              ElementsAre(HasSubstr("pod g-1 was reported ungated, yet UNGATE is asked")));
}

}  // namespace
}  // namespace admitd::crashloop
