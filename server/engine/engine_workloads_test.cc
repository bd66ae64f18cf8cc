// The engine's API contract for workloads: Submit idempotency and refusals, ReleaseQuota,
// Delete, List paging and Describe.
#include "google/protobuf/util/message_differencer.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using namespace testing_fixture;  // NOLINT: the shared fixture's builders
using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;

// ---- Submit -------------------------------------------------------------------------------

TEST_F(EngineApiTest, SubmitIsIdempotentForTheSameUid) {
  Basic();
  v1::Workload wl = MakeWorkload("a", 2, "1");
  wl.mutable_metadata()->set_uid("uid-a");
  absl::StatusOr<v1::SubmitResponse> first = Submit(wl);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->created());
  EXPECT_EQ(first->workload().metadata().generation(), 1);
  EXPECT_EQ(first->workload().status().resource_requests(0).resources().at("cpu"), "2");
  EXPECT_EQ(first->workload().status().resource_requests(0).resources().at("memory"), "1Gi");
  std::vector<Change> changes = engine_.TakeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].type, v1::WatchEvent::ADDED);
  EXPECT_EQ(changes[0].reason, "Submitted");
  EXPECT_EQ(changes[0].key, "ns/a");
  EXPECT_EQ(changes[0].workload->metadata().resource_version(), changes[0].revision);

  absl::StatusOr<v1::SubmitResponse> again = Submit(wl);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created());
  EXPECT_TRUE(engine_.TakeChanges().empty());

  wl.mutable_metadata()->set_uid("uid-other");
  absl::StatusOr<v1::SubmitResponse> clash = Submit(wl);
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ErrorReasonOf(clash.status()), "WORKLOAD_EXISTS");
}

TEST_F(EngineApiTest, SnapshotsAreSharedAndNeverChange) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  std::vector<Change> kept = engine_.TakeChanges(/*keep_snapshots=*/true);
  ASSERT_FALSE(kept.empty());
  // The batch's snapshot is the workload itself, shared rather than copied, for as long as the
  // workload does not change, whether the engine still keeps the batch's snapshots or not.
  std::shared_ptr<const v1::Workload> lent = engine_.WorkloadSnapshot("ns", "a");
  EXPECT_EQ(lent.get(), kept.back().workload.get());
  engine_.ForgetSnapshots();
  EXPECT_EQ(engine_.WorkloadSnapshot("ns", "a").get(), lent.get());
  const std::string before = lent->SerializeAsString();
  const int64_t version = lent->metadata().resource_version();
  // A write copies it first: the lent snapshot stays as it was.
  ASSERT_EQ(Schedule(), 1);
  std::vector<Change> admitted = engine_.TakeChanges();
  ASSERT_FALSE(admitted.empty());
  std::shared_ptr<const v1::Workload> now = engine_.WorkloadSnapshot("ns", "a");
  EXPECT_NE(now.get(), lent.get());
  EXPECT_GT(now->metadata().resource_version(), version);
  EXPECT_EQ(StateOf(*now), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(lent->SerializeAsString(), before);
  EXPECT_EQ(StateOf(*lent), v1::WORKLOAD_STATE_PENDING);
  // Nobody else holds it now: the next write changes it in place, with no copy.
  lent.reset();
  kept.clear();
  admitted.clear();
  const v1::Workload* in_place = now.get();
  now.reset();
  v1::ReleaseQuotaRequest done;
  done.set_namespace_("ns");
  done.set_name("a");
  done.mutable_finished()->set_succeeded(true);
  ASSERT_TRUE(engine_.ReleaseQuota(done, Now()).ok());
  EXPECT_EQ(engine_.FindWorkload("ns", "a"), in_place);
  EXPECT_EQ(StateOf(*in_place), v1::WORKLOAD_STATE_FINISHED);
  EXPECT_EQ(engine_.WorkloadSnapshot("ns", "missing"), nullptr);
}

