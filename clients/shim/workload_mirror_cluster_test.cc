// The Workload mirror against the test API server with Kueue's Workload CRD installed.
#include <thread>

#include "absl/time/clock.h"
#include "clients/shim/kube/test_cluster.h"
#include "common/testing/wait_for.h"
#include "clients/shim/workload_mirror.h"
#include "gtest/gtest.h"

namespace admitd::shim {
namespace {

using ::admitd::testing::WaitFor;

constexpr char kPath[] = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/job-a-1";

v1::Workload Wl(bool admitted) {
  v1::Workload wl;
  wl.mutable_metadata()->set_name("job-a-1");
  wl.mutable_metadata()->set_namespace_("default");
  wl.mutable_spec()->set_queue_name("lq");
  v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(1);
  if (admitted) {
    wl.mutable_status()->mutable_admission()->set_cluster_queue("cq");
    v1::Condition* c = wl.mutable_status()->add_conditions();
    c->set_type("Admitted");
    c->set_status("True");
    c->set_reason("Admitted");
  }
  return wl;
}

TEST(WorkloadMirror, FollowsAdmitdsWorkloadsAndTheirEvents) {
  TestCluster cluster("0.5", {"--crd", "workload"});
  ASSERT_FALSE(cluster.server().empty());
  KubeClient kube(KubeConfig{.server = cluster.server()});
  EventRecorder events(kube, "shim-0");
  WorkloadMirror mirror(kube, events);
  std::thread t([&] { mirror.Run(); });
  struct Joiner {
    WorkloadMirror& m;
    std::thread& t;
    ~Joiner() {
      m.Stop();
      t.join();
    }
  } joiner{mirror, t};

  mirror.OnWorkload(Wl(false), false);
  ASSERT_TRUE(WaitFor([&] { return kube.Get(kPath).ok(); }));
  mirror.OnWorkload(Wl(true), false);
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<nlohmann::json> o = kube.Get(kPath);
    if (!o.ok() || !(*o)["status"].is_object()) return false;
    const nlohmann::json admission = (*o)["status"].value("admission", nlohmann::json::object());
    return admission.is_object() && admission.value("clusterQueue", "") == "cq";
  }));
  absl::StatusOr<nlohmann::json> o = kube.Get(kPath);
  EXPECT_EQ((*o)["spec"]["queueName"], "lq");
  EXPECT_EQ((*o)["metadata"]["labels"]["admitd.io/mirror"], "true");

  v1::Event e;
  e.mutable_regarding()->set_namespace_("default");
  e.mutable_regarding()->set_name("job-a-1");
  e.set_type("Normal");
  e.set_reason("Admitted");
  e.set_note("Admitted by ClusterQueue cq, wait time since reservation was 0s");
  mirror.OnEvent(e);
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<nlohmann::json> list = kube.Get(
        "/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DWorkload");
    return list.ok() && (*list)["items"].size() == 1;
  }));

  // Gone from admitd: gone from the cluster. A leftover the resync finds goes too.
  mirror.OnWorkload(Wl(true), true);
  ASSERT_TRUE(WaitFor([&] { return kube.Get(kPath).status().code() == absl::StatusCode::kNotFound; }));
  nlohmann::json stray = KueueWorkloadJson(Wl(false));
  stray["metadata"]["name"] = "stray";
  stray.erase("status");
  ASSERT_TRUE(kube.Create("/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads", stray).ok());
  ASSERT_TRUE(mirror.Resync().ok());
  EXPECT_TRUE(WaitFor([&] {
    return kube.Get("/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/stray")
               .status()
               .code() == absl::StatusCode::kNotFound;
  }));
}

}  // namespace
}  // namespace admitd::shim
