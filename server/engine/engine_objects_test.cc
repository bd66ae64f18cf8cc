// The engine's API contract for queue-side objects and the cycle: revisions and Changes,
// Apply/Get/List/Delete, status computed on read, inactive queues, and the conditions a cycle
// writes.
#include <algorithm>
#include <string>
#include <vector>

#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using namespace testing_fixture;  // NOLINT: the shared fixture's builders
using ::testing::ElementsAre;

// ---- Queue-side objects -------------------------------------------------------------------

TEST_F(EngineApiTest, ApplyGivesEachChangeItsRevisionAndIsIdempotent) {
  absl::StatusOr<v1::ApplyResponse> first = Apply(FlavorObject("default"));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->created());
  const v1::ObjectMeta& meta = first->object().resource_flavor().metadata();
  EXPECT_EQ(meta.resource_version(), 1u);
  EXPECT_EQ(meta.generation(), 1);
  EXPECT_EQ(meta.uid(), "00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(meta.creation_timestamp().seconds(), absl::ToUnixSeconds(kT0) + 1);
  std::vector<Change> changes = engine_.TakeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].revision, 1u);
  EXPECT_EQ(changes[0].type, v1::WatchEvent::ADDED);
  EXPECT_EQ(changes[0].key, "default");
  EXPECT_EQ(changes[0].reason, "Applied");

  // The same spec again: unchanged, no Change, no revision.
  absl::StatusOr<v1::ApplyResponse> again = Apply(FlavorObject("default"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->unchanged());
  EXPECT_FALSE(again->created());
  EXPECT_TRUE(engine_.TakeChanges().empty());
  EXPECT_EQ(engine_.revision(), 1u);

  // A spec change bumps the generation; a label change does not.
  v1::QueueObject labelled = FlavorObject("default");
  (*labelled.mutable_resource_flavor()->mutable_metadata()->mutable_labels())["team"] = "a";
  EXPECT_EQ(Apply(labelled)->object().resource_flavor().metadata().generation(), 1);
  (*labelled.mutable_resource_flavor()->mutable_spec()->mutable_node_labels())["arch"] = "arm64";
  absl::StatusOr<v1::ApplyResponse> changed = Apply(labelled);
  EXPECT_EQ(changed->object().resource_flavor().metadata().generation(), 2);
  EXPECT_EQ(changed->object().resource_flavor().metadata().resource_version(), 3u);
  EXPECT_EQ(changed->object().resource_flavor().metadata().uid(), meta.uid());
  changes = engine_.TakeChanges();
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[1].type, v1::WatchEvent::MODIFIED);
}

