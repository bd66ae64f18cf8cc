#include "integration/crashloop/checker.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "integration/exact_quantity.h"

namespace admitd::crashloop {
namespace {

using testing::ExactSum;
using testing::HoldsQuota;
using testing::IsConditionTrue;
using testing::Nano;

constexpr char kJobUidLabel[] = "kueue.x-k8s.io/job-uid";
constexpr char kReplacementFor[] = "kueue.x-k8s.io/workload-slice-replacement-for";

std::string Key(const v1::Workload& wl) {
  return absl::StrCat(wl.metadata().namespace_(), "/", wl.metadata().name());
}

grpc::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& call) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return call(&ctx);
}

absl::Status ToAbsl(const grpc::Status& s, absl::string_view what) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

// One read of everything; revision 0 when its parts were read at different revisions.
absl::StatusOr<ServerState> ReadOnce(testing::Client& client,
                                     const std::vector<std::string>& clusters) {
  ServerState state;
  uint64_t revision = 0;
  absl::StatusOr<std::vector<v1::Workload>> workloads =
      testing::ListWorkloads(client, "", &revision);
  if (!workloads.ok()) return workloads.status();
  for (v1::Workload& wl : *workloads) state.workloads[Key(wl)] = std::move(wl);
  bool same = revision != 0;
  for (v1::ObjectKind kind : {v1::OBJECT_KIND_CLUSTER_QUEUE, v1::OBJECT_KIND_LOCAL_QUEUE}) {
    v1::ListObjectsRequest req;
    req.set_kind(kind);
    do {  // every page
      v1::ListObjectsResponse resp;
      grpc::Status s =
          Call([&](grpc::ClientContext* ctx) { return client.queues->List(ctx, req, &resp); });
      if (!s.ok()) return ToAbsl(s, "List queues");
      same = same && resp.revision() == revision;
      for (const v1::QueueObject& o : resp.objects()) {
        if (o.has_cluster_queue()) state.cluster_queues.push_back(o.cluster_queue());
        if (o.has_local_queue()) state.local_queues.push_back(o.local_queue());
      }
      req.set_page_token(resp.next_page_token());
    } while (!req.page_token().empty());
  }
  std::unique_ptr<v1::PodService::Stub> pods = v1::PodService::NewStub(client.channel);
  for (const std::string& cluster : clusters) {
    v1::ListDirectivesRequest req;
    req.set_cluster(cluster);
    v1::ListDirectivesResponse resp;
    grpc::Status s =
        Call([&](grpc::ClientContext* ctx) { return pods->ListDirectives(ctx, req, &resp); });
    if (!s.ok()) return ToAbsl(s, "ListDirectives");
    same = same && resp.revision() == revision;
    for (const v1::PodDirective& d : resp.directives()) {
      if (d.action() != v1::PodDirective::UNGATE) continue;
      state.ungate.insert(absl::StrCat(cluster, "/", d.pod().namespace_(), "/", d.pod().name()));
    }
  }
  state.revision = same ? revision : 0;
  return state;
}

using Usage = std::map<std::pair<std::string, std::string>, ExactSum>;  // (flavor, resource)

// Adds what a quota-holding workload charges: per pod set, the admitted usage times the pods
// that still count (the admitted count, lowered by a scale-down in place and by reclaimable
// pods) over the admitted count.
void AddUsage(const v1::Workload& wl, Usage* usage, std::vector<std::string>* violations) {
  std::map<std::string, int64_t> spec_counts, reclaimable;
  for (const v1::PodSet& ps : wl.spec().pod_sets()) spec_counts[ps.name()] = ps.count();
  for (const v1::ReclaimablePod& r : wl.status().reclaimable_pods())
    reclaimable[r.name()] = r.count();
  for (const v1::PodSetAssignment& psa : wl.status().admission().pod_set_assignments()) {
    if (psa.count() <= 0) continue;
    const int64_t counted = std::max<int64_t>(
        0, std::min<int64_t>(psa.count(), spec_counts[psa.name()] - reclaimable[psa.name()]));
    for (const auto& [resource, flavor] : psa.flavors()) {
      auto u = psa.resource_usage().find(resource);
      if (u == psa.resource_usage().end()) continue;
      absl::StatusOr<Nano> total = testing::ParseExact(u->second);
      if (!total.ok()) {
        violations->push_back(absl::StrCat("workload ", Key(wl), ": ", total.status().message()));
        continue;
      }
      (*usage)[{flavor, resource}].Add(*total, counted, psa.count());
    }
  }
}

