"""The scale subresource (autoscaling/v1 Scale) of Deployments, ReplicaSets and StatefulSets.

Over the raw API: GET (the parent's metadata, replicas and selector string),
PUT and merge, strategic merge and JSON patches (only ``spec.replicas``
changes; resourceVersion and generation bump; a watch sees MODIFIED), the
409 of a stale resourceVersion or uid, the 422 of negative replicas, 404s,
400s, dry run, discovery and OpenAPI; admission webhooks (HTTPS, self-signed
openssl certificate) called as kube-apiserver calls them, with Scale objects
and subresource ``scale``; the Deployment and StatefulSet controllers
following a scale; kubectl (``scale``, ``get --subresource=scale``, ``patch
--subresource=scale``) and python3-kubernetes (``AppsV1Api``). Run with
/usr/bin/python3.
"""

import json
import unittest
import urllib.request

from clientfixtures import (ApiException, KubectlServerTest, PythonClientServerTest,
                            needs_kubectl, needs_python_client)
from harness import ServerTest, wait_until
from test_apps_controllers import FAST, MERGE, STRATEGIC, AppsApi, deployment, statefulset
from webhookfixtures import ReviewHandler, WebhookServerTest, json_patch

JSON_PATCH = "application/json-patch+json"
APPS = "/apis/apps/v1/namespaces/%s/"
CONFLICT = ('Operation cannot be fulfilled on deployments.apps "%s": the object has been '
            'modified; please apply your changes to the latest version and try again')


def replicaset(name, replicas=2):
    body = deployment(name, replicas)
    body["kind"] = "ReplicaSet"
    return body


class ScaleApi(AppsApi):
    """Raw-API helpers for the scale subresource."""

    def scale(self, method, plural, name, body=None, ctype="application/json", query=""):
        return self.s.request(method, APPS % self.NS + "%s/%s/scale%s" % (plural, name, query),
                              body, ctype)

    def ok(self, got):
        code, out = got
        self.assertEqual(code, 200, out)
        return out


# ---------------------------------------------------------------------- raw API

