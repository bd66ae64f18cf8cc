#include "server/engine/conditions.h"

#include "gtest/gtest.h"
#include "server/engine/engine_test_fixture.h"

namespace admitd::engine {
namespace {

using testing_fixture::kT0;

TEST(ConditionsTest, TransitionTimeMovesOnlyWithTheStatus) {
  v1::Workload wl;
  wl.mutable_metadata()->set_generation(1);
  EXPECT_TRUE(SetPending(&wl, kReasonWaitingForQuota, "short by 1", kT0));
  const v1::Condition* c = FindCondition(wl, kQuotaReserved);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status(), "False");
  EXPECT_EQ(c->observed_generation(), 1);
  EXPECT_EQ(c->last_transition_time().seconds(), absl::ToUnixSeconds(kT0));
  const v1::Condition* admitted = FindCondition(wl, kAdmitted);
  ASSERT_NE(admitted, nullptr);
  EXPECT_EQ(admitted->reason(), "NoReservation");
  EXPECT_EQ(admitted->message(), "The workload has no reservation");

  // Same reason and message: nothing to write.
  EXPECT_FALSE(SetPending(&wl, kReasonWaitingForQuota, "short by 1", kT0 + absl::Seconds(5)));
  // Another message, same status: written, but the transition time stays.
  EXPECT_TRUE(SetPending(&wl, kReasonExceedsMaxQuota, "never fits", kT0 + absl::Seconds(5)));
  c = FindCondition(wl, kQuotaReserved);
  EXPECT_EQ(c->reason(), "ExceedsMaxQuota");
  EXPECT_EQ(c->last_transition_time().seconds(), absl::ToUnixSeconds(kT0));
  // A status change moves it.
  EXPECT_TRUE(SetCondition(&wl, kQuotaReserved, true, "QuotaReserved",
                           "Quota reserved in ClusterQueue cq", kT0 + absl::Seconds(9)));
  c = FindCondition(wl, kQuotaReserved);
  EXPECT_EQ(c->last_transition_time().seconds(), absl::ToUnixSeconds(kT0) + 9);
  EXPECT_TRUE(IsConditionTrue(wl, kQuotaReserved));
  EXPECT_FALSE(IsConditionTrue(wl, kAdmitted));
  EXPECT_EQ(wl.status().conditions_size(), 2);
}

TEST(ConditionsTest, MessagesAreCappedAtTheKubernetesLimit) {
  v1::Workload wl;
  SetPending(&wl, kReasonWaitingForQuota, std::string(40000, 'x'), kT0);
  EXPECT_EQ(FindCondition(wl, kQuotaReserved)->message().size(), 32768u);
}

}  // namespace
}  // namespace admitd::engine
