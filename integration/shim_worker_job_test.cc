// The shim's Job reconciler (the generic Reconciler with the batch/job integration) on a MultiKueue worker, against a real admitd in this process and the
// test API server of integration/kube/: a copy is adopted only by the Job the API server holds
// now, never by one the informer still holds after it was deleted (a re-dispatch to the same
// cluster deletes the worker's Job and makes another of the same name).
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/shim/admitd_link.h"
#include "clients/shim/kube/event_recorder.h"
#include "clients/shim/kube/informer.h"
#include "clients/shim/integrations/job/job_multikueue.h"
#include "clients/shim/framework/reconciler.h"
#include "clients/shim/integrations/builtin.h"
#include "clients/shim/kube/kube_client.h"
#include "clients/shim/kube/test_cluster.h"
#include "gtest/gtest.h"
#include "integration/in_process.h"

namespace admitd {
namespace {

using shim::AdmitdLink;
using shim::Informer;
using shim::KubeClient;
using testing::WaitFor;

constexpr char kJobs[] = "/apis/batch/v1/namespaces/ns/jobs";
constexpr char kCopy[] = "job-train-abcde";

// The Job a user created in the manager cluster.
nlohmann::json ManagerJob() {
  return nlohmann::json::parse(R"({
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "train", "namespace": "ns",
                 "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
    "spec": {"suspend": true, "parallelism": 1, "managedBy": "kueue.x-k8s.io/multikueue",
             "template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}}
  })");
}

class WorkerJobTest : public testing::InProcessTest {
 protected:
  void SetUp() override {
    ASSERT_FALSE(cluster_.server().empty()) << "the test cluster did not start";
    Start();
    Apply(testing::Flavor("rf"));
    Apply(testing::ClusterQueue("cq", {"rf"}, {{"cpu", "8"}}));
    Apply(testing::LocalQueue("ns", "lq", "cq"));
    kube_.emplace(shim::KubeConfig{.server = cluster_.server()});
    ASSERT_TRUE(kube_->Create("/api/v1/namespaces",
                              {{"apiVersion", "v1"},
                               {"kind", "Namespace"},
                               {"metadata", {{"name", "ns"}}}})
                    .ok());
    // The copy the manager dispatched to this cluster.
    copy_ = testing::Workload("ns", kCopy, "lq", 1, {{"cpu", "1"}});
    (*copy_.mutable_metadata()->mutable_labels())[kMultiKueueOriginLabel] = "mgr";
    (*copy_.mutable_metadata()->mutable_labels())[kJobClusterLabel] = "w1";
    *copy_.mutable_remote_job() = shim::RemoteJobFor(ManagerJob());
  }
  void TearDown() override {
    if (link_) link_->Stop();
    if (thread_.joinable()) thread_.join();
    InProcessTest::TearDown();
  }

  // Creates the worker's Job made from the copy; returns its uid.
  std::string CreateWorkerJob() {
    absl::StatusOr<nlohmann::json> job = shim::WorkerJobFor(copy_);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return "";
    absl::StatusOr<nlohmann::json> created = kube_->Create(kJobs, *job);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? (*created)["metadata"]["uid"].get<std::string>() : "";
  }
  void SubmitCopy() {
    v1::SubmitRequest req;
    *req.mutable_workload() = copy_;
    v1::SubmitResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(client_->admission->Submit(&ctx, req, &resp).ok());
  }
  void StartLink() {
    link_ = std::make_unique<AdmitdLink>(
        shim::AdmitdLinkOptions{.admitd = {.target = server_->address()}, .cluster = "w1"},
        nullptr, nullptr);
    thread_ = std::thread([this] { link_->Run(); });
  }
  // The uid of the copy's controller owner in admitd ("" when it has none).
  std::string CopyOwner() {
    const v1::Workload copy = Get(kCopy);
    const v1::OwnerReference* owner = shim::ControllerOwner(copy);
    return owner == nullptr ? "" : owner->uid();
  }

  shim::TestCluster cluster_;
  std::optional<KubeClient> kube_;
  v1::Workload copy_;
  std::unique_ptr<AdmitdLink> link_;
  std::thread thread_;
};

TEST_F(WorkerJobTest, ACopyIsAdoptedByTheJobTheApiServerHoldsNotByTheInformersStaleOne) {
  // The informer lists the worker's first Job; it is then deleted and made again (another uid)
  // before the informer hears of either.
  const std::string first = CreateWorkerJob();
  Informer jobs(*kube_, "/apis/batch/v1/jobs");
  Informer pods(*kube_, "/api/v1/pods");
  ASSERT_TRUE(jobs.List().ok());
  ASSERT_TRUE(pods.List().ok());
  ASSERT_TRUE(kube_->DeleteUid(absl::StrCat(kJobs, "/train"), first, "Background").ok());
  const std::string second = CreateWorkerJob();
  ASSERT_NE(first, second);
  ASSERT_EQ((*jobs.Get("ns/train"))["metadata"]["uid"], first);

  SubmitCopy();
  StartLink();
  ASSERT_TRUE(WaitFor([&] { return link_->Workload("ns", kCopy).has_value(); }));
  shim::EventRecorder events(*kube_, "shim-w1");
  std::unique_ptr<shim::IntegrationRegistry> registry = shim::BuiltinIntegrations();
  shim::Reconciler reconciler(*registry->Find("batch/job"), *registry, *kube_, *link_, jobs, pods,
                              events, {.cluster = "w1"});

  // The stale Job is not the API server's: the copy stays unowned.
  EXPECT_TRUE(reconciler.Reconcile("ns/train").ok());
  EXPECT_EQ(CopyOwner(), "");

  // Once the informer has the Job the API server holds, that one adopts the copy.
  ASSERT_TRUE(jobs.List().ok());
  reconciler.Reconcile("ns/train").IgnoreError();  // starting the Job may need another pass
  EXPECT_EQ(CopyOwner(), second);
}

}  // namespace
}  // namespace admitd
