#include "clients/shim/integrations/statefulset/statefulset_webhook.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "clients/shim/integrations/pod/pod_webhook_role_hash.h"
#include "clients/shim/integrations/statefulset/statefulset_pods.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"
#include "clients/shim/webhook/webhook_json.h"

namespace admitd::shim {
namespace {

constexpr char kReplicasPath[] = "spec.replicas";

// Kueue's utilpod.SpecShape of a pod spec, as JSON.
nlohmann::json Shape(const nlohmann::json& spec) {
  const nlohmann::json doc = nlohmann::json::parse(PodRoleShapeJson(spec), nullptr, false);
  return doc.is_object() ? ObjectOr(Field(doc, "spec")) : nlohmann::json::object();
}

// A value as apimachinery prints an Invalid value that is not a string or number: JSON.
std::string ValueText(const nlohmann::json& v) {
  return v.is_string() ? GoQuote(v.get<std::string>()) : v.dump();
}

void Immutable(const std::string& path, const nlohmann::json& next, const nlohmann::json& prev,
               std::vector<FieldError>* errs) {
  if (next != prev) errs->push_back(FieldError::Invalid(path, ValueText(next), kImmutable));
}

// validateImmutablePodGroupPodSpecPath over two shapes: a container list of another length is
// one error, otherwise each container's `resources` is compared a level down.
void CompareShapes(const nlohmann::json& next, const nlohmann::json& prev, const std::string& path,
                   bool containers_level, std::vector<FieldError>* errs) {
  std::set<std::string> keys;
  for (const auto& [k, v] : next.items()) keys.insert(k);
  for (const auto& [k, v] : prev.items()) keys.insert(k);
  for (const std::string& key : keys) {
    const std::string child = absl::StrCat(path, ".", key);
    const nlohmann::json& n = Field(next, key);
    const nlohmann::json& p = Field(prev, key);
    if (!containers_level && (key == "containers" || key == "initContainers")) {
      const nlohmann::json na = ArrayOr(n), pa = ArrayOr(p);
      if (na.size() != pa.size()) {
        Immutable(child, n, p, errs);
        continue;
      }
      for (size_t i = 0; i < na.size(); ++i) {
        CompareShapes(ObjectOr(na[i]), ObjectOr(pa[i]), absl::StrCat(child, "[", i, "]"), true,
                      errs);
      }
    } else if (containers_level && key == "resources") {
      CompareShapes(ObjectOr(n), ObjectOr(p), child, true, errs);
    } else {
      Immutable(child, n, p, errs);
    }
  }
}

int64_t Replicas(const nlohmann::json& sts) { return IntOr(Field(Field(sts, "spec"), "replicas"), 1); }

void CheckManagedUpdate(const nlohmann::json& old_sts, const nlohmann::json& new_sts,
                        JobWebhookContext&, std::vector<FieldError>* errs) {
  std::vector<FieldError> shape =
      PodShapeChanges(Field(Field(Field(old_sts, "spec"), "template"), "spec"),
                      Field(Field(Field(new_sts, "spec"), "template"), "spec"));
  errs->insert(errs->end(), shape.begin(), shape.end());
  // An elastic StatefulSet is resized through workload slices: any size.
  if (Str(Field(Field(new_sts, "metadata"), "annotations"), kElasticJobAnnotation) == "true") {
    return;
  }
  const int64_t old_replicas = Replicas(old_sts), new_replicas = Replicas(new_sts);
  // Only to and from zero (Kueue's TODO: other sizes later).
  if (new_replicas != 0 && old_replicas != 0 && new_replicas != old_replicas) {
    errs->push_back(FieldError::Invalid(kReplicasPath, absl::StrCat(new_replicas), kImmutable));
  }
  if (old_replicas == 0 && new_replicas > 0 &&
      IntOr(Field(Field(new_sts, "status"), "replicas"), 0) > 0) {
    errs->push_back(FieldError::Forbidden(kReplicasPath, "scaling down is still in progress"));
  }
}

}  // namespace

std::vector<FieldError> PodShapeChanges(const nlohmann::json& old_spec,
                                        const nlohmann::json& new_spec) {
  std::vector<FieldError> errs;
  CompareShapes(Shape(new_spec), Shape(old_spec), "spec.template.spec", false, &errs);
  return errs;
}

ServingWebhookSpec StatefulSetWebhookSpec() {
  return {.api_version = kStatefulSetApiVersion,
          .kind = kStatefulSetKind,
          .framework = kStatefulSetFramework,
          .mutate_path = "/mutate-apps-v1-statefulset",
          .validate_path = "/validate-apps-v1-statefulset",
          .label_template = false,  // the pod reconcile labels each pod (statefulset_pods.h)
          .yield_to_other_parent = true,
          .elastic = true,
          .check_managed_update = CheckManagedUpdate};
}

KindWebhook StatefulSetWebhook(JobWebhookContext& context, const JobWebhookOptions& options,
                               bool enabled) {
  return ServingWebhook(StatefulSetWebhookSpec(), context, options, enabled);
}

}  // namespace admitd::shim
