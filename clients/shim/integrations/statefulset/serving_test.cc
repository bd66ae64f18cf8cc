// Deployments and StatefulSets, whose pods are admitted as pods (kueue-jobframework.md §10,
// §11): their webhooks, a StatefulSet's pods joining its serving group, and the reconcile that
// labels them, on fakes.
#include <gtest/gtest.h>

#include "clients/shim/framework/elastic_pods.h"
#include "clients/shim/framework/pod_parent_reconciler.h"
#include "clients/shim/framework/testing/fakes.h"
#include "clients/shim/integrations/deployment/deployment_integration.h"
#include "clients/shim/integrations/statefulset/statefulset_integration.h"
#include "clients/shim/integrations/statefulset/statefulset_pods.h"
#include "clients/shim/integrations/statefulset/statefulset_webhook.h"
#include "clients/shim/webhook/webhook_testing.h"

namespace admitd::shim {
namespace serving_test {

using webhook_testing::FakeContext;
using webhook_testing::Texts;

nlohmann::json Template(const std::string& cpu) {
  return {{"metadata", {{"labels", {{"app", "web"}}}}},
          {"spec",
           {{"containers",
             {{{"name", "web"}, {"image", "nginx"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}}};
}

nlohmann::json Object(const std::string& kind, int replicas) {
  return {{"apiVersion", "apps/v1"},
          {"kind", kind},
          {"metadata",
           {{"name", "sts-a"},
            {"namespace", "ns"},
            {"uid", "a9f0e6b0-3f2c-4c7e-9a3b-2d3c4e5f6a7b"},
            {"labels", {{"kueue.x-k8s.io/queue-name", "lq"}}}}},
          {"spec", {{"replicas", replicas}, {"template", Template("1")}}}};
}

nlohmann::json Defaulted(const ServingWebhookSpec& spec, const nlohmann::json& object,
                         JobWebhookContext& context, const JobWebhookOptions& options = {}) {
  return object.patch(nlohmann::json(ServingDefault(spec, object, context, options)));
}

TEST(DeploymentWebhookTest, TheTemplateCarriesTheParentTheQueueAndThePriority) {
  FakeContext context;
  context.priority_class = true;  // the `default` WorkloadPriorityClass exists
  const nlohmann::json d = Defaulted(DeploymentWebhookSpec(), Object("Deployment", 3), context);
  EXPECT_EQ(d["metadata"]["labels"]["kueue.x-k8s.io/priority-class"], "default");
  const nlohmann::json& meta = d["spec"]["template"]["metadata"];
  EXPECT_EQ(meta["annotations"]["kueue.x-k8s.io/pod-suspending-parent"], "deployment");
  EXPECT_EQ(meta["labels"],
            nlohmann::json({{"app", "web"},
                            {"kueue.x-k8s.io/managed", "true"},
                            {"kueue.x-k8s.io/queue-name", "lq"},
                            {"kueue.x-k8s.io/priority-class", "default"}}));
  EXPECT_EQ(d["spec"]["replicas"], 3);  // never suspended through its replicas
  // Without a queue name (and no `default` LocalQueue) it is not Kueue's.
  nlohmann::json free = Object("Deployment", 3);
  free["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  context.priority_class = false;
  EXPECT_EQ(Defaulted(DeploymentWebhookSpec(), free, context), free);
  // The defaulting runs on updates too.
  EXPECT_TRUE(NewDeploymentIntegration()->Webhook(context, {}, true).default_on_update);
}

TEST(DeploymentWebhookTest, TheQueueNameIsImmutableWhileAPodIsReady) {
  FakeContext context;
  const ServingWebhookSpec spec = DeploymentWebhookSpec();
  nlohmann::json old_d = Object("Deployment", 3);
  nlohmann::json moved = old_d;
  moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other";
  EXPECT_TRUE(ServingValidate(spec, &old_d, moved, context, {}).empty());  // nothing ready yet
  old_d["status"]["readyReplicas"] = 1;
  moved["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high";
  EXPECT_EQ(Texts(ServingValidate(spec, &old_d, moved, context, {})),
            std::vector<std::string>(
                {"metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"other\": field is "
                 "immutable",
                 "metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: \"high\": "
                 "WorkloadPriorityClass cannot be added to a non-suspended workload"}));
  // Elastic (beyond Kueue): accepted, and fixed once created.
  nlohmann::json elastic = Object("Deployment", 3);
  elastic["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true";
  EXPECT_TRUE(ServingValidate(spec, nullptr, elastic, context, {}).empty());
  nlohmann::json plain = Object("Deployment", 3);
  EXPECT_EQ(Texts(ServingValidate(spec, &plain, elastic, context, {})),
            std::vector<std::string>({"metadata.annotations[kueue.x-k8s.io/elastic-job]: Invalid "
                                      "value: true: field is immutable"}));
}

TEST(StatefulSetWebhookTest, OnlyTheParentAnnotationAndAnotherParentIsLeftAlone) {
  FakeContext context;
  const ServingWebhookSpec spec = StatefulSetWebhookSpec();
  const nlohmann::json s = Defaulted(spec, Object("StatefulSet", 3), context);
  EXPECT_EQ(s["spec"]["template"]["metadata"]["annotations"],
            nlohmann::json({{"kueue.x-k8s.io/pod-suspending-parent", "statefulset"}}));
  EXPECT_EQ(s["spec"]["template"]["metadata"]["labels"], nlohmann::json({{"app", "web"}}));
  nlohmann::json lws = Object("StatefulSet", 3);
  lws["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] =
      "leaderworkerset.x-k8s.io/leaderworkerset";
  EXPECT_EQ(Defaulted(spec, lws, context), lws);
  nlohmann::json resized = lws;
  resized["spec"]["replicas"] = 5;
  EXPECT_TRUE(ServingValidate(spec, &lws, resized, context, {}).empty());
}

TEST(StatefulSetWebhookTest, AManagedOnesShapeAndSizeAreFixed) {
  FakeContext context;
  const ServingWebhookSpec spec = StatefulSetWebhookSpec();
  const nlohmann::json old_s = Object("StatefulSet", 3);
  nlohmann::json changed = old_s;
  changed["spec"]["replicas"] = 4;
  changed["spec"]["template"] = Template("2");
  changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2";  // not the shape
  EXPECT_EQ(Texts(ServingValidate(spec, &old_s, changed, context, {})),
            std::vector<std::string>(
                {"spec.template.spec.containers[0].resources.requests: Invalid value: "
                 "{\"cpu\":\"2\"}: field is immutable",
                 "spec.replicas: Invalid value: 4: field is immutable"}));
  // To zero and back: allowed once its pods are gone.
  nlohmann::json zero = old_s;
  zero["spec"]["replicas"] = 0;
  EXPECT_TRUE(ServingValidate(spec, &old_s, zero, context, {}).empty());
  nlohmann::json up = old_s;
  zero["status"]["replicas"] = 1;
  up["status"]["replicas"] = 1;
  EXPECT_EQ(Texts(ServingValidate(spec, &zero, up, context, {})),
            std::vector<std::string>({"spec.replicas: Forbidden: scaling down is still in "
                                      "progress"}));
  up["status"]["replicas"] = 0;
  EXPECT_TRUE(ServingValidate(spec, &zero, up, context, {}).empty());
  // Without a queue name none of this applies.
  nlohmann::json free_old = old_s, free_new = changed;
  free_old["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  free_new["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  EXPECT_TRUE(ServingValidate(spec, &free_old, free_new, context, {}).empty());
}

nlohmann::json Pod(const std::string& name, const nlohmann::json& owner) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"uid", "uid-" + name},
            {"labels", {{"app", "web"}, {"statefulset.kubernetes.io/pod-name", name}}},
            {"annotations",
             {{"kueue.x-k8s.io/pod-suspending-parent", "statefulset"},
              {"kueue.x-k8s.io/role-hash", "dc85db45"}}},
            {"ownerReferences",
             {{{"apiVersion", "apps/v1"},
               {"kind", "StatefulSet"},
               {"name", owner["metadata"]["name"]},
               {"uid", owner["metadata"]["uid"]},
               {"controller", true}}}}}},
          {"spec", Template("1")["spec"]},
          {"status", {{"phase", "Pending"}}}};
}

TEST(ServingElasticTest, AnElasticOneIsGatedAsOneWorkloadAndResizable) {
  FakeContext context;
  nlohmann::json sts = Object("StatefulSet", 3);
  sts["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true";
  const nlohmann::json d = Defaulted(StatefulSetWebhookSpec(), sts, context);
  const nlohmann::json& t = d["spec"]["template"];
  EXPECT_EQ(t["spec"]["schedulingGates"],
            nlohmann::json::parse(R"([{"name": "kueue.x-k8s.io/elastic-job"}])"));
  EXPECT_EQ(t["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main");
  EXPECT_FALSE(t["metadata"].contains("annotations"));  // not the pod integration's
  // Any size.
  nlohmann::json bigger = d;
  bigger["spec"]["replicas"] = 5;
  EXPECT_TRUE(ServingValidate(StatefulSetWebhookSpec(), &d, bigger, context, {}).empty());

  // Its GenericJob: one pod set of `replicas`, a slice; active while an ungated pod runs;
  // stopped by deleting those.
  std::unique_ptr<Integration> integration = NewStatefulSetIntegration();
  FrameworkOptions options;
  nlohmann::json object = d;
  object["metadata"]["generation"] = 1;
  nlohmann::json running = Pod("sts-a-0", object);
  nlohmann::json gated = Pod("sts-a-1", object);
  gated["spec"]["schedulingGates"] = nlohmann::json::parse(R"([{"name": "kueue.x-k8s.io/elastic-job"}])");
  std::unique_ptr<GenericJob> job =
      integration->Wrap(object, std::vector<nlohmann::json>{running, gated}, options);
  EXPECT_FALSE(job->Skip());
  EXPECT_FALSE(job->IsSuspended());
  EXPECT_TRUE(job->StartsByUngating());
  EXPECT_TRUE(job->IsActive());
  absl::StatusOr<v1::Workload> wl = job->NewWorkload();
  ASSERT_TRUE(wl.ok()) << wl.status();
  ASSERT_EQ(wl->spec().pod_sets_size(), 1);
  EXPECT_EQ(wl->spec().pod_sets(0).name(), "main");
  EXPECT_EQ(wl->spec().pod_sets(0).count(), 3);
  EXPECT_EQ(wl->metadata().annotations().at("kueue.x-k8s.io/workload-slice-name"),
            wl->metadata().name());
  const StopPlan stop = job->PlanStop(&*wl);
  ASSERT_EQ(stop.delete_pods.size(), 1u);
  EXPECT_EQ(stop.delete_pods[0]["metadata"]["name"], "sts-a-0");
  // Not elastic: the pod integration's.
  EXPECT_TRUE(integration->Wrap(Object("StatefulSet", 3), {}, options)->Skip());
}

TEST(ServingElasticTest, AGatedPodTakesItsPodSetsAdmissionWhenUngated) {
  nlohmann::json pod = Pod("sts-a-0", Object("StatefulSet", 1));
  pod["metadata"]["resourceVersion"] = "4";
  pod["spec"]["schedulingGates"] =
      nlohmann::json::parse(R"([{"name": "kueue.x-k8s.io/elastic-job"}, {"name": "other"}])");
  PodSetInfo info;
  info.name = "main";
  info.node_selector = {{"pool", "a"}};
  info.labels = {{"kueue.x-k8s.io/podset", "main"}};
  info.annotations = {{"kueue.x-k8s.io/workload-slice-name", "statefulset-sts-a-1"}};
  absl::StatusOr<nlohmann::json> patch = UngatePatchWithInfo(pod, info);
  ASSERT_TRUE(patch.ok()) << patch.status();
  nlohmann::json after = pod;
  after.merge_patch(*patch);
  EXPECT_EQ((*patch)["metadata"]["resourceVersion"], "4");
  EXPECT_EQ(after["spec"]["nodeSelector"], nlohmann::json({{"pool", "a"}}));
  EXPECT_EQ(after["spec"]["schedulingGates"], nlohmann::json::parse(R"([{"name": "other"}])"));
  EXPECT_EQ(after["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-name"],
            "statefulset-sts-a-1");
  EXPECT_EQ(after["metadata"]["labels"]["app"], "web");
  // A conflicting node selector key.
  pod["spec"]["nodeSelector"] = {{"pool", "b"}};
  EXPECT_EQ(UngatePatchWithInfo(pod, info).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(StatefulSetPodsTest, APodJoinsItsStatefulSetsServingGroup) {
  const nlohmann::json sts = Object("StatefulSet", 3);
  EXPECT_EQ(StatefulSetGroupName(sts), "statefulset-sts-a-55118");  // the spec's example
  nlohmann::json pod = Pod("sts-a-0", sts);
  pod["metadata"]["resourceVersion"] = "7";
  std::optional<nlohmann::json> patch = StatefulSetPodPatch(pod, sts, {});
  ASSERT_TRUE(patch);
  EXPECT_EQ((*patch)["metadata"]["resourceVersion"], "7");
  EXPECT_EQ((*patch)["metadata"]["labels"],
            nlohmann::json({{"kueue.x-k8s.io/managed", "true"},
                            {"kueue.x-k8s.io/queue-name", "lq"},
                            {"kueue.x-k8s.io/pod-group-name", "statefulset-sts-a-55118"},
                            {"kueue.x-k8s.io/prebuilt-workload-name", "statefulset-sts-a-55118"}}));
  EXPECT_EQ((*patch)["metadata"]["annotations"],
            nlohmann::json({{"kueue.x-k8s.io/pod-group-total-count", "3"},
                            {"kueue.x-k8s.io/pod-group-fast-admission", "true"},
                            {"kueue.x-k8s.io/pod-group-serving", "true"},
                            {"kueue.x-k8s.io/pod-group-pod-index-label",
                             "apps.kubernetes.io/pod-index"},
                            {"kueue.x-k8s.io/role-hash", "main"}}));
  // In the group: nothing, until the StatefulSet's queue changes.
  pod.merge_patch(*patch);
  EXPECT_FALSE(StatefulSetPodPatch(pod, sts, {}));
  nlohmann::json moved = sts;
  moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other";
  EXPECT_EQ((*StatefulSetPodPatch(pod, moved, {}))["metadata"]["labels"],
            nlohmann::json({{"kueue.x-k8s.io/queue-name", "other"}}));
  // Not marked for it, finished, or a StatefulSet without a queue: left alone.
  nlohmann::json plain = Pod("sts-a-1", sts);
  plain["metadata"]["annotations"].erase("kueue.x-k8s.io/pod-suspending-parent");
  EXPECT_FALSE(StatefulSetPodPatch(plain, sts, {}));
  nlohmann::json done = Pod("sts-a-1", sts);
  done["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(StatefulSetPodPatch(done, sts, {}));
  nlohmann::json free = sts;
  free["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  EXPECT_FALSE(StatefulSetPodPatch(Pod("sts-a-1", sts), free, {}));
  FrameworkOptions all;
  all.manage_jobs_without_queue_name = true;
  EXPECT_TRUE(StatefulSetPodPatch(Pod("sts-a-1", sts), free, all));
}

TEST(PodParentReconcilerTest, EveryPodOfTheStatefulSetIsLabelledOnce) {
  testing::FakeKube kube;
  testing::FakeCache statefulsets(kube, "/apis/apps/v1/statefulsets");
  testing::FakeCache pods(kube, "/api/v1/pods?labelSelector=statefulset.kubernetes.io%2Fpod-name");
  const nlohmann::json sts = Object("StatefulSet", 2);
  kube.Put("/apis/apps/v1/namespaces/ns/statefulsets/sts-a", sts);
  kube.Put("/api/v1/namespaces/ns/pods/sts-a-0", Pod("sts-a-0", sts));
  kube.Put("/api/v1/namespaces/ns/pods/sts-a-1", Pod("sts-a-1", sts));
  statefulsets.Sync();
  pods.Sync();
  std::unique_ptr<Integration> integration = NewStatefulSetIntegration();
  PodParentReconciler r(*integration, kube, statefulsets, pods, {});
  ASSERT_TRUE(r.Reconcile("ns/sts-a").ok());
  EXPECT_EQ(r.patched(), 2);
  for (const char* name : {"sts-a-0", "sts-a-1"}) {
    const nlohmann::json pod = *kube.Object(std::string("/api/v1/namespaces/ns/pods/") + name);
    EXPECT_EQ(pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"],
              "statefulset-sts-a-55118");
  }
  // Level-triggered: again, nothing to write.
  pods.Sync();
  kube.ClearWrites();
  ASSERT_TRUE(r.Reconcile("ns/sts-a").ok());
  EXPECT_TRUE(kube.writes().empty());
  // A pod changed since the cache saw it: the write is refused, and the reconcile retried.
  kube.Put("/api/v1/namespaces/ns/pods/sts-a-2", Pod("sts-a-2", sts));
  pods.Sync();
  nlohmann::json newer = *kube.Object("/api/v1/namespaces/ns/pods/sts-a-2");
  kube.Put("/api/v1/namespaces/ns/pods/sts-a-2", newer);
  EXPECT_EQ(r.Reconcile("ns/sts-a").code(), absl::StatusCode::kAborted);
  pods.Sync();
  EXPECT_TRUE(r.Reconcile("ns/sts-a").ok());
  // A StatefulSet that is gone: nothing.
  EXPECT_TRUE(r.Reconcile("ns/gone").ok());
}

}  // namespace serving_test
}  // namespace admitd::shim