class ScaleApiTest(ScaleApi, ServerTest, unittest.TestCase):
    def test_get_is_a_view_of_the_parent(self):
        body = deployment("view", 3)
        body["spec"]["selector"]["matchExpressions"] = [
            {"key": "tier", "operator": "In", "values": ["web", "api"]},
            {"key": "canary", "operator": "DoesNotExist"}, {"key": "zone", "operator": "Exists"}]
        body["spec"]["template"]["metadata"]["labels"].update(tier="web", zone="a")
        d = self.create("deployments", body)
        out = self.ok(self.scale("GET", "deployments", "view"))
        meta = d["metadata"]
        self.assertEqual(out, {
            "kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                              "creationTimestamp")},
            "spec": {"replicas": 3},
            "status": {"replicas": 0, "selector": "app=view,!canary,tier in (api,web),zone"}})
        self.create("replicasets", replicaset("rsview", 2))
        self.s.request("PUT", APPS % self.NS + "replicasets/rsview/status",
                       {"metadata": {"name": "rsview"}, "status": {"replicas": 2}})
        out = self.ok(self.scale("GET", "replicasets", "rsview"))
        self.assertEqual((out["spec"], out["status"]),
                         ({"replicas": 2}, {"replicas": 2, "selector": "app=rsview"}))
        self.create("statefulsets", statefulset("stsview", 0))
        out = self.ok(self.scale("GET", "statefulsets", "stsview"))
        self.assertEqual((out["spec"], out["status"]),  # replicas 0: omitempty
                         ({}, {"replicas": 0, "selector": "app=stsview"}))

    def test_put_changes_only_the_replicas(self):
        d = self.create("deployments", deployment("put", 1))
        scale = self.ok(self.scale("GET", "deployments", "put"))
        scale["spec"]["replicas"] = 4
        out = self.ok(self.scale("PUT", "deployments", "put", scale))
        after = self.obj("deployments", "put")
        self.assertEqual(out["spec"], {"replicas": 4})
        self.assertEqual(out["metadata"]["resourceVersion"], after["metadata"]["resourceVersion"])
        self.assertGreater(int(after["metadata"]["resourceVersion"]),
                           int(d["metadata"]["resourceVersion"]))
        self.assertEqual(after["metadata"]["generation"], 2)
        self.assertEqual(dict(after["spec"], replicas=1), d["spec"])
        self.assertEqual(after["status"], d["status"])
        # The same replicas again: no write, no new resourceVersion.
        again = self.ok(self.scale("PUT", "deployments", "put", {"spec": {"replicas": 4}}))
        self.assertEqual(again["metadata"]["resourceVersion"], out["metadata"]["resourceVersion"])
        # No replicas: 0 (the field is an int32 in the Scale).
        out = self.ok(self.scale("PUT", "deployments", "put", {"metadata": {"name": "put"}}))
        self.assertEqual(out["spec"], {})
        self.assertEqual(self.obj("deployments", "put")["spec"]["replicas"], 0)

    def test_patches(self):
        self.create("deployments", deployment("pd", 1))
        self.create("replicasets", replicaset("prs", 1))
        self.create("statefulsets", statefulset("psts", 1))
        for plural, name, patch, ctype in (
                ("deployments", "pd", {"spec": {"replicas": 2}}, MERGE),
                ("replicasets", "prs", {"spec": {"replicas": 3}}, STRATEGIC),
                ("statefulsets", "psts", [{"op": "test", "path": "/spec/replicas", "value": 1},
                                          {"op": "replace", "path": "/spec/replicas",
                                           "value": 4}], JSON_PATCH)):
            out = self.ok(self.scale("PATCH", plural, name, patch, ctype))
            parent = self.obj(plural, name)
            self.assertEqual(out["spec"]["replicas"], parent["spec"]["replicas"])
            self.assertEqual(parent["metadata"]["generation"], 2)
        self.assertEqual([self.obj(p, n)["spec"]["replicas"] for p, n in (
            ("deployments", "pd"), ("replicasets", "prs"), ("statefulsets", "psts"))], [2, 3, 4])
        code, out = self.scale("PATCH", "statefulsets", "psts", [
            {"op": "test", "path": "/spec/replicas", "value": 1}], JSON_PATCH)
        self.assertEqual((code, out["reason"]), (422, "Invalid"))
        code, out = self.scale("PATCH", "deployments", "pd", {"spec": {"replicas": 2}},
                               "application/apply-patch+yaml")
        self.assertEqual(code, 415, out)

    def test_a_watch_sees_modified(self):
        d = self.create("deployments", deployment("watched", 1))
        self.ok(self.scale("PATCH", "deployments", "watched", {"spec": {"replicas": 3}}, MERGE))
        url = "%s%sdeployments?watch=1&resourceVersion=%s&timeoutSeconds=5&fieldSelector=%s" % (
            self.s.url, APPS % self.NS, d["metadata"]["resourceVersion"],
            "metadata.name%3Dwatched")
        with urllib.request.urlopen(url, timeout=10) as r:
            event = json.loads(r.readline())
        self.assertEqual((event["type"], event["object"]["spec"]["replicas"],
                          event["object"]["metadata"]["generation"]), ("MODIFIED", 3, 2))

    def test_stale_resource_version_or_uid_is_a_conflict(self):
        self.create("deployments", deployment("stale", 1))
        scale = self.ok(self.scale("GET", "deployments", "stale"))
        self.ok(self.scale("PATCH", "deployments", "stale", {"spec": {"replicas": 2}}, MERGE))
        scale["spec"]["replicas"] = 5
        code, out = self.scale("PUT", "deployments", "stale", scale)
        self.assertEqual(code, 409, out)
        self.assertEqual((out["reason"], out["message"], out["details"]),
                         ("Conflict", CONFLICT % "stale",
                          {"name": "stale", "group": "apps", "kind": "deployments"}))
        code, out = self.scale("PATCH", "deployments", "stale", {"metadata": {
            "resourceVersion": scale["metadata"]["resourceVersion"]},
            "spec": {"replicas": 5}}, MERGE)
        self.assertEqual((code, out["message"]), (409, CONFLICT % "stale"))
        code, out = self.scale("PUT", "deployments", "stale", {
            "metadata": {"uid": "0000"}, "spec": {"replicas": 5}})
        self.assertEqual(code, 409, out)
        self.assertTrue(out["message"].startswith(
            'Operation cannot be fulfilled on deployments/scale.apps "stale": Precondition '
            'failed: UID in precondition: '), out["message"])
        self.assertEqual(self.obj("deployments", "stale")["spec"]["replicas"], 2)

    def test_negative_replicas_are_invalid(self):
        self.create("statefulsets", statefulset("neg", 1))
        for method, body, ctype in (("PUT", {"spec": {"replicas": -1}}, "application/json"),
                                    ("PATCH", {"spec": {"replicas": -1}}, MERGE)):
            code, out = self.scale(method, "statefulsets", "neg", body, ctype)
            self.assertEqual(code, 422, out)
            self.assertEqual(out["message"], 'Scale.autoscaling "neg" is invalid: spec.replicas: '
                                             'Invalid value: -1: must be greater than or equal '
                                             'to 0')
            self.assertEqual(out["details"], {
                "name": "neg", "group": "autoscaling", "kind": "Scale", "causes": [{
                    "reason": "FieldValueInvalid", "field": "spec.replicas",
                    "message": "Invalid value: -1: must be greater than or equal to 0"}]})
        self.assertEqual(self.obj("statefulsets", "neg")["spec"]["replicas"], 1)

    def test_missing_parent_and_bad_requests(self):
        for method, body, ctype in (("GET", None, "application/json"),
                                    ("PUT", {"spec": {"replicas": 1}}, "application/json"),
                                    ("PATCH", {"spec": {"replicas": 1}}, MERGE)):
            code, out = self.scale(method, "deployments", "nope", body, ctype)
            self.assertEqual(code, 404, out)
            self.assertEqual((out["reason"], out["message"], out["details"]),
                             ("NotFound", 'deployments.apps "nope" not found',
                              {"name": "nope", "group": "apps", "kind": "deployments"}))
        code, _ = self.s.request("GET", "/api/v1/namespaces/default/pods/nope/scale")
        self.assertEqual(code, 404)
        self.create("deployments", deployment("bad", 1))
        code, out = self.scale("PUT", "deployments", "bad", {"spec": {"replicas": "2"}})
        self.assertEqual((code, out["message"]), (400, (
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal string '
            'into Go struct field ScaleSpec.spec.replicas of type int32')))
        code, out = self.scale("PUT", "deployments", "bad", deployment("bad", 2))
        self.assertEqual(code, 400, out)
        code, out = self.scale("PUT", "deployments", "bad", {"metadata": {"name": "other"},
                                                             "spec": {"replicas": 2}})
        self.assertEqual((code, out["message"]), (400, "the name of the object (other) does "
                                                       "not match the name on the URL (bad)"))
        code, _ = self.scale("DELETE", "deployments", "bad")
        self.assertEqual(code, 405)
        self.assertEqual(self.obj("deployments", "bad")["spec"]["replicas"], 1)

    def test_dry_run(self):
        d = self.create("deployments", deployment("dry", 1))
        out = self.ok(self.scale("PATCH", "deployments", "dry", {"spec": {"replicas": 3}}, MERGE,
                                 "?dryRun=All"))
        self.assertEqual(out["spec"], {"replicas": 3})
        self.assertEqual(self.obj("deployments", "dry")["metadata"]["resourceVersion"],
                         d["metadata"]["resourceVersion"])

    def test_discovery_and_openapi(self):
        body = self.s.request("GET", "/apis/apps/v1")[1]
        names = [r["name"] for r in body["resources"]]
        self.assertEqual(names, ["deployments", "deployments/scale", "deployments/status",
                                 "replicasets", "replicasets/scale", "replicasets/status",
                                 "statefulsets", "statefulsets/scale", "statefulsets/status"])
        entry = body["resources"][1]
        self.assertEqual(entry, {"name": "deployments/scale", "singularName": "",
                                 "namespaced": True, "group": "autoscaling", "version": "v1",
                                 "kind": "Scale", "verbs": ["get", "patch", "update"]})
        agg = self.s.request("GET", "/apis", headers={
            "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})[1]
        [apps] = [g for g in agg["items"] if g["metadata"]["name"] == "apps"]
        for r in apps["versions"][0]["resources"]:
            self.assertEqual(r["subresources"][0], {
                "subresource": "scale", "verbs": ["get", "patch", "update"],
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}})
        doc = self.s.request("GET", "/openapi/v3/apis/apps/v1")[1]
        path = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}/scale"]
        self.assertEqual(sorted(path), ["get", "patch", "put"])
        self.assertEqual(path["patch"]["x-kubernetes-group-version-kind"],
                         {"group": "autoscaling", "version": "v1", "kind": "Scale"})
        self.assertIn("fieldValidation", [p["name"] for p in path["patch"]["parameters"]])
        code, _ = self.s.request("GET", "/apis/autoscaling/v1")
        self.assertEqual(code, 404)  # the Scale is only a subresource here


