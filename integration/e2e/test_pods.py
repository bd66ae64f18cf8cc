"""End to end: plain pods (KEP-976) through admitd-shim's pod webhook and pod integration, admitd
and the test cluster, as real processes.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, condition, is_true, queues  # noqa: E402
from stack import wait_until as _wait_until  # noqa: E402

T = 30


def pod(ns, name, cpu="1", runtime=None, queue="lq", group=None, total=None):
    """A pod as a user writes it: the shim's webhook adds the gate, label and finalizer."""
    labels = {"kueue.x-k8s.io/queue-name": queue}
    annotations = {}
    if runtime is not None:
        annotations["fixture.admitd.io/runtime-seconds"] = str(runtime)
    if group:
        labels["kueue.x-k8s.io/pod-group-name"] = group
        annotations["kueue.x-k8s.io/pod-group-total-count"] = str(total)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels,
                         "annotations": annotations},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


class PodE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=("n1:pool=a:cpu=64", "n2:pool=b:cpu=64"))
        cls.shim = cls.s.start_shim_with_webhook(pods=True)
        _wait_until(lambda: cls.shim.metric("admitd_shim_leader") == 1, timeout=T,
                    what="the shim to lead")

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def wait(self, fn, what, timeout=T):
        try:
            return _wait_until(fn, timeout=timeout, interval=0.1, what=what)
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, self.s.dump_logs())) from None

    def get_pod(self, ns, name):
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods/%s" % (ns, name))
        return body if code == 200 else None

    def create_pod(self, p):
        code, body = self.s.kube("POST", "/api/v1/namespaces/%s/pods" % p["metadata"]["namespace"],
                                 p)
        self.assertEqual(code, 201, body)
        # The webhook took it in.
        self.assertEqual(body["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true")
        self.assertIn("kueue.x-k8s.io/managed", body["metadata"]["finalizers"])
        self.assertIn({"name": "kueue.x-k8s.io/admission"}, body["spec"]["schedulingGates"])

    def test_single_pods_are_queued_admitted_and_finished(self):
        # KEP-976 story 1.
        s, ns = self.s, "single"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-single", 2))
        for name in ("p1", "p2", "p3"):
            self.create_pod(pod(ns, name, runtime=1))
        # Two fit at once: ungated with the flavor's node selector and Kueue's labels.
        self.wait(lambda: len([n for n in ("p1", "p2", "p3")
                               if not self.get_pod(ns, n)["spec"].get("schedulingGates")]) == 2,
                  "two pods to be ungated")
        ungated = [self.get_pod(ns, n) for n in ("p1", "p2", "p3")
                   if not self.get_pod(ns, n)["spec"].get("schedulingGates")]
        for p in ungated:
            self.assertEqual(p["spec"]["nodeSelector"], {"pool": "a"})
            self.assertEqual(p["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"],
                             "cq-single")
        # All three run and succeed; their finalizers go; quota goes back.
        self.wait(lambda: all(self.get_pod(ns, n)["status"].get("phase") == "Succeeded"
                              for n in ("p1", "p2", "p3")), "every pod to succeed")
        self.wait(lambda: all(not self.get_pod(ns, n)["metadata"].get("finalizers")
                              for n in ("p1", "p2", "p3")), "the finalizers to be removed")
        wls = s.workloads(ns)
        self.assertEqual(len(wls), 3)
        for w in wls:
            self.assertEqual(condition(w, "Finished")["reason"], "Succeeded")
        self.wait(lambda: s.cq_usage("cq-single", "pool-a") == "0", "usage 0")
        started = [e for e in s.events(ns, "p1") if e["reason"] == "Started"]
        self.assertEqual(started[0]["message"], "Admitted by clusterQueue cq-single")
        self.assertEqual(started[0]["source"]["component"], "pod-kueue-controller")

    def test_a_group_is_admitted_only_when_all_its_pods_exist(self):
        # KEP-976 story 2 (the group's first part).
        s, ns = self.s, "group"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-group", 4))
        self.create_pod(pod(ns, "g-1", runtime=1, group="g", total=3))
        self.create_pod(pod(ns, "g-2", runtime=1, group="g", total=3))
        self.wait(lambda: [e for e in s.events(ns, "g-1") if e["reason"] == "ErrWorkloadCompose"]
                  or [e for e in s.events(ns, "g-2") if e["reason"] == "ErrWorkloadCompose"],
                  "the incomplete group's warning")
        self.assertTrue(self.get_pod(ns, "g-1")["spec"].get("schedulingGates"))
        self.create_pod(pod(ns, "g-3", runtime=1, group="g", total=3))
        self.wait(lambda: all(self.get_pod(ns, n)["status"].get("phase") == "Succeeded"
                              for n in ("g-1", "g-2", "g-3")), "the group to run and succeed")
        wls = s.workloads(ns)
        self.assertEqual([w["metadata"]["name"] for w in wls], ["g"])
        self.wait(lambda: is_true(s.workloads(ns)[0], "Finished"), "the group's Workload to finish")
        self.wait(lambda: all(not self.get_pod(ns, n)["metadata"].get("finalizers")
                              for n in ("g-1", "g-2", "g-3")), "the finalizers to be removed")


if __name__ == "__main__":
    unittest.main()
