// FlavorAssigner: chooses a flavor per pod set and resource group for one workload in one
// ClusterQueue (§4 of the semantics), with Kueue's messages and NoFit reasons.
//
// Flavors of a resource group are tried in the ClusterQueue's order; a flavor is eligible when
// it exists, its NoSchedule/NoExecute taints are tolerated and the pod's node selector and
// required node affinity (restricted to the flavor's label keys) match its node labels; it fits
// when every covered resource the pod set asks for is within the available quota, counting what
// earlier pod sets of the same workload already took.
//
//   Assignment a = AssignFlavors(cq, flavors, pod_sets);
//   if (a.fits) { ... a.usage, a.flavors ... } else { pending(a.reason, a.message); }
//
// Thread safety: pure function of its inputs.
#ifndef ADMITD_SERVER_ENGINE_FLAVOR_ASSIGNER_H_
#define ADMITD_SERVER_ENGINE_FLAVOR_ASSIGNER_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "admitd/v1/objects.pb.h"
#include "server/engine/cluster_queue.h"
#include "server/engine/quota_tree.h"
#include "server/engine/resources.h"

namespace admitd::engine {

// One pod set as the assigner sees it.
struct PodSetRequest {
  std::string name;
  int32_t count = 0;
  ResourceList per_pod;
  const v1::PodSpec* pod = nullptr;  // tolerations, node selector, affinity
};

// One flavor tried for one resource of one pod set (for explanations).
struct FlavorAttempt {
  std::string pod_set;
  std::string resource;
  std::string flavor;
  std::string mode;    // Fit | Preempt | NoFit
  std::string reason;  // empty for a plain Fit
};

// One flavor tried for a pod set, as Kueue's QuotaReserved event lists it ("Flavors
// considered"): merged over the pod set's resources and resource groups.
struct ConsideredFlavor {
  std::string flavor;
  std::string mode;         // the worst over its resources: NoFit | Preempt | Fit
  std::string possibility;  // NoCandidates | Preempt | Reclaim in a preempting mode, else ""
  int borrow = 0;           // the highest borrowing level over its resources
  std::vector<std::string> reasons;  // sorted, without repeats
};

// What preempting could do for `value` of `fr` (§7.6): no candidates, or targets only in other
// queues (reclaim) or some in the preemptor's own queue (preempt); with the borrowing level
// the preemptor would have once the targets are gone.
struct OracleAnswer {
  enum class Possibility { kNoCandidates, kPreempt, kReclaim } possibility;
  int borrowing_level = 0;
};
using PreemptionOracle = std::function<OracleAnswer(const FlavorResource& fr, int64_t value)>;

// The flavor index last examined per pod set and resource in an earlier attempt (-1: the scan
// reached the last flavor); the next attempt resumes after it (§4.7).
using ScanProgress = std::vector<std::map<std::string, int>>;

// The admitted slice a new workload slice replaces (§13.3), per pod set (by index): for each
// resource its flavor and the total the old slice holds. The new slice must keep those flavors
// and is checked for the difference only.
struct SliceBase {
  struct Held {
    std::string flavor;
    int64_t total = 0;
  };
  std::vector<std::map<std::string, Held>> pod_sets;
};

struct Assignment {
  bool fits = false;
  // Mode Preempt: every pod set has a flavor, some only after preempting other workloads.
  bool preempt = false;
  std::vector<std::map<std::string, std::string>> flavors;  // per pod set: resource -> flavor
  std::vector<ResourceList> totals;  // per pod set: total request for `count` pods
  std::vector<int32_t> counts;       // per pod set: the pods assigned (partial admission: fewer)
  FlavorResourceQuantities usage;    // what admitting it would add (a slice: the difference)
  int borrowing_level = 0;           // highest over the chosen flavors (0: no borrowing)
  std::string reason;                // the NoFit reason (§4.5) when !fits
  std::string message;               // the status message (§4.4) when !fits
  std::vector<FlavorAttempt> attempts;  // filled only when asked to explain
  // Per pod set assigned: its name and the flavors tried, by flavor name.
  std::vector<std::pair<std::string, std::vector<ConsideredFlavor>>> considered;
  // Flavor-resource pairs whose flavor was chosen in a preempting mode: preemption targets
  // must use one of them (§7.1).
  std::set<FlavorResource> needs_preemption;
  // Where the flavor scan stopped, to resume from in the next attempt (§4.7).
  ScanProgress progress;
  // Whether some pod set stopped its scan before the last flavor.
  bool PendingFlavors() const;
};

// Per pod set, resource -> flavor: the flavors an assignment computed again within its cycle
// keeps (§6.5 step 1); the scan skips every other flavor.
using NominatedFlavors = std::vector<std::map<std::string, std::string>>;

// `flavors` maps flavor name -> ResourceFlavor (missing = not found).
// `oracle` may be null (no preemption considered). With `fair_sharing`, a queue that reclaims
// within its cohort may also preempt while borrowing (§19.1).
Assignment AssignFlavors(const ClusterQueueState& cq, const QuotaTree& tree,
                         const std::map<std::string, const v1::ResourceFlavor*>& flavors,
                         const std::vector<PodSetRequest>& pod_sets,
                         const PreemptionOracle* oracle = nullptr,
                         const ScanProgress* resume = nullptr, bool explain = false,
                         const SliceBase* replaced = nullptr,
                         const NominatedFlavors* nominated = nullptr, bool fair_sharing = false);

// Kueue's "Flavors considered" detail of a QuotaReserved event: per pod set, the flavors whose
// attempt was not a plain fit ("<flavor>(<mode or preemptionMode=X>[;borrow=N][;reasons])",
// joined by ", "), pod sets joined by " | "; empty when every flavor tried fit without borrowing.
std::string FormatConsideredFlavors(const Assignment& assignment);

// The total request of a pod set, with the implicit `pods` resource when the queue covers it.
ResourceList PodSetTotal(const ClusterQueueState& cq, const PodSetRequest& ps);

}  // namespace admitd::engine

#endif  // ADMITD_SERVER_ENGINE_FLAVOR_ASSIGNER_H_
