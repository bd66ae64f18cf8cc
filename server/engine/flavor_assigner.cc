#include "server/engine/flavor_assigner.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "server/engine/conditions.h"
#include "server/engine/quantity.h"

namespace admitd::engine {
namespace {

// §4.5: how bad a NoFit reason is.
int Severity(const std::string& reason) {
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

Assignment AssignFlavors(const ClusterQueueState& cq, const QuotaTree& tree,
                         const std::map<std::string, const v1::ResourceFlavor*>& flavors,
                         const std::vector<PodSetRequest>& pod_sets,
                         const PreemptionOracle* oracle) {
  const std::string& cq_name = cq.name();
  const bool try_next_when_borrowing =
      cq.spec_object().spec().flavor_fungibility().when_can_borrow() == "TryNextFlavor";
  const bool stop_when_can_preempt =
      cq.spec_object().spec().flavor_fungibility().when_can_preempt() == "MayStopSearch";
  bool any_preempt = false;
  Assignment out;
  out.fits = true;
  std::vector<std::string> podset_messages;
  int worst_severity = 0;
  std::string worst_reason;
  for (const PodSetRequest& ps : pod_sets) {
    const ResourceList total = PodSetTotal(cq, ps);
    out.totals.push_back(total);
    out.counts.push_back(ps.count);
    std::map<std::string, std::string> chosen;
    std::vector<std::string> reasons;
    bool podset_fits = true;
    bool podset_preempts = false;
    // Per resource group, the least severe reason among its flavors (the best alternative).
    std::map<int, int> group_best_severity;
    std::map<int, std::string> group_best_reason;
    auto note_group_reason = [&](int g, const std::string& reason) {
      auto it = group_best_severity.find(g);
      if (it == group_best_severity.end() || Severity(reason) < it->second) {
        group_best_severity[g] = Severity(reason);
        group_best_reason[g] = reason;
      }
    };
    std::set<int> groups_done;
    for (const auto& [resource, value] : total) {
      auto g_it = cq.group_of.find(resource);
      if (g_it == cq.group_of.end()) {
        if (value == 0) continue;  // zero requests of undeclared resources are ignored
        reasons.push_back(absl::StrCat("resource ", resource, " unavailable in ClusterQueue"));
        out.attempts.push_back({ps.name, resource, "", "NoFit",
                                absl::StrCat("resource ", resource, " unavailable in ClusterQueue")});
        note_group_reason(-1 - static_cast<int>(reasons.size()), kReasonNoMatchingFlavor);
        podset_fits = false;
        continue;
      }
      const int g = g_it->second;
      if (!groups_done.insert(g).second) continue;  // one flavor per group per pod set
      const ResourceGroupQuota& group = cq.groups[g];
      bool group_fits = false;
      // The best fitting flavor seen while scanning on past borrowing ones (§4.3).
      std::string best_flavor;
      int best_borrow = 0;
      std::string preempt_flavor;  // the first flavor that fits after preemption
      for (const std::string& flavor_name : group.flavors) {
        // Eligibility.
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
          reasons.push_back(ineligible);
          out.attempts.push_back({ps.name, resource, flavor_name, "NoFit", ineligible});
          note_group_reason(g, kReasonNoMatchingFlavor);
          continue;
        }
        // Quota, for every covered resource the pod set requests.
        bool flavor_fits = true;
        bool flavor_preempts = false;
        std::vector<std::string> flavor_reasons;
        for (const std::string& r : group.resources) {
          auto req = total.find(r);
          if (req == total.end()) continue;
          const FlavorResource fr{flavor_name, r};
          auto assumed_it = out.usage.find(fr);
          const int64_t assumed = assumed_it == out.usage.end() ? 0 : assumed_it->second;
          const int64_t val = SaturatingAdd(assumed, req->second);
          const int64_t max_cap = tree.PotentialAvailable(cq_name, fr);
          std::string why, reason;
          if (val > max_cap) {
            reason = kReasonExceedsMaxQuota;
            why = absl::StrCat("insufficient quota for ", r, " in flavor ", flavor_name,
                               ", previously considered podsets requests (",
                               FormatQuantity(r, assumed), ") + current podset request (",
                               FormatQuantity(r, req->second), ") > maximum capacity (",
                               FormatQuantity(r, max_cap), ")");
          } else if (val > tree.Available(cq_name, fr)) {
            reason = kReasonWaitingForQuota;
            why = absl::StrCat("insufficient unused quota for ", r, " in flavor ", flavor_name,
                               ", ", FormatQuantity(r, val - tree.Available(cq_name, fr)),
                               " more needed");
          }
          if (!why.empty()) {
            // Short of unused quota but within nominal: preempting may free it (§4.2).
            // §4.2: ask the oracle when the request is within nominal, or when the queue may
            // reclaim while borrowing.
            const bool within_nominal = cq.nominal.count(fr) && cq.nominal.at(fr) >= val;
            const bool may_borrow_preempt =
                cq.spec_object().spec().preemption().borrow_within_cohort().policy() ==
                "LowerPriority";
            if (reason == kReasonWaitingForQuota && oracle != nullptr &&
                (within_nominal || may_borrow_preempt) && (*oracle)(fr, val)) {
              flavor_preempts = true;
              flavor_reasons.push_back(why);
              out.attempts.push_back({ps.name, r, flavor_name, "Preempt", why});
              continue;
            }
            reasons.push_back(why);
            out.attempts.push_back({ps.name, r, flavor_name, "NoFit", why});
            note_group_reason(g, reason);
            flavor_fits = false;
            break;  // once a resource does not fit, the rest are not assigned
          }
        }
        if (!flavor_fits) {
          reasons.insert(reasons.end(), flavor_reasons.begin(), flavor_reasons.end());
          continue;
        }
        if (flavor_preempts) {
          reasons.insert(reasons.end(), flavor_reasons.begin(), flavor_reasons.end());
          note_group_reason(g, kReasonWaitingForQuota);
          if (preempt_flavor.empty()) preempt_flavor = flavor_name;
          if (stop_when_can_preempt) break;
          continue;  // whenCanPreempt TryNextFlavor: a later flavor may fit without it
        }
        int borrow = 0;
        for (const std::string& r : group.resources) {
          auto req = total.find(r);
          if (req == total.end()) continue;
          const FlavorResource fr{flavor_name, r};
          auto assumed_it = out.usage.find(fr);
          const int64_t assumed = assumed_it == out.usage.end() ? 0 : assumed_it->second;
          borrow = std::max(borrow, tree.BorrowingLevel(cq_name, fr,
                                                        SaturatingAdd(assumed, req->second)));
        }
        if (best_flavor.empty() || borrow < best_borrow) {
          best_flavor = flavor_name;
          best_borrow = borrow;
        }
        // By default a flavor that fits only by borrowing ends the scan (whenCanBorrow
        // MayStopSearch); TryNextFlavor looks on for one that fits without borrowing.
        if (borrow == 0 || !try_next_when_borrowing) break;
        out.attempts.push_back({ps.name, group.resources.front(), flavor_name, "Fit",
                                "fits by borrowing; trying the next flavor"});
      }
      const bool preempting = best_flavor.empty() && !preempt_flavor.empty();
      if (preempting) {
        best_flavor = preempt_flavor;
        any_preempt = true;
      }
      if (!best_flavor.empty()) {
        for (const std::string& r : group.resources) {
          auto req = total.find(r);
          if (req == total.end()) continue;
          chosen[r] = best_flavor;
          out.usage[{best_flavor, r}] = SaturatingAdd(out.usage[{best_flavor, r}], req->second);
          out.attempts.push_back({ps.name, r, best_flavor, "Fit",
                                  best_borrow > 0 ? "fits by borrowing from the cohort" : ""});
        }
        out.borrowing_level = std::max(out.borrowing_level, best_borrow);
        group_fits = !preempting;
        if (preempting) podset_preempts = true;
      }
      if (!group_fits && !podset_preempts) {
        podset_fits = false;
        if (group.flavors.empty()) note_group_reason(g, kReasonNoMatchingFlavor);
      }
    }
    out.flavors.push_back(std::move(chosen));
    if (podset_fits && podset_preempts) {
      std::sort(reasons.begin(), reasons.end());
      podset_messages.push_back(absl::StrCat("couldn't assign flavors to pod set ", ps.name, ": ",
                                             absl::StrJoin(reasons, ", ")));
    }
    if (!podset_fits) {
      out.fits = false;
      std::sort(reasons.begin(), reasons.end());
      podset_messages.push_back(absl::StrCat("couldn't assign flavors to pod set ", ps.name, ": ",
                                             absl::StrJoin(reasons, ", ")));
      if (group_best_severity.empty()) group_best_reason[0] = kReasonNoMatchingFlavor;
      for (const auto& [g, reason] : group_best_reason) {
        if (Severity(reason) > worst_severity) {
          worst_severity = Severity(reason);
          worst_reason = reason;
        }
      }
    }
  }
  if (out.fits && any_preempt) {
    // Mode Preempt: not admissible now; the usage is kept for the fit check after preemption.
    out.fits = false;
    out.preempt = true;
    out.reason = kReasonWaitingForQuota;
    out.message = absl::StrJoin(podset_messages, "; ");
  } else if (!out.fits) {
    out.reason = worst_reason;
    out.message = absl::StrJoin(podset_messages, "; ");
    out.usage.clear();
  }
  return out;
}

}  // namespace admitd::engine
