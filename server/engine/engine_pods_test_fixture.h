// Test-only: the engine's pod tests' fixture: an engine with one flavor, ClusterQueue cq (2 cpu)
// and LocalQueue ns/lq, pods as Kueue's webhook leaves them, and reports in, directives out.
#ifndef ADMITD_SERVER_ENGINE_ENGINE_PODS_TEST_FIXTURE_H_
#define ADMITD_SERVER_ENGINE_ENGINE_PODS_TEST_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"
#include "server/engine/engine.h"
#include "server/engine/engine_test_fixture.h"
#include "server/pods/pod_group.h"

namespace admitd::engine::pod_testing {

using testing_fixture::kT0;

inline google::protobuf::Timestamp Ts(absl::Time t) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(absl::ToUnixSeconds(t));
  return ts;
}

// A pod as Kueue's webhook leaves it: managed, finalizer, admission gate; one container.
inline v1::PodObservation Pod(const std::string& name, const std::string& cpu = "1") {
  v1::PodObservation p;
  p.set_namespace_("ns");
  p.set_name(name);
  p.set_uid(name + "-uid");
  p.set_resource_version(1);
  p.set_phase(v1::POD_PHASE_PENDING);
  *p.mutable_creation_timestamp() = Ts(kT0);
  (*p.mutable_labels())[kQueueNameLabel] = "lq";
  (*p.mutable_labels())[kManagedLabel] = "true";
  p.add_finalizers(kManagedFinalizer);
  p.add_scheduling_gates()->set_name(kAdmissionGate);
  v1::Container* c = p.mutable_spec()->add_containers();
  c->set_name("c");
  (*c->mutable_resources()->mutable_requests())["cpu"] = cpu;
  return p;
}

inline v1::PodObservation Member(const std::string& name, const std::string& group,
                          const std::string& total) {
  v1::PodObservation p = Pod(name);
  (*p.mutable_labels())[kGroupNameLabel] = group;
  (*p.mutable_annotations())[kGroupTotalCountAnnotation] = total;
  return p;
}

// The pod as the shim reports it after applying an UNGATE and the pod starting.
inline v1::PodObservation Running(v1::PodObservation p) {
  p.clear_scheduling_gates();
  p.set_phase(v1::POD_PHASE_RUNNING);
  p.set_node_name("node-1");
  p.set_resource_version(p.resource_version() + 1);
  return p;
}

class EnginePodsTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(EngineOptions()); }
  void Start(EngineOptions options) {
    engine_ = std::make_unique<Engine>(options);
    ASSERT_TRUE(engine_->FinishRestore(0).ok());
    v1::ApplyRequest f;
    f.mutable_object()->mutable_resource_flavor()->mutable_metadata()->set_name("default");
    (*f.mutable_object()->mutable_resource_flavor()->mutable_spec()->mutable_node_labels())
        ["pool"] = "a";
    ASSERT_TRUE(engine_->Apply(f, Now()).ok());
    v1::ApplyRequest cq;
    v1::ClusterQueue* c = cq.mutable_object()->mutable_cluster_queue();
    c->mutable_metadata()->set_name("cq");
    c->mutable_spec()->mutable_namespace_selector();
    c->mutable_spec()->mutable_preemption()->set_within_cluster_queue("LowerPriority");
    v1::ResourceGroup* g = c->mutable_spec()->add_resource_groups();
    g->add_covered_resources("cpu");
    v1::FlavorQuotas* fq = g->add_flavors();
    fq->set_name("default");
    fq->add_resources()->set_name("cpu");
    fq->mutable_resources(0)->set_nominal_quota("2");
    ASSERT_TRUE(engine_->Apply(cq, Now()).ok());
    v1::ApplyRequest lq;
    lq.mutable_object()->mutable_local_queue()->mutable_metadata()->set_namespace_("ns");
    lq.mutable_object()->mutable_local_queue()->mutable_metadata()->set_name("lq");
    lq.mutable_object()->mutable_local_queue()->mutable_spec()->set_cluster_queue("cq");
    ASSERT_TRUE(engine_->Apply(lq, Now()).ok());
  }
  // Another ClusterQueue `cq` with `cpu` of nominal quota, fed by LocalQueue ns/`lq`.
  void AddQueues(const std::string& cq_name, const std::string& lq_name, const std::string& cpu) {
    v1::ApplyRequest cq;
    v1::ClusterQueue* c = cq.mutable_object()->mutable_cluster_queue();
    c->mutable_metadata()->set_name(cq_name);
    c->mutable_spec()->mutable_namespace_selector();
    v1::ResourceGroup* g = c->mutable_spec()->add_resource_groups();
    g->add_covered_resources("cpu");
    v1::FlavorQuotas* fq = g->add_flavors();
    fq->set_name("default");
    fq->add_resources()->set_name("cpu");
    fq->mutable_resources(0)->set_nominal_quota(cpu);
    ASSERT_TRUE(engine_->Apply(cq, Now()).ok());
    v1::ApplyRequest lq;
    lq.mutable_object()->mutable_local_queue()->mutable_metadata()->set_namespace_("ns");
    lq.mutable_object()->mutable_local_queue()->mutable_metadata()->set_name(lq_name);
    lq.mutable_object()->mutable_local_queue()->mutable_spec()->set_cluster_queue(cq_name);
    ASSERT_TRUE(engine_->Apply(lq, Now()).ok());
  }
  absl::Time Now() { return kT0 + absl::Seconds(++tick_); }
  v1::ReportPodsResponse Report(const std::vector<v1::PodObservation>& pods) {
    v1::ReportPodsRequest req;
    req.set_cluster("c1");
    for (const v1::PodObservation& p : pods) *req.add_pods() = p;
    auto resp = engine_->ReportPods(req, Now());
    EXPECT_TRUE(resp.ok()) << resp.status();
    while (engine_->RunCycle(Now()).more) {
    }
    v1::ReportPodsResponse out = resp.ok() ? *resp : v1::ReportPodsResponse();
    engine_->AddDirectivesFor(req, Now(), &out);
    return out;
  }
  std::vector<v1::PodDirective> Directives() {
    v1::ListDirectivesRequest req;
    req.set_cluster("c1");
    v1::ListDirectivesResponse resp = engine_->ListDirectives(req, Now());
    return {resp.directives().begin(), resp.directives().end()};
  }
  static std::vector<std::string> Actions(const std::vector<v1::PodDirective>& ds) {
    std::vector<std::string> out;
    for (const v1::PodDirective& d : ds) {
      out.push_back(absl::StrCat(v1::PodDirective::Action_Name(d.action()), " ", d.pod().name()));
    }
    return out;
  }
  v1::Workload Get(const std::string& name) {
    v1::GetWorkloadRequest req;
    req.set_namespace_("ns");
    req.set_name(name);
    auto wl = engine_->GetWorkload(req);
    return wl.ok() ? *wl : v1::Workload();
  }
  v1::WorkloadState State(const std::string& name) { return StateOf(Get(name)); }
  // "<Type> <reason> <pod or workload:name>: <message>" per event.
  static std::vector<std::string> Events(const v1::ReportPodsResponse& resp) {
    std::vector<std::string> out;
    for (const v1::PodEvent& e : resp.events()) {
      out.push_back(absl::StrCat(v1::PodEvent::Type_Name(e.type()), " ", e.reason(), " ",
                                 e.has_pod() ? e.pod().name() : "workload:" + e.workload_name(),
                                 ": ", e.message()));
    }
    return out;
  }

  std::unique_ptr<Engine> engine_;
  int tick_ = 0;
};

}  // namespace admitd::engine::pod_testing

#endif  // ADMITD_SERVER_ENGINE_ENGINE_PODS_TEST_FIXTURE_H_
