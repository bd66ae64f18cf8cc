#include "common/manifest/manifest.h"

#include "common/status.h"

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace admitd::manifest {
namespace {

using ::testing::HasSubstr;

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(ADMITD_SOURCE_DIR) + "/" + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ManifestTest, DemoAndSampleParse) {
  auto demo = ParseManifests(ReadSource("clients/examples/demo.yaml"), "demo.yaml");
  ASSERT_TRUE(demo.ok()) << demo.status();
  ASSERT_EQ(demo->size(), 3u);
  const v1::ClusterQueue& cq = (*demo)[1].object.cluster_queue();
  EXPECT_EQ(cq.metadata().name(), "cluster-queue");
  EXPECT_TRUE(cq.spec().has_namespace_selector());  // {} selects every namespace
  ASSERT_EQ(cq.spec().resource_groups(0).flavors(0).resources_size(), 2);
  EXPECT_EQ(cq.spec().resource_groups(0).flavors(0).resources(0).nominal_quota(), "9");
  EXPECT_EQ(cq.spec().resource_groups(0).flavors(0).resources(1).nominal_quota(), "36Gi");
  EXPECT_EQ((*demo)[2].object.local_queue().metadata().namespace_(), "default");

  auto job = ParseManifests(ReadSource("clients/examples/sample-job.yaml"), "sample-job.yaml");
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE((*job)[0].is_workload);
  const v1::PodSet& ps = (*job)[0].workload.spec().pod_sets(0);
  EXPECT_EQ(ps.count(), 3);
  EXPECT_EQ(ps.template_().spec().containers(0).resources().requests().at("memory"), "200Mi");
}

TEST(ManifestTest, AdmissionScopeAndLocalQueueWeights) {
  auto parsed = ParseManifests(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: shared}
spec:
  admissionScope:
    admissionMode: UsageBasedAdmissionFairSharing
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-a, namespace: ns}
spec:
  clusterQueue: shared
  fairSharing: {weight: "2"}
)",
                               "afs.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].object.cluster_queue().spec().admission_scope().admission_mode(),
            "UsageBasedAdmissionFairSharing");
  EXPECT_EQ((*parsed)[1].object.local_queue().spec().fair_sharing().weight(), "2");
}

TEST(ManifestTest, FairSharingWeightsOfClusterQueuesAndCohorts) {
  auto parsed = ParseManifests(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: org
  fairSharing: {weight: 2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: org}
spec:
  fairSharing:
    weight: "0.5"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec: {cohortName: org}
)",
                               "fair.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].object.cluster_queue().spec().fair_sharing().weight(), "2");
  EXPECT_EQ((*parsed)[1].object.cohort().spec().fair_sharing().weight(), "0.5");
  EXPECT_FALSE((*parsed)[2].object.cluster_queue().spec().has_fair_sharing());
}

TEST(ManifestTest, V1beta1NamesMapToTheSameFields) {
  auto parsed = ParseManifests(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohort: research
  admissionChecks: [prov]
  namespaceSelector:
    matchLabels: {team: a}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 0.5, borrowingLimit: 2, lendingLimit: "250m"}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: research}
