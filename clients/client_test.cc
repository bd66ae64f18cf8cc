#include "clients/client.h"

#include <vector>

#include "gmock/gmock.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "gtest/gtest.h"

namespace admitd::clients {
namespace {

using ::testing::HasSubstr;

// A status as admitd sends a refusal: google.rpc.Status details with an ErrorInfo and, when
// `delay` is set, a RetryInfo.
grpc::Status Refusal(grpc::StatusCode code, std::optional<absl::Duration> delay) {
  google::rpc::Status details;
  details.set_code(code);
  details.set_message("refused");
  google::rpc::ErrorInfo info;
  info.set_reason("OVERLOADED");
  info.set_domain("admitd.io");
  details.add_details()->PackFrom(info);
  if (delay) {
    google::rpc::RetryInfo retry;
    retry.mutable_retry_delay()->set_seconds(absl::ToInt64Seconds(*delay));
    retry.mutable_retry_delay()->set_nanos(
        static_cast<int32_t>(absl::ToInt64Nanoseconds(*delay % absl::Seconds(1))));
    details.add_details()->PackFrom(retry);
  }
  return grpc::Status(code, "refused", details.SerializeAsString());
}

TEST(ClientTest, RetryDelayIsReadFromTheDetails) {
  EXPECT_EQ(RetryDelayOf(Refusal(grpc::StatusCode::RESOURCE_EXHAUSTED, absl::Milliseconds(1500))),
            absl::Milliseconds(1500));
  EXPECT_EQ(RetryDelayOf(Refusal(grpc::StatusCode::RESOURCE_EXHAUSTED, std::nullopt)),
            std::nullopt);
  EXPECT_EQ(RetryDelayOf(grpc::Status::OK), std::nullopt);
  EXPECT_EQ(RetryDelayOf(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")), std::nullopt);
  EXPECT_TRUE(RefusedWithRetry(Refusal(grpc::StatusCode::UNAVAILABLE, absl::Seconds(1))));
  EXPECT_FALSE(RefusedWithRetry(Refusal(grpc::StatusCode::RESOURCE_EXHAUSTED, std::nullopt)));
  // A reason and a delay on another code are not a refusal to retry.
  EXPECT_FALSE(RefusedWithRetry(Refusal(grpc::StatusCode::INVALID_ARGUMENT, absl::Seconds(1))));
  EXPECT_THAT(DescribeError(Refusal(grpc::StatusCode::RESOURCE_EXHAUSTED, absl::Seconds(2))),
              HasSubstr("retry after: 2s"));
}

TEST(ClientTest, CallWithRetryWaitsAsAdvisedUntilTheCallSucceeds) {
  std::vector<absl::Time> attempts;
  int prepared = 0;
  RetryOptions options;
  options.initial_backoff = absl::Milliseconds(1);
  options.prepare = [&](grpc::ClientContext*) { ++prepared; };
  grpc::Status s = CallWithRetry(
      [&](grpc::ClientContext*) {
        attempts.push_back(absl::Now());
        return attempts.size() < 3
                   ? Refusal(grpc::StatusCode::RESOURCE_EXHAUSTED, absl::Milliseconds(40))
                   : grpc::Status::OK;
      },
      options);
  EXPECT_TRUE(s.ok());
  ASSERT_EQ(attempts.size(), 3u);
  EXPECT_EQ(prepared, 3);
  for (size_t i = 1; i < attempts.size(); ++i) {
    EXPECT_GE(attempts[i] - attempts[i - 1], absl::Milliseconds(40));  // never sooner than told
    EXPECT_LT(attempts[i] - attempts[i - 1], absl::Seconds(1));
  }
}

TEST(ClientTest, CallWithRetryGivesUp) {
  // Not a refusal the server advised retrying: returned at once.
  int calls = 0;
  grpc::Status s = CallWithRetry([&](grpc::ClientContext*) {
    ++calls;
    return Refusal(grpc::StatusCode::RESOURCE_EXHAUSTED, std::nullopt);
  });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(calls, 1);
  // Out of attempts.
  calls = 0;
  RetryOptions few;
  few.max_attempts = 3;
  few.initial_backoff = absl::Milliseconds(1);
  s = CallWithRetry(
      [&](grpc::ClientContext*) {
        ++calls;
        return Refusal(grpc::StatusCode::UNAVAILABLE, absl::Milliseconds(1));
      },
      few);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(calls, 3);
  // Out of time: a delay past the deadline is not waited for.
  calls = 0;
  RetryOptions short_time;
  short_time.timeout = absl::Milliseconds(100);
  const absl::Time start = absl::Now();
  s = CallWithRetry(
      [&](grpc::ClientContext* ctx) {
        ++calls;
        EXPECT_LE(absl::FromChrono(ctx->deadline()), start + absl::Milliseconds(150));
        return Refusal(grpc::StatusCode::RESOURCE_EXHAUSTED, absl::Seconds(5));
      },
      short_time);
  EXPECT_EQ(calls, 1);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

}  // namespace
}  // namespace admitd::clients
