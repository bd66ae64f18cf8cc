// MultiKueue's objects in the engine: the AdmissionCheck's Active condition derived from its
// MultiKueueConfig and clusters, the ClusterQueue constraints, and a worker's connection state.
#include "gtest/gtest.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using namespace testing_fixture;

v1::QueueObject Check(const std::string& name, const std::string& config) {
  v1::QueueObject o;
  auto* ac = o.mutable_admission_check();
  ac->mutable_metadata()->set_name(name);
  ac->mutable_spec()->set_controller_name(kMultiKueueControllerName);
  if (!config.empty()) {
    ac->mutable_spec()->mutable_parameters()->set_api_group("kueue.x-k8s.io");
    ac->mutable_spec()->mutable_parameters()->set_kind("MultiKueueConfig");
    ac->mutable_spec()->mutable_parameters()->set_name(config);
  }
  return o;
}

v1::QueueObject Config(const std::string& name, const std::vector<std::string>& clusters) {
  v1::QueueObject o;
  o.mutable_multi_kueue_config()->mutable_metadata()->set_name(name);
  for (const std::string& c : clusters) o.mutable_multi_kueue_config()->mutable_spec()->add_clusters(c);
  return o;
}

v1::QueueObject Cluster(const std::string& name) {
  v1::QueueObject o;
  o.mutable_multi_kueue_cluster()->mutable_metadata()->set_name(name);
  o.mutable_multi_kueue_cluster()->mutable_spec()->mutable_admitd()->set_address("127.0.0.1:1");
  return o;
}

class MultiKueueEngineTest : public EngineApiTest {
 protected:
  v1::Condition Active(v1::ObjectKind kind, const std::string& name) {
    v1::GetObjectRequest req;
    req.set_kind(kind);
    req.set_name(name);
    absl::StatusOr<v1::QueueObject> o = engine_.Get(req);
    EXPECT_TRUE(o.ok()) << o.status();
    const auto& conditions = kind == v1::OBJECT_KIND_ADMISSION_CHECK
                                 ? o->admission_check().status().conditions()
                             : kind == v1::OBJECT_KIND_CLUSTER_QUEUE
                                 ? o->cluster_queue().status().conditions()
                                 : o->multi_kueue_cluster().status().conditions();
    for (const v1::Condition& c : conditions) {
      if (c.type() == "Active") return c;
    }
    return v1::Condition();
  }
};

TEST_F(MultiKueueEngineTest, TheCheckFollowsItsConfigAndClusters) {
  ASSERT_TRUE(Apply(Check("mk", "")).ok());
  v1::Condition c = Active(v1::OBJECT_KIND_ADMISSION_CHECK, "mk");
  EXPECT_EQ(c.status(), "False");
  EXPECT_EQ(c.reason(), "BadConfig");
  EXPECT_EQ(c.message(), "Cannot load the AdmissionChecks parameters: missing parameters reference");

  ASSERT_TRUE(Apply(Check("mk", "workers")).ok());
  EXPECT_EQ(Active(v1::OBJECT_KIND_ADMISSION_CHECK, "mk").message(),
            "Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io "
            "\"workers\" not found");

  ASSERT_TRUE(Apply(Config("workers", {"a", "b", "c"})).ok());
  ASSERT_TRUE(Apply(Cluster("a")).ok());
  ASSERT_TRUE(Apply(Cluster("b")).ok());
  c = Active(v1::OBJECT_KIND_ADMISSION_CHECK, "mk");
  EXPECT_EQ(c.reason(), "NoUsableClusters");
  EXPECT_EQ(c.message(), "Missing clusters: [c], Inactive clusters: [a b]");

  // A new cluster starts disconnected, dated from its creation.
  EXPECT_EQ(Active(v1::OBJECT_KIND_MULTIKUEUE_CLUSTER, "a").reason(), "ClientConnectionFailed");

  ASSERT_TRUE(engine_.SetWorkerConnection("a", true, "", Now()).ok());
  c = Active(v1::OBJECT_KIND_ADMISSION_CHECK, "mk");
  EXPECT_EQ(c.status(), "True");
  EXPECT_EQ(c.reason(), "SomeActiveClusters");
  EXPECT_EQ(c.message(), "Missing clusters: [c], Inactive clusters: [b]");

  ASSERT_TRUE(Apply(Config("workers", {"a"})).ok());
  c = Active(v1::OBJECT_KIND_ADMISSION_CHECK, "mk");
  EXPECT_EQ(c.reason(), "Active");
  EXPECT_EQ(c.message(), "The admission check is active");
}