TEST_F(EngineApiTest, ApplyPreconditions) {
  ASSERT_TRUE(Apply(FlavorObject("default")).ok());
  engine_.TakeChanges();
  v1::QueueObject f = FlavorObject("default");
  (*f.mutable_resource_flavor()->mutable_spec()->mutable_node_labels())["a"] = "b";
  absl::StatusOr<v1::ApplyResponse> stale = Apply(f, /*expected=*/7);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(ErrorReasonOf(stale.status()), "RESOURCE_VERSION_MISMATCH");
  absl::StatusOr<v1::ApplyResponse> dup = Apply(f, 0, /*create_only=*/true);
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(Apply(f, /*expected=*/1).ok());

  // Invalid: every violation, nothing changed.
  v1::QueueObject bad = ClusterQueueObject("cq", {"default"});
  bad.mutable_cluster_queue()->mutable_spec()->mutable_resource_groups(0)->mutable_flavors(0)
      ->mutable_resources(0)->set_nominal_quota("-1");
  bad.mutable_cluster_queue()->mutable_spec()->set_queueing_strategy("LIFO");
  const uint64_t before = engine_.revision();
  engine_.TakeChanges();
  absl::StatusOr<v1::ApplyResponse> invalid = Apply(bad);
  EXPECT_EQ(invalid.status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<FieldViolation> v = FieldViolationsOf(invalid.status());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].field, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota");
  EXPECT_EQ(v[1].field, "spec.queueingStrategy");
  EXPECT_EQ(engine_.revision(), before);
  EXPECT_TRUE(engine_.TakeChanges().empty());
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  get.set_name("cq");
  EXPECT_EQ(engine_.Get(get).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(EngineApiTest, ClusterQueueStatusIsComputedOnRead) {
  ASSERT_TRUE(Apply(FlavorObject("spot")).ok());
  ASSERT_TRUE(Apply(FlavorObject("on-demand")).ok());
  ASSERT_TRUE(Apply(ClusterQueueObject("cq", {"spot", "on-demand"}, "5")).ok());
  ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("a", 3, "1500m")).ok());  // 4.5 cpu: spot
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "6")).ok());      // never fits
  Schedule();
  engine_.TakeChanges();
  const v1::ClusterQueue cq = GetClusterQueue("cq");
  EXPECT_TRUE(engine_.TakeChanges().empty());  // reads write nothing
  const v1::ClusterQueueStatus& s = cq.status();
  ASSERT_EQ(s.flavors_reservation_size(), 2);
  EXPECT_EQ(s.flavors_reservation(0).name(), "spot");  // the queue's flavor order
  EXPECT_EQ(s.flavors_reservation(0).resources(0).name(), "cpu");
  EXPECT_EQ(s.flavors_reservation(0).resources(0).total(), "4500m");
  EXPECT_EQ(s.flavors_reservation(0).resources(0).borrowed(), "0");
  EXPECT_EQ(s.flavors_reservation(0).resources(1).total(), "1536Mi");
  EXPECT_EQ(s.flavors_reservation(1).name(), "on-demand");
  EXPECT_EQ(s.flavors_reservation(1).resources(0).total(), "0");
  EXPECT_EQ(s.pending_workloads(), 1);
  EXPECT_EQ(s.reserving_workloads(), 1);
  EXPECT_EQ(s.admitted_workloads(), 1);
  ASSERT_EQ(s.conditions_size(), 1);
  EXPECT_EQ(s.conditions(0).type(), "Active");
  EXPECT_EQ(s.conditions(0).status(), "True");
  EXPECT_EQ(Get("a").status().admission().pod_set_assignments(0).flavors().at("cpu"), "spot");
  EXPECT_EQ(Get("a").status().admission().pod_set_assignments(0).resource_usage().at("cpu"),
            "4500m");

  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
  get.set_namespace_("ns");
  get.set_name("lq");
  const v1::LocalQueue lq = engine_.Get(get)->local_queue();
  EXPECT_EQ(lq.status().pending_workloads(), 1);
  EXPECT_EQ(lq.status().admitted_workloads(), 1);
}

TEST_F(EngineApiTest, MissingFlavorMakesTheQueueInactiveUntilItExists) {
  ASSERT_TRUE(Apply(ClusterQueueObject("cq", {"default"})).ok());
  ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  EXPECT_EQ(Schedule(), 0);
  const v1::ClusterQueue cq = GetClusterQueue("cq");
  EXPECT_EQ(cq.status().conditions(0).status(), "False");
  EXPECT_EQ(cq.status().conditions(0).reason(), "FlavorNotFound");
  EXPECT_EQ(Condition("a", kQuotaReserved).reason(), "Suspended");
  EXPECT_EQ(Condition("a", kQuotaReserved).message(), "ClusterQueue cq is inactive");
  ASSERT_TRUE(Apply(FlavorObject("default")).ok());
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_ADMITTED);
}

TEST_F(EngineApiTest, StoppingAQueueTellsItsPendingWorkloads) {
  Basic("1");
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1")).ok());
  Schedule();
  EXPECT_EQ(Condition("b", kQuotaReserved).reason(), "WaitingForQuota");
  v1::QueueObject held = ClusterQueueObject("cq", {"default"}, "1");
  held.mutable_cluster_queue()->mutable_spec()->set_stop_policy("Hold");
  engine_.TakeChanges();
  ASSERT_TRUE(Apply(held).ok());
  EXPECT_THAT(Reasons(engine_.TakeChanges()), ElementsAre("Applied", "Pending"));
  EXPECT_EQ(Condition("b", kQuotaReserved).reason(), "Suspended");
  EXPECT_EQ(Condition("b", kQuotaReserved).message(), "ClusterQueue cq is inactive");
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_ADMITTED);  // Hold does not drain
}

