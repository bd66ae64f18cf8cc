// Determinism and restore: the same calls give the same Changes, and an engine restored from
// what the store holds (workloads decoded or encoded) behaves as the one it was saved from.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"
#include "server/engine/engine.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using testing_fixture::kT0;

// Builds the same state twice through the same calls; returns the Changes as bytes.
std::vector<std::string> Script(Engine& engine) {
  std::vector<std::string> out;
  absl::Time t = kT0;
  auto record = [&] {
    for (const Change& c : engine.TakeChanges()) {
      out.push_back(absl::StrCat(c.revision, c.key, c.reason,
                                 c.workload       ? c.workload->SerializeAsString()
                                 : c.queue_object ? c.queue_object->SerializeAsString()
                                                  : EncodeEvent(*c.event)));
    }
  };
  v1::ApplyRequest flavor;
  flavor.mutable_object()->mutable_resource_flavor()->mutable_metadata()->set_name("default");
  engine.Apply(flavor, t).IgnoreError();
  v1::ApplyRequest cq;
  auto* c = cq.mutable_object()->mutable_cluster_queue();
  c->mutable_metadata()->set_name("cq");
  c->mutable_spec()->mutable_namespace_selector();
  auto* g = c->mutable_spec()->add_resource_groups();
  g->add_covered_resources("cpu");
  auto* fq = g->add_flavors();
  fq->set_name("default");
  fq->add_resources()->set_name("cpu");
  fq->mutable_resources(0)->set_nominal_quota("5");
  engine.Apply(cq, t).IgnoreError();
  v1::ApplyRequest lq;
  lq.mutable_object()->mutable_local_queue()->mutable_metadata()->set_namespace_("ns");
  lq.mutable_object()->mutable_local_queue()->mutable_metadata()->set_name("lq");
  lq.mutable_object()->mutable_local_queue()->mutable_spec()->set_cluster_queue("cq");
  engine.Apply(lq, t).IgnoreError();
  for (int i = 0; i < 8; ++i) {
    v1::SubmitRequest req;
    auto* wl = req.mutable_workload();
    wl->mutable_metadata()->set_namespace_("ns");
    wl->mutable_metadata()->set_name(absl::StrCat("w", i));
    wl->mutable_spec()->set_queue_name("lq");
    wl->mutable_spec()->set_priority(i % 3);
    auto* ps = wl->mutable_spec()->add_pod_sets();
    ps->set_name("main");
    ps->set_count(1);
    (*ps->mutable_template_()->mutable_spec()->add_containers()->mutable_resources()
          ->mutable_requests())["cpu"] = "1";
    engine.Submit(req, t + absl::Seconds(i)).IgnoreError();
    engine.RunCycle(t + absl::Seconds(i));
  }
  record();
  return out;
}

TEST(EngineDeterminismTest, SameCallsGiveTheSameChanges) {
  Engine a, b;
  ASSERT_TRUE(a.FinishRestore(0).ok());
  ASSERT_TRUE(b.FinishRestore(0).ok());
  std::vector<std::string> first = Script(a), second = Script(b);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first, second);
}

// Restores `original`'s store contents into a new engine, each workload decoded (as a caller
// holding Workload messages restores) or encoded (as admitd restores from its store).
void RestoreInto(const Engine& original, bool encoded, Engine* restored) {
  for (v1::ObjectKind kind : {v1::OBJECT_KIND_RESOURCE_FLAVOR, v1::OBJECT_KIND_CLUSTER_QUEUE,
                              v1::OBJECT_KIND_LOCAL_QUEUE}) {
    v1::ListObjectsRequest list;
    list.set_kind(kind);
    const v1::ListObjectsResponse objects = *original.List(list);
    for (v1::QueueObject o : objects.objects()) {
      if (o.has_cluster_queue()) o.mutable_cluster_queue()->clear_status();
      if (o.has_local_queue()) o.mutable_local_queue()->clear_status();
      ASSERT_TRUE(restored->Restore(o).ok());
    }
  }
  const v1::ListWorkloadsResponse workloads = *original.ListWorkloads(v1::ListWorkloadsRequest());
  for (const v1::Workload& wl : workloads.workloads()) {
    if (encoded) {
      const std::string key = absl::StrCat(wl.metadata().namespace_(), "/", wl.metadata().name());
      ASSERT_TRUE(restored->RestoreEncoded(key, wl.SerializeAsString()).ok());
    } else {
      ASSERT_TRUE(restored->Restore(wl).ok());
    }
  }
  ASSERT_TRUE(restored->FinishRestore(original.revision()).ok());
}

