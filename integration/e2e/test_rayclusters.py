"""End to end: RayClusters (ray.io/v1) through admitd-shim's RayCluster integration and webhook,
admitd and the test cluster with its simulated KubeRay operator, as real processes.

One stack for the class; each test has its own namespace and ClusterQueue. The autoscaler is
played by the tests: a JSON patch of a worker group's replicas (and, with in-tree autoscaling,
of its scaleStrategy.workersToDelete).
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shimcase import ShimCase  # noqa: E402
from stack import PRIORITY_CLASSES, condition, is_true, queues  # noqa: E402

ELASTIC_GATE = "kueue.x-k8s.io/elastic-job"


def raycluster(ns, name, workers=1, cpu="1", queue="lq", elastic=False, autoscaling=False,
               priority_class=None):
    """A RayCluster as a user writes it: a head and one worker group "workers" (the webhook
    suspends it and, when elastic, gates its templates)."""
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    annotations = {"kueue.x-k8s.io/elastic-job": "true"} if elastic else {}

    def template(container):
        return {"spec": {"containers": [{"name": container, "image": "rayproject/ray",
                                         "resources": {"requests": {"cpu": cpu}}}]}}
    spec = {"headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
            "workerGroupSpecs": [{"groupName": "workers", "replicas": workers,
                                  "minReplicas": 0, "maxReplicas": 10, "rayStartParams": {},
                                  "template": template("ray-worker")}]}
    if autoscaling:
        # KubeRay's sidecar with CPU only (its default also requests 512Mi of memory, which the
        # tests' queues do not cover).
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = {"resources": {"requests": {"cpu": "500m"},
                                                   "limits": {"cpu": "500m"}}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": ns, "labels": labels,
                         "annotations": annotations},
            "spec": spec}


class RayClusterE2E(ShimCase, unittest.TestCase):
    API_ARGS = ("--crd", "raycluster", "--controllers", "job,scheduler,kubelet,raycluster")
    KINDS = {"rayclusters": True}

    # --- the cluster --------------------------------------------------------------------------
    def path(self, name=""):
        base = "/apis/ray.io/v1/namespaces/%s/rayclusters" % self.ns
        return base + ("/" + name if name else "")

    def create(self, rc):
        code, body = self.s.kube("POST", self.path(), rc)
        self.assertEqual(code, 201, body)
        return body

    def get(self, name):
        code, body = self.s.kube("GET", self.path(name))
        self.assertEqual(code, 200, body)
        return body

    def scale(self, name, replicas, workers_to_delete=None):
        """The autoscaler's edit: the worker group's replicas (and the pods it gives up)."""
        ops = [{"op": "test", "path": "/spec/workerGroupSpecs/0/groupName", "value": "workers"},
               {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": replicas}]
        if workers_to_delete is not None:
            ops.append({"op": "add", "path": "/spec/workerGroupSpecs/0/scaleStrategy",
                        "value": {"workersToDelete": workers_to_delete}})
        code, body = self.s.kube("PATCH", self.path(name), ops, "application/json-patch+json")
        self.assertEqual(code, 200, body)
        return body

    def pods(self, name):
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" %
                                 (self.ns, "ray.io/cluster%3D" + name))
        self.assertEqual(code, 200, body)
        return body["items"]

    def running(self, name):
        """(name, uid) of the cluster's running pods, sorted."""
        return sorted((p["metadata"]["name"], p["metadata"]["uid"]) for p in self.pods(name)
                      if p["status"].get("phase") == "Running" and
                      not p["metadata"].get("deletionTimestamp"))

    def gated(self, name):
        return sorted(p["metadata"]["name"] for p in self.pods(name)
                      if any(g["name"] == ELASTIC_GATE
                             for g in p["spec"].get("schedulingGates") or []))

    def workloads(self, name, live=False):
        out = [w for w in self.s.workloads(self.ns)
               if w["metadata"]["ownerReferences"][0]["kind"] == "RayCluster" and
               w["metadata"]["ownerReferences"][0]["name"] == name]
        return [w for w in out if not is_true(w, "Finished")] if live else out

    def events(self, name, reason):
        return [e for e in self.s.events(self.ns, name) if e["reason"] == reason and
                e["involvedObject"]["kind"] == "RayCluster"]

    # --- the tests ----------------------------------------------------------------------------
    def test_a_raycluster_is_suspended_admitted_and_started_on_its_flavors_nodes(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-fit", 4))
        created = self.create(raycluster(ns, "fits", workers=2))
        self.assertTrue(created["spec"]["suspend"])  # the webhook's doing
        rc = self.wait(lambda: (lambda rc: rc if not rc["spec"]["suspend"] else None)(
            self.get("fits")), "the RayCluster to be unsuspended")
        head = rc["spec"]["headGroupSpec"]["template"]
        self.assertEqual(head["spec"]["nodeSelector"], {"pool": "a"})
        self.assertEqual(head["metadata"]["labels"]["kueue.x-k8s.io/podset"], "head")
        self.assertEqual(head["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"], "cq-fit")
        worker = rc["spec"]["workerGroupSpecs"][0]["template"]
        self.assertEqual(worker["spec"]["nodeSelector"], {"pool": "a"})
        self.assertEqual(worker["metadata"]["labels"]["kueue.x-k8s.io/podset"], "workers")
        # KubeRay makes the head and two workers; they run on pool-a's node.
        self.wait(lambda: len(self.running("fits")) == 3, "3 running pods")
        self.assertEqual({p["spec"]["nodeName"] for p in self.pods("fits")}, {"n1"})
        self.wait(lambda: self.get("fits")["status"].get("state") == "ready",
                  "the cluster to be ready")
        wl = self.workloads("fits")[0]
        self.assertTrue(wl["metadata"]["name"].startswith("raycluster-fits-"))
        self.assertEqual([(p["name"], p["count"]) for p in wl["spec"]["podSets"]],
                         [("head", 1), ("workers", 2)])
        self.assertEqual(wl["metadata"]["ownerReferences"][0]["apiVersion"], "ray.io/v1")
        self.assertEqual(wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"],
                         created["metadata"]["uid"])
        self.assertTrue(is_true(wl, "Admitted"))
        self.assertEqual(s.cq_usage("cq-fit", "pool-a"), "3")
        for reason in ("CreatedWorkload", "QuotaReserved", "Admitted", "Started"):
            self.wait(lambda: self.events("fits", reason), "a %s event" % reason)
        started = self.events("fits", "Started")[0]
        self.assertEqual(started["message"], "Admitted by clusterQueue cq-fit")
        self.assertEqual(started["source"]["component"], "ray.io/raycluster-kueue-controller")
        # A RayCluster never finishes: the Workload holds its quota while the cluster lives.
        self.assertFalse(is_true(self.workloads("fits")[0], "Finished"))

    def test_a_raycluster_that_does_not_fit_waits_suspended(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-nofit", 2))
        self.create(raycluster(ns, "big", workers=2))
        wl = self.wait(lambda: (lambda w: w[0] if w and condition(w[0], "QuotaReserved") else None)(
            self.workloads("big")), "a pending condition")
        self.assertEqual(condition(wl, "QuotaReserved")["reason"], "ExceedsMaxQuota")
        self.wait(lambda: self.events("big", "ExceedsMaxQuota"), "the Warning on the cluster")
        self.assertTrue(self.get("big")["spec"]["suspend"])
        self.assertEqual(self.pods("big"), [])

    def test_elastic_scale_down_gives_quota_back_and_keeps_pods_running(self):
        # KEP-77 phase 1: a worker group scaled 2 -> 1 in place.
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-down", 8))
        created = self.create(raycluster(ns, "down", workers=2, elastic=True))
        gate = {"name": ELASTIC_GATE}
        self.assertIn(gate, created["spec"]["headGroupSpec"]["template"]["spec"]["schedulingGates"])
        self.assertIn(gate, created["spec"]["workerGroupSpecs"][0]["template"]["spec"]
                      ["schedulingGates"])
        self.wait(lambda: len(self.running("down")) == 3, "the head and 2 workers running")
        self.wait(lambda: s.cq_usage("cq-down", "pool-a") == "3", "usage 3")
        before = self.running("down")
        first = self.workloads("down", live=True)[0]["metadata"]["name"]
        self.scale("down", 1)
        self.wait(lambda: s.cq_usage("cq-down", "pool-a") == "2", "usage 2")
        self.wait(lambda: len(self.running("down")) == 2, "2 running pods")
        after = self.running("down")
        self.assertTrue(set(after) <= set(before), (before, after))  # none restarted
        live = self.workloads("down", live=True)
        self.assertEqual(len(live), 1)
        self.assertEqual(live[0]["metadata"]["name"], first)  # resized in place
        self.assertEqual([p["count"] for p in live[0]["spec"]["podSets"]], [1, 1])
        self.assertFalse(self.get("down")["spec"]["suspend"])

    def test_elastic_scale_up_admits_a_new_slice_and_ungates_the_new_pod(self):
        # KEP-77 phase 2: a worker group scaled 1 -> 2 through a new slice; then a scale-up
        # beyond the quota waits, gated, while the cluster keeps running.
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-up", 3))
        self.create(raycluster(ns, "up", workers=1, elastic=True))
        self.wait(lambda: len(self.running("up")) == 2, "the head and a worker running")
        before = self.running("up")
        old = self.workloads("up", live=True)[0]["metadata"]["name"]
        self.scale("up", 2)
        self.wait(lambda: len(self.running("up")) == 3, "3 running pods")
        self.assertTrue(set(before) <= set(self.running("up")))  # none restarted
        self.wait(lambda: s.cq_usage("cq-up", "pool-a") == "3", "usage 3")
        live = self.workloads("up", live=True)
        self.assertEqual(len(live), 1)
        self.assertNotEqual(live[0]["metadata"]["name"], old)
        self.assertEqual([p["count"] for p in live[0]["spec"]["podSets"]], [1, 2])
        self.assertEqual(live[0]["metadata"]["annotations"]
                         ["kueue.x-k8s.io/workload-slice-replacement-for"], "%s/%s" % (ns, old))
        replaced = [w for w in self.workloads("up") if w["metadata"]["name"] == old][0]
        self.assertTrue(is_true(replaced, "Finished"))
        self.assertEqual(condition(replaced, "Finished")["reason"], "WorkloadSliceReplaced")
        self.assertEqual(self.gated("up"), [])
        # Beyond the quota: the new worker stays gated, the others run on.
        running = self.running("up")
        self.scale("up", 3)
        self.wait(lambda: len(self.gated("up")) == 1, "1 gated pod")
        pending = self.wait(lambda: [w for w in self.workloads("up", live=True)
                                     if w["spec"]["podSets"][1]["count"] == 3 and
                                     condition(w, "QuotaReserved")], "the pending slice")
        self.assertEqual(condition(pending[0], "QuotaReserved")["status"], "False")
        self.assertEqual(self.running("up"), running)
        self.assertEqual(s.cq_usage("cq-up", "pool-a"), "3")
        self.assertFalse(self.get("up")["spec"]["suspend"])

    def test_autoscaling_accounts_the_sidecar_and_scales_down_named_workers(self):
        # enableInTreeAutoscaling: KubeRay's autoscaler sidecar (autoscalerOptions: 500m) is
        # counted on the head; a scale-down names the pod to delete.
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-auto", 8))
        self.create(raycluster(ns, "auto", workers=2, elastic=True, autoscaling=True))
        self.wait(lambda: len(self.running("auto")) == 3, "the head and 2 workers running")
        self.wait(lambda: s.cq_usage("cq-auto", "pool-a") == "3500m", "usage 3500m")
        workers = sorted(p["metadata"]["name"] for p in self.pods("auto")
                         if p["metadata"]["labels"].get("ray.io/node-type") == "worker")
        before = self.running("auto")
        self.scale("auto", 1, workers_to_delete=[workers[-1]])
        self.wait(lambda: s.cq_usage("cq-auto", "pool-a") == "2500m", "usage 2500m")
        self.wait(lambda: len(self.running("auto")) == 2, "2 running pods")
        self.assertTrue(set(self.running("auto")) <= set(before))
        self.assertNotIn(workers[-1], [n for n, _ in self.running("auto")])

    def test_a_higher_priority_raycluster_preempts_a_lower_one_which_is_readmitted(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-pre", 4, preemption="LowerPriority") + PRIORITY_CLASSES)
        self.create(raycluster(ns, "low", workers=3, priority_class="low"))
        self.wait(lambda: len(self.running("low")) == 4, "the low cluster's 4 pods running")
        low_pods = {uid for _, uid in self.running("low")}
        self.create(raycluster(ns, "high", workers=1, priority_class="high"))
        # The low cluster is suspended (Stopped), its templates restored, its pods deleted.
        self.wait(lambda: self.get("low")["spec"]["suspend"], "the low cluster to be suspended")
        stopped = self.wait(lambda: self.events("low", "Stopped"), "a Stopped event")
        self.assertIn("Preempted", stopped[0]["message"])
        head = self.get("low")["spec"]["headGroupSpec"]["template"]
        self.assertNotIn("nodeSelector", head["spec"])
        self.assertNotIn("kueue.x-k8s.io/podset", (head.get("metadata") or {}).get("labels", {}))
        # The quota goes back only once the low cluster's pods are gone: by the time the high
        # cluster starts, none is left.
        self.wait(lambda: not self.get("high")["spec"]["suspend"], "the high cluster to start")
        self.assertEqual(self.pods("low"), [])
        low_wl = self.workloads("low")[0]
        self.assertEqual(condition(low_wl, "Evicted")["reason"], "Preempted")
        self.assertFalse(is_true(low_wl, "Admitted"))
        self.wait(lambda: len(self.running("high")) == 2, "the high cluster's pods running")
        self.wait(lambda: self.events("low", "EvictedDueToPreempted"), "the eviction event")
        # Once the high cluster is deleted, the low one is admitted again, with new pods.
        code, _ = s.kube("DELETE", self.path("high"))
        self.assertEqual(code, 200)
        self.wait(lambda: len(self.running("low")) == 4, "the low cluster readmitted")
        self.assertTrue(low_pods.isdisjoint({uid for _, uid in self.running("low")}))
        self.assertGreaterEqual(len(self.events("low", "Started")), 1)
        self.wait(lambda: s.cq_usage("cq-pre", "pool-a") == "4", "usage 4")

    def test_a_deleted_raycluster_loses_its_workload(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-del", 4))
        self.create(raycluster(ns, "gone", workers=1))
        self.wait(lambda: len(self.running("gone")) == 2, "2 running pods")
        self.assertEqual(len(self.workloads("gone")), 1)
        code, _ = s.kube("DELETE", self.path("gone"))
        self.assertEqual(code, 200)
        self.wait(lambda: self.workloads("gone") == [], "the Workload to be deleted")
        self.wait(lambda: s.cq_usage("cq-del", "pool-a") == "0", "usage 0")

    def test_the_webhook_refuses_autoscaling_that_is_not_elastic(self):
        s, ns = self.s, self.ns
        code, body = s.kube("POST", self.path(), raycluster(ns, "refused", autoscaling=True))
        self.assertEqual(code, 403, body)
        self.assertEqual(
            body["message"],
            'admission webhook "vraycluster.kb.io" denied the request: '
            "spec.enableInTreeAutoscaling: Invalid value: true: a kueue-managed RayCluster can "
            "use autoscaling only as an elastic job: enable the ElasticJobsViaWorkloadSlices "
            'feature gate and set the "kueue.x-k8s.io/elastic-job": "true" annotation')
        # A cluster without a queue is not Kueue's: created as written, and it runs.
        created = self.create(raycluster(ns, "free", queue=None))
        self.assertFalse(created["spec"].get("suspend", False))
        self.wait(lambda: len(self.running("free")) == 2, "the unmanaged cluster's pods")
        self.assertEqual(self.workloads("free"), [])


if __name__ == "__main__":
    unittest.main()
