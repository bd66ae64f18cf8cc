"""The apps/v1 controllers through webhooks and real clients.

A pod webhook run by the test (HTTPS, self-signed openssl certificate) gates
the pods the Deployment and StatefulSet controllers create, as Kueue's does,
and a denying one is retried; python3-kubernetes' AppsV1Api reads and lists
Deployments, StatefulSets and ReplicaSets; the real kubectl applies, waits on,
prints (``-o wide``), describes and deletes them. Run with /usr/bin/python3.
"""

import re
import time
import unittest

from clientfixtures import (KubectlServerTest, PythonClientServerTest, needs_kubectl,
                            needs_python_client)
from harness import wait_until
from test_apps_controllers import FAST, GATE, AppsApi, cond, deployment, statefulset
from webhookfixtures import ReviewHandler, WebhookServerTest, json_patch

ARGS = ("--controllers", "deployment,statefulset,scheduler,kubelet", "--node", "n1::cpu=32",
        *FAST)


# ------------------------------------------------------------ admission webhooks

class GatingHook(ReviewHandler):
    """/gate adds Kueue's scheduling gate to the pod; /deny refuses pods labelled deny=true."""

    def review(self, path, req):
        self.server.seen.append((path, req))
        resp = {"uid": req["uid"], "allowed": True}
        labels = ((req.get("object") or {}).get("metadata") or {}).get("labels") or {}
        if path.startswith("/gate"):
            resp.update(json_patch([{"op": "add", "path": "/spec/schedulingGates",
                                     "value": [{"name": GATE}]}]))
        elif labels.get("deny") == "true":
            resp = {"uid": req["uid"], "allowed": False,
                    "status": {"code": 403, "message": "pods labelled deny are refused"}}
        return resp


