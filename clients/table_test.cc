// admitctl's renderings: workload details, queue tables with the pending split, admit reports
// with a pending position, and one-line events.
#include "clients/table.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::clients {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// An admitted slice of job-demo with the given pod set counts.
v1::Workload Slice(const std::vector<std::pair<std::string, int>>& pod_sets) {
  v1::Workload wl;
  wl.mutable_metadata()->set_namespace_("ns");
  wl.mutable_metadata()->set_name("job-demo-078e4");
  wl.mutable_status()->mutable_admission()->set_cluster_queue("cq");
  for (const auto& [name, count] : pod_sets) {
    v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
    ps->set_name(name);
    ps->set_count(count);
    v1::PodSetAssignment* psa = wl.mutable_status()->mutable_admission()->add_pod_set_assignments();
    psa->set_name(name);
    psa->set_count(count);
    (*psa->mutable_flavors())["cpu"] = "default";
  }
  for (const char* type : {"QuotaReserved", "Admitted"}) {
    v1::Condition* c = wl.mutable_status()->add_conditions();
    c->set_type(type);
    c->set_status("True");
  }
  return wl;
}

TEST(WorkloadDetailTest, ShowsTheSliceChainAndGrantedCounts) {
  v1::Workload slice = Slice({{"main", 5}});
  auto& annotations = *slice.mutable_metadata()->mutable_annotations();
  annotations["kueue.x-k8s.io/workload-slice-name"] = "job-demo-e7080";
  annotations["kueue.x-k8s.io/workload-slice-replacement-for"] = "ns/job-demo-e7080";
  annotations["kueue.x-k8s.io/elastic-job"] = "true";
  const std::string detail = WorkloadDetail(slice);
  EXPECT_THAT(detail, HasSubstr("slice of:         job-demo-e7080\n"));
  EXPECT_THAT(detail, HasSubstr("replacement for:  ns/job-demo-e7080\n"));
  EXPECT_THAT(detail, HasSubstr("granted counts:   main=5 (cpu:default)\n"));
  EXPECT_THAT(detail, HasSubstr("elastic:          yes\n"));

  v1::ResizeResponse resp;
  resp.set_outcome(v1::ResizeResponse::SLICE_CREATED);
  *resp.add_workloads() = slice;
  const std::string report = ResizeReport(resp);
  EXPECT_THAT(report, HasSubstr("outcome: SLICE_CREATED\n"));
  EXPECT_THAT(report, HasSubstr("job-demo-078e4"));
  EXPECT_THAT(report, HasSubstr("main=5"));
}

TEST(QueueObjectTableTest, ClusterQueuesShowActiveAndInadmissiblePendingCounts) {
  v1::QueueObject o;
  v1::ClusterQueue* cq = o.mutable_cluster_queue();
  cq->mutable_metadata()->set_name("cq");
  cq->mutable_status()->set_pending_workloads(5);
  cq->mutable_status()->set_pending_active_workloads(2);
  cq->mutable_status()->set_pending_inadmissible_workloads(3);
  const std::string table = QueueObjectTable(v1::OBJECT_KIND_CLUSTER_QUEUE, {o});
  EXPECT_THAT(table, HasSubstr("PENDING   ACTIVE   INADMISSIBLE   ADMITTED"));
  EXPECT_THAT(table, HasSubstr("5         2        3              0"));

  v1::QueueObject ns;
  ns.mutable_namespace_()->mutable_metadata()->set_name("team-a");
  (*ns.mutable_namespace_()->mutable_metadata()->mutable_labels())["team"] = "a";
  EXPECT_THAT(QueueObjectTable(v1::OBJECT_KIND_NAMESPACE, {ns}), HasSubstr("team-a   team=a\n"));
}

