"""RayJob, JobSet and PyTorchJob through real clients: kubectl and python3-kubernetes.

The server runs ``--crd raycluster,rayjob,jobset,pytorchjob`` with their
controllers and the Job controller, scheduler and kubelet. kubectl (1.29 or
later) applies the manifests, waits on their conditions and status, prints
them with the CRDs' printer columns, describes and deletes them;
python3-kubernetes' CustomObjectsApi creates, lists, reads, patches and
deletes a JobSet and reads a RayJob's status. Run with /usr/bin/python3.
"""

import re
import unittest

from clientfixtures import (KubectlServerTest, PythonClientServerTest, needs_kubectl,
                            needs_python_client)
from crdfixtures import ray_cluster_spec_yaml
from harness import wait_until

ARGS = ("--crd", "raycluster,rayjob,jobset,pytorchjob",
        "--controllers", "raycluster,rayjob,jobset,pytorchjob,job,scheduler,kubelet",
        "--node", "n1::cpu=64", "--kubelet-start-delay", "0.05", "--kubelet-grace-cap", "0.2")

RAYJOB_YAML = """apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: rayjob-sample
  annotations:
    fixture.admitd.io/runtime-seconds: "0.3"
spec:
  entrypoint: python /home/ray/samples/sample_code.py
  shutdownAfterJobFinishes: true
  rayClusterSpec:
""" + ray_cluster_spec_yaml("small-group", 1, indent="    ")

JOBSET_YAML = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: sleep
spec:
  replicatedJobs:
  - name: workers
    replicas: %d
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          metadata:
            annotations:
              fixture.admitd.io/runtime-seconds: "0.3"
          spec:
            containers:
            - name: sleep
              image: busybox:1.36
"""

PYTORCHJOB_YAML = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            fixture.admitd.io/runtime-seconds: "0.3"
        spec:
          containers:
          - name: pytorch
            image: kubeflowkatib/pytorch-mnist:v1beta1
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: kubeflowkatib/pytorch-mnist:v1beta1
"""


@needs_kubectl(29)
class WorkloadKubectlTest(KubectlServerTest, unittest.TestCase):
    SERVER_ARGS = ARGS

    def kubectl(self, *args, stdin=None):
        return super().kubectl(*args, stdin=stdin).stdout

    def test_rayjob(self):
        out = self.kubectl("apply", "-f", "-", stdin=RAYJOB_YAML)
        self.assertEqual(out.strip(), "rayjob.ray.io/rayjob-sample created")
        out = self.kubectl("wait", "--for=jsonpath={.status.jobDeploymentStatus}=Complete",
                           "rayjob/rayjob-sample", "--timeout=20s")
        self.assertEqual(out.strip(), "rayjob.ray.io/rayjob-sample condition met")
        rows = self.kubectl("get", "rayjobs").splitlines()
        self.assertEqual(re.split(r"\s{2,}", rows[0].strip()), [
            "NAME", "JOB STATUS", "DEPLOYMENT STATUS", "RAY CLUSTER NAME", "START TIME",
            "END TIME", "AGE"])
        cells = rows[1].split()
        self.assertEqual(cells[:3], ["rayjob-sample", "SUCCEEDED", "Complete"])
        self.assertRegex(cells[3], r"^rayjob-sample-raycluster-[a-z0-9]{5}$")
        out = self.kubectl("describe", "rayjob", "rayjob-sample")
        self.assertRegex(out, r"Job Deployment Status:\s+Complete")
        self.assertRegex(out, r"Message:\s+Job finished successfully\.")
        out = self.kubectl("get", "job", "rayjob-sample", "-o",
                           "jsonpath={.spec.template.spec.containers[0].name}")
        self.assertEqual(out, "ray-job-submitter")
        self.kubectl("delete", "rayjob", "rayjob-sample")
        self.kubectl("wait", "--for=delete", "job/rayjob-sample", "--timeout=20s")

    def test_jobset(self):
        out = self.kubectl("apply", "-f", "-", stdin=JOBSET_YAML % 2)
        self.assertEqual(out.strip(), "jobset.jobset.x-k8s.io/sleep created")
        out = self.kubectl("wait", "--for=condition=Completed", "jobset/sleep", "--timeout=20s")
        self.assertEqual(out.strip(), "jobset.jobset.x-k8s.io/sleep condition met")
        rows = self.kubectl("get", "jobsets").splitlines()
        self.assertEqual(rows[0].split(), ["NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED",
                                           "SUSPENDED", "AGE"])
        self.assertEqual(rows[1].split()[:4], ["sleep", "Completed", "0", "True"])
        out = self.kubectl("get", "jobs", "-l", "jobset.sigs.k8s.io/jobset-name=sleep", "-o",
                           "jsonpath={.items[*].metadata.name}")
        self.assertEqual(out.split(), ["sleep-workers-0", "sleep-workers-1"])
        out = self.kubectl("describe", "jobset", "sleep")
        self.assertRegex(out, r"Terminal State:\s+Completed")
        self.assertRegex(out, r"Succeeded:\s+2")
        out = self.kubectl("apply", "-f", "-", stdin=JOBSET_YAML % 3)
        self.assertEqual(out.strip(), "jobset.jobset.x-k8s.io/sleep configured")
        self.kubectl("delete", "jobset", "sleep")
        self.kubectl("wait", "--for=delete", "job/sleep-workers-0", "job/sleep-workers-1",
                     "--timeout=20s")

    def test_pytorchjob(self):
        out = self.kubectl("apply", "-f", "-", stdin=PYTORCHJOB_YAML)
        self.assertEqual(out.strip(), "pytorchjob.kubeflow.org/mnist created")
        out = self.kubectl("wait", "--for=condition=Succeeded", "pytorchjob/mnist",
                           "--timeout=20s")
        self.assertEqual(out.strip(), "pytorchjob.kubeflow.org/mnist condition met")
        rows = self.kubectl("get", "pytorchjobs").splitlines()
        self.assertEqual(rows[0].split(), ["NAME", "STATE", "AGE"])
        self.assertEqual(rows[1].split()[:2], ["mnist", "Succeeded"])
        out = self.kubectl("get", "pods", "-l", "training.kubeflow.org/job-name=mnist", "-o",
                           "jsonpath={.items[*].metadata.name}")
        self.assertEqual(out.split(), ["mnist-master-0", "mnist-worker-0"])
        out = self.kubectl("describe", "pytorchjob", "mnist")
        self.assertRegex(out, r"Reason:\s+PyTorchJobSucceeded")
        self.kubectl("delete", "pytorchjob", "mnist")
        self.kubectl("wait", "--for=delete", "pod/mnist-master-0", "pod/mnist-worker-0",
                     "--timeout=20s")


