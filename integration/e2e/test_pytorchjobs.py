"""End to end: Kubeflow PyTorchJobs (kubeflow.org/v1) through admitd-shim's PyTorchJob integration
and webhook, admitd and the test cluster with its simulated training operator, as real processes.

One stack for the class; each test has its own namespace and ClusterQueue.
"""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, condition, is_true, queues  # noqa: E402
from stack import wait_with_logs  # noqa: E402

T = 30  # seconds: generous for a loaded 2-core machine
KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")
PYTORCHJOBS = "/apis/kubeflow.org/v1/namespaces/%s/pytorchjobs"
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


def pytorchjob(ns, name, workers=2, cpu="1", runtime=None, priority_class=None):
    """A PyTorchJob as a user writes it: a Master and `workers` Workers (the webhook suspends it
    through spec.runPolicy)."""
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    annotations = {}
    if runtime is not None:
        annotations["fixture.admitd.io/runtime-seconds"] = str(runtime)

    def replica(n):
        return {"replicas": n, "restartPolicy": "Never",
                "template": {"metadata": {"annotations": annotations},
                             "spec": {"containers": [{"name": "pytorch", "image": "pytorch",
                                                      "resources": {"requests": {"cpu": cpu}}}]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)}}}


class PyTorchJobE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=("n1:pool=a:cpu=64", "n2:pool=b:cpu=64"),
                      api_args=("--crd", "pytorchjob",
                                "--controllers", "pytorchjob,scheduler,kubelet"))
        cls.shim = cls.s.start_shim_with_webhook(pytorchjobs=True)
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
        code, body = self.s.kube("POST", PYTORCHJOBS % self.ns, obj)
        self.assertEqual(code, 201, body)
        return body

    def get(self, name):
        code, body = self.s.kube("GET", (PYTORCHJOBS % self.ns) + "/" + name)
        self.assertEqual(code, 200, body)
        return body

    def suspended(self, name):
        return self.get(name)["spec"].get("runPolicy", {}).get("suspend") is True

    def pods(self, name):
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" %
                                 (self.ns, "training.kubeflow.org/job-name%3D" + name))
        self.assertEqual(code, 200, body)
        return body["items"]

    def workload(self, name):
        for w in self.s.workloads(self.ns):
            if w["metadata"]["ownerReferences"][0]["name"] == name:
                return w
        return None

    def test_a_pytorchjob_that_fits_runs_on_its_flavors_nodes_and_gives_quota_back(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-pt-fit", 4))
        created = self.create(pytorchjob(ns, "fits", workers=2, runtime=1))
        self.assertTrue(created["spec"]["runPolicy"]["suspend"])  # the webhook's
        job = self.wait(lambda: (lambda j: j if not self.suspended("fits") else None)(
            self.get("fits")), "the PyTorchJob to be unsuspended")
        for rtype in ("Master", "Worker"):
            tmpl = job["spec"]["pytorchReplicaSpecs"][rtype]["template"]
            self.assertEqual(tmpl["spec"]["nodeSelector"], {"pool": "a"})
            self.assertEqual(tmpl["metadata"]["labels"]["kueue.x-k8s.io/podset"], rtype.lower())
        self.wait(lambda: is_true(self.get("fits"), "Succeeded"), "the PyTorchJob to succeed")
        self.assertEqual({p["spec"]["nodeName"] for p in self.pods("fits")}, {"n1"})
        wl = self.wait(lambda: (lambda w: w if w and is_true(w, "Finished") else None)(
            self.workload("fits")), "the Workload to finish")
        self.assertEqual(condition(wl, "Finished")["reason"], "Succeeded")
        self.assertEqual([(p["name"], p["count"]) for p in wl["spec"]["podSets"]],
                         [("master", 1), ("worker", 2)])
        self.wait(lambda: s.cq_usage("cq-pt-fit", "pool-a") == "0", "usage to drop to 0")
        started = [e for e in s.events(ns, "fits") if e["reason"] == "Started"][0]
        self.assertEqual(started["source"]["component"], "kubeflow.org/pytorchjob-kueue-controller")

    def test_a_pytorchjob_that_does_not_fit_stays_suspended_and_pending(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-pt-nofit", 2))
        self.create(pytorchjob(ns, "big", workers=3))
        wl = self.wait(lambda: (lambda w: w if w and condition(w, "QuotaReserved") else None)(
            self.workload("big")), "a Pending condition")
        qr = condition(wl, "QuotaReserved")
        self.assertEqual(qr["status"], "False")
        ev = self.wait(lambda: [e for e in s.events(ns, "big") if e["reason"] == qr["reason"]],
                       "the pending Warning on the PyTorchJob")
        self.assertEqual(ev[0]["type"], "Warning")
        self.assertTrue(self.suspended("big"))
        self.assertEqual(self.pods("big"), [])
        code, _ = s.kube("DELETE", (PYTORCHJOBS % ns) + "/big")
        self.assertEqual(code, 200)
        self.wait(lambda: self.workload("big") is None, "the deleted PyTorchJob's Workload to go")

    def test_a_higher_priority_pytorchjob_preempts_a_lower_one_which_is_readmitted(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-pt-pre", 4, preemption="LowerPriority") + PRIORITY_CLASSES)
        self.create(pytorchjob(ns, "low", workers=3, runtime=4, priority_class="low"))
        self.wait(lambda: len([p for p in self.pods("low")
                               if p["status"].get("phase") == "Running"]) == 4,
                  "the low PyTorchJob's pods to run")
        self.create(pytorchjob(ns, "high", workers=1, runtime=1, priority_class="high"))
        self.wait(lambda: self.suspended("low"), "the low PyTorchJob to be suspended")
        self.wait(lambda: [e for e in s.events(ns, "low") if e["reason"] == "Stopped"],
                  "a Stopped event")
        self.wait(lambda: not self.suspended("high"), "the high PyTorchJob to start")
        self.assertEqual(condition(self.workload("low"), "Evicted")["reason"], "Preempted")
        self.wait(lambda: is_true(self.get("high"), "Succeeded"), "the high one to succeed")
        self.wait(lambda: is_true(self.get("low"), "Succeeded"),
                  "the low one to be readmitted and succeed", timeout=2 * T)
        self.wait(lambda: s.cq_usage("cq-pt-pre", "pool-a") == "0", "usage to drop to 0")

    @unittest.skipUnless(os.path.exists(KUBECTL), "no kubectl")
    def test_kubectl_applies_gets_describes_and_waits_for_a_pytorchjob(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-pt-kubectl", 4))

        def kubectl(*args, stdin=None):
            r = subprocess.run([KUBECTL, "--kubeconfig", s.api.kubeconfig] + list(args),
                               input=stdin, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout
        out = kubectl("apply", "-f", "-",
                      stdin=json.dumps(pytorchjob(ns, "ctl", workers=1, runtime=1)))
        self.assertIn("pytorchjob.kubeflow.org/ctl created", out)
        self.assertIn("ctl", kubectl("get", "pytorchjobs", "-n", ns))
        kubectl("wait", "--for=condition=Succeeded", "pytorchjob/ctl", "-n", ns, "--timeout=30s")
        described = kubectl("describe", "pytorchjob", "ctl", "-n", ns)
        self.assertIn("CreatedWorkload", described)
        self.assertIn("Started", described)


if __name__ == "__main__":
    unittest.main()
