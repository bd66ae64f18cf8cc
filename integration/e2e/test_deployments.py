"""End to end: Deployments and StatefulSets (apps/v1), whose pods admitd admits as pods, through
admitd-shim's webhooks and the pod integration they enable, admitd and the test cluster with its
simulated Deployment, ReplicaSet and StatefulSet controllers, as real processes.

A Deployment's pods are single pods, each with its Workload; a StatefulSet's pods are one
serving pod group, admitted at once (fast admission) and named after the StatefulSet.
"""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kinds import KUBECTL  # noqa: E402
from shimcase import ShimCase, elastic_gated, grow_and_shrink  # noqa: E402
from stack import PRIORITY_CLASSES, condition, queues  # noqa: E402


def template(app, cpu="1"):
    return {"metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": app, "image": "nginx",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def deployment(ns, name, replicas):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": template(name)}}


def statefulset(ns, name, replicas):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"replicas": replicas, "serviceName": name,
                     "selector": {"matchLabels": {"app": name}}, "template": template(name)}}


def with_priority(obj, priority_class):
    obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = priority_class
    return obj


def gated(pod):
    return any(g["name"] == "kueue.x-k8s.io/admission"
               for g in pod["spec"].get("schedulingGates") or [])


class ServingE2E(ShimCase, unittest.TestCase):
    API_ARGS = ("--controllers", "deployment,statefulset,scheduler,kubelet")
    KINDS = {"deployments": True, "statefulsets": True}

    def pods(self, app):
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods?labelSelector=app%%3D%s" %
                                 (self.ns, app))
        self.assertEqual(code, 200, body)
        return [p for p in body["items"] if not p["metadata"].get("deletionTimestamp")]

    def running(self, app):
        return [p for p in self.pods(app) if p["status"].get("phase") == "Running"]

    def create(self, obj):
        plural = obj["kind"].lower() + "s"
        code, body = self.s.kube("POST", "/apis/apps/v1/namespaces/%s/%s" % (self.ns, plural),
                                 obj)
        self.assertEqual(code, 201, body)
        return body

    def patch(self, kind, name, patch):
        code, body = self.s.kube(
            "PATCH", "/apis/apps/v1/namespaces/%s/%ss/%s" % (self.ns, kind, name), patch,
            content_type="application/merge-patch+json")
        return code, body

    def test_each_pod_of_a_deployment_is_admitted_on_its_own(self):
        s, ns, cq = self.s, self.ns, "cq-deploy"
        s.apply(queues(ns, cq, 2))
        created = self.create(deployment(ns, "web", 3))
        meta = created["spec"]["template"]["metadata"]
        self.assertEqual(meta["annotations"]["kueue.x-k8s.io/pod-suspending-parent"],
                         "deployment")
        self.assertEqual(meta["labels"]["kueue.x-k8s.io/managed"], "true")
        self.assertEqual(meta["labels"]["kueue.x-k8s.io/queue-name"], "lq")
        # Two fit: they run on the flavor's nodes; the third waits gated for quota.
        self.wait(lambda: len(self.running("web")) == 2, "two pods to run")
        self.wait(lambda: len([p for p in self.pods("web") if gated(p)]) == 1,
                  "the third to wait gated")
        for p in self.running("web"):
            self.assertEqual(p["spec"]["nodeSelector"], {"pool": "a"})
            self.assertNotIn("kueue.x-k8s.io/managed", p["metadata"].get("finalizers") or [])
        workloads = self.wait(lambda: (lambda w: w if len(w) == 3 else None)(s.workloads(ns)),
                              "a Workload per pod")
        self.assertTrue(all(w["metadata"]["name"].startswith("pod-web-") for w in workloads))
        pending = [w for w in workloads if condition(w, "QuotaReserved")
                   and condition(w, "QuotaReserved")["status"] == "False"]
        self.assertEqual(len(pending), 1)
        self.assertEqual(s.cq_usage(cq, "pool-a"), "2")
        # More quota: the third is admitted too.
        s.apply(queues(ns, cq, 3))
        self.wait(lambda: len(self.running("web")) == 3, "the third pod to run")
        # Deleted: its pods and their Workloads go, and the quota with them.
        code, _ = s.kube("DELETE", "/apis/apps/v1/namespaces/%s/deployments/web" % ns)
        self.assertEqual(code, 200)
        self.wait(lambda: s.workloads(ns) == [], "the Workloads to go")
        self.wait(lambda: s.cq_usage(cq, "pool-a") == "0", "usage to drop to 0")

    def test_a_deployments_queue_is_fixed_while_a_pod_is_ready(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-deploy-q", 2))
        self.create(deployment(ns, "api", 1))
        self.wait(lambda: (lambda d: (d.get("status") or {}).get("readyReplicas") == 1)(
            s.kube("GET", "/apis/apps/v1/namespaces/%s/deployments/api" % ns)[1]),
            "a ready replica")
        code, body = self.patch("deployment", "api",
                                {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "other"}}})
        self.assertEqual(code, 403, body)
        self.assertIn("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"other\": "
                      "field is immutable", body["message"])

    def test_a_statefulset_is_one_serving_group(self):
        s, ns, cq = self.s, self.ns, "cq-sts"
        s.apply(queues(ns, cq, 4))
        created = self.create(statefulset(ns, "db", 3))
        self.assertEqual(created["spec"]["template"]["metadata"]["annotations"],
                         {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"})
        # Admitted as a whole as its first pod appears: every ordinal comes up in turn.
        self.wait(lambda: len(self.running("db")) == 3, "the three pods to run")
        workloads = s.workloads(ns)
        self.assertEqual(len(workloads), 1)
        wl = workloads[0]
        self.assertTrue(wl["metadata"]["name"].startswith("statefulset-db-"), wl["metadata"])
        self.assertEqual([(p["name"], p["count"]) for p in wl["spec"]["podSets"]], [("main", 3)])
        for p in self.running("db"):
            labels = p["metadata"]["labels"]
            self.assertEqual(labels["kueue.x-k8s.io/pod-group-name"], wl["metadata"]["name"])
            self.assertEqual(p["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"], "main")
            self.assertEqual(p["spec"]["nodeSelector"], {"pool": "a"})
        self.assertEqual(s.cq_usage(cq, "pool-a"), "3")
        # Resizing other than to or from zero is refused; to zero gives the quota back.
        code, body = self.patch("statefulset", "db", {"spec": {"replicas": 2}})
        self.assertEqual(code, 403, body)
        self.assertIn("spec.replicas: Invalid value: 2: field is immutable", body["message"])
        code, body = self.patch("statefulset", "db", {"spec": {"replicas": 0}})
        self.assertEqual(code, 200, body)
        self.wait(lambda: self.pods("db") == [], "its pods to go")
        self.wait(lambda: s.cq_usage(cq, "pool-a") == "0", "usage to drop to 0")

    def test_a_statefulset_that_does_not_fit_waits_gated(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-sts-nofit", 2))
        self.create(statefulset(ns, "big", 3))
        # Its first pod waits gated (the next ordinals are not created before it runs).
        self.wait(lambda: (lambda p: len(p) == 1 and gated(p[0]))(self.pods("big")),
                  "the first pod to wait gated")
        wl = self.wait(lambda: (lambda w: w[0] if w and condition(w[0], "QuotaReserved") else None)(
            s.workloads(ns)), "its pending Workload")
        self.assertEqual(condition(wl, "QuotaReserved")["status"], "False")
        self.assertIn("insufficient", condition(wl, "QuotaReserved")["message"])
        self.assertEqual(wl["spec"]["podSets"][0]["count"], 3)

    def elastic_grows_and_shrinks(self, kind, obj):
        """An elastic `kind` of 2 pods is one Workload (pod set main) grown and shrunk through
        slices (shimcase.grow_and_shrink), its pods ungated with their flavor."""
        s, ns, cq = self.s, self.ns, "cq-el-" + kind.lower()
        s.apply(queues(ns, cq, 3))
        app = obj["metadata"]["name"]
        obj["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
        template = self.create(obj)["spec"]["template"]
        self.assertEqual(template["spec"]["schedulingGates"],
                         [{"name": "kueue.x-k8s.io/elastic-job"}])
        self.assertNotIn("kueue.x-k8s.io/pod-suspending-parent",
                         template["metadata"].get("annotations") or {})

        def resize(n):
            code, body = self.patch(kind.lower(), app, {"spec": {"replicas": n}})
            self.assertEqual(code, 200, body)
        self.wait(lambda: len(self.running(app)) == 2, "its two pods to be ungated and run")
        for p in self.running(app):
            self.assertEqual(p["spec"]["nodeSelector"], {"pool": "a"})  # ungated with its flavor
        wl = [w for w in s.workloads(ns) if w["metadata"]["ownerReferences"][0]["kind"] == kind]
        self.assertEqual([(p["name"], p["count"]) for p in wl[0]["spec"]["podSets"]],
                         [("main", 2)])
        grow_and_shrink(self, cq, 2, 4, 3,
                        running=lambda: {p["metadata"]["uid"] for p in self.running(app)},
                        gated=lambda: elastic_gated(self.pods(app)), resize=resize)
        code, _ = s.kube("DELETE", "/apis/apps/v1/namespaces/%s/%ss/%s" % (ns, kind.lower(), app))
        self.assertEqual(code, 200)
        self.wait(lambda: s.cq_usage(cq, "pool-a") == "0", "usage to drop to 0")

    def test_an_elastic_statefulset_is_one_workload_resized_through_slices(self):
        sts = statefulset(self.ns, "els", 2)
        sts["spec"]["podManagementPolicy"] = "Parallel"
        self.elastic_grows_and_shrinks("StatefulSet", sts)

    def test_an_elastic_deployment_is_one_workload_resized_through_slices(self):
        self.elastic_grows_and_shrinks("Deployment", deployment(self.ns, "eld", 2))

    def preempted(self, kind, make):
        """A lower priority `kind` of 2 pods runs under a quota of 2; a higher priority one takes
        the quota: the lower one's pods are stopped (TerminationTarget, deleted) and come back
        gated, to wait; the higher one's run."""
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-pre-" + kind.lower(), 2, preemption="LowerPriority") +
                PRIORITY_CLASSES)
        self.create(with_priority(make(ns, "low", 2), "low"))
        self.wait(lambda: len(self.running("low")) == 2, "the low one's pods to run")
        self.create(with_priority(make(ns, "high", 2), "high"))
        self.wait(lambda: len(self.running("high")) == 2, "the high one's pods to run")
        self.wait(lambda: len([p for p in self.pods("low") if gated(p)]) == 2,
                  "the low one's pods to come back gated")
        self.assertEqual(self.running("low"), [])

    def test_a_higher_priority_deployment_preempts_a_lower_ones_pods(self):
        self.preempted("Deployment", deployment)

    def test_a_higher_priority_statefulset_preempts_a_lower_ones_group(self):
        def parallel(ns, name, replicas):
            sts = statefulset(ns, name, replicas)
            sts["spec"]["podManagementPolicy"] = "Parallel"
            return sts
        self.preempted("StatefulSet", parallel)

    def test_kubectl_applies_gets_waits_for_and_scales_a_statefulset(self):
        if not os.path.exists(KUBECTL):
            self.skipTest("no kubectl")
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-kubectl-sts", 4))

        def kubectl(*args, stdin=None):
            r = subprocess.run([KUBECTL, "--kubeconfig", s.api.kubeconfig] + list(args),
                               input=stdin, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout
        self.assertIn(" created", kubectl("apply", "-f", "-",
                                          stdin=json.dumps(statefulset(ns, "web", 2))))
        self.assertIn("web", kubectl("get", "statefulsets", "-n", ns))
        kubectl("wait", "--for=jsonpath={.status.readyReplicas}=2", "statefulset/web", "-n", ns,
                "--timeout=30s")
        self.assertIn("kueue.x-k8s.io/pod-suspending-parent",
                      kubectl("describe", "statefulset", "web", "-n", ns))
        kubectl("scale", "statefulset/web", "--replicas=0", "-n", ns)
        self.wait(lambda: self.pods("web") == [], "its pods to go")
        self.wait(lambda: s.workloads(ns) == [], "its Workload to go with them")

    def test_kubectl_scales_and_describes_them(self):
        if not os.path.exists(KUBECTL):
            self.skipTest("no kubectl")
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-kubectl", 4))

        def kubectl(*args):
            r = subprocess.run([KUBECTL, "--kubeconfig", s.api.kubeconfig] + list(args),
                               capture_output=True, text=True, timeout=60)
            return r
        self.create(deployment(ns, "ctl", 1))
        self.wait(lambda: len(self.running("ctl")) == 1, "its pod to run")
        r = kubectl("scale", "deployment/ctl", "--replicas=2", "-n", ns)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.wait(lambda: len(self.running("ctl")) == 2, "the new pod to be admitted and run")
        r = kubectl("describe", "deployment", "ctl", "-n", ns)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kueue.x-k8s.io/pod-suspending-parent", r.stdout)


if __name__ == "__main__":
    unittest.main()
