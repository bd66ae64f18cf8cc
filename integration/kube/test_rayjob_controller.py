"""The simulated KubeRay RayJob controller, over the raw API.

``--crd raycluster,rayjob --controllers rayjob,raycluster,job,scheduler,kubelet``:
K8sJobMode to completion (the RayCluster, the submitter Job, the cluster
deleted after), a failing entrypoint, suspension and resumption, a RayJob
created suspended, SidecarMode, an invalid spec, a foreign ``managedBy`` and
deletion with the finalizer. Run with /usr/bin/python3.
"""

import time
import unittest

from harness import ServerTest, wait_until
from test_workload_controllers import (EXIT_CODE, FAST, JOBS, NS, PODS, RUNTIME, Api, cond,
                                       container)

RAYJOBS = "/apis/ray.io/v1/namespaces/%s/rayjobs"
RAYCLUSTERS = "/apis/ray.io/v1/namespaces/%s/rayclusters"


def rayjob(name, annotations=None, **spec):
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [
        container("ray-head", "rayproject/ray:2.41.0", "1")]}}}
    workers = [{"groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 2,
                "rayStartParams": {}, "template": {"spec": {"containers": [
                    container("ray-worker", "rayproject/ray:2.41.0", "1")]}}}]
    body = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
            "spec": dict({"entrypoint": "python /home/ray/samples/sample_code.py",
                          "rayClusterSpec": {"headGroupSpec": head,
                                             "workerGroupSpecs": workers}}, **spec)}
    if annotations:
        body["metadata"]["annotations"] = annotations
    return body


def deployment_status(o):
    return (o.get("status") or {}).get("jobDeploymentStatus")


