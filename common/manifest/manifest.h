// Kueue manifests: YAML documents as Kueue users write them (apiVersion kueue.x-k8s.io/v1beta1
// or v1beta2; kinds ResourceFlavor, Cohort, ClusterQueue, LocalQueue, WorkloadPriorityClass,
// Workload) turned into admitd.v1 objects.
//
// Unknown fields, wrong types and unknown kinds are errors naming the file, the document, the
// object and the field:
//   demo.yaml: document 2 (ClusterQueue "team-a"): spec.resourceGroups[0].flavors: unknown field
// Fields of a pod template that do not matter for admission (image, command, env, probes, …) are
// accepted and ignored; so are `status` and server-set metadata.
//
//   absl::StatusOr<std::vector<Manifest>> objects = ParseManifests(text, "demo.yaml");
//
// Thread safety: pure functions.
#ifndef ADMITD_COMMON_MANIFEST_MANIFEST_H_
#define ADMITD_COMMON_MANIFEST_MANIFEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "admitd/v1/objects.pb.h"

namespace admitd::manifest {

struct Manifest {
  std::string source;  // "file: document N (Kind \"name\")"
  std::string kind;    // Kueue kind name
  bool is_workload = false;
  v1::QueueObject object;  // when !is_workload
  v1::Workload workload;   // when is_workload
};

// Parses every document of `text`. INVALID_ARGUMENT lists every problem found, one per line.
absl::StatusOr<std::vector<Manifest>> ParseManifests(const std::string& text,
                                                     const std::string& file);

// Reads FILE, every *.yaml/*.yml file of a directory (sorted), or standard input for "-".
absl::StatusOr<std::vector<Manifest>> ReadManifests(const std::string& path);

// Parses a list of pod sets written as a Workload's spec.podSets (YAML, or JSON, which is YAML),
// as the kueue.x-k8s.io/pod-group-sets annotation holds them. A pod set without `count` has 1;
// `template` stays unset when absent. INVALID_ARGUMENT names each bad field ("[1].count: must be
// an integer").
absl::StatusOr<std::vector<v1::PodSet>> ParsePodSets(const std::string& text);

// Queue objects in the order they depend on each other (priority classes, flavors, cohorts,
// ClusterQueues, LocalQueues), then workloads, each group in file order.
void SortForApply(std::vector<Manifest>* manifests);

}  // namespace admitd::manifest

#endif  // ADMITD_COMMON_MANIFEST_MANIFEST_H_