TEST_F(MultiKueueEngineTest, AClusterQueueWithAnInactiveOrDoubledCheckIsInactive) {
  ASSERT_TRUE(Apply(FlavorObject("default")).ok());
  ASSERT_TRUE(Apply(Check("mk", "workers")).ok());
  ASSERT_TRUE(Apply(Check("mk2", "workers")).ok());
  v1::QueueObject cq = ClusterQueueObject("cq", {"default"});
  cq.mutable_cluster_queue()->mutable_spec()->mutable_admission_checks_strategy()
      ->add_admission_checks()->set_name("mk");
  ASSERT_TRUE(Apply(cq).ok());
  v1::Condition c = Active(v1::OBJECT_KIND_CLUSTER_QUEUE, "cq");
  EXPECT_EQ(c.reason(), "AdmissionCheckInactive");
  EXPECT_EQ(c.message(), "Can't admit new workloads: references inactive AdmissionCheck(s): mk.");

  ASSERT_TRUE(Apply(Config("workers", {"a"})).ok());
  ASSERT_TRUE(Apply(Cluster("a")).ok());
  ASSERT_TRUE(engine_.SetWorkerConnection("a", true, "", Now()).ok());
  EXPECT_EQ(Active(v1::OBJECT_KIND_CLUSTER_QUEUE, "cq").status(), "True");

  cq.mutable_cluster_queue()->mutable_spec()->mutable_admission_checks_strategy()
      ->add_admission_checks()->set_name("mk2");
  ASSERT_TRUE(Apply(cq).ok());
  c = Active(v1::OBJECT_KIND_CLUSTER_QUEUE, "cq");
  EXPECT_EQ(c.reason(), "MultipleMultiKueueAdmissionChecks");
  EXPECT_EQ(c.message(),
            "Can't admit new workloads: Cannot use multiple MultiKueue AdmissionChecks on the "
            "same ClusterQueue, found: mk,mk2.");
}

TEST_F(MultiKueueEngineTest, AWorkersFirstLossIsKeptUntilItConnects) {
  ASSERT_TRUE(Apply(Cluster("a")).ok());
  ASSERT_TRUE(engine_.SetWorkerConnection("a", true, "", Now()).ok());
  const absl::Time lost = Now();
  ASSERT_TRUE(engine_.SetWorkerConnection("a", false, "connection refused", lost).ok());
  ASSERT_TRUE(engine_.SetWorkerConnection("a", false, "still refused", Now()).ok());
  v1::GetObjectRequest req;
  req.set_kind(v1::OBJECT_KIND_MULTIKUEUE_CLUSTER);
  req.set_name("a");
  v1::MultiKueueClusterStatus status = engine_.Get(req)->multi_kueue_cluster().status();
  EXPECT_EQ(status.disconnected_since().seconds(), absl::ToUnixSeconds(lost));
  EXPECT_EQ(status.conditions(0).message(), "still refused");
  EXPECT_EQ(engine_.SetWorkerConnection("nope", true, "", Now()).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(MultiKueueEngineTest, TheControllerNameIsImmutable) {
  ASSERT_TRUE(Apply(Check("mk", "workers")).ok());
  v1::QueueObject other = Check("mk", "workers");
  other.mutable_admission_check()->mutable_spec()->set_controller_name("example.com/other");
  absl::StatusOr<v1::ApplyResponse> r = Apply(other);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace admitd::engine
