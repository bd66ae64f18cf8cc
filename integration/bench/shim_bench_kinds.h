// The kinds of objects shim_bench creates (`--kinds`): for each, its admitd-shim integration, its
// collection, what the test API server needs to serve and run it (custom resource definitions,
// simulated controllers), a one-pod 1-CPU manifest as the shim's webhooks would have left it (the
// bench runs the shim without webhooks), and when the object counts as running.
//
//   absl::StatusOr<std::vector<const BenchKind*>> kinds = ParseKinds("job,deployment");
//   const BenchKind& k = *(*kinds)[i % kinds->size()];
//   kube.Create(CollectionPath(k, "ns"), k.manifest(ObjectName(k, i), "ns"));
//
// Object names are "<kind>-%05d" with the object's index in the whole run; a Deployment's pods are
// "<name>-<hash>-<suffix>" and a StatefulSet's "<name>-0", so ParseObjectName reads the index back
// from an object's, a pod's or a Workload owner's name.
//
// Thread safety: the table is constant; the functions are pure.
#ifndef ADMITD_INTEGRATION_BENCH_SHIM_BENCH_KINDS_H_
#define ADMITD_INTEGRATION_BENCH_SHIM_BENCH_KINDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace admitd::bench {

struct BenchKind {
  // The `--kinds` name, also the prefix of its objects' names.
  std::string name;
  // Its admitd-shim `--integrations` name.
  std::string integration;
  // "/apis/<group>/<version>/namespaces/%s/<plural>".
  std::string collection;
  // The test API server's `--crd` names it needs (its own definition, and a child's).
  std::vector<std::string> crds;
  // The test API server's simulated controller that makes its pods ("" for none).
  std::string controller;
  // Running is seen on its pod (admitted through the pod integration), not on the object.
  bool via_pods = false;
  // The object `name` in `ns` as created: suspended (or its pods gated), with the queue-name label.
  nlohmann::json (*manifest)(const std::string& name, const std::string& ns) = nullptr;
  // Whether a watched object of the kind (its pod when via_pods) shows it running.
  bool (*running)(const nlohmann::json& object) = nullptr;
  // What `running` looks for, in words.
  std::string running_is;
};

// Every kind, in the order `all` lists them.
const std::vector<BenchKind>& AllKinds();
// A comma-separated list of names, or "all"; each kind once, in the order given. An unknown name
// is an InvalidArgument error that names it.
absl::StatusOr<std::vector<const BenchKind*>> ParseKinds(const std::string& list);
// The names of `kinds`, comma-separated.
std::string KindNames(const std::vector<const BenchKind*>& kinds);
// "<kind>-<index, 5 digits>".
std::string ObjectName(const BenchKind& kind, int index);
// The collection of `kind` in `ns`.
std::string CollectionPath(const BenchKind& kind, const std::string& ns);

struct ParsedName {
  const BenchKind* kind = nullptr;  // nullptr: not a bench object's name
  int index = -1;
};
// The kind and index of an object name ("jobset-00004"), or of a name that starts with one and a
// "-" (its pod "deployment-00003-5d8f-x2b9q", "statefulset-00006-0").
ParsedName ParseObjectName(const std::string& name);

}  // namespace admitd::bench

#endif  // ADMITD_INTEGRATION_BENCH_SHIM_BENCH_KINDS_H_
