#include "clients/shim/integrations/pod/pod_observation.h"

#include "gtest/gtest.h"

namespace admitd::shim {
namespace pod_observation_test {

nlohmann::json Pod() {
  return nlohmann::json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "1041",
                 "creationTimestamp": "2026-11-23T14:00:00Z",
                 "labels": {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/managed": "true"},
                 "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"},
                 "finalizers": ["kueue.x-k8s.io/managed"],
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                      "uid": "u-rs", "controller": true}]},
    "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
             "nodeSelector": {"pool": "a"},
             "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
             "containers": [{"name": "c", "image": "busybox",
                             "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
    "status": {"phase": "Pending", "message": "waiting",
               "conditions": [{"type": "PodScheduled", "status": "False",
                               "reason": "SchedulingGated",
                               "lastTransitionTime": "2026-11-23T14:00:01Z"}]}
  })");
}

TEST(PodObservation, ReadsWhatAdmitdNeeds) {
  absl::StatusOr<v1::PodObservation> obs = PodObservationFromJson(Pod(), "c1");
  ASSERT_TRUE(obs.ok()) << obs.status();
  EXPECT_EQ(obs->cluster(), "c1");
  EXPECT_EQ(obs->namespace_(), "ns");
  EXPECT_EQ(obs->uid(), "u-1");
  EXPECT_EQ(obs->resource_version(), 1041);
  EXPECT_EQ(obs->labels().at("kueue.x-k8s.io/queue-name"), "lq");
  EXPECT_EQ(obs->annotations().at("kueue.x-k8s.io/pod-group-total-count"), "2");
  EXPECT_EQ(obs->phase(), v1::POD_PHASE_PENDING);
  EXPECT_EQ(obs->status_message(), "waiting");
  EXPECT_EQ(obs->creation_timestamp().seconds(), 1795442400);
  EXPECT_FALSE(obs->has_deletion_timestamp());
  ASSERT_EQ(obs->scheduling_gates_size(), 1);
  EXPECT_EQ(obs->scheduling_gates(0).name(), "kueue.x-k8s.io/admission");
  ASSERT_EQ(obs->finalizers_size(), 1);
  ASSERT_EQ(obs->conditions_size(), 1);
  EXPECT_EQ(obs->conditions(0).reason(), "SchedulingGated");
  ASSERT_EQ(obs->owner_references_size(), 1);
  EXPECT_TRUE(obs->owner_references(0).controller());
  ASSERT_EQ(obs->spec().containers_size(), 1);
  EXPECT_EQ(obs->spec().containers(0).resources().requests().at("cpu"), "500m");
  EXPECT_EQ(obs->spec().node_selector().at("pool"), "a");
  ASSERT_EQ(obs->spec().tolerations_size(), 1);
  EXPECT_EQ(obs->spec().tolerations(0).operator_(), "Exists");
}

TEST(PodObservation, DeletionAndErrors) {
  nlohmann::json pod = Pod();
  pod["metadata"]["deletionTimestamp"] = "2026-11-23T14:05:00Z";
  pod["metadata"]["deletionGracePeriodSeconds"] = 30;
  absl::StatusOr<v1::PodObservation> obs = PodObservationFromJson(pod, "c1");
  ASSERT_TRUE(obs.ok());
  EXPECT_EQ(obs->deletion_timestamp().seconds(), 1795442700);
  EXPECT_EQ(obs->deletion_grace_period_seconds(), 30);
  pod["metadata"]["resourceVersion"] = "abc";
  EXPECT_EQ(PodObservationFromJson(pod, "c1").status().message(),
            "metadata.resourceVersion: \"abc\" is not an integer");
  pod["metadata"].erase("uid");
  EXPECT_EQ(PodObservationFromJson(pod, "c1").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace pod_observation_test
}  // namespace admitd::shim