class PodWebhookTest(AppsApi, WebhookServerTest, unittest.TestCase):
    """The controllers' pod creates go through the admission webhooks, as a user's do."""

    NS = "hooked"
    HOOK = GatingHook
    SERVER_ARGS = ARGS + ("--namespace", NS)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.register("Mutating", "gate", "/gate")
        cls.register("Validating", "deny", "/deny")

    @classmethod
    def register(cls, kind, name, path):
        cls.register_hook(
            kind, name, "%s.pods.test" % name, path,
            [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
              "resources": ["pods"]}],
            namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": cls.NS}},
            objectSelector={"matchLabels": {"hook": "yes"}})

    def test_deployment_pods_are_gated_until_admitted(self):
        body = deployment("gated", 2)
        body["spec"]["template"]["metadata"]["labels"]["hook"] = "yes"
        self.create("deployments", body)
        pods = wait_until(lambda: (lambda ps: len(ps) == 2 and ps)(self.pods("gated")), 5,
                          what="2 pods")
        for p in pods:
            self.assertEqual(p["spec"]["schedulingGates"], [{"name": GATE}])
        time.sleep(0.2)
        d = self.obj("deployments", "gated")
        self.assertEqual(d["status"].get("readyReplicas", 0), 0)
        self.assertEqual(cond(d, "Available")["status"], "False")
        self.assertEqual({cond(p, "PodScheduled")["reason"] for p in self.pods("gated")},
                         {"SchedulingGated"})
        reviews = [r for path, r in self.hooks.seen if path == "/gate"
                   and (r["object"]["metadata"].get("labels") or {}).get("app") == "gated"]
        self.assertEqual(len(reviews), 2)
        r = reviews[0]
        self.assertEqual((r["operation"], r["namespace"], r["kind"]["kind"]),
                         ("CREATE", self.NS, "Pod"))
        self.assertEqual(r["object"]["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet")
        for p in pods:
            self.ungate(p["metadata"]["name"])
        d = self.wait_status("deployments", "gated", readyReplicas=2, availableReplicas=2)
        self.assertEqual(cond(d, "Available")["status"], "True")

    def test_statefulset_waits_for_each_admitted_pod(self):
        body = statefulset("gsts", 2)
        body["spec"]["template"]["metadata"]["labels"]["hook"] = "yes"
        self.create("statefulsets", body)
        wait_until(lambda: [p["metadata"]["name"] for p in self.pods("gsts")] == ["gsts-0"], 5,
                   what="gsts-0")
        time.sleep(0.3)
        [p] = self.pods("gsts")
        self.assertEqual(p["spec"]["schedulingGates"], [{"name": GATE}])
        self.ungate("gsts-0")
        wait_until(lambda: len(self.pods("gsts")) == 2, 5, what="gsts-1 once gsts-0 is ready")
        self.assertEqual(self.pods("gsts")[1]["spec"]["schedulingGates"], [{"name": GATE}])

    def test_a_denied_create_is_retried(self):
        body = deployment("denied", 1)
        body["spec"]["template"]["metadata"]["labels"].update({"hook": "yes", "deny": "true"})
        self.create("deployments", body)
        wait_until(lambda: [r for path, r in self.hooks.seen if path == "/deny" and (
            r["object"]["metadata"].get("labels") or {}).get("app") == "denied"], 5,
            what="the validating webhook called")
        time.sleep(0.3)
        self.assertEqual(self.pods("denied"), [])
        # Once the webhook no longer refuses, the ReplicaSet's retry creates the pod.
        self.s.request("DELETE", "/apis/admissionregistration.k8s.io/v1/"
                                 "validatingwebhookconfigurations/deny")
        try:
            wait_until(lambda: len(self.pods("denied")) == 1, 10, what="the pod after the retry")
        finally:
            self.register("Validating", "deny", "/deny")


# ----------------------------------------------------------- python3-kubernetes

@needs_python_client
class AppsClientTest(PythonClientServerTest, unittest.TestCase):
    SERVER_ARGS = ARGS
    APIS = {"apps": "AppsV1Api"}

    def test_deployments_and_statefulsets(self):
        self.apps.create_namespaced_deployment("default", deployment("pyweb", 2))
        self.apps.create_namespaced_stateful_set("default", statefulset("pydb", 2))
        d = wait_until(lambda: (lambda d: d.status.available_replicas == 2 and d)(
            self.apps.read_namespaced_deployment("pyweb", "default")), 10, what="available")
        self.assertEqual((d.spec.replicas, d.status.ready_replicas, d.status.updated_replicas,
                          d.status.observed_generation), (2, 2, 2, 1))
        self.assertEqual({c.type: c.status for c in d.status.conditions},
                         {"Available": "True", "Progressing": "True"})
        sts = wait_until(lambda: (lambda s: s.status.ready_replicas == 2 and s)(
            self.apps.read_namespaced_stateful_set("pydb", "default")), 10, what="ready")
        self.assertEqual(sts.status.current_revision, sts.status.update_revision)
        self.assertEqual((sts.status.replicas, sts.status.current_replicas), (2, 2))
        names = [x.metadata.name for x in self.apps.list_namespaced_deployment("default").items]
        self.assertEqual(names, ["pyweb"])
        self.assertEqual([x.metadata.name for x in
                          self.apps.list_stateful_set_for_all_namespaces().items], ["pydb"])
        rs = self.apps.list_namespaced_replica_set("default", label_selector="app=pyweb").items
        self.assertEqual([r.status.ready_replicas for r in rs], [2])
        st = self.apps.read_namespaced_deployment_status("pyweb", "default")
        self.assertEqual(st.status.replicas, 2)
        self.apps.patch_namespaced_stateful_set("pydb", "default", {"spec": {"replicas": 1}})
        wait_until(lambda: self.apps.read_namespaced_stateful_set(
            "pydb", "default").status.replicas == 1, 10, what="scaled to 1")
        self.apps.delete_namespaced_deployment("pyweb", "default")
        self.apps.delete_namespaced_stateful_set("pydb", "default")


# ----------------------------------------------------------------------- kubectl

DEPLOYMENT_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: kweb
spec:
  replicas: %d
  selector:
    matchLabels: {app: kweb}
  template:
    metadata:
      labels: {app: kweb}
    spec:
      containers:
      - name: web
        image: %s
"""

STATEFULSET_YAML = """apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: kdb
spec:
  replicas: 2
  serviceName: kdb
  selector:
    matchLabels: {app: kdb}
  template:
    metadata:
      labels: {app: kdb}
    spec:
      containers:
      - name: db
        image: postgres:16
"""


@needs_kubectl(29)
class AppsKubectlTest(KubectlServerTest, unittest.TestCase):
    SERVER_ARGS = ARGS

    def kubectl(self, *args, stdin=None):
        return super().kubectl(*args, stdin=stdin).stdout

    def test_discovery(self):
        out = self.kubectl("api-resources", "--api-group=apps", "--no-headers")
        rows = {tuple(line.split()) for line in out.splitlines()}
        self.assertEqual(rows, {("deployments", "deploy", "apps/v1", "true", "Deployment"),
                                ("replicasets", "rs", "apps/v1", "true", "ReplicaSet"),
                                ("statefulsets", "sts", "apps/v1", "true", "StatefulSet")})

    def test_deployment_apply_wait_describe_delete(self):
        out = self.kubectl("apply", "-f", "-", stdin=DEPLOYMENT_YAML % (2, "nginx:1.27"))
        self.assertEqual(out.strip(), "deployment.apps/kweb created")
        out = self.kubectl("wait", "--for=condition=Available", "deploy/kweb", "--timeout=20s")
        self.assertEqual(out.strip(), "deployment.apps/kweb condition met")
        out = self.kubectl("apply", "-f", "-", stdin=DEPLOYMENT_YAML % (3, "nginx:1.28"))
        self.assertEqual(out.strip(), "deployment.apps/kweb configured")
        self.kubectl("wait", "--for=jsonpath={.status.updatedReplicas}=3", "deploy/kweb",
                     "--timeout=20s")
        self.kubectl("wait", "--for=jsonpath={.status.availableReplicas}=3", "deploy/kweb",
                     "--timeout=20s")
        rows = self.kubectl("get", "deploy", "kweb", "-o", "wide").splitlines()
        self.assertEqual(rows[0].split(), ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE",
                                           "CONTAINERS", "IMAGES", "SELECTOR"])
        self.assertEqual(rows[1].split()[:4], ["kweb", "3/3", "3", "3"])
        self.assertEqual(rows[1].split()[5:], ["web", "nginx:1.28", "app=kweb"])
        rows = self.kubectl("get", "rs", "--no-headers").splitlines()
        self.assertEqual(sorted(r.split()[1:4] for r in rows), [["0", "0", "0"],
                                                                ["3", "3", "3"]])
        out = self.kubectl("describe", "deploy", "kweb")
        self.assertRegex(out, r"Replicas:\s+3 desired \| 3 updated \| 3 total \| 3 available")
        self.assertRegex(out, r"NewReplicaSet:\s+kweb-[a-z0-9]+ \(3/3 replicas created\)")
        self.assertRegex(out, r"Available\s+True\s+MinimumReplicasAvailable")
        out = self.kubectl("delete", "deploy", "kweb")
        self.assertEqual(out.strip(), 'deployment.apps "kweb" deleted')
        self.kubectl("wait", "--for=delete", "pod", "-l", "app=kweb", "--timeout=20s")

    def test_statefulset_apply_wait_describe_delete(self):
        out = self.kubectl("apply", "-f", "-", stdin=STATEFULSET_YAML)
        self.assertEqual(out.strip(), "statefulset.apps/kdb created")
        self.kubectl("wait", "--for=jsonpath={.status.readyReplicas}=2", "sts/kdb",
                     "--timeout=20s")
        rows = self.kubectl("get", "sts", "--no-headers").split()
        self.assertEqual(rows[:2], ["kdb", "2/2"])
        out = self.kubectl("get", "pods", "-l", "app=kdb", "-o",
                           "jsonpath={.items[*].metadata.name}")
        self.assertEqual(out.split(), ["kdb-0", "kdb-1"])
        out = self.kubectl("describe", "sts", "kdb")
        self.assertRegex(out, r"Replicas:\s+2 desired \| 2 total")
        self.assertRegex(out, r"Pods Status:\s+2 Running / 0 Waiting / 0 Succeeded / 0 Failed")
        self.assertTrue(re.search(r"Update Strategy:\s+RollingUpdate", out), out)
        self.kubectl("delete", "sts", "kdb")
        self.kubectl("wait", "--for=delete", "pod/kdb-0", "pod/kdb-1", "--timeout=20s")


if __name__ == "__main__":
    unittest.main()