@needs_python_client
class WorkloadClientTest(PythonClientServerTest, unittest.TestCase):
    SERVER_ARGS = ARGS
    APIS = {"api": "CustomObjectsApi", "batch": "BatchV1Api"}

    def test_jobset_through_custom_objects_api(self):
        g, v, p = "jobset.x-k8s.io", "v1alpha2", "jobsets"
        body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": "pyjs"},
                "spec": {"suspend": True, "replicatedJobs": [{
                    "name": "w", "replicas": 2, "template": {"spec": {"template": {
                        "metadata": {"annotations": {"fixture.admitd.io/runtime-seconds":
                                                     "0.2"}},
                        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}}]}}
        out = self.api.create_namespaced_custom_object(g, v, "default", p, body)
        self.assertEqual(out["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"],
                         "Indexed")
        names = [o["metadata"]["name"] for o in
                 self.api.list_namespaced_custom_object(g, v, "default", p)["items"]]
        self.assertEqual(names, ["pyjs"])
        st = wait_until(lambda: (lambda o: (o.get("status") or {}).get(
            "replicatedJobsStatus") and o["status"]["replicatedJobsStatus"][0]["suspended"] == 2
            and o)(self.api.get_namespaced_custom_object_status(g, v, "default", p, "pyjs")),
            10, what="suspended child Jobs")
        self.assertEqual(st["status"]["conditions"][0]["type"], "Suspended")
        jobs = self.batch.list_namespaced_job("default",
                                              label_selector="jobset.sigs.k8s.io/jobset-name=pyjs")
        self.assertEqual(sorted(j.metadata.name for j in jobs.items), ["pyjs-w-0", "pyjs-w-1"])
        self.assertTrue(all(j.spec.suspend for j in jobs.items))
        self.api.patch_namespaced_custom_object(g, v, "default", p, "pyjs",
                                                {"spec": {"suspend": False}})
        done = wait_until(lambda: (lambda o: any(
            c["type"] == "Completed" and c["status"] == "True"
            for c in (o.get("status") or {}).get("conditions") or []) and o)(
            self.api.get_namespaced_custom_object(g, v, "default", p, "pyjs")), 10,
            what="Completed")
        self.assertEqual(done["status"]["replicatedJobsStatus"][0]["succeeded"], 2)
        self.api.delete_namespaced_custom_object(g, v, "default", p, "pyjs")
        wait_until(lambda: not self.batch.list_namespaced_job(
            "default", label_selector="jobset.sigs.k8s.io/jobset-name=pyjs").items, 10,
            what="child Jobs deleted")

    def test_rayjob_status_through_custom_objects_api(self):
        body = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "pyrj"},
                "spec": {"entrypoint": "python x.py", "suspend": True, "rayClusterSpec": {
                    "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                        "containers": [{"name": "ray-head", "image": "rayproject/ray:2.41.0"}]}}},
                    "workerGroupSpecs": []}}}
        self.api.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", body)
        st = wait_until(lambda: (lambda o: (o.get("status") or {}).get(
            "jobDeploymentStatus") == "Suspended" and o["status"])(
            self.api.get_namespaced_custom_object_status("ray.io", "v1", "default", "rayjobs",
                                                         "pyrj")), 10, what="Suspended")
        self.assertEqual(st["jobStatus"], "NEW")
        self.api.delete_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "pyrj")


if __name__ == "__main__":
    unittest.main()
