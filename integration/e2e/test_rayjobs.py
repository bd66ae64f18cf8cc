"""End to end: KubeRay RayJobs (ray.io/v1) through admitd-shim's RayJob integration and webhook,
admitd and the test cluster with its simulated KubeRay, as real processes: the scenarios of
kinds.py, with the RayCluster integration on too (a RayJob's own RayCluster and its submitter Job
never get Workloads), a RayJob on an existing cluster skipped, and the webhook's refusals.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kinds import KindScenarios  # noqa: E402
from shimcase import elastic_gated, grow_and_shrink  # noqa: E402
from stack import condition, queues  # noqa: E402


class RayJobE2E(KindScenarios, unittest.TestCase):
    INTEGRATION = "rayjobs"
    ALSO = {"rayclusters": True}
    API_ARGS = ("--crd", "raycluster,rayjob",
                "--controllers", "rayjob,raycluster,job,scheduler,kubelet")
    COLLECTION = "/apis/ray.io/v1/namespaces/%s/rayjobs"
    RESOURCE = "rayjob"
    CONTROLLER = "ray.io/rayjob-kueue-controller"
    PREFIX = "cq-rj"
    CHILD_KINDS = ("Job", "RayCluster")

    def make(self, ns, name, pods, runtime=None, priority_class=None):
        """A head, `pods` - 2 workers and a submitter, 1 CPU each; the Ray job runs `runtime`
        seconds (the fixture's annotation, which KubeRay's simulation copies to the submitter)."""
        labels = {"kueue.x-k8s.io/queue-name": "lq"}
        if priority_class:
            labels["kueue.x-k8s.io/priority-class"] = priority_class
        annotations = {}
        if runtime is not None:
            annotations["fixture.admitd.io/runtime-seconds"] = str(runtime)

        def template(name):
            return {"spec": {"containers": [{"name": name, "image": "rayproject/ray:2.9",
                                             "resources": {"requests": {"cpu": "1"}}}]}}
        workers = []
        if pods > 2:
            workers = [{"groupName": "workers", "replicas": pods - 2,
                        "template": template("ray-worker")}]
        return {"apiVersion": "ray.io/v1", "kind": "RayJob",
                "metadata": {"name": name, "namespace": ns, "labels": labels,
                             "annotations": annotations},
                "spec": {"entrypoint": "python job.py",
                         "shutdownAfterJobFinishes": True,
                         "ttlSecondsAfterFinished": 20,  # its pods stay a while to be looked at
                         "submitterPodTemplate": dict(template("submitter"), spec=dict(
                             template("submitter")["spec"], restartPolicy="Never")),
                         "rayClusterSpec": {"headGroupSpec": {"template": template("ray-head")},
                                            "workerGroupSpecs": workers}}}

    def suspended(self, obj):
        return obj["spec"].get("suspend") is True

    def done(self, obj):
        return (obj.get("status") or {}).get("jobDeploymentStatus") == "Complete"

    def wait_for(self):
        return "jsonpath={.status.jobDeploymentStatus}=Complete"

    def templates(self, obj):
        spec = obj["spec"]
        cluster = spec["rayClusterSpec"]
        out = [("head", cluster["headGroupSpec"]["template"])]
        out += [(g["groupName"], g["template"]) for g in cluster.get("workerGroupSpecs", [])]
        return out + [("submitter", spec["submitterPodTemplate"])]

    def pods(self, name):
        """Its cluster's pods (ray.io/cluster) and its submitter Job's."""
        cluster = (self.get(name).get("status") or {}).get("rayClusterName")
        out = []
        for selector in (["ray.io/cluster%3D" + cluster] if cluster else []) + \
                ["batch.kubernetes.io/job-name%3D" + name]:
            code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" %
                                     (self.ns, selector))
            self.assertEqual(code, 200, body)
            out += body["items"]
        return out

    def test_a_rayjob_on_an_existing_cluster_gets_no_workload(self):
        # As in Kueue: the webhook suspends it (it has a queue name), and the framework skips it
        # (spec.clusterSelector): it never gets a Workload, so it stays suspended.
        s, ns = self.s, self.ns
        s.apply(queues(ns, self.PREFIX + "-sel", 4))
        job = self.make(ns, "shared", 2)
        del job["spec"]["rayClusterSpec"]
        del job["spec"]["submitterPodTemplate"]
        job["spec"]["clusterSelector"] = {"ray.io/cluster": "shared-cluster"}
        self.assertTrue(self.suspended(self.create(job)))
        # One created after it is admitted: the shim has seen both by then.
        self.create(self.make(ns, "probe", 2, runtime=1))
        self.wait(lambda: self.workload("probe"), "the probe's Workload")
        self.assertIsNone(self.workload("shared"))
        self.assertTrue(self.suspended(self.get("shared")))
        self.assertEqual([e for e in s.events(ns, "shared") if e["reason"] == "CreatedWorkload"],
                         [])

    def test_an_elastic_rayjob_follows_its_clusters_workers(self):
        # The autoscaler's part is played by hand: the RayCluster's worker replicas are patched.
        s, ns, cq = self.s, self.ns, self.PREFIX + "-el"
        s.apply(queues(ns, cq, 4))
        job = self.make(ns, "el", 3)  # head, one worker, submitter; running until deleted
        job["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] = "true"
        created = self.create(job)
        worker_template = created["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]
        self.assertEqual(worker_template["spec"]["schedulingGates"],
                         [{"name": "kueue.x-k8s.io/elastic-job"}])
        # The cluster of the admitted run (a suspended RayJob's first one goes again).
        cluster = self.wait(lambda: (lambda st: st.get("rayClusterName") if st.get(
            "jobDeploymentStatus") == "Running" else None)(self.get("el").get("status") or {}),
            "it to run on its cluster")

        def resize(pods):  # the head and the submitter, and pods - 2 workers
            code, body = s.kube(
                "PATCH", "/apis/ray.io/v1/namespaces/%s/rayclusters/%s" % (ns, cluster),
                [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas",
                  "value": pods - 2}], content_type="application/json-patch+json")
            self.assertEqual(code, 200, body)
        grow_and_shrink(
            self, cq, 3, 5, 4,
            running=lambda: {p["metadata"]["uid"] for p in self.pods("el")
                             if p["status"].get("phase") == "Running"
                             and not p["metadata"].get("deletionTimestamp")},
            gated=lambda: elastic_gated(self.pods("el")), resize=resize)
        # Each slice is named by the cluster's generation, which the RayJob records.
        self.assertEqual(self.get("el")["metadata"]["annotations"]
                         ["kueue.x-k8s.io/raycluster-generation"], "3")

    def test_a_rayjob_kuberay_finds_invalid_is_on_hold_and_holds_no_quota(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, self.PREFIX + "-hold", 4))
        job = self.make(ns, "invalid", 2)
        job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"] = []
        self.create(job)
        self.wait(lambda: (self.get("invalid").get("status") or {}).get(
            "jobDeploymentStatus") == "ValidationFailed", "KubeRay to find it invalid")
        # On hold: it holds no quota and waits, not requeued. Submitted before KubeRay looked
        # (and admitted), its Workload is deactivated and its quota released; otherwise it has
        # none.
        self.create(self.make(ns, "probe", 2, runtime=1))
        self.wait(lambda: self.workload("probe"), "the probe's Workload")
        def holds_no_quota():
            w = self.workload("invalid")
            if w is None:
                return True  # never submitted
            requeued = condition(w, "Requeued")
            return (w["spec"].get("active") is False and "admission" not in w["status"] and
                    requeued is not None and requeued["status"] == "False")
        self.wait(holds_no_quota, "it to hold no quota")

    def test_the_webhook_refuses_what_kueue_refuses(self):
        s, ns = self.s, self.ns
        job = self.make(ns, "bad", 2)
        job["spec"]["shutdownAfterJobFinishes"] = False
        code, body = s.kube("POST", self.COLLECTION % ns, job)
        self.assertEqual(code, 403, body)  # a denial, as controller-runtime answers Kueue's errors
        self.assertIn("spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job "
                      "should delete the cluster after finishing", body["message"])


if __name__ == "__main__":
    unittest.main()
