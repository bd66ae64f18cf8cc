#include "server/request_checks.h"

#include "common/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd {
namespace {

std::vector<std::string> Fields(const absl::Status& status) {
  std::vector<std::string> out;
  for (const FieldViolation& v : FieldViolationsOf(status)) out.push_back(v.field);
  return out;
}

TEST(RequestChecksTest, WorkloadCallsNeedNamespaceAndName) {
  EXPECT_THAT(Fields(CheckWorkloadName("", "")), ::testing::ElementsAre("namespace", "name"));
  EXPECT_TRUE(CheckWorkloadName("ns", "a").ok());
  v1::ReleaseQuotaRequest release;
  release.set_namespace_("ns");
  release.set_name("a");
  EXPECT_THAT(Fields(CheckReleaseQuotaRequest(release)), ::testing::ElementsAre("release"));
  release.mutable_stopped();
  EXPECT_TRUE(CheckReleaseQuotaRequest(release).ok());
  EXPECT_THAT(Fields(CheckSubmitRequest(v1::SubmitRequest())), ::testing::ElementsAre("workload"));
}

TEST(RequestChecksTest, AdmitTimeoutIsBoundedAndDefaults) {
  v1::AdmitRequest admit;
  admit.set_namespace_("ns");
  admit.set_name("a");
  absl::Duration wait;
  ASSERT_TRUE(CheckAdmitRequest(admit, &wait).ok());
  EXPECT_EQ(wait, kDefaultAdmitWait);
  admit.mutable_timeout()->set_seconds(5);
  ASSERT_TRUE(CheckAdmitRequest(admit, &wait).ok());
  EXPECT_EQ(wait, absl::Seconds(5));
  for (int64_t seconds : {int64_t{-1}, int64_t{3601}, std::numeric_limits<int64_t>::max(),
                          std::numeric_limits<int64_t>::min()}) {
    admit.mutable_timeout()->set_seconds(seconds);
    EXPECT_THAT(Fields(CheckAdmitRequest(admit)), ::testing::ElementsAre("timeout")) << seconds;
  }
}

TEST(RequestChecksTest, QueueServiceServesQueueKindsOnly) {
  for (v1::ObjectKind kind :
       {v1::OBJECT_KIND_UNSPECIFIED, v1::OBJECT_KIND_WORKLOAD, static_cast<v1::ObjectKind>(9999)}) {
    EXPECT_THAT(Fields(CheckQueueKind(kind)), ::testing::ElementsAre("kind")) << kind;
  }
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  EXPECT_THAT(Fields(CheckGetObjectRequest(get)), ::testing::ElementsAre("name"));
  get.set_name("cq");
  EXPECT_TRUE(CheckGetObjectRequest(get).ok());
  EXPECT_THAT(Fields(CheckApplyRequest(v1::ApplyRequest())), ::testing::ElementsAre("object"));
  EXPECT_THAT(Fields(CheckImportRequest(v1::ImportRequest())), ::testing::ElementsAre("workloads"));
  EXPECT_THAT(Fields(CheckListDirectivesRequest(v1::ListDirectivesRequest())),
              ::testing::ElementsAre("cluster"));
}

TEST(RequestChecksTest, SchedulingCyclesAreBounded) {
  v1::RunSchedulingCyclesRequest cycles;
  EXPECT_TRUE(CheckRunSchedulingCyclesRequest(cycles).ok());
  cycles.set_count(kMaxCyclesPerCall + 1);
  EXPECT_THAT(Fields(CheckRunSchedulingCyclesRequest(cycles)), ::testing::ElementsAre("count"));
  cycles.set_count(1);
  cycles.set_advance_clock_seconds(-1);
  EXPECT_THAT(Fields(CheckRunSchedulingCyclesRequest(cycles)),
              ::testing::ElementsAre("advance_clock_seconds"));
}

}  // namespace
}  // namespace admitd
