#include "integration/in_process.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace admitd::testing {

InProcessTest::InProcessTest() {
  config_.listen = "127.0.0.1:0";
  FreshDataDir();
}

void InProcessTest::FreshDataDir() {
  static int counter = 0;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  config_.data_dir = absl::StrCat(::testing::TempDir(), "/", test != nullptr ? test->test_suite_name() : "test",
                                  "_", getpid(), "_", counter++);
  std::filesystem::remove_all(config_.data_dir);
  data_dirs_.push_back(config_.data_dir);
}

void InProcessTest::TearDown() {
  Stop();
  for (const std::string& dir : data_dirs_) {
    if (HasFailure()) {
      std::fprintf(stderr, "data dir kept: %s\n", dir.c_str());
    } else {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
}

void InProcessTest::Start() {
  Stop();
  absl::StatusOr<std::unique_ptr<AdmitdServer>> server = AdmitdServer::Start(config_);
  ASSERT_TRUE(server.ok()) << server.status();
  server_ = *std::move(server);
  client_ = std::make_unique<Client>(server_->address());
}

void InProcessTest::Stop() {
  client_.reset();
  if (server_ != nullptr) server_->Shutdown(absl::Seconds(2));
  server_.reset();
}

void InProcessTest::Apply(const v1::ApplyRequest& request) {
  grpc::ClientContext ctx;
  v1::ApplyResponse response;
  grpc::Status s = client_->queues->Apply(&ctx, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
}

v1::Workload InProcessTest::Get(const std::string& name, const std::string& ns) {
  grpc::ClientContext ctx;
  v1::GetWorkloadRequest request;
  request.set_namespace_(ns);
  request.set_name(name);
  v1::Workload workload;
  grpc::Status s = client_->admission->Get(&ctx, request, &workload);
  EXPECT_TRUE(s.ok()) << ns << "/" << name << ": " << s.error_message();
  return workload;
}

}  // namespace admitd::testing