# ------------------------------------------------------------- admission webhooks

class ScaleHook(ReviewHandler):
    """/cap caps a Scale at 4 replicas (13 becomes -1); /deny refuses more than 5; /record
    allows. Every review is kept in ``server.seen`` as (path, request)."""

    def review(self, path, req):
        self.server.seen.append((path, req))
        resp = {"uid": req["uid"], "allowed": True}
        replicas = ((req.get("object") or {}).get("spec") or {}).get("replicas", 0)
        if path == "/cap" and replicas > 4:
            resp.update(json_patch([{"op": "replace", "path": "/spec/replicas",
                                     "value": -1 if replicas == 13 else 4}]))
        elif path == "/deny" and replicas > 5:
            resp = {"uid": req["uid"], "allowed": False, "status": {
                "code": 403, "reason": "Forbidden",
                "message": "spec.replicas: Forbidden: at most 5"}}
        return resp


class ScaleWebhookTest(ScaleApi, WebhookServerTest, unittest.TestCase):
    """Webhooks see Scale objects, and only those whose rules name the scale subresource."""

    NS = "scaled"
    HOOK = ScaleHook
    SERVER_ARGS = ("--namespace", NS)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for kind, name, path, resource in (
                ("Mutating", "cap", "/cap", "deployments/scale"),
                ("Validating", "deny", "/deny", "statefulsets/scale"),
                ("Validating", "record", "/record", "deployments")):
            cls.register_hook(
                kind, name, name + ".scale.test", path,
                [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"],
                  "resources": [resource]}],
                namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": cls.NS}})

    def reviews(self, path, name):
        return [r for p, r in self.hooks.seen if p == path and r["name"] == name]

    def test_a_mutating_webhook_on_deployments_scale(self):
        d = self.create("deployments", deployment("capped", 1))
        out = self.ok(self.scale("PATCH", "deployments", "capped", {"spec": {"replicas": 6}},
                                 MERGE))
        self.assertEqual(out["spec"], {"replicas": 4})
        self.assertEqual(self.obj("deployments", "capped")["spec"]["replicas"], 4)
        [r] = self.reviews("/cap", "capped")
        scale_kind = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
        resource = {"group": "apps", "version": "v1", "resource": "deployments"}
        self.assertEqual((r["kind"], r["requestKind"], r["resource"], r["requestResource"],
                          r["subResource"], r["requestSubResource"], r["operation"],
                          r["namespace"]),
                         (scale_kind, scale_kind, resource, resource, "scale", "scale", "UPDATE",
                          self.NS))
        self.assertEqual((r["object"]["kind"], r["object"]["apiVersion"],
                          r["object"]["spec"], r["object"]["metadata"]["name"]),
                         ("Scale", "autoscaling/v1", {"replicas": 6}, "capped"))
        self.assertEqual((r["oldObject"]["kind"], r["oldObject"]["spec"],
                          r["oldObject"]["status"], r["oldObject"]["metadata"]["uid"]),
                         ("Scale", {"replicas": 1}, {"replicas": 0, "selector": "app=capped"},
                          d["metadata"]["uid"]))
        # A webhook for deployments alone is not called for the scale subresource
        # (kubernetes#84530), but it is for a write of the Deployment itself.
        self.assertEqual(self.reviews("/record", "capped"), [])
        self.patch("deployments", "capped", {"spec": {"replicas": 2}})
        [r] = self.reviews("/record", "capped")
        self.assertEqual((r["kind"]["kind"], r["object"]["spec"]["replicas"]), ("Deployment", 2))
        # A mutation to a negative count is refused as the client's would be.
        code, out = self.scale("PATCH", "deployments", "capped", {"spec": {"replicas": 13}},
                               MERGE)
        self.assertEqual((code, out["message"]), (422, (
            'Scale.autoscaling "capped" is invalid: spec.replicas: Invalid value: -1: must be '
            'greater than or equal to 0')))
        self.assertEqual(self.obj("deployments", "capped")["spec"]["replicas"], 2)

    def test_a_validating_webhook_on_statefulsets_scale(self):
        self.create("statefulsets", statefulset("limited", 1))
        code, out = self.scale("PUT", "statefulsets", "limited", {"spec": {"replicas": 7}})
        self.assertEqual(code, 403, out)
        self.assertEqual((out["reason"], out["message"]), (
            "Forbidden", 'admission webhook "deny.scale.test" denied the request: '
                         'spec.replicas: Forbidden: at most 5'))
        self.assertEqual(self.obj("statefulsets", "limited")["spec"]["replicas"], 1)
        self.ok(self.scale("PUT", "statefulsets", "limited", {"spec": {"replicas": 5}}))
        self.assertEqual(self.obj("statefulsets", "limited")["spec"]["replicas"], 5)
        self.assertEqual([(r["object"]["spec"], r["oldObject"]["spec"])
                          for r in self.reviews("/deny", "limited")],
                         [({"replicas": 7}, {"replicas": 1}), ({"replicas": 5}, {"replicas": 1})])