// Compares reported usage with the sum computed from the workloads.
void CompareUsage(const std::string& what,
                  const google::protobuf::RepeatedPtrField<v1::FlavorUsage>& reported,
                  const Usage& expected, std::vector<std::string>* violations) {
  std::map<std::pair<std::string, std::string>, Nano> got;
  for (const v1::FlavorUsage& fu : reported) {
    for (const v1::ResourceUsage& r : fu.resources()) {
      absl::StatusOr<Nano> v = testing::ParseExact(r.total());
      if (!v.ok()) {
        violations->push_back(
            absl::StrCat(what, " ", fu.name(), "/", r.name(), ": ", v.status().message()));
        continue;
      }
      got[{fu.name(), r.name()}] = *v;
    }
  }
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto& [k, v] : got) keys.insert(k);
  for (const auto& [k, v] : expected) keys.insert(k);
  for (const auto& k : keys) {
    auto g = got.find(k);
    const Nano reported_value = g == got.end() ? 0 : g->second;
    auto e = expected.find(k);
    const ExactSum sum = e == expected.end() ? ExactSum() : e->second;
    if (!sum.Equals(reported_value)) {
      violations->push_back(absl::StrCat(what, " ", k.first, "/", k.second, ": reports ",
                                         testing::FormatNano(reported_value),
                                         ", its workloads holding quota sum to ", sum.ToString()));
    }
  }
}

struct QueueTotals {
  Usage reserved, used;
  int reserving = 0, admitted = 0;
};

void Count(const v1::Workload& wl, QueueTotals* totals, std::vector<std::string>* violations) {
  AddUsage(wl, &totals->reserved, violations);
  ++totals->reserving;
  if (IsConditionTrue(wl, "Admitted")) {
    AddUsage(wl, &totals->used, violations);
    ++totals->admitted;
  }
}

std::string Describe(const v1::Workload* wl) {
  if (wl == nullptr) return "absent";
  std::string out = IsConditionTrue(*wl, "Finished") ? "finished" : "live";
  if (HoldsQuota(*wl)) absl::StrAppend(&out, ", holding quota");
  for (const v1::ReclaimablePod& r : wl->status().reclaimable_pods()) {
    absl::StrAppend(&out, ", ", r.count(), " reclaimable in ", r.name());
  }
  return absl::StrCat(out, " (uid ", wl->metadata().uid(), ")");
}

// Empty when `wl` (null: absent) is in `want`; otherwise what differs.
std::string Mismatch(const TrackedWorkload& t, const WorkloadState& want, const v1::Workload* wl) {
  if (want.phase == WorkloadState::kAbsent) return wl == nullptr ? "" : "should be gone";
  if (wl == nullptr) return "is gone";
  if (wl->metadata().uid() != t.uid) return absl::StrCat("has uid ", wl->metadata().uid());
  const bool finished = IsConditionTrue(*wl, "Finished");
  if (want.phase == WorkloadState::kFinished) return finished ? "" : "should be finished";
  if (finished) return "should not be finished";
  if (want.holds_quota && !HoldsQuota(*wl)) return "lost its quota reservation";
  int reclaimable = 0;
  for (const v1::ReclaimablePod& r : wl->status().reclaimable_pods()) {
    if (r.name() == "main") reclaimable = r.count();
  }
  if (reclaimable != want.reclaimable) {
    return absl::StrCat("should have ", want.reclaimable, " reclaimable pods");
  }
  return "";
}

