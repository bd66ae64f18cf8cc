"""End to end: JobSets (jobset.x-k8s.io/v1alpha2) through admitd-shim's JobSet integration and
webhook, admitd and the test cluster with its simulated JobSet controller (child Jobs run by its
Job controller), as real processes.

One stack for the class; each test has its own namespace and ClusterQueue.
"""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, condition, is_true, queues  # noqa: E402
from stack import wait_with_logs  # noqa: E402

T = 30  # seconds: generous for a loaded 2-core machine
KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets"
PRIORITY_CLASSES = """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: low
value: 10
"""


def jobset(ns, name, replicas=2, parallelism=1, cpu="1", runtime=None, priority_class=None):
    """A JobSet as a user writes it: one replicated job "workers" (the webhook suspends it)."""
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    pod_annotations = {}
    if runtime is not None:
        pod_annotations["fixture.admitd.io/runtime-seconds"] = str(runtime)
    pod = {"metadata": {"annotations": pod_annotations},
           "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox",
                                    "resources": {"requests": {"cpu": cpu}}}]}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"replicatedJobs": [{
                "name": "workers", "replicas": replicas,
                "template": {"spec": {"parallelism": parallelism, "completions": parallelism,
                                      "backoffLimit": 0, "template": pod}}}]}}


