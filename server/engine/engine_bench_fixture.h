// The engine benchmarks' shared set-up: ClusterQueues (one `cpu` quota each, ten cohorts) with a
// LocalQueue each in namespace "ns", and one-pod workloads spread over them. Used by engine_bench
// and engine_decisions, so both measure the same decisions.
#ifndef ADMITD_SERVER_ENGINE_ENGINE_BENCH_FIXTURE_H_
#define ADMITD_SERVER_ENGINE_ENGINE_BENCH_FIXTURE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/engine/engine.h"

namespace admitd::engine::bench {

inline const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

// ResourceFlavor "default", then per queue q: ClusterQueue cq-q (cohort cohort-(q % cohorts),
// nominal `cpu` of cpu) and LocalQueue ns/lq-q. The set-up's changes are taken and dropped.
// `cpu_of(q)`, when given, is queue q's nominal quota instead of `cpu`.
inline void SetUpQueues(Engine& engine, int queues, const std::string& cpu, int cohorts = 10,
                        const std::function<std::string(int)>& cpu_of = nullptr) {
  v1::ApplyRequest flavor;
  flavor.mutable_object()->mutable_resource_flavor()->mutable_metadata()->set_name("default");
  (void)engine.Apply(flavor, kT0);
  for (int q = 0; q < queues; ++q) {
    v1::ApplyRequest cq;
    auto* c = cq.mutable_object()->mutable_cluster_queue();
    c->mutable_metadata()->set_name(absl::StrCat("cq-", q));
    c->mutable_spec()->set_cohort_name(absl::StrCat("cohort-", q % cohorts));
    c->mutable_spec()->mutable_namespace_selector();
    auto* g = c->mutable_spec()->add_resource_groups();
    g->add_covered_resources("cpu");
    auto* fq = g->add_flavors();
    fq->set_name("default");
    fq->add_resources()->set_name("cpu");
    fq->mutable_resources(0)->set_nominal_quota(cpu_of ? cpu_of(q) : cpu);
    (void)engine.Apply(cq, kT0);
    v1::ApplyRequest lq;
    auto* l = lq.mutable_object()->mutable_local_queue();
    l->mutable_metadata()->set_namespace_("ns");
    l->mutable_metadata()->set_name(absl::StrCat("lq-", q));
    l->mutable_spec()->set_cluster_queue(absl::StrCat("cq-", q));
    (void)engine.Apply(lq, kT0);
  }
  engine.TakeChanges();
}

// Workload ns/w-i: one pod asking for 1 cpu, in LocalQueue lq-(i % queues).
inline v1::SubmitRequest MakeSubmit(int64_t i, int queues) {
  v1::SubmitRequest req;
  auto* wl = req.mutable_workload();
  wl->mutable_metadata()->set_namespace_("ns");
  wl->mutable_metadata()->set_name(absl::StrCat("w-", i));
  wl->mutable_spec()->set_queue_name(absl::StrCat("lq-", i % queues));
  auto* ps = wl->mutable_spec()->add_pod_sets();
  ps->set_name("main");
  ps->set_count(1);
  auto* c = ps->mutable_template_()->mutable_spec()->add_containers();
  c->set_name("c");
  (*c->mutable_resources()->mutable_requests())["cpu"] = "1";
  return req;
}

// Whether engine E can answer a Submit by reference (Engine::Answer, which older engines lack).
template <typename E, typename = void>
struct HasAnswerByReference : std::false_type {};
template <typename E>
struct HasAnswerByReference<E, std::void_t<decltype(E::Answer::kReference)>> : std::true_type {};

// Submits `request` as admitd's AdmissionService does: answered by reference where the engine
// can (the server then answers with the batch's snapshot), else with a copy, as servers before
// did (scripts/callgrind_decisions.sh builds an older engine with this fixture).
template <typename E>
void SubmitAsServer(E& engine, v1::SubmitRequest request) {
  if constexpr (HasAnswerByReference<E>::value) {
    (void)engine.Submit(std::move(request), kT0, E::Answer::kReference);
  } else {
    (void)engine.Submit(std::move(request), kT0);
  }
}

// One Submit-and-admit decision: the Submit of workload i and the cycles until none has more
// to do; every 256 decisions the changes are taken (and dropped), as a batch would.
inline void SubmitAndAdmit(Engine& engine, int64_t i, int queues) {
  SubmitAsServer(engine, MakeSubmit(i, queues));
  CycleStats s;
  do {
    s = engine.RunCycle(kT0);
  } while (s.more);
  if ((i + 1) % 256 == 0) engine.TakeChanges();
}

}  // namespace admitd::engine::bench

#endif  // ADMITD_SERVER_ENGINE_ENGINE_BENCH_FIXTURE_H_