std::string Mismatch(const TrackedJob& t, const JobState& want,
                     const std::vector<const v1::Workload*>& chain,
                     const std::map<std::string, v1::Workload>& all) {
  if (!want.exists) return chain.empty() ? "" : "should have no workload";
  std::vector<const v1::Workload*> live;
  for (const v1::Workload* wl : chain) {
    if (!IsConditionTrue(*wl, "Finished")) live.push_back(wl);
  }
  if (live.empty()) return "has no live workload";
  if (live.size() > 2) return absl::StrCat("has ", live.size(), " live workloads");
  const v1::Workload* newest = live[0];
  if (live.size() == 2) {
    auto r = live[1]->metadata().annotations().find(kReplacementFor);
    if (r != live[1]->metadata().annotations().end() && r->second == Key(*live[0])) {
      newest = live[1];
    }
  }
  const int count = newest->spec().pod_sets_size() > 0 ? newest->spec().pod_sets(0).count() : -1;
  if (count != want.count) {
    return absl::StrCat("newest live workload ", newest->metadata().name(), " has ", count,
                        " pods, not ", want.count);
  }
  if (!want.slice.empty() && all.count(absl::StrCat(kNamespace, "/", want.slice)) == 0) {
    return absl::StrCat("slice ", want.slice, " is gone");
  }
  return "";
}

std::string Mismatch(const TrackedGroup& t, const GroupState& want, const v1::Workload* wl,
                     const ServerState& state, const std::string& cluster) {
  if (want.phase == GroupState::kAbsent) return wl == nullptr ? "" : "should be gone";
  if (wl == nullptr) return "is gone";
  const bool finished = IsConditionTrue(*wl, "Finished");
  if (want.phase == GroupState::kFinished) return finished ? "" : "should be finished";
  if (finished) return "should not be finished";
  if (want.phase == GroupState::kRunning) {
    if (!HoldsQuota(*wl)) return "runs but holds no quota";
    for (int i = 0; i < t.pods; ++i) {
      if (state.ungate.count(absl::StrCat(cluster, "/", kNamespace, "/", t.name, "-", i))) {
        return absl::StrCat("pod ", t.name, "-", i, " was reported ungated, yet UNGATE is asked");
      }
    }
  }
  return "";
}

// Resolves one tracked object against what `mismatch(state)` says.
template <typename T, typename F>
void Resolve(T& t, const std::string& what, F mismatch, std::vector<std::string>* violations,
             Resolution* resolution) {
  if (t.broken) return;
  const std::string acked = mismatch(t.acked);
  if (!t.cut_off.has_value()) {
    if (acked.empty()) return;
    violations->push_back(absl::StrCat(what, ": acknowledged, but ", acked));
    t.broken = true;
    return;
  }
  const std::string cut = mismatch(*t.cut_off);
  if (cut.empty()) {
    ++resolution->applied;
    t.acked = *t.cut_off;
  } else if (acked.empty()) {
    ++resolution->not_applied;
  } else {
    violations->push_back(absl::StrCat(what, ": acknowledged, but ", acked,
                                       " (nor did the write cut off by the kill apply: ", cut,
                                       ")"));
    t.broken = true;
  }
  t.cut_off.reset();
}

}  // namespace

