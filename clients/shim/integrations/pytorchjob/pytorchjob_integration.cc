#include "clients/shim/integrations/pytorchjob/pytorchjob_integration.h"

#include <string>
#include <vector>

#include "clients/shim/framework/layout_job.h"
#include "clients/shim/integrations/pytorchjob/pytorchjob_workload.h"
#include "clients/shim/kube/json_fields.h"

namespace admitd::shim {

BaseWebhookSpec PyTorchJobWebhookSpec() {
  return {.api_version = kPyTorchJobApiVersion,
          .kind = kPyTorchJobKind,
          .mutate_path = "/mutate-kubeflow-org-v1-pytorchjob",
          .validate_path = "/validate-kubeflow-org-v1-pytorchjob",
          .suspend = {"spec", "runPolicy", "suspend"},
          .managed_by = {"spec", "runPolicy", "managedBy"},
          // The training operator: a PyTorchJob it manages may be given to MultiKueue.
          .own_controller = "kubeflow.org/training-operator",
          // Beyond Kueue: the replicas resized through workload slices.
          .elastic = true,
          .templates = [](const nlohmann::json& job) {
            std::vector<TemplateAt> out;
            absl::StatusOr<nlohmann::json> pod_sets = PyTorchJobPodSets(job);
            if (!pod_sets.ok()) return out;
            const TemplateLayout layout = PyTorchJobLayout(job);
            for (size_t i = 0; i < pod_sets->size(); ++i) {
              // The replica type as the map has it: /spec/pytorchReplicaSpecs/<Type>/template.
              const std::string type = layout.templates[i].parent_pointer().back();
              out.push_back({"spec.pytorchReplicaSpecs[" + type + "].template.metadata",
                             {"spec", "pytorchReplicaSpecs", type, "template"},
                             (*pod_sets)[i]["template"], IntOr((*pod_sets)[i]["count"], 0)});
            }
            return out;
          }};
}

std::unique_ptr<Integration> NewPyTorchJobIntegration() {
  // Elastic beyond Kueue (whose webhook refuses the annotation): Worker replicas resized through
  // workload slices, new pods gated until their slice is admitted.
  static const LayoutKind kKind{.api_version = kPyTorchJobApiVersion,
                                .kind = kPyTorchJobKind,
                                .pod_sets = PyTorchJobPodSets,
                                .layout = PyTorchJobLayout,
                                .suspended = PyTorchJobSuspended,
                                .active = PyTorchJobActive,
                                .pods_ready = PyTorchJobPodsReady,
                                .finished = PyTorchJobFinished,
                                .elastic = true,
                                .scale = PyTorchJobScalePatch};
  return NewLayoutIntegration(
      kKind,
      IntegrationInfo{
          .name = "kubeflow.org/pytorchjob",
          .api_version = kPyTorchJobApiVersion,
          .kind = kPyTorchJobKind,
          .resource = "pytorchjobs",
          .short_name = "pytorchjob",
          .controller = kPyTorchJobController,
          // Its pods (controlled by it): an elastic one's are ungated by the shim.
          .pods_path = "/api/v1/pods?labelSelector=training.kubeflow.org%2Fjob-name",
          .custom_resource = true,
      },
      [](const nlohmann::json& pod) {
        return ElasticPod(pod) ? ControllerKeyOfPod(pod, kPyTorchJobApiVersion, kPyTorchJobKind)
                               : std::string();
      },
      [](JobWebhookContext& context, const JobWebhookOptions& options, bool enabled) {
        return BaseWebhook(PyTorchJobWebhookSpec(), context, options, enabled);
      },
      MultiKueueAdapter{.managed_by = {"spec", "runPolicy", "managedBy"},
                        .suspend = {"spec", "runPolicy", "suspend"}});
}

}  // namespace admitd::shim
