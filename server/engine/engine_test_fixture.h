// Test-only: what the engine's tests share: the fixture of its API tests (engine_objects_test.cc,
// engine_workloads_test.cc and more: a fresh Engine, a clock that ticks a second per call),
// builders for Kueue's objects, and the tests' start of time kT0.
#ifndef ADMITD_SERVER_ENGINE_ENGINE_TEST_FIXTURE_H_
#define ADMITD_SERVER_ENGINE_ENGINE_TEST_FIXTURE_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine/conditions.h"
#include "server/engine/engine.h"

namespace admitd::engine::testing_fixture {

inline const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

inline v1::QueueObject FlavorObject(const std::string& name) {
  v1::QueueObject o;
  o.mutable_resource_flavor()->mutable_metadata()->set_name(name);
  return o;
}

// A ClusterQueue over cpu and memory with the given flavors (each 4 cpu, 8Gi), selecting every
// namespace.
inline v1::QueueObject ClusterQueueObject(const std::string& name, const std::vector<std::string>& flavors,
                                   const std::string& cpu = "4") {
  v1::QueueObject o;
  v1::ClusterQueue* cq = o.mutable_cluster_queue();
  cq->mutable_metadata()->set_name(name);
  cq->mutable_spec()->mutable_namespace_selector();
  v1::ResourceGroup* g = cq->mutable_spec()->add_resource_groups();
  g->add_covered_resources("cpu");
  g->add_covered_resources("memory");
  for (const std::string& f : flavors) {
    v1::FlavorQuotas* fq = g->add_flavors();
    fq->set_name(f);
    fq->add_resources()->set_name("cpu");
    fq->mutable_resources(0)->set_nominal_quota(cpu);
    fq->add_resources()->set_name("memory");
    fq->mutable_resources(1)->set_nominal_quota("8Gi");
  }
  return o;
}

inline v1::QueueObject LocalQueueObject(const std::string& ns, const std::string& name,
                                 const std::string& cq) {
  v1::QueueObject o;
  o.mutable_local_queue()->mutable_metadata()->set_namespace_(ns);
  o.mutable_local_queue()->mutable_metadata()->set_name(name);
  o.mutable_local_queue()->mutable_spec()->set_cluster_queue(cq);
  return o;
}

inline v1::Workload MakeWorkload(const std::string& name, int count, const std::string& cpu,
                          const std::string& queue = "lq", const std::string& ns = "ns") {
  v1::Workload wl;
  wl.mutable_metadata()->set_namespace_(ns);
  wl.mutable_metadata()->set_name(name);
  wl.mutable_spec()->set_queue_name(queue);
  v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(count);
  v1::Container* c = ps->mutable_template_()->mutable_spec()->add_containers();
  (*c->mutable_resources()->mutable_requests())["cpu"] = cpu;
  (*c->mutable_resources()->mutable_requests())["memory"] = "512Mi";
  return wl;
}

// Events (Change kind OBJECT_KIND_EVENT) are recorded only when a test asks for them, so that
// tests counting a call's Changes count object changes.
inline EngineOptions WithEvents(EngineOptions options, bool record_events) {
  options.record_events = record_events;
  return options;
}

class EngineApiTest : public ::testing::Test {
 protected:
  explicit EngineApiTest(EngineOptions options = {}, bool record_events = false)
      : engine_(WithEvents(options, record_events)) {}
  void SetUp() override { ASSERT_TRUE(engine_.FinishRestore(0).ok()); }

  absl::Time Now() { return kT0 + absl::Seconds(++tick_); }

  absl::StatusOr<v1::ApplyResponse> Apply(const v1::QueueObject& o, uint64_t expected = 0,
                                          bool create_only = false) {
    v1::ApplyRequest req;
    *req.mutable_object() = o;
    req.set_expected_resource_version(expected);
    req.set_create_only(create_only);
    return engine_.Apply(req, Now());
  }
  // The usual setup: flavor "default", ClusterQueue "cq", LocalQueue ns/lq.
  void Basic(const std::string& cpu = "4") {
    ASSERT_TRUE(Apply(FlavorObject("default")).ok());
    ASSERT_TRUE(Apply(ClusterQueueObject("cq", {"default"}, cpu)).ok());
    ASSERT_TRUE(Apply(LocalQueueObject("ns", "lq", "cq")).ok());
    engine_.TakeChanges();
  }
  absl::StatusOr<v1::SubmitResponse> Submit(const v1::Workload& wl) {
    v1::SubmitRequest req;
    *req.mutable_workload() = wl;
    return engine_.Submit(req, Now());
  }
  int Schedule() {
    int admitted = 0;
    CycleStats s;
    do {
      s = engine_.RunCycle(Now());
      admitted += s.admitted;
    } while (s.more);
    return admitted;
  }
  v1::Workload Get(const std::string& name, const std::string& ns = "ns") {
    v1::GetWorkloadRequest req;
    req.set_namespace_(ns);
    req.set_name(name);
    return *engine_.GetWorkload(req);
  }
  v1::ClusterQueue GetClusterQueue(const std::string& name) {
    v1::GetObjectRequest req;
    req.set_kind(v1::OBJECT_KIND_CLUSTER_QUEUE);
    req.set_name(name);
    return engine_.Get(req)->cluster_queue();
  }
  v1::Condition Condition(const std::string& name, const char* type) {
    const v1::Workload wl = Get(name);
    const v1::Condition* c = FindCondition(wl, type);
    return c == nullptr ? v1::Condition() : *c;
  }
  absl::StatusOr<v1::ReleaseQuotaResponse> Release(const std::string& name,
                                                    v1::ReleaseQuotaRequest req) {
    req.set_namespace_("ns");
    req.set_name(name);
    return engine_.ReleaseQuota(req, Now());
  }
  std::vector<std::string> Reasons(const std::vector<Change>& changes) {
    std::vector<std::string> out;
    for (const Change& c : changes) out.push_back(c.reason);
    return out;
  }

  Engine engine_;
  int tick_ = 0;
};

}  // namespace admitd::engine::testing_fixture

#endif  // ADMITD_SERVER_ENGINE_ENGINE_TEST_FIXTURE_H_