class JobSetE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=("n1:pool=a:cpu=64", "n2:pool=b:cpu=64"),
                      api_args=("--crd", "jobset",
                                "--controllers", "jobset,job,scheduler,kubelet"))
        cls.shim = cls.s.start_shim_with_webhook(jobsets=True)
        wait_with_logs(cls.s, lambda: cls.shim.metric("admitd_shim_leader") == 1,
                       "the shim to lead", T)

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def setUp(self):
        self.ns = self._testMethodName.replace("test_", "").replace("_", "-")[:30].strip("-")
        self.s.create_namespace(self.ns)

    def wait(self, fn, what, timeout=T):
        return wait_with_logs(self.s, fn, what, timeout)

    def create(self, obj):
        code, body = self.s.kube("POST", JOBSETS % self.ns, obj)
        self.assertEqual(code, 201, body)
        return body

    def get(self, name):
        code, body = self.s.kube("GET", (JOBSETS % self.ns) + "/" + name)
        self.assertEqual(code, 200, body)
        return body

    def child_pods(self, name):
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" %
                                 (self.ns, "jobset.sigs.k8s.io/jobset-name%3D" + name))
        self.assertEqual(code, 200, body)
        return body["items"]

    def workloads_of(self, kind):
        return [w for w in self.s.workloads(self.ns)
                if w["metadata"]["ownerReferences"][0]["kind"] == kind]

    def workload(self, name):
        for w in self.workloads_of("JobSet"):
            if w["metadata"]["ownerReferences"][0]["name"] == name:
                return w
        return None

    def test_a_jobset_that_fits_runs_on_its_flavors_nodes_and_gives_quota_back(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-js-fit", 4))
        created = self.create(jobset(ns, "fits", replicas=2, parallelism=2, runtime=1))
        self.assertTrue(created["spec"]["suspend"])  # the webhook's
        js = self.wait(lambda: (lambda j: j if not j["spec"]["suspend"] else None)(
            self.get("fits")), "the JobSet to be unsuspended")
        tmpl = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        self.assertEqual(tmpl["spec"]["nodeSelector"], {"pool": "a"})
        self.assertEqual(tmpl["metadata"]["labels"]["kueue.x-k8s.io/podset"], "workers")
        self.wait(lambda: is_true(self.get("fits"), "Completed"), "the JobSet to complete")
        pods = self.child_pods("fits")
        self.assertEqual(len(pods), 4)
        self.assertEqual({p["spec"]["nodeName"] for p in pods}, {"n1"})
        wl = self.wait(lambda: (lambda w: w if w and is_true(w, "Finished") else None)(
            self.workload("fits")), "the Workload to finish")
        self.assertEqual(condition(wl, "Finished")["reason"], "Succeeded")
        self.assertEqual(wl["spec"]["podSets"][0]["count"], 4)
        # Its child Jobs never got Workloads of their own.
        self.assertEqual(self.workloads_of("Job"), [])
        self.wait(lambda: s.cq_usage("cq-js-fit", "pool-a") == "0", "usage to drop to 0")
        reasons = [e["reason"] for e in s.events(ns, "fits")]
        for r in ("CreatedWorkload", "Started", "FinishedWorkload"):
            self.assertIn(r, reasons)
        started = [e for e in s.events(ns, "fits") if e["reason"] == "Started"][0]
        self.assertEqual(started["message"], "Admitted by clusterQueue cq-js-fit")
        self.assertEqual(started["source"]["component"], "jobset.x-k8s.io/jobset-kueue-controller")

    def test_a_jobset_that_does_not_fit_stays_suspended_and_pending(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-js-nofit", 2))
        self.create(jobset(ns, "big", replicas=3))
        wl = self.wait(lambda: (lambda w: w if w and condition(w, "QuotaReserved") else None)(
            self.workload("big")), "a Pending condition")
        qr = condition(wl, "QuotaReserved")
        self.assertEqual(qr["status"], "False")
        ev = self.wait(lambda: [e for e in s.events(ns, "big") if e["reason"] == qr["reason"]],
                       "the pending Warning on the JobSet")
        self.assertEqual(ev[0]["type"], "Warning")
        self.assertIn("insufficient", ev[0]["message"])
        self.assertTrue(self.get("big")["spec"]["suspend"])
        self.assertEqual(self.child_pods("big"), [])
        # Deleted: its Workload goes.
        code, _ = s.kube("DELETE", (JOBSETS % ns) + "/big")
        self.assertEqual(code, 200)
        self.wait(lambda: self.workload("big") is None, "the deleted JobSet's Workload to go")

    def test_a_higher_priority_jobset_preempts_a_lower_one_which_is_readmitted(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-js-pre", 4, preemption="LowerPriority") + PRIORITY_CLASSES)
        self.create(jobset(ns, "low", replicas=4, runtime=4, priority_class="low"))
        self.wait(lambda: len([p for p in self.child_pods("low")
                               if p["status"].get("phase") == "Running"]) == 4,
                  "the low JobSet's pods to run")
        self.create(jobset(ns, "high", replicas=2, runtime=1, priority_class="high"))
        self.wait(lambda: self.get("low")["spec"]["suspend"], "the low JobSet to be suspended")
        self.wait(lambda: [e for e in s.events(ns, "low") if e["reason"] == "Stopped"],
                  "a Stopped event")
        self.wait(lambda: not self.get("high")["spec"]["suspend"], "the high JobSet to start")
        self.assertEqual(condition(self.workload("low"), "Evicted")["reason"], "Preempted")
        self.wait(lambda: is_true(self.get("high"), "Completed"), "the high JobSet to complete")
        self.wait(lambda: is_true(self.get("low"), "Completed"),
                  "the low JobSet to be readmitted and complete", timeout=2 * T)
        self.wait(lambda: s.cq_usage("cq-js-pre", "pool-a") == "0", "usage to drop to 0")

    @unittest.skipUnless(os.path.exists(KUBECTL), "no kubectl")
    def test_kubectl_applies_gets_describes_and_waits_for_a_jobset(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-js-kubectl", 4))
        import json
        manifest = json.dumps(jobset(ns, "ctl", replicas=1, runtime=1))

        def kubectl(*args, stdin=None):
            r = subprocess.run([KUBECTL, "--kubeconfig", s.api.kubeconfig] + list(args),
                               input=stdin, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout
        self.assertIn("jobset.jobset.x-k8s.io/ctl created", kubectl("apply", "-f", "-",
                                                                    stdin=manifest))
        self.assertIn("ctl", kubectl("get", "jobsets", "-n", ns))
        kubectl("wait", "--for=condition=Completed", "jobset/ctl", "-n", ns, "--timeout=30s")
        described = kubectl("describe", "jobset", "ctl", "-n", ns)
        self.assertIn("CreatedWorkload", described)
        self.assertIn("Started", described)


if __name__ == "__main__":
    unittest.main()