spec: {parent: org}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: job, namespace: ml}
spec:
  queueName: q
  priorityClassName: high
  priorityClassSource: kueue.x-k8s.io/workloadpriorityclass
  podSets:
  - name: workers
    count: 4
    minCount: 2
    template:
      spec:
        nodeSelector: {arch: arm64}
        tolerations: [{key: spot, operator: Exists, effect: NoSchedule}]
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
              - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
        initContainers:
        - {name: sidecar, restartPolicy: Always, resources: {requests: {cpu: 100m}}}
        containers:
        - name: main
          image: busybox
          command: [sleep, "10"]
          env: [{name: X, value: "1"}]
          resources: {requests: {cpu: 1}, limits: {cpu: 2}}
)", "v1beta1.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::ClusterQueueSpec& cq = (*parsed)[0].object.cluster_queue().spec();
  EXPECT_EQ(cq.cohort_name(), "research");
  EXPECT_EQ(cq.admission_checks_strategy().admission_checks(0).name(), "prov");
  EXPECT_EQ(cq.namespace_selector().match_labels().at("team"), "a");
  const v1::ResourceQuota& q = cq.resource_groups(0).flavors(0).resources(0);
  EXPECT_EQ(q.nominal_quota(), "0.5");
  EXPECT_EQ(q.borrowing_limit(), "2");
  EXPECT_EQ(q.lending_limit(), "250m");
  EXPECT_EQ((*parsed)[1].object.cohort().spec().parent_name(), "org");
  const v1::Workload& wl = (*parsed)[2].workload;
  EXPECT_EQ(wl.spec().priority_class_ref().kind(), "WorkloadPriorityClass");
  EXPECT_EQ(wl.spec().priority_class_ref().name(), "high");
  const v1::PodSet& ps = wl.spec().pod_sets(0);
  EXPECT_EQ(ps.min_count(), 2);
  EXPECT_EQ(ps.template_().spec().node_selector().at("arch"), "arm64");
  EXPECT_EQ(ps.template_().spec().tolerations(0).operator_(), "Exists");
  EXPECT_EQ(ps.template_().spec().required_node_affinity(0).match_expressions(0).values_size(), 2);
  EXPECT_EQ(ps.template_().spec().init_containers(0).restart_policy(), "Always");
  EXPECT_EQ(ps.template_().spec().containers(0).resources().limits().at("cpu"), "2");
}

TEST(ManifestTest, UnknownFieldsNameTheFileObjectAndField) {
  auto parsed = ParseManifests(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: ok}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: ok
      resources:
      - {name: cpu, nominalQuto: 1}
  queueingStrategy: StrictFIFO
  bogus: true
)", "demo.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("demo.yaml: document 2 (ClusterQueue \"team-a\"): "
                        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuto: unknown field"));
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("demo.yaml: document 2 (ClusterQueue \"team-a\"): spec.bogus: unknown field"));
  // The same problems as field violations of documents[i] (what a gRPC caller reads).
  std::vector<std::string> fields;
  for (const admitd::FieldViolation& v : admitd::FieldViolationsOf(parsed.status())) {
    fields.push_back(v.field + ": " + v.description);
  }
  EXPECT_THAT(fields, ::testing::ElementsAre(
                          "documents[1].spec.resourceGroups[0].flavors[0].resources[0].nominalQuto:"
                          " unknown field",
                          "documents[1].spec.bogus: unknown field"));
}

TEST(ManifestTest, CoreNamespacesAreReadWithTheirLabelsAndAppliedFirst) {
  auto parsed = ParseManifests(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
      "metadata: {name: lq, namespace: team-a}\nspec: {clusterQueue: cq}\n---\n"
      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n"
      "  labels: {team: a, kubernetes.io/metadata.name: team-a}\n"
      "spec: {finalizers: [kubernetes]}\nstatus: {phase: Active}\n",
      "ns.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  SortForApply(&*parsed);
  EXPECT_EQ((*parsed)[0].kind, "Namespace");
  const v1::Namespace& ns = (*parsed)[0].object.namespace_();
  EXPECT_EQ(ns.metadata().name(), "team-a");
  EXPECT_EQ(ns.metadata().labels().at("team"), "a");
  // Only a core v1 Namespace: another group's Namespace is unknown.
  auto other = ParseManifests("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Namespace\n"
                              "metadata: {name: x}\n",
                              "x.yaml");
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("kind: unsupported \"Namespace\""));
}

