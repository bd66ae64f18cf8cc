"""End to end: MultiKueue for pods, and so for Deployments and StatefulSets, whose pods admitd
admits as pods (docs/multikueue.md, "Pods, Deployments and StatefulSets"). A manager cluster and
two worker clusters, each with its own API server, admitd and shim. Users create the objects in
the manager only: their pods stay gated there, the winning worker's shim creates their copies
there, they run there, and the manager's pods show the worker's status.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_deployments  # noqa: E402  (its module, not its TestCase)
import test_multikueue  # noqa: E402
from stack import condition, is_true  # noqa: E402

NS = test_multikueue.NS
API_ARGS = ("--controllers", "deployment,statefulset,scheduler,kubelet")
ORIGIN = "kueue.x-k8s.io/multikueue-origin"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"


def gated(pod):
    return test_deployments.gated(pod)


class MultiKueuePodsE2E(test_multikueue.ManagerAndWorkers, unittest.TestCase):
    API_ARGS = API_ARGS
    WORKER_INTEGRATIONS = "batch/job,pod"
    MANAGER_KINDS = {"pods": True, "deployments": True, "statefulsets": True}

    def pods(self, app, api=None):
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods?labelSelector=app%%3D%s" %
                                 (NS, app), api=api)
        self.assertEqual(code, 200, body)
        return [p for p in body["items"] if not p["metadata"].get("deletionTimestamp")]

    def workload_of(self, pod_name):
        for wl in self.s.workloads(NS):
            if any(o["name"] == pod_name for o in wl["metadata"].get("ownerReferences", [])):
                return wl
        return None

    def runs_in_a_worker(self, app, n):
        """Waits for the `n` pods of `app` to be dispatched as one Workload each (or one for a
        group) and to run in a worker; returns (the manager's pods, the worker)."""
        self.wait(lambda: len(self.pods(app)) == n, "%d pods of %s in the manager" % (n, app))
        wl = self.wait(lambda: (lambda w: w if w and w["status"].get("clusterName") else None)(
            self.workload_of(self.pods(app)[0]["metadata"]["name"])),
            "the manager's workload to be admitted in a worker")
        worker = self.workers[wl["status"]["clusterName"]]
        remote = self.wait(lambda: (lambda ps: ps if len(ps) == n and all(
            p["status"].get("phase") == "Running" for p in ps) else None)(
                self.pods(app, api=worker.api)), "%d pods of %s running in the worker" % (n, app))
        for p in remote:
            self.assertEqual(p["metadata"]["labels"][ORIGIN], "multikueue")
            self.assertFalse(gated(p))
            self.assertNotIn("ownerReferences", p["metadata"])  # bare pods there
        for other in self.workers.values():
            if other is not worker:
                self.assertEqual(self.pods(app, api=other.api), [])
        # The manager's pods never run: gated, and showing the worker's status.
        manager = self.wait(lambda: (lambda ps: ps if all(
            p["status"].get("phase") == "Running" for p in ps) else None)(self.pods(app)),
            "the manager's pods to show the worker's Running phase")
        for p in manager:
            self.assertTrue(gated(p), p)
            self.assertFalse(p["spec"].get("nodeName"))
        return manager, worker

    def test_a_plain_pod_runs_to_completion_in_a_worker(self):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "mk-pod", "namespace": NS,
                            "labels": {"kueue.x-k8s.io/queue-name": "lq", "app": "mk-pod"},
                            "annotations": {"fixture.admitd.io/runtime-seconds": "1"}},
               "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox",
                                        "resources": {"requests": {"cpu": "1"}}}]}}
        code, body = self.s.kube("POST", "/api/v1/namespaces/%s/pods" % NS, pod)
        self.assertEqual(code, 201, body)
        self.assertTrue(gated(body))
        wl = self.wait(lambda: (lambda w: w if w and w["status"].get("clusterName") else None)(
            self.workload_of("mk-pod")), "the pod's workload to be admitted in a worker")
        worker = self.workers[wl["status"]["clusterName"]]
        remote = self.wait(lambda: (self.pods("mk-pod", api=worker.api) or [None])[0],
                           "the pod in the winning worker")
        self.assertEqual(remote["metadata"]["annotations"][PREBUILT], wl["metadata"]["name"])
        # It runs there and succeeds; the manager's pod, never ungated, shows it and its
        # Workload finishes.
        self.wait(lambda: (self.pods("mk-pod") or [{}])[0].get("status", {}).get("phase") ==
                  "Succeeded", "the manager's pod to show the worker's Succeeded phase")
        self.assertTrue(gated(self.pods("mk-pod")[0]))
        wl = self.wait(lambda: (lambda w: w if w and is_true(w, "Finished") else None)(
            self.workload_of("mk-pod")), "the manager's workload to finish")
        self.assertEqual(condition(wl, "Finished")["reason"], "Succeeded")
        self.wait(lambda: not worker.workloads(), "the copy to be removed")
        self.wait(lambda: self.pods("mk-pod", api=worker.api) == [],
                  "the worker's pod to go with its copy")
        self.assertGreaterEqual(
            self.manager_shim.metric("admitd_shim_multikueue_pods_handed_over_total"), 1)

    def test_a_deployments_pods_run_in_workers_until_it_is_deleted(self):
        dep = test_deployments.deployment(NS, "mk-dep", 1)
        code, body = self.s.kube("POST", "/apis/apps/v1/namespaces/%s/deployments" % NS, dep)
        self.assertEqual(code, 201, body)
        manager, worker = self.runs_in_a_worker("mk-dep", 1)
        code, _ = self.s.kube("DELETE", "/apis/apps/v1/namespaces/%s/deployments/mk-dep" % NS)
        self.assertEqual(code, 200)
        self.wait(lambda: self.pods("mk-dep", api=worker.api) == [],
                  "the worker's pod to go with the manager's")
        self.wait(lambda: not worker.workloads(), "the copy to be removed")

    def test_a_statefulsets_group_runs_in_one_worker(self):
        sts = test_deployments.statefulset(NS, "mk-sts", 2)
        code, body = self.s.kube("POST", "/apis/apps/v1/namespaces/%s/statefulsets" % NS, sts)
        self.assertEqual(code, 201, body)
        manager, worker = self.runs_in_a_worker("mk-sts", 2)
        # One Workload for the group, here and there.
        names = {self.workload_of(p["metadata"]["name"])["metadata"]["name"] for p in manager}
        self.assertEqual(len(names), 1, names)
        copies = worker.workloads()
        self.assertEqual([c["metadata"]["name"] for c in copies], list(names))
        self.assertEqual(len(copies[0]["metadata"]["ownerReferences"]), 2)
        code, _ = self.s.kube("PATCH", "/apis/apps/v1/namespaces/%s/statefulsets/mk-sts" % NS,
                              {"spec": {"replicas": 0}},
                              content_type="application/merge-patch+json")
        self.assertEqual(code, 200)
        self.wait(lambda: self.pods("mk-sts", api=worker.api) == [],
                  "the worker's pods to go with the manager's")


if __name__ == "__main__":
    unittest.main()
