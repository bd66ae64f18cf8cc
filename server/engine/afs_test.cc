// Admission fair sharing through the engine's API (§20 of the semantics), after Kueue's
// TestScheduleForAFS: the LocalQueue that used less goes first, its usage decays with the
// half-life and is sampled into its status, a zero-weight LocalQueue comes last, and the history
// survives a restart.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"
#include "server/engine/engine.h"
#include "server/engine/engine_impl.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {
namespace afs {

using testing_fixture::kT0;
using testing_fixture::MakeWorkload;

EngineOptions WithAfs(absl::Duration half_life, absl::Duration sampling, bool on = true) {
  EngineOptions o;
  o.record_events = false;
  o.admission_fair_sharing.enabled = on;
  o.admission_fair_sharing.usage_half_life = half_life;
  o.admission_fair_sharing.usage_sampling_interval = sampling;
  o.admission_fair_sharing.resource_weights = {{"memory", 0}};  // the workloads' cpu decides
  return o;
}

class AfsTest : public ::testing::Test {
 protected:
  explicit AfsTest(EngineOptions options = WithAfs(absl::Seconds(10), absl::Seconds(10)))
      : engine_(std::make_unique<Engine>(options)) {}
  void SetUp() override {
    ASSERT_TRUE(engine_->FinishRestore(0).ok());
    for (const v1::QueueObject& o : Objects()) Apply(o);
  }
  // Flavor "default", ClusterQueue cq1 (8 cpu, usage-based) and LocalQueues lq-a, lq-b and
  // lq-zero (weight 0) in namespace ns.
  std::vector<v1::QueueObject> Objects() {
    std::vector<v1::QueueObject> out;
    v1::QueueObject f;
    f.mutable_resource_flavor()->mutable_metadata()->set_name("default");
    out.push_back(f);
    v1::QueueObject cq = testing_fixture::ClusterQueueObject("cq1", {"default"}, "8");
    cq.mutable_cluster_queue()->mutable_spec()->mutable_admission_scope()->set_admission_mode(
        "UsageBasedAdmissionFairSharing");
    out.push_back(cq);
    for (const char* name : {"lq-a", "lq-b", "lq-zero"}) {
      v1::QueueObject lq = testing_fixture::LocalQueueObject("ns", name, "cq1");
      if (std::string(name) == "lq-zero") {
        lq.mutable_local_queue()->mutable_spec()->mutable_fair_sharing()->set_weight("0");
      }
      out.push_back(lq);
    }
    return out;
  }
  void Apply(const v1::QueueObject& o) {
    v1::ApplyRequest req;
    *req.mutable_object() = o;
    auto r = engine_->Apply(req, now_);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  void Submit(const std::string& name, const std::string& queue, const std::string& cpu,
              absl::Time created) {
    v1::SubmitRequest req;
    *req.mutable_workload() = MakeWorkload(name, 1, cpu, queue);
    *req.mutable_workload()->mutable_metadata()->mutable_creation_timestamp() =
        ToProtoTime(created);
    auto r = engine_->Submit(req, now_);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  void At(absl::Time at) {
    now_ = at;
    if (engine_->NextDeadline() <= now_) engine_->Tick(now_);
    while (engine_->RunCycle(now_).more) {
    }
  }
  void Finish(const std::string& name) {
    v1::ReleaseQuotaRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    req.mutable_finished()->set_succeeded(true);
    ASSERT_TRUE(engine_->ReleaseQuota(req, now_).ok());
  }
  bool Admitted(const std::string& name) {
    v1::GetWorkloadRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    return IsConditionTrue(*engine_->GetWorkload(req), kAdmitted);
  }
  v1::LocalQueue LocalQueue(const std::string& name) {
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_LOCAL_QUEUE);
    req.set_namespace_("ns");
    req.set_name(name);
    return engine_->Get(req)->local_queue();
  }
  std::string Consumed(const std::string& lq) {
    const v1::LocalQueue object = LocalQueue(lq);
    const auto& s = object.status().fair_sharing().admission_fair_sharing_status();
    auto it = s.consumed_resources().find("cpu");
    return it == s.consumed_resources().end() ? "" : it->second;
  }
  double Usage(const std::string& lq) {
    for (const LocalQueueUsage& u : engine_->AdmissionFairSharingUsages()) {
      if (u.name == lq) return u.usage;
    }
    return -1;
  }

  // lq-a runs 8 cpu for 10 s, then lq-a's older and lq-b's newer 8-cpu workloads wait for
  // the one slot.
  void BusyThenBoth() {
    Submit("before", "lq-a", "8", now_);
    At(now_);
    At(kT0 + absl::Seconds(10));
    Finish("before");
    Submit("wl-a1", "lq-a", "8", kT0 + absl::Seconds(11));
    Submit("wl-b1", "lq-b", "8", kT0 + absl::Seconds(12));
    At(kT0 + absl::Seconds(13));
  }

  std::unique_ptr<Engine> engine_;
  absl::Time now_ = kT0;
};

// The decay: with a 10 s half-life sampled every 10 s, alpha is 1/2: the entry penalty of an
// 8-cpu admission is 4, then each sample halves the history and adds half of what runs.
TEST_F(AfsTest, UsageDecaysWithTheHalfLifeAndIsSampledIntoTheStatus) {
  EXPECT_EQ(Consumed("lq-a"), "");
  EXPECT_EQ(FromProto(LocalQueue("lq-a").status().fair_sharing().admission_fair_sharing_status()
                          .last_update()),
            kT0);
  Submit("big", "lq-a", "8", now_);
  At(now_);
  ASSERT_TRUE(Admitted("big"));
  EXPECT_DOUBLE_EQ(Usage("lq-a"), 4);  // settled: the penalty, no time elapsed
  At(kT0 + absl::Seconds(10));
  EXPECT_EQ(Consumed("lq-a"), "6");  // 4 / 2 + 8 / 2
  At(kT0 + absl::Seconds(20));
  EXPECT_EQ(Consumed("lq-a"), "7");
  Finish("big");
  At(kT0 + absl::Seconds(30));
  EXPECT_EQ(Consumed("lq-a"), "3500m");  // nothing runs: the history halves
  EXPECT_EQ(FromProto(LocalQueue("lq-a").status().fair_sharing().admission_fair_sharing_status()
                          .last_update()),
            kT0 + absl::Seconds(30));
  EXPECT_DOUBLE_EQ(Usage("lq-b"), 0);
  EXPECT_EQ(Usage("lq-zero"), std::numeric_limits<double>::infinity());
}

// "admits workload from less active localqueue": lq-a used the quota before; lq-b's later
// workload goes first.
TEST_F(AfsTest, AdmitsTheWorkloadOfTheLessActiveLocalQueue) {
  BusyThenBoth();
  EXPECT_TRUE(Admitted("wl-b1"));
  EXPECT_FALSE(Admitted("wl-a1"));
}

// "does not prioritize a zero-weight localqueue": its usage is infinite, it comes last.
TEST_F(AfsTest, AZeroWeightLocalQueueComesLast) {
  Submit("wl-zero", "lq-zero", "8", kT0 - absl::Minutes(1));
  Submit("wl-b", "lq-b", "8", kT0);
  At(now_);
  EXPECT_TRUE(Admitted("wl-b"));
  EXPECT_FALSE(Admitted("wl-zero"));
}

// The history is the LocalQueue's stored status: a restarted engine starts from it.
TEST_F(AfsTest, TheHistorySurvivesARestart) {
  Submit("before", "lq-a", "8", now_);
  At(now_);
  At(kT0 + absl::Seconds(10));
  ASSERT_EQ(Consumed("lq-a"), "6");
  Finish("before");
  std::vector<v1::QueueObject> stored = Objects();
  for (v1::QueueObject& o : stored) {
    if (o.has_local_queue() && o.local_queue().metadata().name() == "lq-a") {
      *o.mutable_local_queue() = LocalQueue("lq-a");
    }
  }
  engine_ = std::make_unique<Engine>(WithAfs(absl::Seconds(10), absl::Seconds(10)));
  for (const v1::QueueObject& o : stored) ASSERT_TRUE(engine_->Restore(o).ok());
  ASSERT_TRUE(engine_->FinishRestore(1).ok());
  EXPECT_DOUBLE_EQ(Usage("lq-a"), 6);
  Submit("wl-a1", "lq-a", "8", kT0 + absl::Seconds(11));
  Submit("wl-b1", "lq-b", "8", kT0 + absl::Seconds(12));
  At(kT0 + absl::Seconds(13));
  EXPECT_TRUE(Admitted("wl-b1"));
  EXPECT_FALSE(Admitted("wl-a1"));
}

// §20.3 in preemption: among candidates of the preemptor's own ClusterQueue, the LocalQueue
// that used more loses first, before the most recently reserved.
TEST_F(AfsTest, APreemptorTakesFromTheLocalQueueThatUsedMore) {
  v1::QueueObject cq = Objects()[1];
  cq.mutable_cluster_queue()->mutable_spec()->mutable_preemption()->set_within_cluster_queue(
      "LowerPriority");
  Apply(cq);
  Submit("history", "lq-a", "8", now_);
  At(now_);
  At(kT0 + absl::Seconds(10));
  Finish("history");
  Submit("wa", "lq-a", "4", kT0 + absl::Seconds(11));
  At(kT0 + absl::Seconds(11));
  Submit("wb", "lq-b", "4", kT0 + absl::Seconds(12));
  At(kT0 + absl::Seconds(12));
  ASSERT_TRUE(Admitted("wa"));
  ASSERT_TRUE(Admitted("wb"));
  ASSERT_GT(Usage("lq-a"), Usage("lq-b"));
  v1::SubmitRequest req;
  *req.mutable_workload() = MakeWorkload("urgent", 1, "4", "lq-b");
  req.mutable_workload()->mutable_spec()->set_priority(10);
  ASSERT_TRUE(engine_->Submit(req, now_).ok());
  At(kT0 + absl::Seconds(13));
  v1::GetWorkloadRequest get;
  get.set_namespace_("ns");
  get.set_name("wa");
  EXPECT_TRUE(IsConditionTrue(*engine_->GetWorkload(get), kPreempted));
  get.set_name("wb");
  EXPECT_FALSE(IsConditionTrue(*engine_->GetWorkload(get), kPreempted));
}

class ClassicalOrderTest : public AfsTest {
 protected:
  ClassicalOrderTest() : AfsTest(WithAfs(absl::Seconds(10), absl::Seconds(10), /*on=*/false)) {}
};

// "without AFS: classic admission decision ignores queue usage".
TEST_F(ClassicalOrderTest, WithoutAdmissionFairSharingTheOlderWorkloadGoesFirst) {
  BusyThenBoth();
  EXPECT_TRUE(Admitted("wl-a1"));
  EXPECT_FALSE(Admitted("wl-b1"));
  EXPECT_FALSE(LocalQueue("lq-a").status().has_fair_sharing());
  EXPECT_TRUE(engine_->AdmissionFairSharingUsages().empty());
}

}  // namespace afs
}  // namespace
}  // namespace admitd::engine