TEST(QueueObjectTableTest, WeightedSharesShowOnlyWhileFairSharingIsOn) {
  v1::QueueObject a, b;
  a.mutable_cluster_queue()->mutable_metadata()->set_name("a");
  b.mutable_cluster_queue()->mutable_metadata()->set_name("b");
  EXPECT_THAT(QueueObjectTable(v1::OBJECT_KIND_CLUSTER_QUEUE, {a, b}),
              Not(HasSubstr("WEIGHTED SHARE")));
  a.mutable_cluster_queue()->mutable_status()->mutable_fair_sharing()->set_weighted_share(250);
  b.mutable_cluster_queue()->mutable_status()->mutable_fair_sharing()->set_weighted_share(
      std::numeric_limits<int64_t>::max());
  const std::string table = QueueObjectTable(v1::OBJECT_KIND_CLUSTER_QUEUE, {a, b});
  EXPECT_THAT(table, HasSubstr("WEIGHTED SHARE"));
  EXPECT_THAT(table, HasSubstr("   250\n"));
  EXPECT_THAT(table, HasSubstr("   inf\n"));

  v1::QueueObject cohort;
  cohort.mutable_cohort()->mutable_metadata()->set_name("org");
  EXPECT_THAT(QueueObjectTable(v1::OBJECT_KIND_COHORT, {cohort}), Not(HasSubstr("SHARE")));
  cohort.mutable_cohort()->mutable_status()->mutable_fair_sharing()->set_weighted_share(0);
  EXPECT_THAT(QueueObjectTable(v1::OBJECT_KIND_COHORT, {cohort}),
              HasSubstr("org    -        -       0\n"));
}

TEST(WorkloadDetailTest, ShowsPodsReadyAndTheRequeueState) {
  v1::Workload wl;
  EXPECT_THAT(WorkloadDetail(wl), Not(HasSubstr("pods ready")));
  v1::Condition* c = wl.mutable_status()->add_conditions();
  c->set_type("PodsReady");
  c->set_status("False");
  c->set_reason("WaitForStart");
  c->set_message("Not all pods are ready or succeeded");
  wl.mutable_status()->mutable_requeue_state()->set_count(2);
  wl.mutable_status()->mutable_requeue_state()->mutable_requeue_at()->set_seconds(1700000000);
  const std::string detail = WorkloadDetail(wl);
  EXPECT_THAT(detail,
              HasSubstr("pods ready:       False (WaitForStart): Not all pods are ready or succeeded\n"));
  EXPECT_THAT(detail, HasSubstr("requeues:         2, backing off until 2023-11-14T22:13:20Z\n"));
}

TEST(AdmitReportTest, APendingWorkloadSaysWhereItWaits) {
  v1::AdmitResponse resp;
  resp.mutable_workload()->mutable_metadata()->set_namespace_("ns");
  resp.mutable_workload()->mutable_metadata()->set_name("w");
  resp.mutable_position()->set_status("inadmissible");
  resp.mutable_position()->set_position_in_cluster_queue(4);
  resp.mutable_position()->set_position_in_local_queue(1);
  EXPECT_THAT(AdmitReport(resp),
              HasSubstr("  waits: inadmissible, position 4 in its ClusterQueue, 1 in its "
                        "LocalQueue\n"));
}

TEST(EventLineTest, KueuesEventsShowTypeReasonObjectAndNote) {
  v1::WatchEvent event;
  event.set_revision(12);
  event.set_kind(v1::OBJECT_KIND_EVENT);
  v1::Event* e = event.mutable_event();
  e->set_type("Warning");
  e->set_reason("ExceedsMaxQuota");
  e->set_note("couldn't assign flavors to pod set main");
  e->mutable_regarding()->set_namespace_("ns");
  e->mutable_regarding()->set_name("w");
  e->mutable_event_time()->set_seconds(1767225600);
  EXPECT_EQ(EventLine(event),
            "12  2026-01-01T00:00:00Z  Warning  ExceedsMaxQuota  workload/ns/w  couldn't assign "
            "flavors to pod set main");
  // An audit record of a queue object names the object's own kind, without a namespace.
  e->set_reason("Applied");
  e->set_note("applied by admin");
  e->mutable_regarding()->set_kind("ResourceFlavor");
  e->mutable_regarding()->clear_namespace_();
  e->mutable_regarding()->set_name("default-flavor");
  EXPECT_EQ(EventLine(event),
            "12  2026-01-01T00:00:00Z  Warning  Applied  resourceflavor/default-flavor  applied "
            "by admin");
}

}  // namespace
}  // namespace admitd::clients