TEST_F(EngineApiTest, DeletingWhatIsInUseIsRefused) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  Schedule();
  v1::DeleteObjectRequest del;
  del.set_kind(v1::OBJECT_KIND_RESOURCE_FLAVOR);
  del.set_name("default");
  absl::Status s = engine_.Delete(del, Now());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrorReasonOf(s), "IN_USE");
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("ClusterQueue \"cq\" refers to it"));
  del.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  del.set_name("cq");
  EXPECT_EQ(engine_.Delete(del, Now()).code(), absl::StatusCode::kFailedPrecondition);
  del.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
  del.set_namespace_("ns");
  del.set_name("lq");
  EXPECT_EQ(engine_.Delete(del, Now()).code(), absl::StatusCode::kFailedPrecondition);

  // Once the workload is gone, everything can go, each delete one DELETED Change.
  v1::DeleteWorkloadRequest dw;
  dw.set_namespace_("ns");
  dw.set_name("a");
  ASSERT_TRUE(engine_.DeleteWorkload(dw, Now()).ok());
  engine_.TakeChanges();
  ASSERT_TRUE(engine_.Delete(del, Now()).ok());
  del.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  del.clear_namespace_();
  del.set_name("cq");
  ASSERT_TRUE(engine_.Delete(del, Now()).ok());
  del.set_kind(v1::OBJECT_KIND_RESOURCE_FLAVOR);
  del.set_name("default");
  ASSERT_TRUE(engine_.Delete(del, Now()).ok());
  std::vector<Change> changes = engine_.TakeChanges();
  ASSERT_EQ(changes.size(), 3u);
  for (const Change& c : changes) EXPECT_EQ(c.type, v1::WatchEvent::DELETED);
  EXPECT_EQ(engine_.Delete(del, Now()).code(), absl::StatusCode::kNotFound);
}

// ---- The cycle ----------------------------------------------------------------------------

TEST_F(EngineApiTest, AdmissionWritesKueuesConditionsInOneChange) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 3, "500m")).ok());
  engine_.TakeChanges();
  const absl::Time now = kT0 + absl::Hours(1);
  CycleStats stats = engine_.RunCycle(now);
  EXPECT_EQ(stats.heads, 1);
  EXPECT_EQ(stats.admitted, 1);
  std::vector<Change> changes = engine_.TakeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].reason, "Admitted");
  EXPECT_EQ(changes[0].message, "Quota reserved in ClusterQueue cq");
  EXPECT_EQ(changes[0].type, v1::WatchEvent::MODIFIED);
  const v1::Workload& wl = *changes[0].workload;
  EXPECT_EQ(wl.status().admission().cluster_queue(), "cq");
  const v1::PodSetAssignment& psa = wl.status().admission().pod_set_assignments(0);
  EXPECT_EQ(psa.name(), "main");
  EXPECT_EQ(psa.count(), 3);
  EXPECT_EQ(psa.resource_usage().at("cpu"), "1500m");
  EXPECT_EQ(psa.resource_usage().at("memory"), "1536Mi");
  const v1::Condition* reserved = FindCondition(wl, kQuotaReserved);
  ASSERT_NE(reserved, nullptr);
  EXPECT_EQ(reserved->status(), "True");
  EXPECT_EQ(reserved->reason(), "QuotaReserved");
  EXPECT_EQ(reserved->message(), "Quota reserved in ClusterQueue cq");
  EXPECT_EQ(reserved->last_transition_time().seconds(), absl::ToUnixSeconds(now));
  const v1::Condition* admitted = FindCondition(wl, kAdmitted);
  ASSERT_NE(admitted, nullptr);
  EXPECT_EQ(admitted->status(), "True");
  EXPECT_EQ(admitted->reason(), "Admitted");
  EXPECT_EQ(admitted->message(), "The workload is admitted");
}

