#include "integration/bench/shim_bench_kinds.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"

namespace admitd::bench {
namespace {

using nlohmann::json;
using shim::Field;

json Labels() { return {{kQueueNameLabel, "lq"}}; }

json Meta(const std::string& name, const std::string& ns) {
  return {{"name", name}, {"namespace", ns}, {"labels", Labels()}};
}

// One container asking 1 CPU.
json Containers(const std::string& container, const std::string& image) {
  return json::array(
      {{{"name", container}, {"image", image}, {"resources", {{"requests", {{"cpu", "1"}}}}}}});
}

// ---- Manifests: as the shim's webhooks leave them (suspended; managedBy is only defaulted for
// a MultiKueue queue, so left unset).

json JobManifest(const std::string& name, const std::string& ns) {
  return {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", Meta(name, ns)},
      {"spec",
       {{"parallelism", 1},
        {"completions", 1},
        {"suspend", true},
        {"template",
         {{"spec", {{"restartPolicy", "Never"}, {"containers", Containers("c", "busybox")}}}}}}}};
}

// One replicated job of one one-pod Job (test_jobsets.py's).
json JobSetManifest(const std::string& name, const std::string& ns) {
  const json job = {
      {"parallelism", 1},
      {"completions", 1},
      {"backoffLimit", 0},
      {"template",
       {{"spec", {{"restartPolicy", "Never"}, {"containers", Containers("c", "busybox")}}}}}};
  return {
      {"apiVersion", "jobset.x-k8s.io/v1alpha2"},
      {"kind", "JobSet"},
      {"metadata", Meta(name, ns)},
      {"spec",
       {{"suspend", true},
        {"replicatedJobs",
         json::array({{{"name", "workers"}, {"replicas", 1}, {"template", {{"spec", job}}}}})}}}};
}

// A Master alone (test_pytorchjobs.py's with no Worker); suspended through spec.runPolicy.
json PyTorchJobManifest(const std::string& name, const std::string& ns) {
  const json master = {
      {"replicas", 1},
      {"restartPolicy", "Never"},
      {"template", {{"spec", {{"containers", Containers("pytorch", "pytorch")}}}}}};
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata", Meta(name, ns)},
          {"spec",
           {{"runPolicy", {{"suspend", true}}}, {"pytorchReplicaSpecs", {{"Master", master}}}}}};
}

json RayHead() {
  return {{"rayStartParams", json::object()},
          {"template", {{"spec", {{"containers", Containers("ray-head", "rayproject/ray:2.9")}}}}}};
}

// A head alone (test_rayjobs.py's with no workers), submitted over HTTP by the operator: no
// submitter pod set, so one pod. The webhook's rules: a cluster spec, shutdownAfterJobFinishes.
json RayJobManifest(const std::string& name, const std::string& ns) {
  return {{"apiVersion", "ray.io/v1"},
          {"kind", "RayJob"},
          {"metadata", Meta(name, ns)},
          {"spec",
           {{"suspend", true},
            {"entrypoint", "python job.py"},
            {"submissionMode", "HTTPMode"},
            {"shutdownAfterJobFinishes", true},
            {"rayClusterSpec", {{"headGroupSpec", RayHead()}}}}}};
}

// A head alone (test_rayclusters.py's with no worker group).
json RayClusterManifest(const std::string& name, const std::string& ns) {
  return {{"apiVersion", "ray.io/v1"},
          {"kind", "RayCluster"},
          {"metadata", Meta(name, ns)},
          {"spec", {{"suspend", true}, {"headGroupSpec", RayHead()}}}};
}

// A Deployment's or StatefulSet's pod template (test_deployments.py's) with what the serving
// webhook puts on it (`template_labels`, the suspending-parent annotation) and, since no pod
// webhook sees the pods either, the admission gate the pod webhook gives each pod of such a parent
// (no finalizer, no managed label of its own: the parent's; its role-hash annotation is left for
// admitd to compute from the spec, as it does when the annotation is missing).
json ServingTemplate(const std::string& name, const std::string& framework, json template_labels) {
  template_labels["app"] = name;
  return {{"metadata",
           {{"labels", template_labels},
            {"annotations", {{kPodSuspendingParentAnnotation, framework}}}}},
          {"spec",
           {{"schedulingGates", json::array({{{"name", kAdmissionGate}}})},
            {"containers", Containers(name, "nginx")}}}};
}

// The serving webhook labels a Deployment's template (label_template): managed, queue name.
json DeploymentManifest(const std::string& name, const std::string& ns) {
  const json labels = {{kManagedLabel, "true"}, {kQueueNameLabel, "lq"}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", Meta(name, ns)},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template", ServingTemplate(name, "deployment", labels)}}}};
}

