// The shim's AdmitdLink against a real admitd in this process: the cache of a cluster's Job and
// RayCluster Workloads and flavors filled by the list and kept by the watch, Workload events
// passed on, write answers applied without bringing deleted Workloads back, and admitd going
// away (unreachable, then the watch resumed once it is back).
#include "clients/shim/admitd_link.h"

#include <atomic>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "clients/shim/integrations/job/job_multikueue.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"

namespace admitd {
namespace {

using shim::AdmitdLink;
using testing::WaitFor;

// A Workload of Job `job` in cluster `cluster` (as the shim submits them); of a RayCluster of
// that name with `ray`.
v1::Workload JobWorkload(const std::string& name, const std::string& job,
                         const std::string& cluster, bool ray = false) {
  v1::Workload wl = testing::Workload("ns", name, "lq", 1, {{"cpu", "1"}});
  (*wl.mutable_metadata()->mutable_labels())[kJobClusterLabel] = cluster;
  v1::OwnerReference* owner = wl.mutable_metadata()->add_owner_references();
  owner->set_api_version(ray ? "ray.io/v1" : "batch/v1");
  owner->set_kind(ray ? "RayCluster" : "Job");
  owner->set_name(job);
  owner->set_uid("uid-" + job);
  owner->set_controller(true);
  return wl;
}

class AdmitdLinkTest : public testing::InProcessTest {
 protected:
  void SetUp() override {
    // A fixed port, so that a restarted server is found where the link looks.
    Start();
    const std::string address = server_->address();
    Stop();
    config_.listen = address;
    Start();
    Apply(testing::Flavor("rf"));
    Apply(testing::ClusterQueue("cq", {"rf"}, {{"cpu", "8"}}));
    Apply(testing::LocalQueue("ns", "lq", "cq"));
  }
  void Submit(const v1::Workload& wl) {
    v1::SubmitRequest req;
    *req.mutable_workload() = wl;
    v1::SubmitResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(client_->admission->Submit(&ctx, req, &resp).ok());
  }
  std::set<std::string> Names(const std::string& owner, const std::string& kind = "Job") {
    std::set<std::string> out;
    for (const v1::Workload& wl : link_->WorkloadsOf(kind, "ns", owner)) {
      out.insert(wl.metadata().name());
    }
    return out;
  }
  void StartLink() {
    link_ = std::make_unique<AdmitdLink>(
        shim::AdmitdLinkOptions{.admitd = {.target = server_->address()},
                                .cluster = "c1",
                                .max_backoff = absl::Milliseconds(500)},
        [this](const v1::Workload& wl, bool deleted) {
          absl::MutexLock lock(&mu_);
          changes_.push_back(absl::StrCat(deleted ? "-" : "+", wl.metadata().name()));
        },
        [this](const v1::Event& e) {
          absl::MutexLock lock(&mu_);
          events_.insert(absl::StrCat(e.regarding().name(), ":", e.reason()));
        });
    thread_ = std::thread([this] { link_->Run(); });
  }
  void TearDown() override {
    if (link_) link_->Stop();
    if (thread_.joinable()) thread_.join();
    InProcessTest::TearDown();
  }
  bool HasEvent(const std::string& e) {
    absl::MutexLock lock(&mu_);
    return events_.count(e) > 0;
  }