# ------------------------------------------------------------------ controllers

class ScaleControllersTest(ScaleApi, ServerTest, unittest.TestCase):
    SERVER_ARGS = ("--controllers", "deployment,statefulset,scheduler,kubelet",
                   "--node", "n1::cpu=32", *FAST)

    def test_scaling_a_deployment_changes_its_pods(self):
        self.create("deployments", deployment("grow", 1))
        wait_until(lambda: len(self.pods("grow", live=True)) == 1, 10, what="1 pod")
        self.ok(self.scale("PATCH", "deployments", "grow", {"spec": {"replicas": 3}}, MERGE))
        wait_until(lambda: len(self.pods("grow", live=True)) == 3, 10, what="3 pods")
        wait_until(lambda: self.ok(self.scale("GET", "deployments", "grow"))["status"] == {
            "replicas": 3, "selector": "app=grow"}, 10, what="status.replicas 3 in the Scale")
        self.ok(self.scale("PUT", "deployments", "grow", {"spec": {"replicas": 1}}))
        wait_until(lambda: len(self.pods("grow")) == 1, 10, what="1 pod left")
        self.wait_status("deployments", "grow", replicas=1, availableReplicas=1)

    def test_scaling_a_statefulset_changes_its_pods(self):
        self.create("statefulsets", statefulset("ord", 1))
        self.wait_status("statefulsets", "ord", readyReplicas=1)
        self.ok(self.scale("PATCH", "statefulsets", "ord", {"spec": {"replicas": 3}}, STRATEGIC))
        wait_until(lambda: [p["metadata"]["name"] for p in self.pods("ord", live=True)] == [
            "ord-0", "ord-1", "ord-2"], 10, what="3 ordinals")
        self.ok(self.scale("PATCH", "statefulsets", "ord", [
            {"op": "replace", "path": "/spec/replicas", "value": 0}], JSON_PATCH))
        wait_until(lambda: not self.pods("ord"), 10, what="no pods")


