"""End to end: MultiKueue for the kinds beyond batch/v1 Jobs (JobSet, PyTorchJob, RayJob,
RayCluster), with a manager cluster and two worker clusters, each with its own API server, admitd
and shim (docs/multikueue.md). Users create the objects in the manager cluster only: the manager's
webhook gives them to MultiKueue, the winning worker's shim creates the object there from the
copy's manifest, it runs there, and the manager's object shows the worker's status.
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The kinds' test modules, not their classes: a TestCase imported here would run here too.
import test_jobsets  # noqa: E402
import test_multikueue  # noqa: E402
import test_pytorchjobs  # noqa: E402
import test_rayclusters  # noqa: E402
import test_rayjobs  # noqa: E402
from stack import KINDS, condition, is_true  # noqa: E402

MK, NS = test_multikueue.MK, test_multikueue.NS

SWITCHES = ("jobsets", "pytorchjobs", "rayjobs", "rayclusters")
API_ARGS = ("--crd", "jobset,pytorchjob,raycluster,rayjob",
            "--controllers", "jobset,pytorchjob,rayjob,raycluster,job,scheduler,kubelet")


def scenarios(cls):
    """An instance of a kinds.py scenario class, for its make() and done()."""
    return cls.__new__(cls)


class MultiKueueKindsE2E(test_multikueue.ManagerAndWorkers, unittest.TestCase):
    API_ARGS = API_ARGS
    WORKER_INTEGRATIONS = ",".join(["batch/job"] + [KINDS[k][0] for k in SWITCHES])
    MANAGER_KINDS = {k: True for k in SWITCHES}

    def get(self, collection, name, api=None):
        code, body = self.s.kube("GET", (collection % NS) + "/" + name, api=api)
        return body if code == 200 else None

    def manager_workload(self, name):
        for wl in self.s.workloads(NS):
            owners = wl["metadata"].get("ownerReferences", [])
            if owners and owners[0]["name"] == name:
                return wl
        return None

    def pods_in_manager(self):
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods" % NS)
        self.assertEqual(code, 200, body)
        return body["items"]

    def dispatched(self, collection, obj, managed_by_path=("spec", "managedBy")):
        """Creates `obj` in the manager; returns (its Workload admitted in a worker, the winning
        worker, the worker's object)."""
        name = obj["metadata"]["name"]
        code, created = self.s.kube("POST", collection % NS, obj)
        self.assertEqual(code, 201, created)
        managed_by = created
        for key in managed_by_path:
            managed_by = managed_by.get(key, {})
        self.assertEqual(managed_by, MK)  # the manager's webhook gave it to MultiKueue
        wl = self.wait(lambda: (lambda w: w if w and w["status"].get("clusterName") else None)(
            self.manager_workload(name)), "the manager's workload to be admitted in a worker")
        winner = self.workers[wl["status"]["clusterName"]]
        remote = self.wait(lambda: self.get(collection, name, api=winner.api),
                           "the object in the winning worker")
        meta = remote["metadata"]
        self.assertEqual(meta["labels"]["kueue.x-k8s.io/multikueue-origin"], "multikueue")
        self.assertEqual(meta["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"],
                         wl["metadata"]["name"])
        inner = remote
        for key in managed_by_path[:-1]:
            inner = inner.get(key, {})
        self.assertNotIn(managed_by_path[-1], inner)
        for other in self.workers.values():
            if other is not winner:
                self.assertIsNone(self.get(collection, name, api=other.api))
        return wl, winner

    def run_to_completion(self, kind_cls, managed_by_path=("spec", "managedBy")):
        kind = scenarios(kind_cls)
        name = "mk-" + kind.RESOURCE
        collection = kind.COLLECTION
        wl, winner = self.dispatched(collection, kind.make(NS, name, 2, runtime=1),
                                     managed_by_path)
        # It runs in the worker; the manager's object shows the worker's status and completes.
        self.wait(lambda: kind.done(self.get(collection, name) or {}),
                  "the manager's %s to complete from the worker's status" % kind.RESOURCE)
        wl = self.wait(lambda: (lambda w: w if is_true(w, "Finished") else None)(
            self.manager_workload(name)), "the manager's workload to finish")
        self.assertEqual(condition(wl, "Finished")["reason"], "Succeeded")
        self.assertEqual(self.pods_in_manager(), [])  # nothing ran in the manager cluster
        self.wait(lambda: not winner.workloads(), "the copy to be removed")
        self.wait(lambda: self.get(collection, name, api=winner.api) is None,
                  "the worker's object to be removed with its copy")
        self.assertGreaterEqual(
            winner.shim.metric("admitd_shim_multikueue_jobs_created_total"), 1)

    def test_a_jobset_runs_in_a_worker(self):
        self.run_to_completion(test_jobsets.JobSetE2E)

    def test_a_pytorchjob_runs_in_a_worker(self):
        self.run_to_completion(test_pytorchjobs.PyTorchJobE2E, ("spec", "runPolicy", "managedBy"))

    def test_a_rayjob_runs_in_a_worker(self):
        self.run_to_completion(test_rayjobs.RayJobE2E)

    def test_an_elastic_jobset_is_resized_where_it_runs(self):
        kind = scenarios(test_jobsets.JobSetE2E)
        collection = kind.COLLECTION
        obj = kind.make(NS, "mk-grow", 1)  # no runtime: its pods run until it is deleted
        obj["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
        wl, worker = self.dispatched(collection, obj)

        def running():
            code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" % (
                NS, "jobset.sigs.k8s.io%2Fjobset-name%3Dmk-grow"), api=worker.api)
            return [p for p in body.get("items", []) if p["status"].get("phase") == "Running"
                    and not p["metadata"].get("deletionTimestamp")]

        def resize(n):
            code, body = self.s.kube("PATCH", (collection % NS) + "/mk-grow", [
                {"op": "replace", "path": "/spec/replicatedJobs/0/replicas", "value": n}],
                content_type="application/json-patch+json")
            self.assertEqual(code, 200, body)

        def remote_replicas():
            remote = self.get(collection, "mk-grow", api=worker.api) or {}
            return remote.get("spec", {}).get("replicatedJobs", [{}])[0].get("replicas")
        self.wait(lambda: len(running()) == 1, "its pod to run in the worker")
        # Scale-up: the new slice goes to the same worker, the worker's JobSet moves to it and
        # takes its count; the worker counts the pods once.
        resize(3)
        self.wait(lambda: remote_replicas() == 3, "the worker's JobSet to scale up")
        self.wait(lambda: len(running()) == 3, "three pods to run in the worker")
        live = [w for w in self.s.workloads(NS) if not is_true(w, "Finished") and
                w["metadata"]["ownerReferences"][0]["name"] == "mk-grow"]
        self.assertEqual(len(live), 1, live)
        self.assertEqual(live[0]["status"]["clusterName"], worker.name)
        remote = self.get(collection, "mk-grow", api=worker.api)
        self.assertEqual(remote["metadata"]["annotations"]
                         ["kueue.x-k8s.io/prebuilt-workload-name"], live[0]["metadata"]["name"])
        self.wait(lambda: json.loads(worker.admitctl("get", "cq", "cq", "-o", "json"))
                  ["clusterQueue"]["status"]["flavorsUsage"][0]["resources"][0]["total"] == "3",
                  "the worker's usage to be 3")
        # Scale-down in place.
        resize(2)
        self.wait(lambda: remote_replicas() == 2, "the worker's JobSet to scale down")
        self.wait(lambda: len(running()) == 2, "two pods to remain")
        code, _ = self.s.kube("DELETE", (collection % NS) + "/mk-grow")
        self.assertEqual(code, 200)
        self.wait(lambda: self.get(collection, "mk-grow", api=worker.api) is None,
                  "the worker's JobSet to go with its copy")

    def test_a_raycluster_runs_in_a_worker_until_deleted(self):
        collection = "/apis/ray.io/v1/namespaces/%s/rayclusters"
        wl, winner = self.dispatched(collection, test_rayclusters.raycluster(NS, "mk-rc", workers=1))
        # A RayCluster never finishes: the manager's shows the worker's ready state.
        self.wait(lambda: ((self.get(collection, "mk-rc") or {}).get("status") or {})
                  .get("state") == "ready", "the manager's RayCluster to show the worker's state")
        self.assertEqual(self.pods_in_manager(), [])
        code, _ = self.s.kube("DELETE", (collection % NS) + "/mk-rc")
        self.assertEqual(code, 200)
        self.wait(lambda: self.manager_workload("mk-rc") is None, "the manager's workload to go")
        self.wait(lambda: self.get(collection, "mk-rc", api=winner.api) is None,
                  "the worker's RayCluster to go with its copy")


if __name__ == "__main__":
    unittest.main()
