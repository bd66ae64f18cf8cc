"""The scenarios every job kind goes through end to end (admitd, the test cluster with the
kind's simulated operator, admitd-shim with the kind's integration and webhook), written once.

A kind's test module mixes KindScenarios into a unittest.TestCase and says how to make one of its
objects and read it back:

    class JobSetE2E(KindScenarios, unittest.TestCase):
        INTEGRATION = "jobsets"                      # start_shim_with_webhook's switch
        API_ARGS = ("--crd", "jobset", "--controllers", "jobset,job,scheduler,kubelet")
        ...

Scenarios: admitted on its flavor's nodes and completes (its Workload's pod sets, quota back);
does not fit, stays suspended with Kueue's pending Warning, deleted gives its Workload back;
preempted by a higher priority one and readmitted; kubectl apply, get, describe and wait; and,
for a kind that can be elastic (its class has resize_ops), grown through a slice (new pods gated
until it is admitted, usage never counted twice) and shrunk in place (no pod restarted).
"""

import json
import os
import subprocess

from shimcase import T, ShimCase, elastic_gated, grow_and_shrink
from stack import PRIORITY_CLASSES, condition, is_true, queues

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")


class KindScenarios(ShimCase):
    # What a kind's module sets.
    INTEGRATION = None     # start_shim_with_webhook's keyword (jobsets, pytorchjobs, ...)
    API_ARGS = ()          # the test cluster's --crd and --controllers
    COLLECTION = None      # "/apis/<group>/<version>/namespaces/%s/<plural>"
    RESOURCE = None        # kubectl's name: jobset, pytorchjob
    DONE = None            # the condition that says it completed: Completed, Succeeded
    POD_LABEL = None       # the label its pods carry with its name
    CONTROLLER = None      # the reportingComponent of the shim's events on it
    PREFIX = None          # a short prefix for the tests' ClusterQueues
    ALSO = {}              # other integrations enabled beside it ({"rayclusters": True})
    CHILD_KINDS = ("Job",)  # kinds of the objects it makes, which never get Workloads

    def done(self, obj):
        """Whether it completed (default: the DONE condition is true)."""
        return is_true(obj, self.DONE)

    def wait_for(self):
        """kubectl wait's --for that waits for it to complete."""
        return "condition=" + self.DONE

    def make(self, ns, name, pods, runtime=None, priority_class=None):
        """One object of the kind with a queue name and `pods` pods of 1 CPU each."""
        raise NotImplementedError

    def suspended(self, obj):
        raise NotImplementedError

    def templates(self, obj):
        """Its pod templates as the admission left them (name of the pod set, template)."""
        raise NotImplementedError

    @classmethod
    def shim_kinds(cls):
        return dict(cls.ALSO, **{cls.INTEGRATION: True})

    def patch(self, name, ops):
        code, body = self.s.kube("PATCH", (self.COLLECTION % self.ns) + "/" + name, ops,
                                 content_type="application/json-patch+json")
        self.assertEqual(code, 200, body)
        return body

    def create(self, obj):
        code, body = self.s.kube("POST", self.COLLECTION % self.ns, obj)
        self.assertEqual(code, 201, body)
        return body

    def get(self, name):
        code, body = self.s.kube("GET", (self.COLLECTION % self.ns) + "/" + name)
        self.assertEqual(code, 200, body)
        return body

    def pods(self, name):
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s%%3D%s" %
                                 (self.ns, self.POD_LABEL, name))
        self.assertEqual(code, 200, body)
        return body["items"]

    def workloads_of(self, kind):
        return [w for w in self.s.workloads(self.ns)
                if w["metadata"]["ownerReferences"][0]["kind"] == kind]

    def workload(self, name):
        for w in self.s.workloads(self.ns):
            if w["metadata"]["ownerReferences"][0]["name"] == name:
                return w
        return None

    def test_admitted_on_its_flavors_nodes_it_completes_and_gives_quota_back(self):
        s, ns, cq = self.s, self.ns, self.PREFIX + "-fit"
        s.apply(queues(ns, cq, 4))
        self.assertTrue(self.suspended(self.create(self.make(ns, "fits", 3, runtime=1))))
        obj = self.wait(lambda: (lambda o: o if not self.suspended(o) else None)(self.get("fits")),
                        "it to be unsuspended")
        for pod_set, tmpl in self.templates(obj):
            self.assertEqual(tmpl["spec"]["nodeSelector"], {"pool": "a"})
            self.assertEqual(tmpl["metadata"]["labels"]["kueue.x-k8s.io/podset"], pod_set)
            self.assertEqual(tmpl["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"], cq)
        self.wait(lambda: self.done(self.get("fits")), "it to complete")
        self.assertEqual({p["spec"]["nodeName"] for p in self.pods("fits")}, {"n1"})
        wl = self.wait(lambda: (lambda w: w if w and is_true(w, "Finished") else None)(
            self.workload("fits")), "the Workload to finish")
        self.assertEqual(condition(wl, "Finished")["reason"], "Succeeded")
        self.assertEqual(sum(p["count"] for p in wl["spec"]["podSets"]), 3)
        for kind in self.CHILD_KINDS:  # no child got one of its own
            self.assertEqual(self.workloads_of(kind), [], kind)
        self.wait(lambda: s.cq_usage(cq, "pool-a") == "0", "usage to drop to 0")
        reasons = [e["reason"] for e in s.events(ns, "fits")]
        for r in ("CreatedWorkload", "Started", "FinishedWorkload"):
            self.assertIn(r, reasons)
        started = [e for e in s.events(ns, "fits") if e["reason"] == "Started"][0]
        self.assertEqual(started["message"], "Admitted by clusterQueue " + cq)
        self.assertEqual(started["source"]["component"], self.CONTROLLER)

    def test_one_that_does_not_fit_stays_suspended_and_pending_until_deleted(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, self.PREFIX + "-nofit", 2))
        self.create(self.make(ns, "big", 3))
        wl = self.wait(lambda: (lambda w: w if w and condition(w, "QuotaReserved") else None)(
            self.workload("big")), "a Pending condition")
        qr = condition(wl, "QuotaReserved")
        self.assertEqual(qr["status"], "False")
        self.assertIn("insufficient", qr["message"])
        ev = self.wait(lambda: [e for e in s.events(ns, "big") if e["reason"] == qr["reason"]],
                       "the pending Warning on it")
        self.assertEqual(ev[0]["type"], "Warning")
        self.assertEqual(ev[0]["message"], qr["message"])
        self.assertTrue(self.suspended(self.get("big")))
        self.assertEqual(self.pods("big"), [])
        code, _ = s.kube("DELETE", (self.COLLECTION % ns) + "/big")
        self.assertEqual(code, 200)
        self.wait(lambda: self.workload("big") is None, "its Workload to go")

    def test_a_higher_priority_one_preempts_it_and_it_is_readmitted(self):
        s, ns, cq = self.s, self.ns, self.PREFIX + "-pre"
        s.apply(queues(ns, cq, 4, preemption="LowerPriority") + PRIORITY_CLASSES)
        self.create(self.make(ns, "low", 4, runtime=4, priority_class="low"))
        self.wait(lambda: len([p for p in self.pods("low")
                               if p["status"].get("phase") == "Running"]) == 4,
                  "the low one's pods to run")
        self.create(self.make(ns, "high", 2, runtime=1, priority_class="high"))
        self.wait(lambda: self.suspended(self.get("low")), "the low one to be suspended")
        self.wait(lambda: [e for e in s.events(ns, "low") if e["reason"] == "Stopped"],
                  "a Stopped event")
        self.wait(lambda: not self.suspended(self.get("high")), "the high one to start")
        self.assertEqual(condition(self.workload("low"), "Evicted")["reason"], "Preempted")
        self.wait(lambda: self.done(self.get("high")), "the high one to complete")
        self.wait(lambda: self.done(self.get("low")),
                  "the low one to be readmitted and complete", timeout=2 * T)
        self.wait(lambda: s.cq_usage(cq, "pool-a") == "0", "usage to drop to 0")

    def test_an_elastic_one_grows_through_a_slice_and_shrinks_in_place(self):
        if not hasattr(self, "resize_ops"):
            self.skipTest("the kind is not elastic")
        s, ns, cq = self.s, self.ns, self.PREFIX + "-el"
        s.apply(queues(ns, cq, 3))
        obj = self.make(ns, "el", 2)  # no runtime: its pods run until it is deleted
        obj["metadata"].setdefault("annotations", {})["kueue.x-k8s.io/elastic-job"] = "true"
        self.create(obj)
        grow_and_shrink(
            self, cq, 2, 4, 3,
            running=lambda: {p["metadata"]["uid"] for p in self.pods("el")
                             if p["status"].get("phase") == "Running"
                             and not p["metadata"].get("deletionTimestamp")},
            gated=lambda: elastic_gated(self.pods("el")),
            resize=lambda n: self.patch("el", self.resize_ops(n)))
        code, _ = s.kube("DELETE", (self.COLLECTION % ns) + "/el")
        self.assertEqual(code, 200)
        self.wait(lambda: s.cq_usage(cq, "pool-a") == "0", "usage to drop to 0")

    def test_kubectl_applies_gets_describes_and_waits_for_it(self):
        if not os.path.exists(KUBECTL):
            self.skipTest("no kubectl")
        s, ns = self.s, self.ns
        s.apply(queues(ns, self.PREFIX + "-kubectl", 4))

        def kubectl(*args, stdin=None):
            r = subprocess.run([KUBECTL, "--kubeconfig", s.api.kubeconfig] + list(args),
                               input=stdin, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout
        out = kubectl("apply", "-f", "-", stdin=json.dumps(self.make(ns, "ctl", 2, runtime=1)))
        self.assertIn(" created", out)
        self.assertIn("ctl", kubectl("get", self.RESOURCE + "s", "-n", ns))
        kubectl("wait", "--for=" + self.wait_for(), "%s/ctl" % self.RESOURCE, "-n", ns,
                "--timeout=30s")
        described = kubectl("describe", self.RESOURCE, "ctl", "-n", ns)
        self.assertIn("CreatedWorkload", described)
        self.assertIn("Started", described)