# ----------------------------------------------------------------------- clients

@needs_python_client
class ScalePythonClientTest(ScaleApi, PythonClientServerTest, unittest.TestCase):
    APIS = {"apps": "AppsV1Api"}

    def test_read_patch_and_replace(self):
        d = self.create("deployments", deployment("pyscale", 2))
        self.create("statefulsets", statefulset("pysts", 1))
        sc = self.apps.read_namespaced_deployment_scale("pyscale", "default")
        self.assertEqual((sc.kind, sc.metadata.uid, sc.spec.replicas, sc.status.replicas,
                          sc.status.selector),
                         ("Scale", d["metadata"]["uid"], 2, 0, "app=pyscale"))
        # A dict body goes as a strategic merge patch.
        out = self.apps.patch_namespaced_stateful_set_scale("pysts", "default",
                                                            {"spec": {"replicas": 3}})
        self.assertEqual(out.spec.replicas, 3)
        self.assertEqual(self.apps.read_namespaced_stateful_set("pysts", "default")
                         .spec.replicas, 3)
        sc.spec.replicas = 5
        out = self.apps.replace_namespaced_deployment_scale("pyscale", "default", sc)
        self.assertEqual(out.spec.replicas, 5)
        with self.assertRaises(ApiException) as ctx:  # sc's resourceVersion is now stale
            self.apps.replace_namespaced_deployment_scale("pyscale", "default", sc)
        self.assertEqual(ctx.exception.status, 409)
        self.assertEqual(json.loads(ctx.exception.body)["message"], CONFLICT % "pyscale")
        with self.assertRaises(ApiException) as ctx:
            self.apps.read_namespaced_replica_set_scale("nope", "default")
        self.assertEqual(ctx.exception.status, 404)