absl::StatusOr<ServerState> ReadServerState(testing::Client& client,
                                            const std::vector<std::string>& clusters,
                                            absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<ServerState> state = ReadOnce(client, clusters);
    if (!state.ok() || state->revision != 0) return state;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError("the server's revision kept moving while it was read");
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::vector<std::string> CheckQuota(const ServerState& state) {
  std::vector<std::string> violations;
  std::map<std::string, QueueTotals> by_cq, by_lq;
  for (const auto& [key, wl] : state.workloads) {
    if (!HoldsQuota(wl)) continue;
    Count(wl, &by_cq[wl.status().admission().cluster_queue()], &violations);
    Count(wl, &by_lq[absl::StrCat(wl.metadata().namespace_(), "/", wl.spec().queue_name())],
          &violations);
  }
  auto compare = [&](const std::string& what, const auto& status, const QueueTotals& totals) {
    CompareUsage(what + " flavorsReservation", status.flavors_reservation(), totals.reserved,
                 &violations);
    CompareUsage(what + " flavorsUsage", status.flavors_usage(), totals.used, &violations);
    if (status.reserving_workloads() != totals.reserving) {
      violations.push_back(absl::StrCat(what, ": reservingWorkloads ", status.reserving_workloads(),
                                        ", but ", totals.reserving, " workloads hold quota in it"));
    }
    if (status.admitted_workloads() != totals.admitted) {
      violations.push_back(absl::StrCat(what, ": admittedWorkloads ", status.admitted_workloads(),
                                        ", but ", totals.admitted, " admitted workloads"));
    }
  };
  for (const v1::ClusterQueue& cq : state.cluster_queues) {
    const std::string& name = cq.metadata().name();
    compare("ClusterQueue " + name, cq.status(), by_cq[name]);
    by_cq.erase(name);
  }
  for (const v1::LocalQueue& lq : state.local_queues) {
    const std::string key = absl::StrCat(lq.metadata().namespace_(), "/", lq.metadata().name());
    compare("LocalQueue " + key, lq.status(), by_lq[key]);
  }
  for (const auto& [name, totals] : by_cq) {
    violations.push_back(absl::StrCat(totals.reserving, " workloads hold quota in ClusterQueue \"",
                                      name, "\", which does not exist"));
  }
  return violations;
}

std::vector<std::string> CheckSlices(const ServerState& state) {
  std::vector<std::string> violations;
  std::map<std::string, std::vector<std::string>> holders;
  for (const auto& [key, wl] : state.workloads) {
    auto uid = wl.metadata().labels().find(kJobUidLabel);
    if (uid == wl.metadata().labels().end() || !HoldsQuota(wl)) continue;
    holders[uid->second].push_back(wl.metadata().name());
  }
  for (const auto& [job, names] : holders) {
    if (names.size() > 1) {
      violations.push_back(absl::StrCat("job ", job, " has ", names.size(),
                                        " workloads holding quota: ", absl::StrJoin(names, ", ")));
    }
  }
  return violations;
}

std::vector<std::string> CheckLedger(const ServerState& state, WorkerLedger* ledger,
                                     Resolution* resolution) {
  std::vector<std::string> violations;
  auto find = [&](const std::string& name) -> const v1::Workload* {
    auto it = state.workloads.find(absl::StrCat(kNamespace, "/", name));
    return it == state.workloads.end() ? nullptr : &it->second;
  };
  for (TrackedWorkload& t : ledger->workloads) {
    const v1::Workload* wl = find(t.name);
    Resolve(
        t, absl::StrCat(t.imported ? "imported" : "submitted", " workload ", t.name),
        [&](const WorkloadState& want) {
          const std::string why = Mismatch(t, want, wl);
          return why.empty() ? why : absl::StrCat(why, "; found ", Describe(wl));
        },
        &violations, resolution);
    if (t.acked.phase == WorkloadState::kAbsent) t.done = true;
  }
  std::map<std::string, std::vector<const v1::Workload*>> chains;
  for (const auto& [key, wl] : state.workloads) {
    auto uid = wl.metadata().labels().find(kJobUidLabel);
    if (uid != wl.metadata().labels().end()) chains[uid->second].push_back(&wl);
  }
  for (TrackedJob& t : ledger->jobs) {
    const auto& chain = chains[absl::StrCat("uid-", t.number)];
    Resolve(
        t, absl::StrCat("elastic job-", t.number),
        [&](const JobState& want) { return Mismatch(t, want, chain, state.workloads); },
        &violations, resolution);
  }
  for (TrackedGroup& t : ledger->groups) {
    const v1::Workload* wl = find(t.name);
    Resolve(
        t, absl::StrCat("pod group ", t.name),
        [&](const GroupState& want) {
          const std::string why = Mismatch(t, want, wl, state, ledger->cluster);
          return why.empty() ? why : absl::StrCat(why, "; found ", Describe(wl));
        },
        &violations, resolution);
    t.ungate_seen = false;
    if (t.acked.phase == GroupState::kAbsent) t.done = true;
  }
  return violations;
}

}  // namespace admitd::crashloop