TEST_F(EngineApiTest, AFinishedWorkloadIsKeptEncodedAndReadsTheSame) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_EQ(Schedule(), 1);
  for (const Change& c : engine_.TakeChanges()) {
    EXPECT_EQ(c.encoded, nullptr) << c.reason;  // not finished: held decoded, nothing encoded
  }
  v1::ReleaseQuotaRequest done;
  done.set_namespace_("ns");
  done.set_name("a");
  done.mutable_finished()->set_succeeded(true);
  ASSERT_TRUE(engine_.ReleaseQuota(done, Now()).ok());
  std::vector<Change> changes = engine_.TakeChanges(/*keep_snapshots=*/true);
  ASSERT_EQ(changes.size(), 1u);
  ASSERT_EQ(changes[0].reason, "Finished");
  // The Change carries the encoding the entry now holds instead of the decoded workload.
  ASSERT_NE(changes[0].encoded, nullptr);
  EXPECT_EQ(*changes[0].encoded, changes[0].workload->SerializeAsString());
  v1::Workload finished;  // compared as messages: map fields encode in no fixed order
  ASSERT_TRUE(finished.ParseFromString(*changes[0].encoded));
  // While the batch's snapshot is held, readers share it rather than decode.
  EXPECT_EQ(engine_.WorkloadSnapshot("ns", "a").get(), changes[0].workload.get());
  changes.clear();
  engine_.ForgetSnapshots();
  // Then every read decodes the same workload.
  std::shared_ptr<const v1::Workload> decoded = engine_.WorkloadSnapshot("ns", "a");
  ASSERT_NE(decoded, nullptr);
  EXPECT_TRUE(MessageDifferencer::Equals(*decoded, finished));
  EXPECT_TRUE(MessageDifferencer::Equals(Get("a"), finished));
  v1::ListWorkloadsRequest list;
  list.set_namespace_("ns");
  absl::StatusOr<v1::ListWorkloadsResponse> listed = engine_.ListWorkloads(list);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->workloads_size(), 1);
  EXPECT_TRUE(MessageDifferencer::Equals(listed->workloads(0), finished));
  // A later write starts from it: deleting it shows it as it was, deleted.
  v1::DeleteWorkloadRequest del;
  del.set_namespace_("ns");
  del.set_name("a");
  ASSERT_TRUE(engine_.DeleteWorkload(del, Now()).ok());
  std::vector<Change> deleted = engine_.TakeChanges();
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_EQ(deleted[0].type, v1::WatchEvent::DELETED);
  EXPECT_EQ(deleted[0].encoded, nullptr);
  EXPECT_EQ(StateOf(*deleted[0].workload), v1::WORKLOAD_STATE_FINISHED);
  EXPECT_EQ(deleted[0].workload->metadata().uid(), decoded->metadata().uid());
  EXPECT_EQ(engine_.WorkloadSnapshot("ns", "a"), nullptr);
}

