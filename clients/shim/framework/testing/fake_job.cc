#include "clients/shim/framework/testing/fake_job.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/shim/kube/json_fields.h"
#include "common/kueue_keys.h"

namespace admitd::shim::testing {
namespace {

int IntField(const nlohmann::json& obj, const char* key, int otherwise) {
  const nlohmann::json& v = Field(obj, key);
  return v.is_number_integer() ? v.get<int>() : otherwise;
}

class FakeJob : public GenericJob {
 public:
  FakeJob(const nlohmann::json& object, const FrameworkOptions& options)
      : object_(object), options_(options) {}

  const nlohmann::json& Object() const override { return object_; }
  bool IsSuspended() const override { return Field(spec(), "suspend") == true; }
  bool IsActive() const override { return IntField(status(), "active", 0) > 0; }
  std::optional<JobFinish> Finished() const override {
    const std::string finished = Str(status(), "finished");
    if (finished.empty()) return std::nullopt;
    return JobFinish{.succeeded = finished == "Succeeded", .message = Str(status(), "message")};
  }
  // status.onHold: true.
  bool IsOnHold() const override { return Field(status(), "onHold") == true; }
  bool PodsReady() const override { return Field(status(), "ready") == true; }
  bool IsElastic() const override {
    return options_.elastic_jobs &&
           Str(Field(Field(object_, "metadata"), "annotations"), kElasticJobAnnotation) == "true";
  }

  absl::StatusOr<v1::Workload> NewWorkload() const override {
    const nlohmann::json& meta = Field(object_, "metadata");
    const int count = IntField(spec(), "count", 1);
    if (count < 0) return absl::InvalidArgumentError("spec.count: must be non-negative");
    v1::Workload wl;
    wl.mutable_metadata()->set_namespace_(Str(meta, "namespace"));
    wl.mutable_metadata()->set_name(absl::StrCat("fakejob-", Str(meta, "name")));
    v1::OwnerReference* owner = wl.mutable_metadata()->add_owner_references();
    owner->set_api_version("example.com/v1");
    owner->set_kind("FakeJob");
    owner->set_name(Str(meta, "name"));
    owner->set_uid(Str(meta, "uid"));
    owner->set_controller(true);
    wl.mutable_spec()->set_queue_name(Str(Field(meta, "labels"), kQueueNameLabel));
    v1::PodSet* ps = wl.mutable_spec()->add_pod_sets();
    ps->set_name("main");
    ps->set_count(count);
    for (const nlohmann::json& c : Field(Field(Field(spec(), "template"), "spec"), "containers")) {
      ps->mutable_template_()->mutable_spec()->add_containers()->set_name(Str(c, "name"));
    }
    return wl;
  }
  absl::StatusOr<std::vector<nlohmann::json>> PodTemplates() const override {
    return std::vector<nlohmann::json>{Field(spec(), "template")};
  }
  absl::StatusOr<nlohmann::json> StartPatch(const std::vector<PodSetInfo>& infos,
                                            bool elastic) const override {
    if (infos.size() != 1) {
      return absl::FailedPreconditionError(
          absl::StrCat("invalid podset infos: expecting 1 podset, got ", infos.size()));
    }
    nlohmann::json pod_template = Field(spec(), "template");
    if (absl::Status s = MergeIntoTemplate(infos[0], elastic, &pod_template); !s.ok()) return s;
    return nlohmann::json{{"spec", {{"suspend", false}, {"template", pod_template}}}};
  }
  StopPlan PlanStop(const v1::Workload* workload) const override {
    StopPlan plan;
    if (!IsSuspended()) plan.suspend = {{"spec", {{"suspend", true}}}};
    if (workload != nullptr && workload->spec().pod_sets_size() == 1) {
      plan.restore = {{"spec",
                       {{"template", RestoreTemplatePatch(Field(spec(), "template"),
                                                          workload->spec().pod_sets(0).template_())}}}};
    }
    return plan;
  }
  std::map<std::string, int> ReclaimablePods() const override {
    const int n = IntField(status(), "reclaimable", 0);
    if (n <= 0) return {};
    return {{"main", n}};
  }
  std::optional<nlohmann::json> MirrorStatusPatch(const nlohmann::json& remote) const override {
    if (Field(object_, "status") == remote) return std::nullopt;
    return nlohmann::json{{"status", remote}};
  }
  std::optional<nlohmann::json> ScalePatch(const v1::Workload& workload) const override {
    const int count = workload.spec().pod_sets(0).count();
    if (IntField(spec(), "count", 1) == count) return std::nullopt;
    return nlohmann::json{{"spec", {{"count", count}}}};
  }

 private:
  const nlohmann::json& spec() const { return Field(object_, "spec"); }
  const nlohmann::json& status() const { return Field(object_, "status"); }
  const nlohmann::json& object_;
  const FrameworkOptions& options_;
};

}  // namespace

std::unique_ptr<Integration> NewFakeJobIntegration() {
  auto integration = std::make_unique<Integration>(
      IntegrationInfo{.name = "example.com/fakejob",
                      .api_version = "example.com/v1",
                      .kind = "FakeJob",
                      .resource = "fakejobs",
                      .short_name = "fakejob",
                      .controller = "example.com/fakejob-kueue-controller",
                      .pods_path = "/api/v1/pods",
                      .custom_resource = true},
      [](const nlohmann::json& object, Related,
         const FrameworkOptions& options) -> std::unique_ptr<GenericJob> {
        return std::make_unique<FakeJob>(object, options);
      },
      [](const nlohmann::json& pod) { return ControllerKeyOfPod(pod, "", "FakeJob"); },
      // No rules of its own: the framework's defaulting and validation.
      [](JobWebhookContext& context, const JobWebhookOptions& options, bool enabled) {
        KindWebhook webhook{.kind = "FakeJob",
                            .mutate_path = "/mutate-example-com-v1-fakejob",
                            .validate_path = "/validate-example-com-v1-fakejob",
                            .enabled = enabled};
        webhook.default_create = [&context, options](const nlohmann::json& job) {
          return DefaultFramework(job, context, options);
        };
        webhook.validate = [&context, options](const nlohmann::json* old_job,
                                               const nlohmann::json& job,
                                               std::vector<std::string>*, std::string*) {
          return old_job == nullptr ? ValidateFrameworkCreate(job, options)
                                    : ValidateFrameworkUpdate(*old_job, job, context, options);
        };
        return webhook;
      });
  integration->SetMultiKueue({});  // spec.managedBy, spec.suspend
  return integration;
}

nlohmann::json FakeJobObject(const std::string& ns, const std::string& name, int count) {
  return {{"apiVersion", "example.com/v1"},
          {"kind", "FakeJob"},
          {"metadata",
           {{"namespace", ns},
            {"name", name},
            {"labels", {{kQueueNameLabel, "lq"}}},
            {"generation", 1}}},
          {"spec",
           {{"suspend", true},
            {"count", count},
            {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}}}};
}

}  // namespace admitd::shim::testing
