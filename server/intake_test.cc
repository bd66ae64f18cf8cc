#include "server/intake.h"

#include <thread>
#include <vector>

#include "common/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "google/rpc/error_details.pb.h"

namespace admitd {
namespace {

using ::testing::HasSubstr;

constexpr IntakeCall kSubmit{"AdmissionService/Submit"};
constexpr IntakeCall kGet{"AdmissionService/Get", IntakeCall::kRead};

TEST(IntakeTest, RefusesWritesAtTheBoundWithRetryAdvice) {
  MetricsRegistry metrics;
  Intake intake(4, &metrics);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(intake.Take(kSubmit).ok());
  EXPECT_EQ(intake.pending(), 4);
  absl::Status refused = intake.Take(kSubmit);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("4 calls are waiting for the sequencer (limit 4)"));
  EXPECT_THAT(refused.message(), HasSubstr("was not run and may be retried"));
  EXPECT_EQ(ErrorReasonOf(refused), "OVERLOADED");
  std::optional<absl::Duration> delay = RetryDelayOf(refused);
  ASSERT_TRUE(delay.has_value());
  EXPECT_GE(*delay, Intake::kMinRetryDelay);
  EXPECT_LE(*delay, Intake::kMaxRetryDelay);
  google::rpc::ErrorInfo info;
  ASSERT_TRUE(info.ParseFromString(std::string(*refused.GetPayload(kErrorInfoTypeUrl))));
  EXPECT_EQ(info.domain(), kErrorDomain);
  EXPECT_EQ(info.metadata().at("pendingCalls"), "4");
  EXPECT_EQ(info.metadata().at("maxPendingCalls"), "4");
  // A refused call does not count; an answered one makes room.
  EXPECT_EQ(intake.pending(), 4);
  intake.Release();
  EXPECT_TRUE(intake.Take(kSubmit).ok());
  EXPECT_EQ(intake.refused(), 1);
  EXPECT_EQ(metrics.Value("admitd_overload_refused_total", {{"method", "AdmissionService/Submit"}}),
            1);
  EXPECT_EQ(metrics.Value("admitd_pending_calls", {}), 4);
  EXPECT_EQ(metrics.Value("admitd_pending_calls_limit", {}), 4);
}

TEST(IntakeTest, ReadsAndReleasesHaveHeadroom) {
  Intake intake(8, nullptr);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(intake.Take(kSubmit).ok());
  EXPECT_FALSE(intake.Take(kSubmit).ok());
  // A quarter more for reads and releases: 2.
  EXPECT_TRUE(intake.Take(kGet).ok());
  EXPECT_TRUE(intake.Take({"AdmissionService/ReleaseQuota", IntakeCall::kRelease}).ok());
  absl::Status refused = intake.Take(kGet);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("(limit 10)"));
}

TEST(IntakeTest, ZeroMeansNoBound) {
  Intake intake(0, nullptr);
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(intake.Take(kSubmit).ok());
  EXPECT_EQ(intake.pending(), 100000);
}

TEST(IntakeTest, EveryRefusableMethodCountsFromZero) {
  MetricsRegistry metrics;
  Intake intake(1, &metrics);
  const std::string text = metrics.Render();
  for (const char* method : {"AdmissionService/Submit", "AdmissionService/ReleaseQuota",
                             "QueueService/Apply", "PodService/ReportPods"}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("admitd_overload_refused_total{method=\"", method,
                                             "\"} 0")));
  }
  // Streams and Ping never reach the sequencer.
  EXPECT_THAT(text, ::testing::Not(HasSubstr("method=\"AdmissionService/Watch\"")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("method=\"QueueService/Ping\"")));
}

TEST(IntakeTest, RetryDelayFollowsTheAnswerRate) {
  Intake intake(1000, nullptr);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(intake.Take(kSubmit).ok());
  // Answer 550 calls in ~1.1 s (500/s): half of 1000 waiting takes ~1 s at that rate.
  for (int i = 0; i < 550; ++i) {
    intake.Release();
    ASSERT_TRUE(intake.Take(kSubmit).ok());
    absl::SleepFor(absl::Milliseconds(2));
  }
  const absl::Time first_asked = absl::Now();
  std::optional<absl::Duration> delay = RetryDelayOf(intake.Take(kSubmit));
  ASSERT_TRUE(delay.has_value());
  EXPECT_GE(*delay, absl::Milliseconds(500));
  EXPECT_LE(*delay, Intake::kMaxRetryDelay);
  // The call refused next comes back after the first one, about a call's answer time (~2 ms)
  // later. The delays are relative to when each refusal was made, so the comparison is of the
  // times the two calls are told to return; a slow machine may let more than a call's time pass
  // between the two refusals, and then the second delay is as long as the first, never shorter.
  std::optional<absl::Duration> next = RetryDelayOf(intake.Take(kSubmit));
  const absl::Time next_told = absl::Now();
  ASSERT_TRUE(next.has_value());
  EXPECT_GE(*next, *delay);
  EXPECT_GT(next_told + *next, first_asked + *delay);
  EXPECT_LT(*next, *delay + absl::Milliseconds(50));
}

TEST(IntakeTest, RetryDelaysStopAtTheMaximum) {
  Intake intake(10, nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(intake.Take(kSubmit).ok());
  // Nothing answered: every refusal gets the longest delay, never more.
  absl::SleepFor(absl::Milliseconds(1050));
  for (int i = 0; i < 3; ++i) {
    std::optional<absl::Duration> delay = RetryDelayOf(intake.Take(kSubmit));
    ASSERT_TRUE(delay.has_value());
    EXPECT_LE(*delay, Intake::kMaxRetryDelay);
    EXPECT_GE(*delay, Intake::kMaxRetryDelay - absl::Milliseconds(100));
  }
}

TEST(IntakeTest, NeverLetsMoreThanTheBoundInConcurrently) {
  Intake intake(100, nullptr);
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (intake.Take(kSubmit).ok()) taken.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(taken.load(), 100);
  EXPECT_EQ(intake.pending(), 100);
  EXPECT_EQ(intake.refused(), 8 * 1000 - 100);
}

}  // namespace
}  // namespace admitd