TEST_F(EngineApiTest, SubmitResolvesPriorityAndTheDefaultQueue) {
  Basic();
  ASSERT_TRUE(Apply(LocalQueueObject("ns", "default", "cq")).ok());
  v1::QueueObject wpc;
  wpc.mutable_workload_priority_class()->mutable_metadata()->set_name("high");
  wpc.mutable_workload_priority_class()->set_value(1000);
  ASSERT_TRUE(Apply(wpc).ok());
  v1::Workload wl = MakeWorkload("a", 1, "1", "");
  wl.mutable_spec()->mutable_priority_class_ref()->set_name("high");
  absl::StatusOr<v1::SubmitResponse> resp = Submit(wl);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->workload().spec().queue_name(), "default");
  EXPECT_EQ(resp->workload().spec().priority(), 1000);

  wl = MakeWorkload("b", 1, "1");
  wl.mutable_spec()->mutable_priority_class_ref()->set_name("missing");
  EXPECT_EQ(Submit(wl).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(EngineApiTest, RefusedSubmitsChangeNothing) {
  Basic();
  const uint64_t before = engine_.revision();
  v1::Workload too_many = MakeWorkload("a", 1, "1");
  for (int i = 0; i < 18; ++i) {
    *too_many.mutable_spec()->add_pod_sets() = too_many.spec().pod_sets(0);
    too_many.mutable_spec()->mutable_pod_sets(i + 1)->set_name(absl::StrCat("ps", i));
  }
  v1::Workload duplicate = MakeWorkload("b", 1, "1");
  *duplicate.mutable_spec()->add_pod_sets() = duplicate.spec().pod_sets(0);
  v1::Workload bad_quantity = MakeWorkload("c", 1, "one");
  v1::Workload long_name = MakeWorkload(std::string(254, 'x'), 1, "1");
  struct Case {
    v1::Workload wl;
    absl::StatusCode code;
    std::string field;
  };
  for (const Case& c : std::vector<Case>{
           {too_many, absl::StatusCode::kInvalidArgument, "spec.podSets"},
           {duplicate, absl::StatusCode::kInvalidArgument, "spec.podSets[1].name"},
           {bad_quantity, absl::StatusCode::kInvalidArgument,
            "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]"},
           {long_name, absl::StatusCode::kInvalidArgument, "metadata.name"},
       }) {
    absl::Status s = Submit(c.wl).status();
    EXPECT_EQ(s.code(), c.code) << c.field;
    ASSERT_FALSE(FieldViolationsOf(s).empty()) << c.field;
    EXPECT_EQ(FieldViolationsOf(s)[0].field, c.field);
  }
  EXPECT_EQ(engine_.revision(), before);
  EXPECT_TRUE(engine_.TakeChanges().empty());
  EXPECT_EQ(engine_.ListWorkloads({})->workloads_size(), 0);
}

// §6.6: a workload may name a LocalQueue that does not exist yet (GitOps tools create objects in
// any order); it waits Misconfigured and queues once the LocalQueue appears.
TEST_F(EngineApiTest, AWorkloadWaitsForItsLocalQueueToBeCreated) {
  ASSERT_TRUE(Apply(FlavorObject("default")).ok());
  ASSERT_TRUE(Apply(ClusterQueueObject("cq", {"default"})).ok());
  engine_.TakeChanges();
  absl::StatusOr<v1::SubmitResponse> submitted = Submit(MakeWorkload("a", 1, "1", "later"));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  EXPECT_TRUE(submitted->created());
  EXPECT_EQ(Schedule(), 0);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_PENDING);
  EXPECT_EQ(Condition("a", kQuotaReserved).status(), "False");
  EXPECT_EQ(Condition("a", kQuotaReserved).reason(), "Misconfigured");
  EXPECT_EQ(Condition("a", kQuotaReserved).message(), "LocalQueue later doesn't exist");
  EXPECT_EQ(Get("a").status().resource_requests_size(), 0);

  // A LocalQueue of the same name in another namespace changes nothing.
  ASSERT_TRUE(Apply(LocalQueueObject("other", "later", "cq")).ok());
  EXPECT_EQ(Schedule(), 0);
  // A deleted workload leaves the waiting list: creating the queue then touches only the rest.
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1", "later")).ok());
  v1::DeleteWorkloadRequest del;
  del.set_namespace_("ns");
  del.set_name("b");
  ASSERT_TRUE(engine_.DeleteWorkload(del, Now()).ok());

  ASSERT_TRUE(Apply(LocalQueueObject("ns", "later", "cq")).ok());
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(Get("a").status().admission().cluster_queue(), "cq");
}

TEST_F(EngineApiTest, DeactivatedWorkloadsAreNotQueued) {
  Basic();
  v1::Workload wl = MakeWorkload("a", 1, "1");
  wl.mutable_spec()->set_active(false);
  ASSERT_TRUE(Submit(wl).ok());
  EXPECT_EQ(Schedule(), 0);
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_INACTIVE);
  EXPECT_EQ(Condition("a", kQuotaReserved).reason(), "Deactivated");
  EXPECT_EQ(Condition("a", kQuotaReserved).message(), "The workload is deactivated");
}

// ---- ReleaseQuota and Delete --------------------------------------------------------------

