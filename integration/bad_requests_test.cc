// Malformed requests over the wire: bytes that do not parse, enum values the API does not define,
// durations that are not durations, cluster names that are not names, objects past the size
// limits. Each is INVALID_ARGUMENT naming the field, and changes nothing.
#include <grpcpp/generic/generic_stub.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "integration/in_process.h"

namespace admitd {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

class BadRequestsTest : public testing::InProcessTest {
 protected:
  void SetUp() override {
    config_.max_object_bytes = 64 * 1024;
    config_.max_list_page_bytes = 200 * 1024;
    Start();
    Apply(testing::Flavor("default"));
    Apply(testing::ClusterQueue("cq", {"default"}, {{"cpu", "1000"}}));
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }

  // Sends `bytes` as the request of `method` and returns the status.
  grpc::Status Raw(const std::string& method, const std::string& bytes) {
    grpc::GenericStub stub(client_->channel);
    grpc::ClientContext ctx;
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::Status status;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      status = std::move(s);
      done = true;
      cv.notify_one();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    return status;
  }

  grpc::Status WatchStatus(const v1::WatchRequest& request) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto reader = client_->admission->Watch(&ctx, request);
    v1::WatchEvent event;
    while (reader->Read(&event)) {
    }
    return reader->Finish();
  }
};

TEST_F(BadRequestsTest, UnparseableBytesAreInvalidArgumentNamingTheRequestType) {
  // A field 1 of wire type 2 whose length runs past the end.
  const std::string garbage("\x0a\xff\xff\xff\x0f", 5);
  for (const auto& [method, type] : std::vector<std::pair<std::string, std::string>>{
           {"/admitd.v1.AdmissionService/Submit", "admitd.v1.SubmitRequest"},
           {"/admitd.v1.QueueService/Get", "admitd.v1.GetObjectRequest"},
           {"/admitd.v1.PodService/ReportPods", "admitd.v1.ReportPodsRequest"}}) {
    const grpc::Status s = Raw(method, garbage);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_THAT(testing::FieldViolations(s), Contains(HasSubstr(type))) << method;
  }
  // A method that does not exist is still UNIMPLEMENTED.
  EXPECT_EQ(Raw("/admitd.v1.AdmissionService/NoSuchMethod", garbage).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  // A parseable request is served as ever.
  v1::GetObjectRequest get;
  get.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
  get.set_name("cq");
  EXPECT_TRUE(Raw("/admitd.v1.QueueService/Get", get.SerializeAsString()).ok());
}

TEST_F(BadRequestsTest, UnknownEnumValuesAndBadWatchFiltersAreRefused) {
  grpc::ClientContext ctx;
  v1::ListWorkloadsRequest list;
  list.set_state(static_cast<v1::WorkloadState>(42));
  v1::ListWorkloadsResponse listed;
  const grpc::Status s = client_->admission->List(&ctx, list, &listed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(testing::FieldViolations(s), Contains(HasSubstr("state")));

  v1::WatchRequest kinds;
  kinds.add_kinds(static_cast<v1::ObjectKind>(99));
  const grpc::Status w = WatchStatus(kinds);
  EXPECT_EQ(w.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(testing::FieldViolations(w), Contains(HasSubstr("kinds[0]")));

  v1::WatchRequest cluster;
  cluster.set_cluster("c1/team");
  EXPECT_EQ(WatchStatus(cluster).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(BadRequestsTest, DurationsMustBeDurations) {
  grpc::ClientContext ctx;
  v1::AdmitRequest admit;
  admit.set_namespace_("ns");
  admit.set_name("x");
  admit.set_wait(true);
  admit.mutable_timeout()->set_nanos(2000000000);
  v1::AdmitResponse resp;
  const grpc::Status s = client_->admission->Admit(&ctx, admit, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(testing::FieldViolations(s), Contains(HasSubstr("timeout.nanos")));
}

TEST_F(BadRequestsTest, ObjectsPastTheSizeLimitsAreRefusedAndPagesStayBounded) {
  auto submit = [&](const std::string& name, size_t annotation_bytes) {
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload("ns", name, "lq", 1, {{"cpu", "1"}});
    (*req.mutable_workload()->mutable_metadata()->mutable_annotations())["note"] =
        std::string(annotation_bytes, 'a');
    grpc::ClientContext ctx;
    v1::SubmitResponse resp;
    return client_->admission->Submit(&ctx, req, &resp);
  };
  const grpc::Status big = submit("big", 100 * 1024);
  EXPECT_EQ(big.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(testing::FieldViolations(big), Contains(HasSubstr("--max-object-bytes")));
  // Kubernetes' own annotation limit holds whatever --max-object-bytes says.
  EXPECT_EQ(submit("huge", 300 * 1024).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A label Kubernetes would refuse.
  {
    v1::SubmitRequest req;
    *req.mutable_workload() = testing::Workload("ns", "label", "lq", 1, {{"cpu", "1"}});
    (*req.mutable_workload()->mutable_metadata()->mutable_labels())["bad key!"] = "x";
    grpc::ClientContext ctx;
    v1::SubmitResponse resp;
    const grpc::Status s = client_->admission->Submit(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(testing::FieldViolations(s), Contains(HasSubstr("metadata.labels")));
  }
  // Ten workloads of 50 KiB: pages of at most 200 KiB hold three or four each.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(submit("w" + std::to_string(i), 50 * 1024).ok()) << i;
  }
  v1::ListWorkloadsRequest list;
  list.set_namespace_("ns");
  int pages = 0, seen = 0;
  do {
    grpc::ClientContext ctx;
    v1::ListWorkloadsResponse page;
    ASSERT_TRUE(client_->admission->List(&ctx, list, &page).ok());
    EXPECT_LE(page.ByteSizeLong(), 200u * 1024 + 4096);
    EXPECT_GE(page.workloads_size(), 1);
    seen += page.workloads_size();
    ++pages;
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());
  EXPECT_EQ(seen, 10);
  EXPECT_GE(pages, 3);
}

}  // namespace
}  // namespace admitd
