#include "server/engine/flavor_assigner.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "server/engine/conditions.h"
#include "server/engine/quantity.h"

namespace admitd::engine {
namespace {

// §4.5: how bad a NoFit reason is.
int Severity(const std::string& reason) {
  if (reason.empty()) return 0;
  if (reason == kReasonNoMatchingFlavor) return 4;
  if (reason == kReasonExceedsMaxQuota) return 3;
  if (reason == kReasonWaitingForQuota) return 2;
  return 1;
}

bool Tolerates(const v1::Toleration& t, const v1::Taint& taint) {
  if (!t.effect().empty() && t.effect() != taint.effect()) return false;
  if (t.operator_() == "Exists") return t.key().empty() || t.key() == taint.key();
  return t.key() == taint.key() && t.value() == taint.value();
}

// The first NoSchedule/NoExecute taint of `flavor` that neither the pod nor the flavor tolerates.
const v1::Taint* UntoleratedTaint(const v1::ResourceFlavor& flavor, const v1::PodSpec& pod) {
  for (const v1::Taint& taint : flavor.spec().node_taints()) {
    if (taint.effect() != "NoSchedule" && taint.effect() != "NoExecute") continue;
    bool tolerated = false;
    for (const v1::Toleration& t : pod.tolerations()) tolerated = tolerated || Tolerates(t, taint);
    for (const v1::Toleration& t : flavor.spec().tolerations()) {
      tolerated = tolerated || Tolerates(t, taint);
    }
    if (!tolerated) return &taint;
  }
  return nullptr;
}

bool MatchesRequirement(const v1::NodeSelectorRequirement& req,
                        const google::protobuf::Map<std::string, std::string>& labels) {
  auto it = labels.find(req.key());
  const bool has = it != labels.end();
  const auto& values = req.values();
  if (req.operator_() == "In") {
    return has && std::find(values.begin(), values.end(), it->second) != values.end();
  }
  if (req.operator_() == "NotIn") {
    return !has || std::find(values.begin(), values.end(), it->second) == values.end();
  }
  if (req.operator_() == "Exists") return has;
  if (req.operator_() == "DoesNotExist") return !has;
  if ((req.operator_() == "Gt" || req.operator_() == "Lt") && has && values.size() == 1) {
    int64_t node, want;
    if (!absl::SimpleAtoi(it->second, &node) || !absl::SimpleAtoi(values[0], &want)) return false;
    return req.operator_() == "Gt" ? node > want : node < want;
  }
  return false;
}

// The pod's node selector and required node affinity, keeping only the keys the flavor labels,
// matched against the flavor's node labels.
bool MatchesNodeAffinity(const v1::ResourceFlavor& flavor, const v1::PodSpec& pod) {
  const auto& labels = flavor.spec().node_labels();
  for (const auto& [key, value] : pod.node_selector()) {
    if (labels.count(key) == 0) continue;
    if (labels.at(key) != value) return false;
  }
  if (pod.required_node_affinity().empty()) return true;
  for (const v1::NodeSelectorTerm& term : pod.required_node_affinity()) {
    bool term_matches = true;
    for (const v1::NodeSelectorRequirement& req : term.match_expressions()) {
      if (labels.count(req.key()) == 0) continue;  // not this flavor's concern
      term_matches = term_matches && MatchesRequirement(req, labels);
    }
    if (term_matches) return true;  // terms are ORed; an emptied term matches anything
  }
  return false;
}

// Go's rendering of a corev1.Taint value: {key value Effect <nil>}.
std::string TaintString(const v1::Taint& t) {
  return absl::StrCat("{", t.key(), " ", t.value(), " ", t.effect(), " <nil>}");
}

}  // namespace

ResourceList PodSetTotal(const ClusterQueueState& cq, const PodSetRequest& ps) {
  ResourceList total = Scale(ps.per_pod, ps.count);
  if (cq.group_of.count("pods")) total["pods"] = ps.count;
  return total;
}

namespace {

// Kueue's internal preemption modes, best last (§4.2).
enum class Mode { kNoFit = 0, kNoCandidates = 1, kPreempt = 2, kReclaim = 3, kFit = 4 };

struct Granular {
  Mode mode = Mode::kNoFit;
  int borrow = std::numeric_limits<int>::max();
};

// Whether `a` is better than `b` under the queue's fungibility preference (§4.3).
bool IsPreferred(const Granular& a, const Granular& b, bool preemption_over_borrowing) {
  if (a.mode == Mode::kNoFit) return false;
  if (b.mode == Mode::kNoFit) return true;
  const bool a_none = a.mode == Mode::kNoCandidates, b_none = b.mode == Mode::kNoCandidates;
  if (a_none != b_none) return !a_none;
  if (preemption_over_borrowing) {
    if (a.borrow != b.borrow) return a.borrow < b.borrow;
    return a.mode > b.mode;
  }
  if (a.mode != b.mode) return a.mode > b.mode;
  return a.borrow < b.borrow;
}

bool ShouldTryNextFlavor(const Granular& m, bool try_next_when_borrowing,
                         bool try_next_when_preempting) {
  if (m.mode == Mode::kNoFit || m.mode == Mode::kNoCandidates) return true;
  if ((m.mode == Mode::kPreempt || m.mode == Mode::kReclaim) && try_next_when_preempting) {
    return true;
  }
  return m.borrow > 0 && try_next_when_borrowing;
}

struct ChosenFlavor {
  const std::string* flavor = nullptr;  // the ClusterQueue's flavor name (outlives the call)
  Mode mode = Mode::kFit;
  int borrow = 0;
  int64_t request = 0;  // what the pod set adds (a slice: the difference)
};

}  // namespace

bool Assignment::PendingFlavors() const {
  for (const auto& per_resource : progress) {
    for (const auto& [resource, idx] : per_resource) {
      if (idx != -1) return true;
    }
  }
  return false;
}

namespace {

const char* AssignmentModeName(Mode m) {
  switch (m) {
    case Mode::kNoFit: return "NoFit";
    case Mode::kFit: return "Fit";
    default: return "Preempt";
  }
}

const char* PossibilityName(Mode m) {
  switch (m) {
    case Mode::kNoCandidates: return "NoCandidates";
    case Mode::kPreempt: return "Preempt";
    case Mode::kReclaim: return "Reclaim";
    default: return "";
  }
}

int ModeRank(const std::string& mode) { return mode == "NoFit" ? 0 : mode == "Preempt" ? 1 : 2; }
int PossibilityRank(const std::string& p) {
  return p == "NoCandidates" ? 0 : p == "Preempt" ? 1 : 2;
}

// Adds one attempt of `c.flavor` to the pod set's record, merging with an earlier attempt of the
// same flavor (another resource group) as Kueue does: worst mode, highest borrowing, the least
// possible preemption, every reason once.
void MergeConsidered(std::map<std::string, ConsideredFlavor>* into, ConsideredFlavor c) {
  auto [it, added] = into->try_emplace(c.flavor, std::move(c));  // `c` stays whole if not added
  ConsideredFlavor& e = it->second;
  if (!added) {
    if (ModeRank(c.mode) < ModeRank(e.mode)) e.mode = c.mode;
    e.borrow = std::max(e.borrow, c.borrow);
    if (!c.possibility.empty() &&
        (e.possibility.empty() || PossibilityRank(c.possibility) < PossibilityRank(e.possibility))) {
      e.possibility = c.possibility;
    }
    e.reasons.insert(e.reasons.end(), c.reasons.begin(), c.reasons.end());
  }
  std::sort(e.reasons.begin(), e.reasons.end());
  e.reasons.erase(std::unique(e.reasons.begin(), e.reasons.end()), e.reasons.end());
}

}  // namespace

std::string FormatConsideredFlavors(const Assignment& assignment) {
  std::vector<std::string> pod_sets;
  for (const auto& [pod_set, flavors] : assignment.considered) {
    std::vector<std::string> tried;
    for (const ConsideredFlavor& f : flavors) {
      if (f.mode == "Fit" && f.borrow == 0) continue;
      std::string one = absl::StrCat(
          f.flavor, "(", f.possibility.empty() ? f.mode : absl::StrCat("preemptionMode=", f.possibility));
      if (f.borrow > 0) absl::StrAppend(&one, ";borrow=", f.borrow);
      if (!f.reasons.empty()) absl::StrAppend(&one, ";", absl::StrJoin(f.reasons, ";"));
      tried.push_back(one + ")");
    }
    if (!tried.empty()) pod_sets.push_back(absl::StrCat(pod_set, ": ", absl::StrJoin(tried, ", ")));
  }
  return absl::StrJoin(pod_sets, " | ");
}

namespace {

// Whether the nomination gave pod set `p`'s `resource` the flavor `flavor`.
bool IsNominated(const NominatedFlavors& nominated, size_t p, const std::string& resource,
                 const std::string& flavor) {
  if (p >= nominated.size()) return false;
  auto it = nominated[p].find(resource);
  return it != nominated[p].end() && it->second == flavor;
}

}  // namespace

Assignment AssignFlavors(const ClusterQueueState& cq, const QuotaTree& tree,
                         const std::map<std::string, const v1::ResourceFlavor*>& flavors,
                         const std::vector<PodSetRequest>& pod_sets,
                         const PreemptionOracle* oracle, const ScanProgress* resume,
                         bool explain, const SliceBase* replaced,
                         const NominatedFlavors* nominated, bool fair_sharing) {
  const std::string& cq_name = cq.name();
  const v1::FlavorFungibility& fungibility = cq.spec_object().spec().flavor_fungibility();
  const bool try_next_when_borrowing = fungibility.when_can_borrow() == "TryNextFlavor";
  const bool try_next_when_preempting = fungibility.when_can_preempt() != "MayStopSearch";
  const bool preemption_over_borrowing = fungibility.preference() == "PreemptionOverBorrowing";
  const v1::ClusterQueuePreemption& preemption = cq.spec_object().spec().preemption();
  const bool can_preempt_while_borrowing =
      (!preemption.borrow_within_cohort().policy().empty() &&
       preemption.borrow_within_cohort().policy() != "Never") ||
      (fair_sharing && !preemption.reclaim_within_cohort().empty() &&
       preemption.reclaim_within_cohort() != "Never");

  // The queue and each flavor-resource pair are looked up in the quota tree once, not per query.
  const QuotaTree::QueueRef queue = tree.RefOf(cq_name);
  Assignment out;
  // Attempts are recorded only for explanations: the scheduling path does not read them.
  auto attempt = [&](FlavorAttempt a) {
    if (explain) out.attempts.push_back(std::move(a));
  };
  std::vector<std::string> podset_messages;
  std::string worst_reason;
  int worst_severity = 0;
  Mode representative = Mode::kFit;  // worst over pod sets: NoFit < Preempt < Fit
  bool failed = false;
  out.totals.reserve(pod_sets.size());
  out.counts.reserve(pod_sets.size());
  out.flavors.reserve(pod_sets.size());
  out.progress.reserve(pod_sets.size());
  out.considered.reserve(pod_sets.size());

  for (size_t p = 0; p < pod_sets.size() && !failed; ++p) {
    const PodSetRequest& ps = pod_sets[p];
    out.totals.push_back(PodSetTotal(cq, ps));
    const ResourceList& total = out.totals.back();  // not pushed to again in this pod set
    out.counts.push_back(ps.count);
    // Resource -> flavor, keyed by views of `total`'s keys. A pod set asks for a handful of
    // resources: a vector searched in order beats a tree of nodes.
    using Chosen = absl::InlinedVector<std::pair<absl::string_view, ChosenFlavor>, 4>;
    auto find_in = [](Chosen& in, absl::string_view resource) {
      return std::find_if(in.begin(), in.end(), [&](const auto& e) { return e.first == resource; });
    };
    Chosen chosen;
    std::map<std::string, int> progress;
    std::map<std::string, ConsideredFlavor> considered;  // flavor -> what its attempts gave
    std::vector<std::string> reasons;  // the pod set's status (§4.4)
    bool podset_failed = false;
    // NoFit attempts per resource group, for the reason (§4.5): group -> least severe reason.
    std::map<int, std::string> group_reason;
    bool any_attempt = false;
    auto note_nofit = [&](int g, const std::string& reason) {
      auto it = group_reason.find(g);
      if (it == group_reason.end() || Severity(reason) < Severity(it->second)) {
        group_reason[g] = reason;
      }
    };

    for (const auto& [resource, value] : total) {
      if (find_in(chosen, resource) != chosen.end()) continue;  // assigned with its group
      auto g_it = cq.group_of.find(resource);
      if (g_it == cq.group_of.end()) {
        if (value == 0) continue;  // zero requests of undeclared resources are ignored
        const std::string why = absl::StrCat("resource ", resource, " unavailable in ClusterQueue");
        attempt({ps.name, resource, "", "NoFit", why});
        reasons = {why};  // a failing resource's status replaces the pod set's
        podset_failed = true;
        break;
      }
      const int g = g_it->second;
      const ResourceGroupQuota& group = cq.groups[g];
      std::vector<std::string> status;  // reasons gathered over this group's flavors
      Chosen best;
      Granular best_mode;  // worst possible
      int attempted = -1;
      int start = 0;
      if (resume != nullptr && p < resume->size()) {
        auto r = (*resume)[p].find(resource);
        if (r != (*resume)[p].end()) start = r->second + 1;
      }
      for (int idx = start; idx < static_cast<int>(group.flavors.size()); ++idx) {
        attempted = idx;
        const std::string& flavor_name = group.flavors[idx];
        if (nominated != nullptr && !IsNominated(*nominated, p, resource, flavor_name)) {
          status.push_back(absl::StrCat("skipping flavor ", flavor_name,
                                        " as it is not found in the nomination mapping for "
                                        "resource ",
                                        resource));
          continue;
        }
        any_attempt = true;
        // Eligibility (§4.1.4a).
        std::string ineligible;
        auto f_it = flavors.find(flavor_name);
        if (f_it == flavors.end() || f_it->second == nullptr) {
          ineligible = absl::StrCat("flavor ", flavor_name, " not found");
        } else if (ps.pod != nullptr) {
          if (const v1::Taint* taint = UntoleratedTaint(*f_it->second, *ps.pod)) {
            ineligible = absl::StrCat("untolerated taint ", TaintString(*taint), " in flavor ",
                                      flavor_name);
          } else if (!MatchesNodeAffinity(*f_it->second, *ps.pod)) {
            ineligible = absl::StrCat("flavor ", flavor_name, " doesn't match node affinity");
          }
        }
        if (!ineligible.empty()) {
          status.push_back(ineligible);
          attempt({ps.name, resource, flavor_name, "NoFit", ineligible});
          MergeConsidered(&considered, {flavor_name, "NoFit", "", 0, {ineligible}});
          note_nofit(g, kReasonNoMatchingFlavor);
          continue;
        }
        // Quota, resource by resource (§4.2); the flavor's mode is the worst of them.
        Granular rep{Mode::kFit, 0};
        Chosen assignments;
        std::string flavor_nofit_reason;
        const size_t status_before = status.size();  // this flavor's reasons follow
        int max_borrow = 0;
        for (const std::string& r : group.resources) {
          auto req = total.find(r);
          if (req == total.end()) continue;
          const int pair = tree.PairId(flavor_name, r);
          int64_t assumed = 0;  // what earlier pod sets took: none for the common single one
          if (!out.usage.empty()) {
            auto assumed_it = out.usage.find(FlavorResource{flavor_name, r});
            if (assumed_it != out.usage.end()) assumed = assumed_it->second;
          }
          int64_t request = req->second;
          // A slice keeps the flavors of the slice it replaces and asks for the difference only
          // (§13.3); another flavor is NoFit, though its quota is still checked for the message.
          bool sticky_mismatch = false;
          if (replaced != nullptr) {
            const SliceBase::Held* held = nullptr;
            if (p < replaced->pod_sets.size()) {
              auto h = replaced->pod_sets[p].find(r);
              if (h != replaced->pod_sets[p].end()) held = &h->second;
            }
            const std::string original = held == nullptr ? "" : held->flavor;
            if (original != flavor_name) {
              sticky_mismatch = true;
              const std::string why = absl::StrCat("could not assign ", flavor_name,
                                                   " flavor since the original workload is "
                                                   "assigned: ", original);
              status.push_back(why);
              attempt({ps.name, r, flavor_name, "NoFit", why});
              flavor_nofit_reason = kReasonNoMatchingFlavor;
            } else {
              request -= held->total;
            }
          }
          const Amount val = Amount(assumed) + request;
          const Amount max_cap = tree.PotentialAvailable(queue, pair);
          Granular m;
          if (val > max_cap) {
            const std::string why = absl::StrCat(
                "insufficient quota for ", r, " in flavor ", flavor_name,
                ", previously considered podsets requests (", FormatQuantity(r, assumed),
                ") + current podset request (", FormatQuantity(r, request),
                ") > maximum capacity (", FormatQuantity(r, max_cap), ")");
            status.push_back(why);
            attempt({ps.name, r, flavor_name, "NoFit", why});
            if (!sticky_mismatch) flavor_nofit_reason = kReasonExceedsMaxQuota;
            m = {Mode::kNoFit, 0};
          } else {
            const auto [borrow, may_reclaim] = tree.BorrowingLevelAndReclaim(queue, pair, val);
            const Amount available = tree.Available(queue, pair);
            if (val <= available) {
              m = {Mode::kFit, borrow};
              attempt({ps.name, r, flavor_name, "Fit",
                                      borrow > 0 ? "fits by borrowing from the cohort" : ""});
            } else {
              const std::string why =
                  absl::StrCat("insufficient unused quota for ", r, " in flavor ", flavor_name,
                               ", ", FormatQuantity(r, val - available), " more needed");
              status.push_back(why);
              // val is this workload's own request so far, a quantity since validation.
              if (oracle != nullptr && IsQuantity(val) &&
                  (tree.Nominal(queue, pair) >= val || may_reclaim || can_preempt_while_borrowing)) {
                const OracleAnswer answer =
                    (*oracle)(FlavorResource{flavor_name, r}, static_cast<int64_t>(val));
                switch (answer.possibility) {
                  case OracleAnswer::Possibility::kNoCandidates: m.mode = Mode::kNoCandidates; break;
                  case OracleAnswer::Possibility::kPreempt: m.mode = Mode::kPreempt; break;
                  case OracleAnswer::Possibility::kReclaim: m.mode = Mode::kReclaim; break;
                }
                m.borrow = answer.borrowing_level;
                attempt(
                    {ps.name, r, flavor_name, "Preempt",
                     m.mode == Mode::kNoCandidates ? why + " (no preemption candidates)" : why});
              } else {
                m = {Mode::kNoFit, borrow};
                attempt({ps.name, r, flavor_name, "NoFit", why});
                if (!sticky_mismatch &&
                    Severity(kReasonWaitingForQuota) > Severity(flavor_nofit_reason)) {
                  flavor_nofit_reason = kReasonWaitingForQuota;
                }
              }
            }
          }
          if (sticky_mismatch) m = {Mode::kNoFit, m.borrow};
          max_borrow = std::max(max_borrow, m.borrow);
          if (IsPreferred(rep, m, preemption_over_borrowing)) rep = m;
          // Once the flavor is NoFit the remaining resources are still checked (their reasons
          // join the message) but not assigned.
          if (rep.mode == Mode::kNoFit) continue;
          if (auto a = find_in(assignments, r); a != assignments.end()) {
            a->second = {&flavor_name, m.mode, m.borrow, request};
          } else {
            assignments.push_back({req->first, {&flavor_name, m.mode, m.borrow, request}});
          }
        }
        if (rep.mode == Mode::kNoFit) note_nofit(g, flavor_nofit_reason);
        MergeConsidered(&considered,
                        {flavor_name, AssignmentModeName(rep.mode), PossibilityName(rep.mode),
                         max_borrow,
                         std::vector<std::string>(status.begin() + status_before, status.end())});
        if (!ShouldTryNextFlavor(rep, try_next_when_borrowing, try_next_when_preempting)) {
          best = std::move(assignments);
          best_mode = rep;
          break;
        }
        if (IsPreferred(rep, best_mode, preemption_over_borrowing)) {
          best = std::move(assignments);
          best_mode = rep;
        }
      }
      const int tried = attempted == static_cast<int>(group.flavors.size()) - 1 ? -1 : attempted;
      if (best.empty()) {
        // No flavor of the group can take the pod set: its status is this group's reasons.
        reasons = std::move(status);
        podset_failed = true;
        break;
      }
      for (auto& [r, c] : best) {
        progress[std::string(r)] = tried;
        if (auto e = find_in(chosen, r); e != chosen.end()) {
          e->second = c;
        } else {
          chosen.push_back({r, c});
        }
      }
      if (best_mode.mode != Mode::kFit) {
        reasons.insert(reasons.end(), status.begin(), status.end());
      }
    }

    std::vector<std::map<std::string, std::string>>::value_type names;
    Mode podset_mode = Mode::kFit;
    for (const auto& [r, c] : chosen) {
      names.emplace(r, *c.flavor);
      if (c.mode != Mode::kFit) {
        podset_mode = Mode::kPreempt;
        out.needs_preemption.insert({*c.flavor, std::string(r)});
      }
      out.borrowing_level = std::max(out.borrowing_level, c.borrow);
      if (!podset_failed) {
        // The workload's total: validated to fit.
        out.usage[FlavorResource{*c.flavor, std::string(r)}] += c.request;
      }
    }
    out.flavors.push_back(std::move(names));
    out.progress.push_back(std::move(progress));
    std::vector<ConsideredFlavor> tried;
    tried.reserve(considered.size());
    for (auto& [name, c] : considered) tried.push_back(std::move(c));
    out.considered.emplace_back(ps.name, std::move(tried));
    if (podset_failed) {
      podset_mode = Mode::kNoFit;
      failed = true;  // later pod sets are not assigned
      const std::string reason = !any_attempt || group_reason.empty() ? kReasonNoMatchingFlavor
                                                                      : [&] {
        std::string worst;
        for (const auto& [g, r] : group_reason) {
          if (Severity(r) > Severity(worst)) worst = r;
        }
        return worst;
      }();
      if (Severity(reason) > worst_severity) {
        worst_severity = Severity(reason);
        worst_reason = reason;
      }
    }
    if (podset_mode != Mode::kFit || !reasons.empty()) {
      if (!reasons.empty()) {
        std::sort(reasons.begin(), reasons.end());
        podset_messages.push_back(absl::StrCat("couldn't assign flavors to pod set ", ps.name,
                                               ": ", absl::StrJoin(reasons, ", ")));
      }
    }
    if (podset_mode < representative) representative = podset_mode;
  }

  out.message = absl::StrJoin(podset_messages, "; ");
  if (representative == Mode::kFit) {
    out.fits = true;
  } else if (representative == Mode::kPreempt) {
    out.preempt = true;
    out.reason = kReasonWaitingForQuota;
  } else {
    out.reason = worst_reason.empty() ? std::string(kReasonNoMatchingFlavor) : worst_reason;
    out.usage.clear();
    out.needs_preemption.clear();
  }
  return out;
}

}  // namespace admitd::engine
