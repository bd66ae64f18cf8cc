// Test-only: the generic reconcile of the made-up kind FakeJob (fake_job.h) on in-memory fakes,
// the fixture its unit tests share: a registry with the FakeJob integration, the fake API
// server with the FakeJob and pod caches over it, admitd, the event recorder, and helpers that
// put, change and reconcile the job "ns/<name>" as its informer would see it.
//
//   class MyTest : public testing::ReconcilerFixture {};
//   TEST_F(MyTest, X) { PutJob(FakeJobObject("ns", "a")); ASSERT_TRUE(Reconcile().ok()); }
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_TESTING_RECONCILER_FIXTURE_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_TESTING_RECONCILER_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "clients/shim/framework/reconciler.h"
#include "clients/shim/framework/testing/fake_job.h"
#include "clients/shim/framework/testing/fakes.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim::testing {

inline constexpr char kFakeJobs[] = "/apis/example.com/v1/namespaces/ns/fakejobs/";

class ReconcilerFixture : public ::testing::Test {
 protected:
  // `flavor`: the one ResourceFlavor admitd knows, with `node_labels`.
  explicit ReconcilerFixture(const std::string& flavor = "default",
                             std::map<std::string, std::string> node_labels = {}) {
    registry_.Register(NewFakeJobIntegration());
    v1::ResourceFlavor f;
    f.mutable_metadata()->set_name(flavor);
    for (const auto& [k, v] : node_labels) (*f.mutable_spec()->mutable_node_labels())[k] = v;
    admitd_.SetFlavor(f);
  }

  // Made at the first use, with options_ as they are then.
  Reconciler& reconciler() {
    if (!reconciler_) {
      reconciler_ = std::make_unique<Reconciler>(*registry_.Find("example.com/fakejob"),
                                                 registry_, kube_, admitd_, jobs_, pods_,
                                                 events_, options_);
    }
    return *reconciler_;
  }
  static std::string Path(const std::string& name) { return kFakeJobs + name; }
  // Stores the job and lets the informer see it.
  void PutJob(nlohmann::json job) {
    const std::string path = Path(Str(job["metadata"], "name"));
    kube_.Put(path, std::move(job));
    jobs_.Sync();
  }
  nlohmann::json Job(const std::string& name = "a") { return *kube_.Object(Path(name)); }
  // Changes the job as its own controller would (status, spec), and the informer sees it.
  void Change(const nlohmann::json& patch, const std::string& name = "a") {
    nlohmann::json job = Job(name);
    job.merge_patch(patch);
    kube_.Put(Path(name), job);
    jobs_.Sync();
  }
  // One reconcile, then the informers catch up with what it wrote.
  absl::Status Reconcile(const std::string& key = "ns/a") {
    absl::Status s = reconciler().Reconcile(key);
    jobs_.Sync();
    pods_.Sync();
    return s;
  }

  IntegrationRegistry registry_;
  FakeKube kube_;
  FakeCache jobs_{kube_, "/apis/example.com/v1/fakejobs"};
  FakeCache pods_{kube_, "/api/v1/pods"};
  FakeAdmitd admitd_;
  FakeEvents events_;
  FrameworkOptions options_{.cluster = "c1"};
  std::unique_ptr<Reconciler> reconciler_;
};

}  // namespace admitd::shim::testing

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_TESTING_RECONCILER_FIXTURE_H_
