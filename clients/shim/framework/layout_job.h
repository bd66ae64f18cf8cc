// A GenericJob for a kind described by its functions (the common case: pod sets read off the
// spec, templates at known places, state read off the status), so that an integration of such a
// kind is a description, not a class: RayCluster, RayJob, JobSet, the Kubeflow jobs.
//
//   static const LayoutKind kKind{.api_version = "kubeflow.org/v1", .kind = "PyTorchJob", ...};
//   std::unique_ptr<GenericJob> job = NewLayoutJob(kKind, object, options);
//
// Thread safety: a LayoutKind is immutable; the job is used by one reconcile.
#ifndef ADMITD_CLIENTS_SHIM_FRAMEWORK_LAYOUT_JOB_H_
#define ADMITD_CLIENTS_SHIM_FRAMEWORK_LAYOUT_JOB_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/shim/framework/generic_job.h"
#include "clients/shim/framework/integration.h"
#include "clients/shim/framework/template_patches.h"
#include "nlohmann/json.hpp"

namespace admitd::shim {

struct LayoutKind {
  std::string api_version, kind;
  // The Workload's pod sets ([{name, count, template}]); INVALID_ARGUMENT when unreadable.
  std::function<absl::StatusOr<nlohmann::json>(const nlohmann::json&)> pod_sets;
  // Where the suspend switch and each pod set's template are.
  std::function<TemplateLayout(const nlohmann::json&)> layout;
  std::function<bool(const nlohmann::json&)> suspended, active, pods_ready;
  // The object is also active while one of its pods has not terminated (what its operator may
  // still be deleting after a suspension; kueue#15980).
  bool active_while_pods_run = false;
  std::function<std::optional<JobFinish>(const nlohmann::json&)> finished;
  // Optional (JobWithReclaimablePods).
  std::function<std::map<std::string, int>(const nlohmann::json&)> reclaimable;
  // Whether the kind can be an elastic job (resized through workload slices): an object with the
  // elastic-job annotation is then one, its Workload named by its generation.
  bool elastic = false;
  // Optional: Kueue's IsOnHold.
  std::function<bool(const nlohmann::json&)> on_hold;
  // Optional: Kueue's Skip (objects the framework leaves alone).
  std::function<bool(const nlohmann::json&)> skip;
  // Optional: the object as a start writes it before the admission is merged in (a template the
  // kind defaults made explicit: a RayJob's submitter).
  std::function<nlohmann::json(const nlohmann::json&)> for_start;
  // Optional, for an elastic object: its pod sets' counts as its children have them now (an
  // autoscaled RayJob's cluster), applied to `pod_sets`; an error when they do not match.
  std::function<absl::Status(const nlohmann::json& object,
                             const std::vector<nlohmann::json>& children, nlohmann::json* pod_sets)>
      live_counts;
  // Optional, for an elastic object: the patch it needs before its Workload is built, from its
  // children (GenericJob::PreparePatch), and the extra part of its slices' names (default: its
  // generation).
  std::function<std::optional<nlohmann::json>(const nlohmann::json& object,
                                              const std::vector<nlohmann::json>& children)>
      prepare;
  std::function<std::string(const nlohmann::json& object)> name_extra;
  // Optional, for an elastic object on a MultiKueue worker: the merge patch that gives it the
  // counts per pod set of the copy its manager resized (GenericJob::ScalePatch); nullopt when
  // they are its own already.
  std::function<std::optional<nlohmann::json>(const nlohmann::json& object,
                                              const std::map<std::string, int>& counts)>
      scale;
};

// `kind` must outlive the job. Started and stopped in one write each (the stop restores every
// template in the write that suspends, kueue#2691).
// `related`: the object's pods and children.
std::unique_ptr<GenericJob> NewLayoutJob(const LayoutKind& kind, const nlohmann::json& object,
                                         Related related, const FrameworkOptions& options);

// The Integration of a kind described by `kind` (which must outlive it): `info`, its pods'
// owner, its webhook, and where MultiKueue finds its switches.
std::unique_ptr<Integration> NewLayoutIntegration(const LayoutKind& kind, IntegrationInfo info,
                                                  Integration::PodOwnerFn owner_key_of_pod,
                                                  Integration::WebhookFn webhook,
                                                  MultiKueueAdapter multikueue = {});

}  // namespace admitd::shim

#endif  // ADMITD_CLIENTS_SHIM_FRAMEWORK_LAYOUT_JOB_H_
