"""The simulated KubeRay operator: ``--controllers raycluster`` over the raw API.

Pods (names, labels, owners), status and conditions, deletion, scaling,
autoscaler deletions through workersToDelete, multi-host groups, suspension
and resumption, a cluster created suspended with gated workers, finished pods
replaced, a cluster managed elsewhere. Run with /usr/bin/python3.
"""

import time
import unittest
import urllib.request

from crdfixtures import JSON_PATCH, MERGE, RC_PATH, cond, raycluster, template
from harness import ServerTest, wait_until

ELASTIC_GATE = "kueue.x-k8s.io/elastic-job"


class RayOperatorTest(ServerTest, unittest.TestCase):
    """``--controllers raycluster,scheduler,kubelet``: pods run, the status follows."""

    SERVER_ARGS = ("--crd", "raycluster", "--namespace", "ray",
                   "--controllers", "raycluster,scheduler,kubelet",
                   "--node", "n1:pool=a:cpu=32", "--node", "n2:pool=a:cpu=32",
                   "--kubelet-start-delay", "0.05", "--kubelet-grace-cap", "0.2")

    def create(self, body):
        code, out = self.s.request("POST", RC_PATH % "ray", body)
        self.assertEqual(code, 201, out)
        return out

    def get(self, name):
        return self.s.request("GET", RC_PATH % "ray" + "/" + name)[1]

    def patch(self, name, body, ctype=JSON_PATCH):
        code, out = self.s.request("PATCH", RC_PATH % "ray" + "/" + name, body, ctype)
        self.assertEqual(code, 200, out)
        return out

    def pods(self, cluster, extra=""):
        sel = "ray.io/cluster=%s%s" % (cluster, extra)
        return self.s.request("GET", "/api/v1/namespaces/ray/pods?labelSelector="
                              + urllib.request.quote(sel))[1]["items"]

    def live(self, cluster, extra=""):
        return [p for p in self.pods(cluster, extra) if not p["metadata"].get("deletionTimestamp")]

    def wait_state(self, name, state, timeout=10):
        return wait_until(lambda: (self.get(name).get("status") or {}).get("state") == state
                          and self.get(name), timeout, what="%s %s" % (name, state))

    def wait_workers(self, name, n, timeout=10):
        return wait_until(lambda: len(self.pods(name, ",ray.io/node-type=worker")) == n
                          and self.pods(name, ",ray.io/node-type=worker"), timeout,
                          what="%d workers of %s" % (n, name))

    def test_pods_labels_owners_and_status(self):
        rc = self.create(raycluster("basic", groups=(("small", 2), ("big", 1))))
        rc = self.wait_state("basic", "ready")
        pods = self.pods("basic")
        self.assertEqual(len(pods), 4)
        heads = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
        self.assertEqual(len(heads), 1)
        head = heads[0]
        self.assertRegex(head["metadata"]["name"], r"^basic-head-[a-z0-9]{5}$")
        self.assertEqual(head["metadata"]["labels"], {
            "ray.io/is-ray-node": "yes", "ray.io/cluster": "basic", "ray.io/node-type": "head",
            "ray.io/group": "headgroup", "ray.io/identifier": "basic-head",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator"})
        self.assertEqual(head["metadata"]["ownerReferences"], [{
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "basic",
            "uid": rc["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}])
        small = sorted(self.pods("basic", ",ray.io/group=small"),
                       key=lambda p: p["metadata"]["labels"]["ray.io/worker-group-replica-index"])
        self.assertEqual(len(small), 2)
        for i, p in enumerate(small):
            self.assertRegex(p["metadata"]["name"], r"^basic-small-worker-[a-z0-9]{5}$")
            self.assertEqual(p["metadata"]["labels"]["ray.io/node-type"], "worker")
            self.assertEqual(p["metadata"]["labels"]["ray.io/worker-group-replica-index"], str(i))
            self.assertEqual(p["spec"]["initContainers"][0]["name"], "wait-gcs-ready")
            self.assertEqual(p["status"]["phase"], "Running")
        self.assertEqual(len(self.pods("basic", ",ray.io/group=big")), 1)
        st = rc["status"]
        self.assertEqual({k: st.get(k) for k in (
            "desiredWorkerReplicas", "readyWorkerReplicas", "availableWorkerReplicas",
            "minWorkerReplicas", "maxWorkerReplicas", "desiredCPU", "desiredMemory", "desiredGPU",
            "observedGeneration")}, {
            "desiredWorkerReplicas": 3, "readyWorkerReplicas": 3, "availableWorkerReplicas": 3,
            "minWorkerReplicas": None, "maxWorkerReplicas": 20, "desiredCPU": "2500m",
            "desiredMemory": "4Gi", "desiredGPU": "0", "observedGeneration": 1})
        self.assertEqual(st["head"], {"podIP": head["status"]["podIP"],
                                      "podName": head["metadata"]["name"]})
        self.assertEqual([(c["type"], c["status"], c["reason"]) for c in st["conditions"]], [
            ("HeadPodReady", "True", "HeadPodRunningAndReady"),
            ("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime"),
            ("RayClusterSuspended", "False", "RayClusterSuspended"),
            ("RayClusterSuspending", "False", "RayClusterSuspending")])
        self.assertIn("ready", st["stateTransitionTimes"])
        # Deleting the cluster deletes its pods (background propagation).
        self.s.request("DELETE", RC_PATH % "ray" + "/basic")
        wait_until(lambda: not self.pods("basic"), 10, what="the pods of basic gone")

    def test_scale_down_and_up(self):
        self.create(raycluster("scaled", groups=(("g", 2),)))
        self.wait_state("scaled", "ready")
        before = {p["metadata"]["name"]: p for p in self.pods("scaled", ",ray.io/node-type=worker")}
        newest = max(before.values(), key=lambda p: (
            p["metadata"]["creationTimestamp"],
            p["metadata"]["labels"]["ray.io/worker-group-replica-index"]))
        out = self.patch("scaled", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas",
                                     "value": 1}])
        self.assertEqual(out["metadata"]["generation"], 2)
        left = self.wait_workers("scaled", 1)
        self.assertNotEqual(left[0]["metadata"]["name"], newest["metadata"]["name"])
        rc = wait_until(lambda: self.get("scaled")["status"].get("desiredWorkerReplicas") == 1
                        and self.get("scaled"), 5, what="desired 1")
        self.assertEqual(rc["status"]["observedGeneration"], 2)
        self.assertEqual(rc["status"]["state"], "ready")
        self.patch("scaled", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas",
                               "value": 2}])
        pods = self.wait_workers("scaled", 2)
        self.assertIn(left[0]["metadata"]["name"], [p["metadata"]["name"] for p in pods])
        self.assertEqual(sorted(p["metadata"]["labels"]["ray.io/worker-group-replica-index"]
                                for p in pods), ["0", "1"])
        rc = wait_until(lambda: self.get("scaled")["status"].get("readyWorkerReplicas") == 2
                        and self.get("scaled"), 5, what="two ready workers")
        self.assertEqual(rc["status"]["desiredCPU"], "2")

    def test_autoscaler_decides_deletions(self):
        self.create(raycluster("auto", groups=(("g", 2),), autoscaling=True))
        self.wait_state("auto", "ready")
        head = self.pods("auto", ",ray.io/node-type=head")[0]
        self.assertEqual([c["name"] for c in head["spec"]["containers"]], ["ray", "autoscaler"])
        self.assertEqual(head["spec"]["containers"][1]["resources"]["requests"],
                         {"cpu": "500m", "memory": "512Mi"})
        self.assertEqual(head["spec"]["serviceAccountName"], "auto")
        # Fewer replicas alone delete nothing: the autoscaler names the pods to go.
        self.patch("auto", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas",
                             "value": 1}])
        wait_until(lambda: self.get("auto")["status"].get("desiredWorkerReplicas") == 1, 5,
                   what="desired 1")
        time.sleep(0.3)
        workers = self.live("auto", ",ray.io/node-type=worker")
        self.assertEqual(len(workers), 2)
        victim = workers[1]["metadata"]["name"]
        self.patch("auto", {"spec": {"workerGroupSpecs": [dict(
            self.get("auto")["spec"]["workerGroupSpecs"][0],
            scaleStrategy={"workersToDelete": [victim]})]}}, MERGE)
        left = self.wait_workers("auto", 1)
        self.assertNotEqual(left[0]["metadata"]["name"], victim)

    def test_multi_host_group(self):
        self.create(raycluster("multi", groups=(("tpu", 2),), hosts=2))
        self.wait_state("multi", "ready")
        workers = self.pods("multi", ",ray.io/node-type=worker")
        self.assertEqual(len(workers), 4)
        by_replica = {}
        for p in workers:
            labels = p["metadata"]["labels"]
            by_replica.setdefault(labels["ray.io/worker-group-replica-name"], []).append(
                (labels["ray.io/worker-group-replica-index"], labels["ray.io/replica-host-index"]))
        self.assertEqual(sorted(sorted(v) for v in by_replica.values()),
                         [[("0", "0"), ("0", "1")], [("1", "0"), ("1", "1")]])
        for rname in by_replica:
            self.assertRegex(rname, r"^tpu-[a-z0-9]{5}$")
        self.assertEqual(self.get("multi")["status"]["desiredWorkerReplicas"], 4)
        self.patch("multi", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas",
                              "value": 1}])
        left = self.wait_workers("multi", 2)
        self.assertEqual(len({p["metadata"]["labels"]["ray.io/worker-group-replica-name"]
                              for p in left}), 1)

    def test_suspend_and_resume(self):
        self.create(raycluster("susp", groups=(("g", 2),)))
        self.wait_state("susp", "ready")
        self.patch("susp", {"spec": {"suspend": True}}, MERGE)
        rc = self.wait_state("susp", "suspended")
        self.assertEqual(self.pods("susp"), [])
        conds = {c["type"]: (c["status"], c["reason"], c["message"])
                 for c in rc["status"]["conditions"]}
        self.assertEqual(conds["RayClusterSuspended"], ("True", "RayClusterSuspended", ""))
        self.assertEqual(conds["RayClusterSuspending"], ("False", "RayClusterSuspending", ""))
        self.assertEqual(conds["RayClusterProvisioned"], (
            "False", "RayClusterPodsProvisioning", "RayCluster has been suspended"))
        self.assertEqual(conds["HeadPodReady"], ("False", "HeadPodNotFound",
                                                 "Head Pod not found"))
        self.assertNotIn("readyWorkerReplicas", rc["status"])
        self.patch("susp", {"spec": {"suspend": False}}, MERGE)
        rc = self.wait_state("susp", "ready")
        self.assertEqual(len(self.pods("susp")), 3)
        self.assertEqual(cond(rc, "RayClusterSuspended")["status"], "False")
        self.assertEqual(cond(rc, "RayClusterProvisioned")["reason"],
                         "AllPodRunningAndReadyFirstTime")
        self.assertEqual(sorted(rc["status"]["stateTransitionTimes"]), ["ready", "suspended"])

    def test_created_suspended_then_gated_pods(self):
        # What a Kueue shim sees: created suspended, no pods; started with the elastic gate in
        # the templates, the pods wait (state not ready) until they are ungated.
        body = raycluster("gated", groups=(("g", 1),), suspend=True,
                          worker_template=template(gates=[ELASTIC_GATE]))
        self.create(body)
        rc = self.wait_state("gated", "suspended")
        self.assertEqual(self.pods("gated"), [])
        self.assertEqual(cond(rc, "RayClusterSuspended")["status"], "True")
        self.patch("gated", {"spec": {"suspend": False}}, MERGE)
        worker = self.wait_workers("gated", 1)[0]
        self.assertEqual(worker["spec"]["schedulingGates"], [{"name": ELASTIC_GATE}])
        time.sleep(0.3)
        self.assertEqual(self.get("gated")["status"]["state"], "suspended")
        self.s.request("PATCH", "/api/v1/namespaces/ray/pods/" + worker["metadata"]["name"],
                       {"spec": {"schedulingGates": None}}, MERGE)
        self.wait_state("gated", "ready")

    def test_finished_pods_are_replaced(self):
        body = raycluster("flaky", groups=(("g", 1),), worker_template=template(
            restart="Never", annotations={"fixture.admitd.io/runtime-seconds": "0.3"}))
        self.create(body)
        first = self.wait_workers("flaky", 1)[0]["metadata"]["name"]
        wait_until(lambda: [p["metadata"]["name"] for p in self.live(
            "flaky", ",ray.io/node-type=worker")] not in ([], [first]), 10,
            what="a new worker")

    def test_managed_elsewhere_is_left_alone(self):
        self.create(raycluster("remote", managed_by="kueue.x-k8s.io/multikueue"))
        time.sleep(0.5)
        self.assertEqual(self.pods("remote"), [])
        self.assertNotIn("status", self.get("remote"))

if __name__ == "__main__":
    unittest.main()