  std::unique_ptr<AdmitdLink> link_;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<std::string> changes_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> events_ ABSL_GUARDED_BY(mu_);
};

TEST_F(AdmitdLinkTest, CachesThisClustersJobWorkloadsAndFollowsTheirChanges) {
  Submit(JobWorkload("a1", "job-a", "c1"));
  Submit(JobWorkload("other", "job-x", "c2"));             // another cluster's
  Submit(testing::Workload("ns", "plain", "lq", 1, {{"cpu", "1"}}));  // no Job
  Submit(JobWorkload("r1", "job-a", "c1", /*ray=*/true));  // a RayCluster of the same name
  StartLink();
  ASSERT_TRUE(WaitFor([&] { return link_->Synced(); }));
  EXPECT_EQ(Names("job-a"), (std::set<std::string>{"a1"}));
  EXPECT_EQ(Names("job-a", "RayCluster"), (std::set<std::string>{"r1"}));
  EXPECT_TRUE(Names("job-x").empty());
  EXPECT_EQ(link_->OwnerKeys("Job"), (std::vector<std::string>{"ns/job-a"}));
  EXPECT_EQ(link_->OwnerKeys("RayCluster"), (std::vector<std::string>{"ns/job-a"}));
  EXPECT_EQ(link_->Flavors().count("rf"), 1u);
  EXPECT_TRUE(link_->Reachable());
  EXPECT_EQ(link_->UnreachableReason(), "");

  // Live: a new Workload of the Job, its admission, and Kueue's events on it.
  Submit(JobWorkload("a2", "job-a", "c1"));
  ASSERT_TRUE(WaitFor([&] { return Names("job-a").size() == 2; }));
  ASSERT_TRUE(WaitFor([&] {
    std::optional<v1::Workload> wl = link_->Workload("ns", "a2");
    return wl && shim::ConditionTrue(*wl, "Admitted");
  }));
  EXPECT_TRUE(WaitFor([&] { return HasEvent("a2:QuotaReserved") && HasEvent("a2:Admitted"); }));
  EXPECT_FALSE(HasEvent("plain:QuotaReserved"));  // not a Job of this cluster

  // Deleted in admitd: gone from the cache, and the handler heard of it.
  v1::DeleteWorkloadRequest del;
  del.set_namespace_("ns");
  del.set_name("a1");
  v1::DeleteWorkloadResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(client_->admission->Delete(&ctx, del, &resp).ok());
  ASSERT_TRUE(WaitFor([&] { return Names("job-a") == std::set<std::string>{"a2"}; }));
  absl::MutexLock lock(&mu_);
  EXPECT_NE(std::find(changes_.begin(), changes_.end(), "-a1"), changes_.end());
}

TEST_F(AdmitdLinkTest, SaysAdmitdIsUnreachableAndResumesOnceItIsBack) {
  Submit(JobWorkload("a1", "job-a", "c1"));
  StartLink();
  ASSERT_TRUE(WaitFor([&] { return link_->Synced(); }));
  const int lists = link_->lists();
  Stop();
  ASSERT_TRUE(WaitFor([&] { return !link_->Reachable(); }));
  EXPECT_NE(link_->UnreachableReason().find("unreachable since"), std::string::npos);
  EXPECT_EQ(Names("job-a"), (std::set<std::string>{"a1"}));  // the cache stays meanwhile
  Start();  // same data dir, same address
  Submit(JobWorkload("a2", "job-a", "c1"));
  ASSERT_TRUE(WaitFor([&] { return Names("job-a").size() == 2; }, absl::Seconds(20)));
  EXPECT_TRUE(link_->Reachable());
  // Resumed from the last revision seen: no second list was needed.
  EXPECT_EQ(link_->lists(), lists);
}

// A copy adopted by a Job, deleted, then made again under the same name (a re-dispatch): the
// answer of the adoption, applied late, does not bring the deleted copy back, and the new copy
// is nobody's until adopted.
TEST_F(AdmitdLinkTest, ALateWriteAnswerDoesNotBringADeletedWorkloadBack) {
  auto copy = [] {
    v1::Workload wl = testing::Workload("ns", "copy", "lq", 1, {{"cpu", "1"}});
    (*wl.mutable_metadata()->mutable_labels())[kJobClusterLabel] = "c1";
    (*wl.mutable_metadata()->mutable_labels())[kMultiKueueOriginLabel] = "mgr";
    return wl;
  };
  auto cached_uid = [&] {
    std::optional<v1::Workload> wl = link_->Workload("ns", "copy");
    return wl ? wl->metadata().uid() : "";
  };
  Submit(copy());
  StartLink();
  ASSERT_TRUE(WaitFor([&] { return !cached_uid().empty(); }));
  const std::string first = cached_uid();

  v1::UpdateRemoteJobRequest adopt;
  adopt.set_namespace_("ns");
  adopt.set_name("copy");
  adopt.set_uid(first);
  adopt.mutable_adopt()->set_api_version("batch/v1");
  adopt.mutable_adopt()->set_kind("Job");
  adopt.mutable_adopt()->set_name("train");
  adopt.mutable_adopt()->set_uid("job-uid-1");
  v1::UpdateRemoteJobResponse adopted;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(client_->admission->UpdateRemoteJob(&ctx, adopt, &adopted).ok());
  }
  link_->Remember(adopted.workload());
  EXPECT_EQ(Names("train"), (std::set<std::string>{"copy"}));

  v1::DeleteWorkloadRequest del;
  del.set_namespace_("ns");
  del.set_name("copy");
  v1::DeleteWorkloadResponse deleted;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(client_->admission->Delete(&ctx, del, &deleted).ok());
  }
  ASSERT_TRUE(WaitFor([&] { return cached_uid().empty(); }));
  link_->Remember(adopted.workload());  // the answer, applied after the watch saw the delete
  EXPECT_EQ(cached_uid(), "");
  EXPECT_TRUE(Names("train").empty());

  Submit(copy());
  ASSERT_TRUE(WaitFor([&] { return !cached_uid().empty(); }));
  const std::string second = cached_uid();
  EXPECT_NE(second, first);
  EXPECT_TRUE(Names("train").empty());
  link_->Forget("ns", "copy", first);  // the earlier copy's: this one stays
  EXPECT_EQ(cached_uid(), second);
  link_->Forget("ns", "copy", second);
  EXPECT_EQ(cached_uid(), "");
  EXPECT_TRUE(link_->OwnerKeys("Job").empty());
}

}  // namespace
}  // namespace admitd
