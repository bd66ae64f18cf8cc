// The registry of the shim's integrations (Kueue's integration manager): each kind of job the
// shim can manage is an Integration, a small adapter that names the kind, says where its objects
// and their pods are listed, and wraps an object as a GenericJob for the one generic reconcile.
// `--integrations` names resolve here; the shim starts one informer, work queue and reconciler
// per enabled integration.
//
//   IntegrationRegistry registry;
//   registry.Register(NewJobIntegration());
//   const Integration* job = registry.Find("batch/job");
//
// Thread safety: Register before the registry is shared; everything else from any thread.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_INTEGRATION_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_INTEGRATION_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clients/shim/framework/generic_job.h"
#include "clients/shim/framework/multikueue.h"
#include "clients/shim/framework/webhook_rules.h"
#include "clients/shim/webhook/admission_review.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

// The facts about a kind that never change.
struct IntegrationInfo {
  std::string name;         // as --integrations spells it (Kueue's framework name): batch/job
  std::string api_version;  // batch/v1
  std::string kind;         // Job
  std::string resource;     // jobs (the plural in its paths)
  // One word for the kind in metric and log names: job, raycluster.
  std::string short_name;
  // The reportingComponent of the events the shim records on the kind's objects (Kueue's).
  std::string controller;
  // The collection its pods are watched from (a label selector narrows it), "" when the
  // reconcile needs no pods.
  std::string pods_path;
  // The pod label that names the object's pods, when they are not controlled by it directly (a
  // JobSet's belong to its child Jobs); "": its pods are those it controls. Its value is the
  // object's field at pods_label_value (empty: metadata.name; a RayJob's pods carry its
  // cluster's name, status.rayClusterName).
  std::string pods_by_label;
  std::vector<std::string> pods_label_value;
  // The collection of the objects it controls whose state it reads (a RayJob's RayClusters), ""
  // when none.
  std::string children_path;
  // A custom resource: a cluster without its definition has none of them, and that does not hold
  // up the shim's readiness.
  bool custom_resource = false;
  // Its pods are admitted through the pod integration, one by one or as a pod group, never as a
  // Workload of the kind (Deployment, StatefulSet): enabling it enables the pod integration for
  // such pods (Kueue's ImplicitlyEnabledFrameworkNames), and it has no GenericJob.
  bool admitted_as_pods = false;
};

// A kind's adapter: its facts and three functions. Each integration makes one
// (integrations/<kind>/<kind>_integration.h) and the registry holds it.
class Integration {
 public:
  // `object` of this kind, with the pods it controls (from the pods_path informer).
  using WrapFn = std::function<std::unique_ptr<GenericJob>(
      const nlohmann::json& object, Related related, const FrameworkOptions& options)>;
  // "namespace/name" of the object to reconcile when `pod` (one of pods_path's) changes, or ""
  // when its change does not matter to the owner.
  using PodOwnerFn = std::function<std::string(const nlohmann::json& pod)>;
  // The kind's admission webhook (Kueue's defaulting and validation); `enabled` false: the kind
  // is not in --integrations (Kueue then answers with a no-op webhook). `context` must outlive
  // it.
  using WebhookFn = std::function<KindWebhook(JobWebhookContext& context,
                                              const JobWebhookOptions& options, bool enabled)>;

  // The merge patch one of an `admitted_as_pods` kind's pods gets from `owner`, its controller
  // (a StatefulSet's pods join its pod group); nullopt when it needs none.
  using PodPatchFn = std::function<std::optional<nlohmann::json>(
      const nlohmann::json& pod, const nlohmann::json& owner, const FrameworkOptions& options)>;

  Integration(IntegrationInfo info, WrapFn wrap, PodOwnerFn owner_key_of_pod, WebhookFn webhook);
  // An `admitted_as_pods` kind: `wrap` null when it has no GenericJob at all (an elastic
  // StatefulSet's is one); `pod_patch` null when its pods need nothing from it (a Deployment's
  // template carries their labels).
  Integration(IntegrationInfo info, WrapFn wrap, PodOwnerFn owner_key_of_pod, WebhookFn webhook,
              PodPatchFn pod_patch);

  const IntegrationInfo& info() const { return info_; }
  std::unique_ptr<GenericJob> Wrap(const nlohmann::json& object, Related related,
                                   const FrameworkOptions& options) const {
    return wrap_(object, std::move(related), options);
  }
  // Whether the one generic reconcile runs the kind's objects (an `admitted_as_pods` kind's
  // elastic ones only).
  bool HasGenericJob() const { return wrap_ != nullptr; }
  std::string OwnerKeyOfPod(const nlohmann::json& pod) const { return owner_key_of_pod_(pod); }
  // Null unless the kind's pods get labels from it.
  const PodPatchFn& pod_patch() const { return pod_patch_; }
  // Where MultiKueue finds the kind's switches; null for a kind MultiKueue cannot dispatch.
  const MultiKueueAdapter* multikueue() const {
    return multikueue_ ? &*multikueue_ : nullptr;
  }
  // Before registration: the kind can be dispatched by MultiKueue.
  void SetMultiKueue(MultiKueueAdapter adapter) { multikueue_ = std::move(adapter); }
  KindWebhook Webhook(JobWebhookContext& context, const JobWebhookOptions& options,
                      bool enabled) const {
    return webhook_(context, options, enabled);
  }

  // The collection the informer lists and watches: /apis/<apiVersion>/<resource>.
  std::string CollectionPath() const;
  // The object's path: /apis/<apiVersion>/namespaces/<ns>/<resource>/<name>.
  std::string ObjectPath(const std::string& ns, const std::string& name) const;

 private:
  const IntegrationInfo info_;
  const WrapFn wrap_;
  const PodOwnerFn owner_key_of_pod_;
  const WebhookFn webhook_;
  const PodPatchFn pod_patch_;
  std::optional<MultiKueueAdapter> multikueue_;
};

// Whether `pod` is an elastic job's: it carries the elastic-job gate or a slice's annotation
// (the pods whose changes matter to their owner's ungating).
bool ElasticPod(const nlohmann::json& pod);

// "namespace/name" of the object `pod`'s controller owner reference names when it is of
// `api_version` `kind` (any apiVersion, any kind, when empty), else "".
std::string ControllerKeyOfPod(const nlohmann::json& pod, const std::string& api_version,
                               const std::string& kind);

class IntegrationRegistry {
 public:
  void Register(std::unique_ptr<Integration> integration);
  // nullptr when none has that name.
  const Integration* Find(const std::string& name) const;
  // The integration of objects of `api_version` `kind`, nullptr when none.
  const Integration* ForKind(const std::string& api_version, const std::string& kind) const;
  std::vector<const Integration*> All() const;
  // Whether `object`'s controller owner is of a kind the shim manages (a registered integration
  // with a GenericJob, or a v1 Pod): such an object belongs to its owner's Workload and is left
  // alone (§1.2).
  bool OwnedByManagedKind(const nlohmann::json& object) const;

 private:
  std::vector<std::unique_ptr<Integration>> integrations_;
};

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_INTEGRATION_H_