class RayJobTest(Api, ServerTest, unittest.TestCase):
    SERVER_ARGS = ("--crd", "raycluster,rayjob",
                   "--controllers", "rayjob,raycluster,job,scheduler,kubelet",
                   "--node", "n1::cpu=64", *FAST)

    def wait_state(self, name, state, timeout=10):
        return self.wait_for(RAYJOBS, name, lambda o: deployment_status(o) == state, state,
                             timeout)

    def test_k8s_job_mode_runs_to_completion(self):
        rj = self.create(RAYJOBS, rayjob("counter", annotations={RUNTIME: "0.6"},
                                         shutdownAfterJobFinishes=True))
        self.assertEqual(rj["spec"]["submissionMode"], "K8sJobMode")  # the CRD's default
        rj = self.wait_state("counter", "Running")
        st = rj["status"]
        self.assertRegex(st["rayClusterName"], r"^counter-raycluster-[a-z0-9]{5}$")
        self.assertRegex(st["jobId"], r"^counter-[a-z0-9]{5}$")
        self.assertEqual(st["dashboardURL"], "%s-head-svc.default.svc.cluster.local:8265"
                         % st["rayClusterName"])
        self.assertEqual(st["rayClusterStatus"]["state"], "ready")
        self.assertEqual(rj["metadata"]["finalizers"], ["ray.io/rayjob-finalizer"])
        owner = {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "counter",
                 "uid": rj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        rc = self.get(RAYCLUSTERS, st["rayClusterName"])
        self.assertEqual(rc["metadata"]["ownerReferences"], [owner])
        self.assertEqual(rc["metadata"]["labels"], {"ray.io/originated-from-cr-name": "counter",
                                                    "ray.io/originated-from-crd": "RayJob"})
        self.assertEqual(rc["spec"], rj["spec"]["rayClusterSpec"])
        self.assertEqual(len(self.items(PODS, "ray.io/cluster=" + st["rayClusterName"])), 2)
        job = self.get(JOBS, "counter")
        self.assertEqual(job["metadata"]["ownerReferences"], [owner])
        self.assertEqual(job["metadata"]["labels"]["ray.io/originated-from-crd"], "RayJob")
        self.assertEqual(job["spec"]["backoffLimit"], 2)
        tmpl = job["spec"]["template"]
        self.assertEqual(tmpl["metadata"]["annotations"], {RUNTIME: "0.6"})
        c = tmpl["spec"]["containers"][0]
        self.assertEqual((c["name"], c["image"], tmpl["spec"]["restartPolicy"]),
                         ("ray-job-submitter", "rayproject/ray:2.41.0", "Never"))
        self.assertEqual(c["resources"], {"limits": {"cpu": "1", "memory": "1Gi"},
                                          "requests": {"cpu": "500m", "memory": "200Mi"}})
        self.assertIn("ray job submit --address http://%s --submission-id %s -- python"
                      % (st["dashboardURL"], st["jobId"]), c["args"][0])
        self.assertEqual([e["name"] for e in c["env"]], [
            "PYTHONUNBUFFERED", "RAY_DASHBOARD_ADDRESS", "RAY_JOB_SUBMISSION_ID"])

        rj = self.wait_state("counter", "Complete")
        st = rj["status"]
        self.assertEqual((st["jobStatus"], st["message"], st["succeeded"], st["failed"]),
                         ("SUCCEEDED", "Job finished successfully.", 1, 0))
        self.assertTrue(st["endTime"] and st["startTime"] and st["rayJobInfo"]["endTime"])
        self.assertNotIn("reason", st)
        # shutdownAfterJobFinishes: the cluster goes, the submitter Job stays.
        wait_until(lambda: self.get(RAYCLUSTERS, st["rayClusterName"]) is None, 5,
                   what="the RayCluster deleted")
        wait_until(lambda: not self.items(PODS, "ray.io/cluster=" + st["rayClusterName"]), 5,
                   what="its pods deleted")
        self.assertEqual(cond(self.get(JOBS, "counter"), "Complete")["status"], "True")

    def test_a_failing_entrypoint_fails_the_rayjob(self):
        self.create(RAYJOBS, rayjob("boom", annotations={RUNTIME: "0.1", EXIT_CODE: "3"},
                                    submitterConfig={"backoffLimit": 0}))
        rj = self.wait_state("boom", "Failed")
        st = rj["status"]
        self.assertEqual((st["jobStatus"], st["reason"], st["message"], st["failed"]),
                         ("FAILED", "AppFailed", "Job entrypoint command failed with exit code 3",
                          1))
        self.assertEqual(cond(self.get(JOBS, "boom"), "Failed")["reason"],
                         "BackoffLimitExceeded")
        # Without shutdownAfterJobFinishes the cluster stays.
        time.sleep(0.2)
        self.assertIsNotNone(self.get(RAYCLUSTERS, st["rayClusterName"]))

    def test_suspend_and_resume(self):
        self.create(RAYJOBS, rayjob("pausing"))
        first = self.wait_state("pausing", "Running")["status"]
        self.patch(RAYJOBS, "pausing", {"spec": {"suspend": True}})
        rj = self.wait_state("pausing", "Suspended")
        self.assertEqual(rj["status"]["jobStatus"], "NEW")
        for k in ("rayClusterName", "jobId", "dashboardURL", "rayClusterStatus"):
            self.assertNotIn(k, rj["status"])
        self.assertIsNone(self.get(RAYCLUSTERS, first["rayClusterName"]))
        self.assertIsNone(self.get(JOBS, "pausing"))
        wait_until(lambda: not self.items(PODS, "ray.io/cluster=" + first["rayClusterName"])
                   and not self.items(PODS, "job-name=pausing"), 5, what="the pods gone")
        self.patch(RAYJOBS, "pausing", {"spec": {"suspend": False}})
        rj = self.wait_state("pausing", "Running")
        self.assertNotEqual(rj["status"]["rayClusterName"], first["rayClusterName"])
        self.assertNotEqual(rj["status"]["jobId"], first["jobId"])
        self.assertIsNotNone(self.get(JOBS, "pausing"))

    def test_created_suspended_makes_no_cluster(self):
        self.create(RAYJOBS, rayjob("queued", suspend=True))
        rj = self.wait_state("queued", "Suspended")
        self.assertEqual(rj["status"]["jobStatus"], "NEW")
        self.assertEqual([o for o in self.items(RAYCLUSTERS)
                          if o["metadata"]["labels"].get("ray.io/originated-from-cr-name")
                          == "queued"], [])

    def test_sidecar_mode_has_no_submitter_job(self):
        self.create(RAYJOBS, rayjob("sidecar", annotations={RUNTIME: "0.5"},
                                    submissionMode="SidecarMode"))
        rj = self.wait_state("sidecar", "Running")
        rc = self.get(RAYCLUSTERS, rj["status"]["rayClusterName"])
        head = rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
        self.assertEqual([c["name"] for c in head], ["ray-head", "ray-job-submitter"])
        self.assertEqual(head[1]["resources"]["requests"], {"cpu": "500m", "memory": "200Mi"})
        rj = self.wait_state("sidecar", "Complete")
        self.assertEqual(rj["status"]["jobStatus"], "SUCCEEDED")
        self.assertIsNone(self.get(JOBS, "sidecar"))

    def test_invalid_spec_and_foreign_manager(self):
        body = rayjob("invalid")
        del body["spec"]["rayClusterSpec"]
        self.create(RAYJOBS, body)
        rj = self.wait_state("invalid", "ValidationFailed")
        self.assertEqual((rj["status"]["reason"], rj["status"]["message"]), (
            "ValidationFailed", "one of RayClusterTemplateSpec or clusterSelector must be set"))
        self.create(RAYJOBS, rayjob("remote", managedBy="kueue.x-k8s.io/multikueue"))
        time.sleep(0.3)
        self.assertNotIn("status", self.get(RAYJOBS, "remote"))

    def test_deletion_removes_the_finalizer_and_collects(self):
        self.create(RAYJOBS, rayjob("doomed"))
        name = self.wait_state("doomed", "Running")["status"]["rayClusterName"]
        self.s.request("DELETE", RAYJOBS % NS + "/doomed")
        wait_until(lambda: self.get(RAYJOBS, "doomed") is None, 5, what="the RayJob gone")
        wait_until(lambda: self.get(RAYCLUSTERS, name) is None and
                   self.get(JOBS, "doomed") is None, 5, what="cluster and submitter deleted")
        wait_until(lambda: not self.items(PODS, "ray.io/cluster=" + name), 5, what="pods gone")


if __name__ == "__main__":
    unittest.main()