TEST_F(EngineApiTest, UnchangedPendingStatusIsNotRewritten) {
  Basic("1");
  ASSERT_TRUE(Submit(MakeWorkload("big", 1, "2")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("small", 1, "1")).ok());
  Schedule();
  const v1::Condition first = Condition("big", kQuotaReserved);
  EXPECT_EQ(first.reason(), "ExceedsMaxQuota");
  engine_.TakeChanges();
  // Finishing `small` requeues `big`; it fails the same way and writes nothing.
  v1::ReleaseQuotaRequest finish;
  finish.mutable_finished()->set_succeeded(true);
  ASSERT_TRUE(Release("small", finish).ok());
  Schedule();
  EXPECT_THAT(Reasons(engine_.TakeChanges()), ElementsAre("Finished"));
  EXPECT_EQ(Condition("big", kQuotaReserved).SerializeAsString(), first.SerializeAsString());
}

TEST_F(EngineApiTest, DeepQueuesDrainOneHeadPerQueuePerCycle) {
  ASSERT_TRUE(Apply(FlavorObject("default")).ok());
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(Apply(ClusterQueueObject(absl::StrCat("cq-", name), {"default"}, "100")).ok());
    ASSERT_TRUE(Apply(LocalQueueObject("ns", absl::StrCat("lq-", name),
                                       absl::StrCat("cq-", name))).ok());
  }
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(Submit(MakeWorkload(absl::StrCat("a", i), 1, "1", "lq-a")).ok());
    ASSERT_TRUE(Submit(MakeWorkload(absl::StrCat("b", i), 1, "1", "lq-b")).ok());
  }
  int cycles = 0, admitted = 0;
  CycleStats s;
  do {
    s = engine_.RunCycle(Now());
    ++cycles;
    admitted += s.admitted;
    EXPECT_EQ(s.heads, 2);
  } while (s.more);
  EXPECT_EQ(cycles, 10);
  EXPECT_EQ(admitted, 20);
  EXPECT_FALSE(engine_.HasPendingHeads());
}

}  // namespace
}  // namespace admitd::engine

namespace admitd::engine::testing_fixture {
namespace {

TEST_F(EngineApiTest, LocalQueueStatusShowsItsWorkloadsUsagePerFlavor) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 2, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  v1::GetObjectRequest req;
  req.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
  req.set_namespace_("ns");
  req.set_name("lq");
  const v1::LocalQueue lq = engine_.Get(req)->local_queue();
  ASSERT_EQ(lq.status().flavors_usage_size(), 1);
  const v1::FlavorUsage& fu = lq.status().flavors_usage(0);
  EXPECT_EQ(fu.name(), "default");
  ASSERT_EQ(fu.resources_size(), 2);
  EXPECT_EQ(fu.resources(0).name(), "cpu");
  EXPECT_EQ(fu.resources(0).total(), "2");
  EXPECT_EQ(fu.resources(1).name(), "memory");
  EXPECT_EQ(fu.resources(1).total(), "1Gi");
  EXPECT_EQ(lq.status().flavors_reservation(0).resources(0).total(), "2");
}

class SmallPagesTest : public EngineApiTest {
 protected:
  static EngineOptions Options() {
    EngineOptions options;
    options.max_list_page_bytes = 2000;
    return options;
  }
  SmallPagesTest() : EngineApiTest(Options()) {}
};

TEST_F(SmallPagesTest, AListOfQueueObjectsEndsBeforeThePageLimitAndGoesOn) {
  for (int i = 0; i < 10; ++i) {
    v1::QueueObject flavor = FlavorObject(absl::StrCat("flavor-", i));
    (*flavor.mutable_resource_flavor()->mutable_metadata()->mutable_annotations())["note"] =
        std::string(500, 'n');
    ASSERT_TRUE(Apply(flavor).ok());
  }
  v1::ListObjectsRequest list;
  list.set_kind(v1::OBJECT_KIND_RESOURCE_FLAVOR);
  std::vector<std::string> names;
  int pages = 0;
  do {
    absl::StatusOr<v1::ListObjectsResponse> page = engine_.List(list);
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_GE(page->objects_size(), 1);
    EXPECT_LE(page->ByteSizeLong(), 2000u + 64);
    for (const v1::QueueObject& o : page->objects()) {
      names.push_back(o.resource_flavor().metadata().name());
    }
    list.set_page_token(page->next_page_token());
    ++pages;
  } while (!list.page_token().empty() && pages < 20);
  EXPECT_EQ(names.size(), 10u);
  EXPECT_GE(pages, 3);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

}  // namespace
}  // namespace admitd::engine::testing_fixture