// A StatefulSet's template gets the annotation alone: the shim's pod reconcile labels each pod
// (managed, queue name, pod group, prebuilt Workload; statefulset_pods.cc) once it exists.
json StatefulSetManifest(const std::string& name, const std::string& ns) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "StatefulSet"},
          {"metadata", Meta(name, ns)},
          {"spec",
           {{"replicas", 1},
            {"serviceName", name},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template", ServingTemplate(name, "statefulset", json::object())}}}};
}

// ---- Running.

bool NotSuspended(const json& suspend) { return !(suspend.is_boolean() && suspend.get<bool>()); }

// spec.suspend false (Job, JobSet, RayJob, RayCluster).
bool SpecUnsuspended(const json& object) {
  return NotSuspended(Field(Field(object, "spec"), "suspend"));
}

// spec.runPolicy.suspend false (PyTorchJob).
bool RunPolicyUnsuspended(const json& object) {
  return NotSuspended(Field(Field(Field(object, "spec"), "runPolicy"), "suspend"));
}

// A pod without the admission gate.
bool PodUngated(const json& pod) {
  const json& gates = Field(Field(pod, "spec"), "schedulingGates");
  if (!gates.is_array()) return true;
  return std::none_of(gates.begin(), gates.end(),
                      [](const json& g) { return shim::Str(g, "name") == kAdmissionGate; });
}

}  // namespace

const std::vector<BenchKind>& AllKinds() {
  static const std::vector<BenchKind>* kinds = new std::vector<BenchKind>{
      {.name = "job",
       .integration = "batch/job",
       .collection = "/apis/batch/v1/namespaces/%s/jobs",
       .manifest = JobManifest,
       .running = SpecUnsuspended,
       .running_is = "spec.suspend false"},
      {.name = "jobset",
       .integration = "jobset.x-k8s.io/jobset",
       .collection = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets",
       .crds = {"jobset"},
       .manifest = JobSetManifest,
       .running = SpecUnsuspended,
       .running_is = "spec.suspend false"},
      {.name = "pytorchjob",
       .integration = "kubeflow.org/pytorchjob",
       .collection = "/apis/kubeflow.org/v1/namespaces/%s/pytorchjobs",
       .crds = {"pytorchjob"},
       .manifest = PyTorchJobManifest,
       .running = RunPolicyUnsuspended,
       .running_is = "spec.runPolicy.suspend false"},
      // The shim watches a RayJob's RayClusters too: their definition is served with it.
      {.name = "rayjob",
       .integration = "ray.io/rayjob",
       .collection = "/apis/ray.io/v1/namespaces/%s/rayjobs",
       .crds = {"rayjob", "raycluster"},
       .manifest = RayJobManifest,
       .running = SpecUnsuspended,
       .running_is = "spec.suspend false"},
      {.name = "raycluster",
       .integration = "ray.io/raycluster",
       .collection = "/apis/ray.io/v1/namespaces/%s/rayclusters",
       .crds = {"raycluster"},
       .manifest = RayClusterManifest,
       .running = SpecUnsuspended,
       .running_is = "spec.suspend false"},
      // Admitted as pods: enabling the integration turns the shim's pod integration on for the
      // pods such a parent marks (no `pod` needed, shim.cc's PodsAdmitted).
      {.name = "deployment",
       .integration = "deployment",
       .collection = "/apis/apps/v1/namespaces/%s/deployments",
       .controller = "deployment",
       .via_pods = true,
       .manifest = DeploymentManifest,
       .running = PodUngated,
       .running_is = "its pod without the kueue.x-k8s.io/admission gate"},
      {.name = "statefulset",
       .integration = "statefulset",
       .collection = "/apis/apps/v1/namespaces/%s/statefulsets",
       .controller = "statefulset",
       .via_pods = true,
       .manifest = StatefulSetManifest,
       .running = PodUngated,
       .running_is = "its pod without the kueue.x-k8s.io/admission gate"},
  };
  return *kinds;
}

absl::StatusOr<std::vector<const BenchKind*>> ParseKinds(const std::string& list) {
  std::vector<const BenchKind*> out;
  auto add = [&out](const BenchKind* k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  };
  for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    name = absl::StripAsciiWhitespace(name);
    if (name == "all") {
      for (const BenchKind& k : AllKinds()) add(&k);
      continue;
    }
    const auto it = std::find_if(AllKinds().begin(), AllKinds().end(),
                                 [name](const BenchKind& k) { return k.name == name; });
    if (it == AllKinds().end()) {
      std::vector<std::string> known;
      for (const BenchKind& k : AllKinds()) known.push_back(k.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown kind \"", name, "\" (known: ", absl::StrJoin(known, ", "), ", all)"));
    }
    add(&*it);
  }
  if (out.empty()) return absl::InvalidArgumentError("--kinds names no kind");
  return out;
}

std::string KindNames(const std::vector<const BenchKind*>& kinds) {
  std::vector<std::string> names;
  for (const BenchKind* k : kinds) names.push_back(k->name);
  return absl::StrJoin(names, ",");
}

std::string ObjectName(const BenchKind& kind, int index) {
  return absl::StrFormat("%s-%05d", kind.name, index);
}

std::string CollectionPath(const BenchKind& kind, const std::string& ns) {
  return absl::StrReplaceAll(kind.collection, {{"%s", ns}});
}

ParsedName ParseObjectName(const std::string& name) {
  for (const BenchKind& k : AllKinds()) {
    const std::string prefix = k.name + "-";
    if (name.rfind(prefix, 0) != 0) continue;
    const absl::string_view rest = absl::string_view(name).substr(prefix.size());
    const size_t digits = std::min(rest.find('-'), rest.size());
    int index = -1;
    if (digits == 5 && absl::SimpleAtoi(rest.substr(0, digits), &index) && index >= 0) {
      return {&k, index};
    }
  }
  return {};
}

}  // namespace admitd::bench