void ExpectSameChanges(const std::vector<Change>& a, const std::vector<Change>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].revision, b[i].revision);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].key, b[i].key);
    if (a[i].kind == v1::OBJECT_KIND_EVENT) {
      EXPECT_EQ(EncodeEvent(*a[i].event), EncodeEvent(*b[i].event));
    } else if (a[i].workload != nullptr) {
      ASSERT_NE(b[i].workload, nullptr);
      EXPECT_EQ(a[i].workload->SerializeAsString(), b[i].workload->SerializeAsString());
    }
  }
}

// An engine taken through Script, and one restored from what it would have stored.
class EngineRestoreTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(original.FinishRestore(0).ok());
    Script(original);
    RestoreInto(original, GetParam(), &restored);
  }
  Engine original;
  Engine restored;
};
INSTANTIATE_TEST_SUITE_P(DecodedOrEncoded, EngineRestoreTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Encoded" : "Decoded"; });

TEST_P(EngineRestoreTest, RestoredEngineEqualsTheOriginal) {
  const v1::ListWorkloadsRequest all;
  // Reads of workloads nothing touched since the restore (encoded: still frozen).
  EXPECT_EQ(restored.WorkloadSnapshot("ns", "w7")->SerializeAsString(),
            original.WorkloadSnapshot("ns", "w7")->SerializeAsString());
  EXPECT_EQ(restored.ListWorkloads(all)->SerializeAsString(),
            original.ListWorkloads(all)->SerializeAsString());
  v1::ListObjectsRequest cqs;
  cqs.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  // Pending workloads all get a fresh attempt after a restore (the inadmissible set is not
  // stored): the split of the pending count differs, the rest of the status does not.
  auto without_split = [](v1::ListObjectsResponse list) {
    for (v1::QueueObject& o : *list.mutable_objects()) {
      EXPECT_EQ(o.cluster_queue().status().pending_active_workloads() +
                    o.cluster_queue().status().pending_inadmissible_workloads(),
                o.cluster_queue().status().pending_workloads());
      o.mutable_cluster_queue()->mutable_status()->clear_pending_active_workloads();
      o.mutable_cluster_queue()->mutable_status()->clear_pending_inadmissible_workloads();
    }
    return list.SerializeAsString();
  };
  EXPECT_EQ(without_split(*restored.List(cqs)), without_split(*original.List(cqs)));
  // The same next step gives the same Changes.
  v1::ReleaseQuotaRequest release;
  release.set_namespace_("ns");
  release.set_name("w0");
  release.mutable_finished()->set_succeeded(true);
  const absl::Time t = kT0 + absl::Hours(1);
  for (Engine* e : {&original, &restored}) {
    ASSERT_TRUE(e->ReleaseQuota(release, t).ok());
    e->RunCycle(t);
  }
  const std::vector<Change> changes = original.TakeChanges();
  EXPECT_GE(changes.size(), 2u);  // finished, and a pending one admitted in its place
  ExpectSameChanges(changes, restored.TakeChanges());
}

// Every page of `request`'s listing, as bytes.
std::vector<std::string> Pages(const Engine& engine, v1::ListWorkloadsRequest request) {
  std::vector<std::string> pages;
  do {
    absl::StatusOr<v1::ListWorkloadsResponse> page = engine.ListWorkloads(request);
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok()) break;
    pages.push_back(page->SerializeAsString());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  return pages;
}

TEST_P(EngineRestoreTest, ARestoredEngineListsTheSamePages) {
  v1::ListWorkloadsRequest by_three;
  by_three.set_page_size(3);
  v1::ListWorkloadsRequest admitted = by_three;
  admitted.set_state(v1::WORKLOAD_STATE_ADMITTED);
  v1::ListWorkloadsRequest pending = by_three;
  pending.set_state(v1::WORKLOAD_STATE_PENDING);
  pending.set_namespace_("ns");
  pending.set_queue_name("lq");
  v1::ListWorkloadsRequest other_namespace;
  other_namespace.set_namespace_("other");
  for (const v1::ListWorkloadsRequest& request : {by_three, admitted, pending, other_namespace}) {
    const std::vector<std::string> pages = Pages(original, request);
    EXPECT_EQ(Pages(restored, request), pages) << request.ShortDebugString();
  }
  EXPECT_EQ(Pages(original, by_three).size(), 3u);  // 8 workloads
  EXPECT_EQ(Pages(original, admitted).size(), 2u);  // 5 of them admitted
}

TEST_P(EngineRestoreTest, ARestoredEnginePreemptsTheSameWorkloads) {
  // Within-queue preemption over the restored reservations, all candidates (frozen when
  // restored encoded), then a workload of the highest priority that needs two of them to go.
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  get.set_name("cq");
  v1::ApplyRequest cq;
  *cq.mutable_object() = *original.Get(get);
  cq.mutable_object()->mutable_cluster_queue()->clear_status();
  cq.mutable_object()->mutable_cluster_queue()->mutable_spec()->mutable_preemption()
      ->set_within_cluster_queue("LowerPriority");
  v1::SubmitRequest submit;
  v1::Workload* wl = submit.mutable_workload();
  wl->mutable_metadata()->set_namespace_("ns");
  wl->mutable_metadata()->set_name("urgent");
  wl->mutable_spec()->set_queue_name("lq");
  wl->mutable_spec()->set_priority(100);
  v1::PodSet* ps = wl->mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(2);
  (*ps->mutable_template_()->mutable_spec()->add_containers()->mutable_resources()
        ->mutable_requests())["cpu"] = "1";
  const absl::Time t = kT0 + absl::Hours(1);
  for (Engine* e : {&original, &restored}) {
    ASSERT_TRUE(e->Apply(cq, t).ok());
    ASSERT_TRUE(e->Submit(submit, t).ok());
    e->RunCycle(t);
  }
  std::vector<Change> changes = original.TakeChanges();
  int preempted = 0;
  for (const Change& c : changes) {
    if (c.workload != nullptr && FindCondition(*c.workload, kPreempted) != nullptr) ++preempted;
  }
  EXPECT_EQ(preempted, 2);
  ExpectSameChanges(changes, restored.TakeChanges());
}

TEST(EngineRestoreEncodedTest, AStoredWorkloadThatDoesNotParseIsDataLoss) {
  Engine engine;
  ASSERT_TRUE(engine.RestoreEncoded("ns/w", "\xff\xff\xff").ok());
  const absl::Status status = engine.FinishRestore(1);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "stored workload ns/w cannot be parsed");
}

TEST(EngineRestoreEncodedTest, AStoredWorkloadUnderAnotherKeyIsDataLoss) {
  Engine engine;
  v1::Workload wl;
  wl.mutable_metadata()->set_namespace_("ns");
  wl.mutable_metadata()->set_name("w");
  ASSERT_TRUE(engine.RestoreEncoded("ns/other", wl.SerializeAsString()).ok());
  const absl::Status status = engine.FinishRestore(1);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "stored workload ns/other holds workload ns/w");
}

}  // namespace
}  // namespace admitd::engine