TEST(ManifestTest, AWorkloadKeepsItsGatesRequeueStateAndSchedulingStats) {
  auto parsed = ParseManifests(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: ns, finalizers: [kueue.x-k8s.io/resource-in-use]}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 2
    template:
      spec:
        schedulingGates: [{name: kueue.x-k8s.io/elastic-job}]
        containers: [{name: c, resources: {requests: {cpu: "1"}}}]
status:
  requeueState: {count: 3, requeueAt: "2026-01-01T00:00:10Z"}
  schedulingStats:
    evictions: [{reason: Deactivated, underlyingCause: RequeuingLimitExceeded, count: 1}]
  accumulatedPastExecutionTimeSeconds: 12
)",
                               "w.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::Workload& wl = (*parsed)[0].workload;
  ASSERT_EQ(wl.spec().pod_sets(0).template_().spec().scheduling_gates_size(), 1);
  EXPECT_EQ(wl.spec().pod_sets(0).template_().spec().scheduling_gates(0).name(),
            "kueue.x-k8s.io/elastic-job");
  EXPECT_EQ(wl.status().requeue_state().count(), 3);
  EXPECT_EQ(wl.status().requeue_state().requeue_at().seconds(), 1767225610);
  ASSERT_EQ(wl.status().scheduling_stats().evictions_size(), 1);
  EXPECT_EQ(wl.status().scheduling_stats().evictions(0).underlying_cause(),
            "RequeuingLimitExceeded");
  EXPECT_EQ(wl.status().accumulated_past_execution_time_seconds(), 12);
}

TEST(ManifestTest, WrongTypesKindsAndVersionsAreErrors) {
  struct Case {
    const char* yaml;
    const char* want;
  } cases[] = {
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Widget\nmetadata: {name: w}\n",
       "kind: unsupported \"Widget\""},
      {"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n", "apiVersion: unsupported \"batch/v1\""},
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: p}\n"
       "value: high\n",
       "value: must be an integer"},
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: c}\n"
       "spec: {resourceGroups: {a: b}}\n",
       "spec.resourceGroups: must be a list"},
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w}\nspec:\n"
       "  podSets:\n  - template: {spec: {containers: [{name: c, imagge: x}]}}\n",
       "spec.podSets[0].template.spec.containers[0].imagge: unknown field"},
      {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {namespace: x}\n",
       "metadata.name: is required"},
      {"key: [unclosed\n", "f.yaml"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseManifests(c.yaml, "f.yaml");
    ASSERT_FALSE(parsed.ok()) << c.yaml;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.want)) << c.yaml;
  }
}

// Found by fuzz/manifest_fuzz: yaml-cpp's LoadAll never returned (and grew without bound) on a
// document starting with ','; documents are now split and loaded one by one.
TEST(ManifestTest, AFlowIndicatorStartingADocumentEndsTheParse) {
  for (const char* yaml : {",", ",a: b\n", "---\n,a: b\n", "# c\n,\n", "--- ,\n",
                           "\"x\"\n,\n"}) {
    // yaml-cpp reads such a document as empty (or as an error): either way, nothing to apply.
    absl::StatusOr<std::vector<Manifest>> parsed = ParseManifests(yaml, "f.yaml");
    EXPECT_TRUE(!parsed.ok() || parsed->empty()) << yaml;
  }
  // Splitting keeps the documents' numbers and yaml-cpp's line numbers those of the file.
  auto parsed = ParseManifests(
      "# flavors\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
      "metadata: {name: a}\n---\n---\napiVersion: kueue.x-k8s.io/v1beta2\n"
      "kind: Widget\nmetadata: {name: w}\n",
      "f.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("f.yaml: document 3 (Widget \"w\")"));
  const std::string unclosed = "a: 1\n---\nb: [\n";
  std::string whole_stream_error;
  try {
    YAML::LoadAll(unclosed);
  } catch (const YAML::Exception& e) {
    whole_stream_error = e.what();
  }
  ASSERT_THAT(whole_stream_error, HasSubstr("line"));
  auto bad = ParseManifests(unclosed, "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "f.yaml: " + whole_stream_error);
}

// Found by fuzz/manifest_fuzz: a key that is not a scalar threw out of the parser (terminating
// admitctl, and admitd for a pod's kueue.x-k8s.io/pod-group-sets annotation).
TEST(ManifestTest, KeysThatAreNotScalarsAreErrors) {
  auto parsed = ParseManifests(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
      "metadata: {name: a, [x]: y}\nspec: {nodeLabels: {{k: v}: w}}\n",
      "f.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("metadata: keys must be strings"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("spec.nodeLabels: keys must be strings"));
  auto sets = ParsePodSets("[{name: a, [count]: 1}]");
  ASSERT_FALSE(sets.ok());
  EXPECT_THAT(sets.status().message(), HasSubstr("[0]: keys must be strings"));
}

// int32 fields take only int32 values: 2^32 + 1 pods must not become 1 pod.
TEST(ManifestTest, Int32FieldsRejectValuesOutOfRange) {
  const std::string workload =
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w}\nspec:\n"
      "  podSets:\n  - count: 4294967297\n    minCount: -2147483649\n";
  auto parsed = ParseManifests(workload, "f.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("spec.podSets[0].count: must be a 32-bit integer (4294967297)"));
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("spec.podSets[0].minCount: must be a 32-bit integer (-2147483649)"));
  auto wpc = ParseManifests(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: p}\n"
      "value: 2147483648\n",
      "f.yaml");
  ASSERT_FALSE(wpc.ok());
  EXPECT_THAT(wpc.status().message(), HasSubstr("value: must be a 32-bit integer"));
  auto sets = ParsePodSets("[{name: a, count: 8589934593}]");
  ASSERT_FALSE(sets.ok());
  EXPECT_THAT(sets.status().message(), HasSubstr("[0].count: must be a 32-bit integer"));
  auto in_range = ParsePodSets("[{name: a, count: 2147483647}]");
  ASSERT_TRUE(in_range.ok()) << in_range.status();
  EXPECT_EQ((*in_range)[0].count(), 2147483647);
}