TEST_F(EngineApiTest, FinishedReleasesQuotaOnce) {
  Basic("1");
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1")).ok());
  Schedule();
  engine_.TakeChanges();
  v1::ReleaseQuotaRequest finish;
  finish.mutable_finished()->set_succeeded(false);
  absl::StatusOr<v1::ReleaseQuotaResponse> resp = Release("a", finish);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(StateOf(resp->workload()), v1::WORKLOAD_STATE_FINISHED);
  const v1::Condition* finished = FindCondition(resp->workload(), kFinished);
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ(finished->reason(), "Failed");
  EXPECT_EQ(finished->message(), "The workload failed");
  EXPECT_THAT(Reasons(engine_.TakeChanges()), ElementsAre("Finished"));
  // Idempotent.
  ASSERT_TRUE(Release("a", finish).ok());
  EXPECT_TRUE(engine_.TakeChanges().empty());
  // The freed quota goes to the next workload.
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(StateOf(Get("b")), v1::WORKLOAD_STATE_ADMITTED);

  v1::ReleaseQuotaRequest guarded = finish;
  guarded.set_uid("not-its-uid");
  absl::StatusOr<v1::ReleaseQuotaResponse> mismatch = Release("b", guarded);
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Release("nobody", finish).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(EngineApiTest, StoppedAfterEvictionRequeues) {
  Basic();
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  Schedule();
  v1::ReleaseQuotaRequest stopped;
  stopped.mutable_stopped();
  // Not evicted: refused.
  absl::StatusOr<v1::ReleaseQuotaResponse> refused = Release("a", stopped);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrorReasonOf(refused.status()), "WORKLOAD_NOT_EVICTED");
  // Drain the ClusterQueue: the workload is evicted, then stops.
  v1::QueueObject drain = ClusterQueueObject("cq", {"default"});
  drain.mutable_cluster_queue()->mutable_spec()->set_stop_policy("HoldAndDrain");
  ASSERT_TRUE(Apply(drain).ok());
  EXPECT_EQ(StateOf(Get("a")), v1::WORKLOAD_STATE_EVICTED);
  engine_.TakeChanges();
  absl::StatusOr<v1::ReleaseQuotaResponse> resp = Release("a", stopped);
  ASSERT_TRUE(resp.ok()) << resp.status();
  const v1::Workload& wl = resp->workload();
  EXPECT_FALSE(wl.status().has_admission());
  EXPECT_EQ(StateOf(wl), v1::WORKLOAD_STATE_PENDING);
  const v1::Condition* reserved = FindCondition(wl, kQuotaReserved);
  EXPECT_EQ(reserved->status(), "False");
  // PendingEvaluation with the eviction message, at once overtaken by why it waits now: its
  // ClusterQueue is still stopped (§6.6), so one Change carries the final word.
  EXPECT_EQ(reserved->reason(), "Suspended");
  EXPECT_EQ(reserved->message(), "ClusterQueue cq is inactive");
  const v1::Condition* admitted = FindCondition(wl, kAdmitted);
  EXPECT_EQ(admitted->status(), "False");
  EXPECT_EQ(admitted->reason(), "NoReservation");
  const v1::Condition* requeued = FindCondition(wl, kRequeued);
  ASSERT_NE(requeued, nullptr);
  EXPECT_EQ(requeued->status(), "False");  // True only after Preempted or NodeFailures
  EXPECT_EQ(requeued->reason(), "ClusterQueueStopped");
  EXPECT_EQ(requeued->message(), "The ClusterQueue is stopped");
  EXPECT_THAT(Reasons(engine_.TakeChanges()), ElementsAre("Requeued"));
  EXPECT_EQ(GetClusterQueue("cq").status().reserving_workloads(), 0);
  // Again: it holds nothing, so the answer is its current state.
  ASSERT_TRUE(Release("a", stopped).ok());
  EXPECT_TRUE(engine_.TakeChanges().empty());
  // Lifting the stop admits it again, clearing the eviction.
  ASSERT_TRUE(Apply(ClusterQueueObject("cq", {"default"})).ok());
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(Condition("a", kEvicted).status(), "False");
  EXPECT_EQ(Condition("a", kEvicted).message(), "Previously: The ClusterQueue is stopped");
}

TEST_F(EngineApiTest, ReclaimablePodsNeverGoDown) {
  Basic("2");
  ASSERT_TRUE(Submit(MakeWorkload("a", 2, "1")).ok());
  Schedule();
  v1::ReleaseQuotaRequest req;
  v1::ReclaimablePod* pod = req.mutable_reclaimable()->add_pods();
  pod->set_name("main");
  pod->set_count(1);
  ASSERT_TRUE(Release("a", req).ok());
  EXPECT_EQ(GetClusterQueue("cq").status().flavors_reservation(0).resources(0).total(), "1");
  pod->set_count(3);  // above the pod set's count
  absl::Status s = Release("a", req).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FieldViolationsOf(s)[0].field, "reclaimable.pods[0].count");
  pod->set_count(0);  // below what was reported
  EXPECT_EQ(Release("a", req).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(EngineApiTest, DeleteReleasesQuota) {
  Basic("1");
  ASSERT_TRUE(Submit(MakeWorkload("a", 1, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "1")).ok());
  Schedule();
  engine_.TakeChanges();
  v1::DeleteWorkloadRequest del;
  del.set_namespace_("ns");
  del.set_name("a");
  del.set_uid("wrong");
  EXPECT_EQ(engine_.DeleteWorkload(del, Now()).code(), absl::StatusCode::kFailedPrecondition);
  del.clear_uid();
  ASSERT_TRUE(engine_.DeleteWorkload(del, Now()).ok());
  std::vector<Change> changes = engine_.TakeChanges();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].type, v1::WatchEvent::DELETED);
  EXPECT_EQ(changes[0].workload->metadata().name(), "a");
  EXPECT_EQ(Schedule(), 1);
  EXPECT_EQ(engine_.DeleteWorkload(del, Now()).code(), absl::StatusCode::kNotFound);
}