@needs_kubectl(27)
class ScaleKubectlTest(ScaleApi, KubectlServerTest, unittest.TestCase):
    def kubectl(self, *args, code=0):
        p = super().kubectl(*args, code=code)
        return p.stdout + p.stderr

    def test_scale_get_and_patch(self):
        self.create("deployments", deployment("x", 1))
        self.create("statefulsets", statefulset("db", 1))
        out = self.kubectl("scale", "deployment/x", "--replicas=3")
        self.assertEqual(out.strip(), "deployment.apps/x scaled")
        self.assertEqual(self.obj("deployments", "x")["spec"]["replicas"], 3)
        out = self.kubectl("scale", "sts", "db", "--replicas=2", "--current-replicas=1")
        self.assertEqual(out.strip(), "statefulset.apps/db scaled")
        self.assertEqual(self.obj("statefulsets", "db")["spec"]["replicas"], 2)
        out = self.kubectl("scale", "sts", "db", "--replicas=4", "--current-replicas=1", code=1)
        self.assertIn("Expected replicas to be 1, was 2", out)
        header, row = self.kubectl("get", "deployment", "x", "--subresource=scale").splitlines()
        self.assertEqual(header.replace(" ", ""), "NAMEDESIREDREPLICASAVAILABLEREPLICAS")
        self.assertEqual(row.split(), ["x", "3", "0"])
        out = self.kubectl("patch", "deployment", "x", "--subresource=scale", "--type=merge",
                           "-p", '{"spec":{"replicas":-1}}', code=1)
        self.assertIn('The Scale "x" is invalid: spec.replicas: Invalid value: -1: must be '
                      'greater than or equal to 0', out)
        out = self.kubectl("patch", "deployment", "x", "--subresource=scale", "--type=merge",
                           "-p", '{"spec":{"replicas":2}}')
        self.assertEqual(out.strip(), "scale.autoscaling/x patched")
        self.assertEqual(self.obj("deployments", "x")["spec"]["replicas"], 2)


if __name__ == "__main__":
    unittest.main()
