"""Admission webhooks: the server calls an HTTPS webhook server run by the test.

The webhook server (http.server + ssl) uses a self-signed certificate made with
openssl for 127.0.0.1, localhost and hooks.system.svc (the service DNS name of
``clientConfig.service {namespace: system, name: hooks}``, which the API server
reaches through ``--service-address system/hooks=127.0.0.1:PORT``).
"""

import socket
import subprocess
import time
import unittest

import webhooks
from clientfixtures import KUBECTL
from resources import RES_BY_KEY
from store import AdmissionRequest
from webhookfixtures import AR, ReviewHandler, WebhookServerTest, ca_bundle, json_patch, make_cert

MUTATED = "webhook.test/mutated"

JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {ns}
  labels:
    app: demo{extra}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
"""


class WebhookHandler(ReviewHandler):
    """Paths: /mutate, /validate, /wronguid, /slow (sleeps 1.5 s, then allows)."""

    def review(self, path, req):
        self.server.seen.append((path, self.path, req))
        resp = {"uid": req["uid"], "allowed": True}
        obj = req.get("object") or {}
        labels = (obj.get("metadata") or {}).get("labels")
        if path == "/mutate":
            ops = [] if labels is not None else [
                {"op": "add", "path": "/metadata/labels", "value": {}}]
            ops += [{"op": "add", "path": "/metadata/labels/webhook.test~1mutated",
                     "value": "true"},
                    {"op": "add", "path": "/spec/suspend", "value": True}]
            resp.update(json_patch(ops))
        elif path == "/validate":
            old = ((req.get("oldObject") or {}).get("metadata") or {}).get("labels") or {}
            if (labels or {}).get("deny") == "true":
                resp = {"uid": req["uid"], "allowed": False, "status": {
                    "code": 403, "reason": "Forbidden",
                    "message": 'metadata.labels[deny]: Forbidden: jobs may not say "deny"'}}
            elif req["operation"] == "DELETE" and old.get("protected") == "true":
                resp = {"uid": req["uid"], "allowed": False,
                        "status": {"message": "protected"}}
        elif path == "/wronguid":
            resp["uid"] = "not-" + req["uid"]
        elif path == "/slow":
            time.sleep(1.5)
        return resp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebhookTest(WebhookServerTest, unittest.TestCase):
    HOOK = WebhookHandler

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ca, cls.hook_addr = cls.hooks.ca, cls.hooks.address
        other, _ = make_cert(cls.hooks.tmp, "other", "IP:127.0.0.1,DNS:localhost")
        cls.wrong_ca = ca_bundle(other)

    # ------------------------------------------------------------ helpers
    def req(self, method, path, body=None, ctype="application/json"):
        return self.s.request(method, path, body, ctype)

    def namespace(self, name, labels=None):
        code, body = self.req("POST", "/api/v1/namespaces",
                              {"metadata": {"name": name, "labels": labels or {}}})
        self.assertEqual(code, 201, body)

    def register(self, kind, name, *webhooks):
        plural = kind.lower() + "webhookconfigurations"
        code, body = self.req("POST", AR + plural, {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind + "WebhookConfiguration", "metadata": {"name": name},
            "webhooks": list(webhooks)})
        self.assertEqual(code, 201, body)
        self.addCleanup(self.req, "DELETE", AR + plural + "/" + name)
        return body

    def hook(self, name, ns, resources=("jobs",), groups=("batch",), path=None, url=None,
             ca=None, **extra):
        cc = {"caBundle": ca or self.ca}
        if url:
            cc["url"] = url
        else:
            cc["service"] = {"namespace": "system", "name": "hooks", "path": path}
        wh = {"name": name, "clientConfig": cc, "sideEffects": "None",
              "admissionReviewVersions": ["v1"],
              "rules": [{"apiGroups": list(groups), "apiVersions": ["v1"],
                         "operations": ["CREATE", "UPDATE"], "resources": list(resources)}],
              "namespaceSelector": {"matchExpressions": [{
                  "key": "kubernetes.io/metadata.name", "operator": "In", "values": [ns]}]}}
        wh.update(extra)
        return wh

    def kubectl(self, *args, stdin=None):
        return subprocess.run([KUBECTL, "--kubeconfig", self.s.kubeconfig] + list(args),
                              input=stdin, capture_output=True, text=True, timeout=30)

    def lease(self, ns, name):
        return self.req("POST", "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % ns,
                        {"metadata": {"name": name}, "spec": {"holderIdentity": "x"}})

    # -------------------------------------------------------------- tests
    def test_discovery_and_crud(self):
        code, body = self.req("GET", AR)
        self.assertEqual(code, 200)
        names = {r["name"]: r for r in body["resources"]}
        for n in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            self.assertFalse(names[n]["namespaced"])
            self.assertIn("patch", names[n]["verbs"])
        cfg = self.register("Validating", "crud", self.hook("crud.webhook.test", "nowhere",
                                                            path="/validate"))
        wh = cfg["webhooks"][0]
        self.assertEqual((wh["failurePolicy"], wh["timeoutSeconds"], wh["matchPolicy"]),
                         ("Fail", 10, "Equivalent"))
        self.assertEqual(wh["clientConfig"]["service"]["port"], 443)
        self.assertEqual(wh["rules"][0]["scope"], "*")
        code, body = self.req("PATCH", AR + "validatingwebhookconfigurations/crud",
                              [{"op": "replace", "path": "/webhooks/0/failurePolicy",
                                "value": "Ignore"}], "application/json-patch+json")
        self.assertEqual((code, body["webhooks"][0]["failurePolicy"]), (200, "Ignore"), body)
        out = self.kubectl("get", "validatingwebhookconfigurations", "-o", "name")
        self.assertIn("validatingwebhookconfiguration.admissionregistration.k8s.io/crud",
                      out.stdout, out.stderr)
        code, body = self.req("POST", AR + "mutatingwebhookconfigurations", {
            "metadata": {"name": "bad"}, "webhooks": [{"name": "b.webhook.test"}]})
        self.assertEqual((code, body["reason"]), (422, "Invalid"), body)

    def test_mutating_patch_applied_to_kubectl_apply(self):
        self.namespace("mut-on")
        self.namespace("mut-off")
        self.register("Mutating", "suspender", self.hook(
            "suspend.webhook.test", "mut-on", path="/mutate",
            objectSelector={"matchExpressions": [{"key": "skip-webhooks",
                                                  "operator": "DoesNotExist"}]}))
        del self.hooks.seen[:]
        out = self.kubectl("apply", "-f", "-", stdin=JOB.format(name="j1", ns="mut-on", extra=""))
        self.assertEqual(out.returncode, 0, out.stderr)
        code, job = self.req("GET", "/apis/batch/v1/namespaces/mut-on/jobs/j1")
        self.assertEqual(job["metadata"]["labels"].get(MUTATED), "true")
        self.assertIs(job["spec"]["suspend"], True)
        path, raw_path, r = self.hooks.seen[-1]
        self.assertEqual(raw_path, "/mutate?timeout=10s")
        self.assertEqual(r["kind"], {"group": "batch", "version": "v1", "kind": "Job"})
        self.assertEqual(r["resource"], {"group": "batch", "version": "v1", "resource": "jobs"})
        self.assertEqual(r["requestResource"], r["resource"])
        self.assertEqual((r["operation"], r["namespace"], r["name"]), ("CREATE", "mut-on", "j1"))
        self.assertEqual(r["options"]["kind"], "CreateOptions")
        self.assertIsNone(r["oldObject"])
        self.assertIs(r["dryRun"], False)
        self.assertNotIn(MUTATED, r["object"]["metadata"]["labels"])
        self.assertIn("username", r["userInfo"])
        # Update: the webhook sees the old object; its patch is applied again.
        out = self.kubectl("label", "-n", "mut-on", "job", "j1", "extra=1")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.hooks.seen[-1][2]["operation"], "UPDATE")
        self.assertEqual(self.hooks.seen[-1][2]["oldObject"]["metadata"]["labels"][MUTATED],
                         "true")
        # namespaceSelector and objectSelector exclude.
        n = len(self.hooks.seen)
        for ns, name, extra in (("mut-off", "j2", ""),
                                ("mut-on", "j3", '\n    skip-webhooks: "yes"')):
            out = self.kubectl("apply", "-f", "-", stdin=JOB.format(name=name, ns=ns,
                                                                    extra=extra))
            self.assertEqual(out.returncode, 0, out.stderr)
            code, job = self.req("GET", "/apis/batch/v1/namespaces/%s/jobs/%s" % (ns, name))
            self.assertNotIn(MUTATED, job["metadata"]["labels"])
            self.assertIs(job["spec"]["suspend"], False)
        self.assertEqual(len(self.hooks.seen), n)

    def test_validating_denial_reaches_kubectl(self):
        self.namespace("val")
        url = "https://%s/validate" % self.hook_addr
        wh = self.hook("deny.webhook.test", "val", url=url)
        wh["rules"][0]["operations"] = ["*"]
        self.register("Validating", "denier", wh)
        out = self.kubectl("apply", "-f", "-", stdin=JOB.format(
            name="bad", ns="val", extra='\n    deny: "true"'))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn('Error from server (Forbidden): error when creating "STDIN": '
                      'admission webhook "deny.webhook.test" denied the request: '
                      'metadata.labels[deny]: Forbidden: jobs may not say "deny"', out.stderr)
        code, _ = self.req("GET", "/apis/batch/v1/namespaces/val/jobs/bad")
        self.assertEqual(code, 404)
        out = self.kubectl("apply", "-f", "-", stdin=JOB.format(
            name="good", ns="val", extra='\n    protected: "true"'))
        self.assertEqual(out.returncode, 0, out.stderr)
        code, body = self.req("PATCH", "/apis/batch/v1/namespaces/val/jobs/good",
                              {"metadata": {"labels": {"deny": "true"}}},
                              "application/merge-patch+json")
        self.assertEqual((code, body["reason"]), (403, "Forbidden"), body)
        self.assertEqual(body["message"], 'admission webhook "deny.webhook.test" denied the '
                         'request: metadata.labels[deny]: Forbidden: jobs may not say "deny"')
        # DELETE: the webhook gets the old object; a denial without code is a 403.
        code, body = self.req("DELETE", "/apis/batch/v1/namespaces/val/jobs/good")
        self.assertEqual((code, body["reason"], body["message"]), (403, "Forbidden",
                         'admission webhook "deny.webhook.test" denied the request: protected'))
        self.assertEqual(self.hooks.seen[-1][2]["options"]["kind"], "DeleteOptions")

    def test_failure_policy_with_unreachable_webhook(self):
        self.namespace("down")
        port = free_port()
        url = "https://127.0.0.1:%d/validate" % port
        self.register("Validating", "down-fail", self.hook(
            "fail.webhook.test", "down", ["leases"], ["coordination.k8s.io"], url=url))
        code, body = self.lease("down", "l1")
        self.assertEqual((code, body["reason"]), (500, "InternalError"), body)
        self.assertEqual(body["message"], 'Internal error occurred: failed calling webhook '
                         '"fail.webhook.test": failed to call webhook: Post "%s?timeout=10s": '
                         'dial tcp 127.0.0.1:%d: connect: connection refused' % (url, port))
        self.req("PATCH", AR + "validatingwebhookconfigurations/down-fail",
                 [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}],
                 "application/json-patch+json")
        code, body = self.lease("down", "l1")
        self.assertEqual(code, 201, body)

    def test_call_errors(self):
        self.namespace("errs")
        url = "https://%s/validate" % self.hook_addr
        cases = [
            (self.hook("ca.webhook.test", "errs", ["leases"], ["coordination.k8s.io"],
                       url=url, ca=self.wrong_ca),
             'failed calling webhook "ca.webhook.test": failed to call webhook: Post "%s'
             '?timeout=10s": tls: failed to verify certificate: x509: certificate signed by '
             'unknown authority' % url),
            (self.hook("uid.webhook.test", "errs", ["leases"], ["coordination.k8s.io"],
                       path="/wronguid"),
             'failed calling webhook "uid.webhook.test": received invalid webhook response: '
             'expected response.uid="'),
            (self.hook("slow.webhook.test", "errs", ["leases"], ["coordination.k8s.io"],
                       path="/slow", timeoutSeconds=1),
             'failed calling webhook "slow.webhook.test": failed to call webhook: Post '
             '"https://hooks.system.svc:443/slow?timeout=1s": context deadline exceeded'),
        ]
        for i, (wh, want) in enumerate(cases):
            with self.subTest(wh["name"]):
                self.register("Validating", "err-%d" % i, wh)
                code, body = self.lease("errs", "l%d" % i)
                self.assertEqual(code, 500, body)
                self.assertIn(want, body["message"])
                self.req("DELETE", AR + "validatingwebhookconfigurations/err-%d" % i)


class DenialFormatTest(unittest.TestCase):
    """ToStatusErr without a server: the default and the --webhook-forbidden-prefix forms."""

    def test_denial_messages(self):
        req = AdmissionRequest("CREATE", RES_BY_KEY["jobs.batch"], "", "ns", "j", {}, None,
                               False)
        e = webhooks.WebhookAdmission(None)._denied("w.test", None, req)
        self.assertEqual((e.code, e.reason, e.message),
                         (403, "Forbidden", 'admission webhook "w.test" denied the request '
                          'without explanation'))
        e = webhooks.WebhookAdmission(None, forbidden_prefix=True)._denied(
            "w.test", {"code": 403, "reason": "Forbidden", "message": "no"}, req)
        self.assertEqual(e.message, 'jobs.batch "j" is forbidden: admission webhook "w.test" '
                         'denied the request: no')
        self.assertEqual(e.details, {"group": "batch", "kind": "jobs", "name": "j"})


if __name__ == "__main__":
    unittest.main()