TEST(ManifestTest, StatusAndServerMetadataAreIgnoredAndOrderFollowsDependencies) {
  auto parsed = ParseManifests(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, resourceVersion: "12", managedFields: []}
spec: {clusterQueue: cq}
status: {pendingWorkloads: 3}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
description: important
)", "x.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  SortForApply(&*parsed);
  EXPECT_EQ((*parsed)[0].kind, "WorkloadPriorityClass");
  EXPECT_EQ((*parsed)[0].object.workload_priority_class().value(), 1000);
  EXPECT_EQ((*parsed)[1].kind, "ClusterQueue");
  EXPECT_FALSE((*parsed)[1].object.cluster_queue().spec().has_namespace_selector());
  EXPECT_EQ((*parsed)[2].kind, "LocalQueue");
  EXPECT_EQ((*parsed)[2].object.local_queue().metadata().namespace_(), "default");
}

TEST(ManifestTest, AWorkloadKeepsItsOwnerReference) {
  auto parsed = ParseManifests(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: job-demo-slice-e7080
  namespace: default
  annotations: {kueue.x-k8s.io/elastic-job: "true"}
  ownerReferences:
  - apiVersion: batch/v1
    kind: Job
    name: demo-slice
    uid: 78d1e61a-c399-4c09-800f-a0bbfb5fe71e
    controller: true
    blockOwnerDeletion: true
spec:
  queueName: lq
  podSets:
  - name: main
    count: 3
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}
)", "x.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const v1::ObjectMeta& meta = (*parsed)[0].workload.metadata();
  ASSERT_EQ(meta.owner_references_size(), 1);
  EXPECT_EQ(meta.owner_references(0).api_version(), "batch/v1");
  EXPECT_EQ(meta.owner_references(0).kind(), "Job");
  EXPECT_EQ(meta.owner_references(0).name(), "demo-slice");
  EXPECT_EQ(meta.owner_references(0).uid(), "78d1e61a-c399-4c09-800f-a0bbfb5fe71e");
  EXPECT_TRUE(meta.owner_references(0).controller());
  EXPECT_EQ(meta.annotations().at("kueue.x-k8s.io/elastic-job"), "true");
}

}  // namespace
}  // namespace admitd::manifest