// ---- List and Describe --------------------------------------------------------------------

TEST_F(EngineApiTest, ListFiltersAndPages) {
  Basic("2");
  ASSERT_TRUE(Apply(LocalQueueObject("other", "lq", "cq")).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Submit(MakeWorkload(absl::StrCat("w", i), 1, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("x", 1, "1", "lq", "other")).ok());
  Schedule();  // w0 and w1 admitted

  v1::ListWorkloadsRequest req;
  req.set_namespace_("ns");
  req.set_page_size(2);
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    req.set_page_token(token);
    absl::StatusOr<v1::ListWorkloadsResponse> page = engine_.ListWorkloads(req);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const v1::Workload& wl : page->workloads()) names.push_back(wl.metadata().name());
    token = page->next_page_token();
    ++pages;
  } while (!token.empty());
  EXPECT_THAT(names, ElementsAre("w0", "w1", "w2", "w3", "w4"));
  EXPECT_EQ(pages, 3);

  v1::ListWorkloadsRequest admitted;
  admitted.set_state(v1::WORKLOAD_STATE_ADMITTED);
  EXPECT_EQ(engine_.ListWorkloads(admitted)->workloads_size(), 2);
  v1::ListWorkloadsRequest by_cq;
  by_cq.set_cluster_queue("cq");
  EXPECT_EQ(engine_.ListWorkloads(by_cq)->workloads_size(), 6);
  v1::ListWorkloadsRequest other;
  other.set_namespace_("other");
  other.set_queue_name("lq");
  EXPECT_EQ(engine_.ListWorkloads(other)->workloads_size(), 1);

  v1::ListWorkloadsRequest bad;
  bad.set_page_size(5001);
  EXPECT_EQ(engine_.ListWorkloads(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.set_page_size(10);
  bad.set_page_token("garbage");
  EXPECT_EQ(engine_.ListWorkloads(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(EngineApiTest, DescribeExplainsWithoutChangingAnything) {
  ASSERT_TRUE(Apply(FlavorObject("small")).ok());
  ASSERT_TRUE(Apply(FlavorObject("large")).ok());
  v1::QueueObject cq = ClusterQueueObject("cq", {"small", "large"});
  cq.mutable_cluster_queue()->mutable_spec()->mutable_resource_groups(0)->mutable_flavors(0)
      ->mutable_resources(0)->set_nominal_quota("1");
  ASSERT_TRUE(Apply(cq).ok());
  ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("a", 2, "1")).ok());
  ASSERT_TRUE(Submit(MakeWorkload("b", 1, "8")).ok());
  engine_.TakeChanges();
  const uint64_t before = engine_.revision();

  v1::AdmitRequest req;
  req.set_namespace_("ns");
  req.set_name("a");
  req.set_dry_run(true);
  absl::StatusOr<v1::AdmitResponse> resp = engine_.Describe(req, Now());
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->state(), v1::WORKLOAD_STATE_PENDING);
  EXPECT_FALSE(resp->admitted());
  const v1::Explanation& why = resp->explanation();
  EXPECT_EQ(why.cluster_queue(), "cq");
  EXPECT_EQ(why.queue_position(), 0);
  EXPECT_TRUE(why.would_admit());
  EXPECT_EQ(why.admission().pod_set_assignments(0).flavors().at("cpu"), "large");
  ASSERT_GE(why.flavors_size(), 2);
  EXPECT_EQ(why.flavors(0).flavor(), "small");
  EXPECT_EQ(why.flavors(0).mode(), "NoFit");
  EXPECT_EQ(why.flavors(0).reason(),
            "insufficient quota for cpu in flavor small, previously considered podsets requests "
            "(0) + current podset request (2) > maximum capacity (1)");
  EXPECT_EQ(engine_.revision(), before);
  EXPECT_TRUE(engine_.TakeChanges().empty());

  req.set_name("b");
  resp = engine_.Describe(req, Now());
  EXPECT_EQ(resp->explanation().queue_position(), 1);
  EXPECT_FALSE(resp->explanation().would_admit());

  Schedule();
  req.set_dry_run(false);
  resp = engine_.Describe(req, Now());
  EXPECT_EQ(resp->pending_reason(), "ExceedsMaxQuota");
  EXPECT_FALSE(resp->has_explanation());
  req.set_name("a");
  resp = engine_.Describe(req, Now());
  EXPECT_TRUE(resp->admitted());
  EXPECT_EQ(resp->state(), v1::WORKLOAD_STATE_ADMITTED);
}

}  // namespace
}  // namespace admitd::engine
