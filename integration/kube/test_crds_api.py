"""CustomResourceDefinitions and custom resources over the raw API.

The built-in definitions (``--crd raycluster,workload``): discovery (legacy
and aggregated), OpenAPI, the CRD's status, defaults on create, the status
subresource and generation, patches, 415 for a strategic merge patch, errors,
lists and Table columns; CRDs created through the API: validation, versions,
immutable fields, printer columns, deletion with its finalizer. Run with
/usr/bin/python3.
"""

import json
import queue
import threading
import time
import unittest
import urllib.request

from crdfixtures import (JSON_PATCH, MERGE, RC_PATH, WL_PATH, admitted_status, cond, raycluster,
                         template, widget_crd, workload)
from harness import ApiServerProcess, ServerTest, wait_until

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
STRATEGIC = "application/strategic-merge-patch+json"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


# ---------------------------------------------------------------------- raw API

class CrdApiTest(ServerTest, unittest.TestCase):
    """The built-in definitions (``--crd raycluster,workload``) over the raw API."""

    SERVER_ARGS = ("--crd", "raycluster", "--crd", "workload", "--namespace", "team")

    def create_rc(self, name, **kw):
        code, body = self.s.request("POST", RC_PATH % "team", raycluster(name, **kw))
        self.assertEqual(code, 201, body)
        return body

    def rc_url(self, name, sub=""):
        return RC_PATH % "team" + "/" + name + sub

    def test_discovery(self):
        _, body = self.s.request("GET", "/apis")
        names = [g["name"] for g in body["groups"]]
        self.assertEqual(names[-3:], ["apiextensions.k8s.io", "kueue.x-k8s.io", "ray.io"])
        _, body = self.s.request("GET", "/apis/ray.io")
        self.assertEqual(body["preferredVersion"], {"groupVersion": "ray.io/v1", "version": "v1"})
        _, body = self.s.request("GET", "/apis/ray.io/v1")
        self.assertEqual([r["name"] for r in body["resources"]],
                         ["rayclusters", "rayclusters/status"])
        rc = body["resources"][0]
        self.assertEqual((rc["kind"], rc["singularName"], rc["namespaced"], rc["categories"]),
                         ("RayCluster", "raycluster", True, ["all"]))
        self.assertNotIn("shortNames", rc)
        self.assertEqual(body["resources"][1]["verbs"], ["get", "patch", "update"])
        _, body = self.s.request("GET", "/apis/kueue.x-k8s.io/v1beta2")
        self.assertEqual(body["resources"][0]["shortNames"],
                         ["kwl", "kueueworkload", "kueueworkloads"])
        _, body = self.s.request("GET", "/apis/apiextensions.k8s.io/v1")
        self.assertEqual(body["resources"][0]["shortNames"], ["crd", "crds"])

    def aggregated(self, path, accept):
        req = urllib.request.Request(self.s.url + path, headers={"Accept": accept})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.headers.get("Content-Type"), json.loads(resp.read())

    def test_aggregated_discovery(self):
        accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                  "application/json")
        ctype, body = self.aggregated("/apis", accept)
        self.assertEqual(ctype, "application/json;g=apidiscovery.k8s.io;v=v2;"
                                "as=APIGroupDiscoveryList")
        self.assertEqual((body["kind"], body["apiVersion"]),
                         ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2"))
        groups = {g["metadata"]["name"]: g for g in body["items"]}
        self.assertEqual(list(groups)[-2:], ["kueue.x-k8s.io", "ray.io"])
        rc = groups["ray.io"]["versions"][0]["resources"][0]
        self.assertEqual(rc, {
            "resource": "rayclusters", "responseKind": {"group": "", "version": "",
                                                        "kind": "RayCluster"},
            "scope": "Namespaced", "singularResource": "raycluster",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                      "watch"], "categories": ["all"],
            "subresources": [{"subresource": "status", "responseKind": {
                "group": "", "version": "", "kind": "RayCluster"},
                "verbs": ["get", "patch", "update"]}]})
        self.assertEqual(groups["kueue.x-k8s.io"]["versions"][0]["resources"][0]["shortNames"],
                         ["kwl", "kueueworkload", "kueueworkloads"])
        ctype, body = self.aggregated("/api", accept)
        self.assertEqual(body["items"][0]["versions"][0]["version"], "v1")
        pods = [r for r in body["items"][0]["versions"][0]["resources"]
                if r["resource"] == "pods"][0]
        self.assertEqual([s["subresource"] for s in pods["subresources"]], ["status", "binding"])
        # Only v2beta1 (removed in 1.33) or plain JSON: the legacy documents.
        ctype, body = self.aggregated("/apis", "application/json;g=apidiscovery.k8s.io;"
                                               "v=v2beta1;as=APIGroupDiscoveryList")
        self.assertEqual((ctype, body["kind"]), ("application/json", "APIGroupList"))

    def test_openapi(self):
        _, index = self.s.request("GET", "/openapi/v3")
        self.assertIn("apis/ray.io/v1", index["paths"])
        _, doc = self.s.request("GET", index["paths"]["apis/ray.io/v1"]["serverRelativeURL"])
        schema = doc["components"]["schemas"]["io.ray.v1.RayCluster"]
        self.assertEqual(schema["x-kubernetes-group-version-kind"],
                         [{"group": "ray.io", "version": "v1", "kind": "RayCluster"}])
        self.assertEqual(schema["properties"]["spec"]["properties"]["workerGroupSpecs"]["items"]
                         ["properties"]["numOfHosts"]["default"], 1)
        patch = doc["paths"]["/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}"]["patch"]
        self.assertEqual(sorted(patch["requestBody"]["content"]), [
            "application/apply-patch+yaml", JSON_PATCH, MERGE])
        self.assertIn("fieldValidation", [p["name"] for p in patch["parameters"]])
        self.assertIn("/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}/status",
                      doc["paths"])

    def test_crd_status_is_established(self):
        code, crd = self.s.request("GET", CRD_PATH + "/workloads.kueue.x-k8s.io")
        self.assertEqual(code, 200)
        st = crd["status"]
        self.assertEqual([(c["type"], c["status"], c["reason"]) for c in st["conditions"]],
                         [("NamesAccepted", "True", "NoConflicts"),
                          ("Established", "True", "InitialNamesAccepted")])
        self.assertEqual(st["storedVersions"], ["v1beta2"])
        self.assertEqual(st["acceptedNames"]["shortNames"],
                         ["kwl", "kueueworkload", "kueueworkloads"])
        self.assertEqual(crd["spec"]["conversion"], {"strategy": "None"})
        self.assertEqual(crd["metadata"]["generation"], 1)

    def test_create_drops_status_and_applies_schema_defaults(self):
        body = raycluster("defaults")
        body["status"] = {"state": "ready"}
        del body["spec"]["workerGroupSpecs"][0]["minReplicas"]
        code, rc = self.s.request("POST", RC_PATH % "team", body)
        self.assertEqual(code, 201)
        self.assertNotIn("status", rc)
        g = rc["spec"]["workerGroupSpecs"][0]
        self.assertEqual((g["minReplicas"], g["maxReplicas"], g["numOfHosts"], g["replicas"]),
                         (0, 10, 1, 2))
        self.assertEqual((rc["apiVersion"], rc["kind"], rc["metadata"]["generation"]),
                         ("ray.io/v1", "RayCluster", 1))
        code, wl = self.s.request("POST", WL_PATH % "team", workload("defaults"))
        self.assertEqual(code, 201)
        self.assertEqual(wl["spec"]["active"], True)
        self.assertEqual(wl["spec"]["podSets"][0]["name"], "main")

    def test_status_subresource_and_generation(self):
        rc = self.create_rc("gen")
        # /status changes the status only; the generation stays.
        body = dict(rc, status={"state": "ready"})
        body["spec"] = dict(rc["spec"], suspend=True)
        code, out = self.s.request("PUT", self.rc_url("gen", "/status"), body)
        self.assertEqual(code, 200)
        self.assertEqual((out["status"], out["metadata"]["generation"]), ({"state": "ready"}, 1))
        self.assertNotIn("suspend", out["spec"])
        # The main resource ignores status; metadata changes keep the generation.
        code, out = self.s.request("PATCH", self.rc_url("gen"), {
            "metadata": {"labels": {"a": "b"}}, "status": {"state": "suspended"}}, MERGE)
        self.assertEqual(code, 200)
        self.assertEqual((out["status"], out["metadata"]["generation"]), ({"state": "ready"}, 1))
        # A spec change bumps it.
        code, out = self.s.request("PATCH", self.rc_url("gen"), {"spec": {"suspend": True}},
                                   MERGE)
        self.assertEqual((code, out["metadata"]["generation"]), (200, 2))
        # A merge patch of the status through /status.
        code, out = self.s.request("PATCH", self.rc_url("gen", "/status"),
                                   {"status": {"readyWorkerReplicas": 2}}, MERGE)
        self.assertEqual(out["status"], {"state": "ready", "readyWorkerReplicas": 2})
        self.assertEqual(out["metadata"]["generation"], 2)

    def test_patches_of_a_worker_group(self):
        body = raycluster("groups", groups=(("a", 1), ("b", 1)))
        self.s.request("POST", RC_PATH % "team", body)
        # JSON patch: one group's replicas, guarded by a test of its name.
        code, out = self.s.request("PATCH", self.rc_url("groups"), [
            {"op": "test", "path": "/spec/workerGroupSpecs/1/groupName", "value": "b"},
            {"op": "replace", "path": "/spec/workerGroupSpecs/1/replicas", "value": 3}],
            JSON_PATCH)
        self.assertEqual(code, 200, out)
        self.assertEqual([g["replicas"] for g in out["spec"]["workerGroupSpecs"]], [1, 3])
        self.assertEqual(out["metadata"]["generation"], 2)
        code, out = self.s.request("PATCH", self.rc_url("groups"), [
            {"op": "test", "path": "/spec/workerGroupSpecs/0/groupName", "value": "b"},
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 5}],
            JSON_PATCH)
        self.assertEqual(code, 422)
        # A merge patch replaces the whole list (schema defaults are applied again).
        code, out = self.s.request("PATCH", self.rc_url("groups"), {"spec": {
            "workerGroupSpecs": [{"groupName": "a", "replicas": 4, "template": template()}]}},
            MERGE)
        self.assertEqual(code, 200)
        self.assertEqual([(g["groupName"], g["replicas"], g["maxReplicas"])
                          for g in out["spec"]["workerGroupSpecs"]], [("a", 4, 2147483647)])

    def test_strategic_merge_patch_is_415(self):
        self.create_rc("smp")
        code, out = self.s.request("PATCH", self.rc_url("smp"), {"spec": {"suspend": True}},
                                   STRATEGIC)
        self.assertEqual(code, 415)
        self.assertEqual(out, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the body of the request was in an unknown format - accepted media "
                       "types include: application/json-patch+json, "
                       "application/merge-patch+json, application/apply-patch+yaml",
            "reason": "UnsupportedMediaType", "details": {}, "code": 415})
        code, _ = self.s.request("PATCH", self.rc_url("smp", "/status"),
                                 {"status": {"state": "x"}}, STRATEGIC)
        self.assertEqual(code, 415)

    def test_errors_and_lists(self):
        code, out = self.s.request("GET", self.rc_url("missing"))
        self.assertEqual((code, out["message"]), (404, 'rayclusters.ray.io "missing" not found'))
        self.assertEqual(out["details"], {"name": "missing", "group": "ray.io",
                                          "kind": "rayclusters"})
        self.create_rc("listed")
        code, out = self.s.request("POST", RC_PATH % "team", raycluster("listed"))
        self.assertEqual((code, out["reason"]), (409, "AlreadyExists"))
        code, lst = self.s.request("GET", "/apis/ray.io/v1/rayclusters?labelSelector=x%3Dy")
        self.assertEqual((lst["kind"], lst["apiVersion"], lst["items"]),
                         ("RayClusterList", "ray.io/v1", []))
        code, out = self.s.request("DELETE", self.rc_url("listed"))
        self.assertEqual((code, out["status"], out["details"]["kind"]),
                         (200, "Success", "rayclusters"))

    def test_workload_table_columns(self):
        self.s.request("POST", WL_PATH % "team", workload("tabled"))
        self.s.request("PATCH", WL_PATH % "team" + "/tabled/status", admitted_status(), MERGE)
        code, table = self.s.request("GET", WL_PATH % "team" + "/tabled", headers=TABLE)
        self.assertEqual(code, 200)
        self.assertEqual([c["name"] for c in table["columnDefinitions"]],
                         ["Name", "Queue", "Reserved in", "Admitted", "Finished", "Age"])
        self.assertEqual(table["columnDefinitions"][1]["description"],
                         "Name of the queue this workload was submitted to")
        cells = table["rows"][0]["cells"]
        self.assertEqual(cells[:5], ["tabled", "user-queue", "cluster-queue", "True", None])
        self.assertRegex(cells[5], r"^\d+s$")


class CrdLifecycleTest(ServerTest, unittest.TestCase):
    """A CRD created through the API: validation, versions, deletion."""

    SERVER_ARGS = ("--namespace", "team")

    def test_validation(self):
        bad = widget_crd(name="gadgets.example.com")
        bad["spec"]["group"] = "example"
        bad["spec"]["scope"] = "Everywhere"
        bad["spec"]["versions"][1]["storage"] = True
        code, out = self.s.request("POST", CRD_PATH, bad)
        self.assertEqual(code, 422)
        self.assertEqual(out["message"], (
            'CustomResourceDefinition.apiextensions.k8s.io "gadgets.example.com" is invalid: ['
            'metadata.name: Invalid value: "gadgets.example.com": must be '
            'spec.names.plural+"."+spec.group, spec.group: Invalid value: "example": should be '
            'a domain with at least one dot, spec.scope: Unsupported value: "Everywhere": '
            'supported values: "Cluster", "Namespaced", spec.versions: Invalid value: '
            '[]apiextensions.CustomResourceDefinitionVersion{...}: must have exactly one '
            'version marked as storage version]'))
        self.assertEqual([c["field"] for c in out["details"]["causes"]],
                         ["metadata.name", "spec.group", "spec.scope", "spec.versions"])
        bad = widget_crd()
        del bad["spec"]["versions"][0]["schema"]
        bad["spec"]["versions"][1]["additionalPrinterColumns"] = [
            {"name": "X", "type": "text", "jsonPath": "spec.x"}]
        code, out = self.s.request("POST", CRD_PATH, bad)
        self.assertEqual(code, 422)
        self.assertEqual([(c["field"], c["message"]) for c in out["details"]["causes"]], [
            ("spec.versions[0].schema.openAPIV3Schema", "Required value: schemas are required"),
            ("spec.versions[1].additionalPrinterColumns[0].type",
             'Unsupported value: "text": supported values: "boolean", "date", "integer", '
             '"number", "string"'),
            ("spec.versions[1].additionalPrinterColumns[0].jsonPath",
             'Invalid value: "spec.x": must be a simple json path starting with .')])
        bad = widget_crd(name="things.apps.k8s.io", plural="things", kind="Thing")
        bad["spec"]["group"] = "apps.k8s.io"
        code, out = self.s.request("POST", CRD_PATH, bad)
        self.assertEqual((code, out["details"]["causes"][0]["field"]),
                         (422, "metadata.annotations[api-approved.kubernetes.io]"))

    def test_versions_generation_and_immutable_fields(self):
        code, crd = self.s.request("POST", CRD_PATH, widget_crd())
        self.assertEqual(code, 201, crd)
        base = "/apis/example.com/%s/namespaces/team/widgets"
        _, group = self.s.request("GET", "/apis/example.com")
        self.assertEqual([v["version"] for v in group["versions"]], ["v1", "v1beta1"])
        code, w = self.s.request("POST", base % "v1beta1",
                                 {"apiVersion": "example.com/v1beta1", "kind": "Widget",
                                  "metadata": {"name": "w1"}, "spec": {},
                                  "status": {"phase": "New"}})
        self.assertEqual((code, w["apiVersion"], w["spec"]), (201, "example.com/v1beta1",
                                                              {"size": 1}))
        self.assertEqual(w["status"], {"phase": "New"})  # no status subresource: kept
        code, w = self.s.request("GET", base % "v1" + "/w1")
        self.assertEqual((code, w["apiVersion"]), (200, "example.com/v1"))
        # Without a status subresource, a status change is a change of the object.
        code, w = self.s.request("PATCH", base % "v1" + "/w1", {"status": {"phase": "Done"}},
                                 MERGE)
        self.assertEqual(w["metadata"]["generation"], 2)
        code, _ = self.s.request("GET", base % "v1" + "/w1/status")
        self.assertEqual(code, 404)
        # The deprecated version answers with a Warning header.
        req = urllib.request.Request(self.s.url + base % "v1beta1" + "/w1")
        with urllib.request.urlopen(req, timeout=10) as resp:
            self.assertEqual(resp.headers.get("Warning"),
                             '299 - "example.com/v1beta1 Widget is deprecated"')
        # Table: the printer columns, priority kept.
        _, table = self.s.request("GET", base % "v1", headers=TABLE)
        self.assertEqual([(c["name"], c["type"], c["priority"])
                          for c in table["columnDefinitions"]],
                         [("Name", "string", 0), ("Size", "integer", 0), ("Phase", "string", 0),
                          ("Ready", "boolean", 1)])
        self.assertEqual(table["rows"][0]["cells"], ["w1", 1, "Done", None])
        # Scope and plural are immutable; a change of columns is served at once.
        crd["spec"]["scope"] = "Cluster"
        code, out = self.s.request("PUT", CRD_PATH + "/widgets.example.com", crd)
        self.assertEqual((code, out["details"]["causes"][0]["message"]),
                         (422, 'Invalid value: "Cluster": field is immutable'))
        code, crd = self.s.request("PATCH", CRD_PATH + "/widgets.example.com", [
            {"op": "remove", "path": "/spec/versions/0/additionalPrinterColumns"}], JSON_PATCH)
        self.assertEqual((code, crd["metadata"]["generation"]), (200, 2))
        _, table = self.s.request("GET", base % "v1", headers=TABLE)
        self.assertEqual([c["name"] for c in table["columnDefinitions"]], ["Name", "Age"])

    def test_deleting_the_crd_deletes_its_objects(self):
        crd = widget_crd(name="gizmos.example.com", plural="gizmos", kind="Gizmo",
                         shortNames=["gz"], scope="Cluster")
        self.assertEqual(self.s.request("POST", CRD_PATH, crd)[0], 201)
        base = "/apis/example.com/v1/gizmos"
        for name, fins in (("plain", None), ("held", ["example.com/hold"])):
            meta = {"name": name}
            if fins:
                meta["finalizers"] = fins
            code, _ = self.s.request("POST", base, {"apiVersion": "example.com/v1",
                                                    "kind": "Gizmo", "metadata": meta})
            self.assertEqual(code, 201)
        # A watch on the resource sees the deletions, then ends with the CRD.
        _, lst = self.s.request("GET", base)
        events = queue.Queue()

        def watch_it():
            url = "%s%s?watch=1&resourceVersion=%s&timeoutSeconds=20" % (
                self.s.url, base, lst["metadata"]["resourceVersion"])
            with urllib.request.urlopen(url, timeout=30) as resp:
                for line in resp:
                    events.put(json.loads(line))
            events.put("end")

        threading.Thread(target=watch_it, daemon=True).start()
        time.sleep(0.2)
        code, out = self.s.request("DELETE", CRD_PATH + "/gizmos.example.com")
        self.assertEqual(code, 200)
        self.assertIn("customresourcecleanup.apiextensions.k8s.io",
                      out["metadata"]["finalizers"])
        self.assertEqual(cond(out, "Terminating")["reason"], "InstanceDeletionPending")
        wait_until(lambda: self.s.request("GET", base + "/plain")[0] == 404, 5,
                   what="the plain gizmo deleted")
        crd = self.s.request("GET", CRD_PATH + "/gizmos.example.com")[1]
        self.assertEqual(cond(crd, "Terminating")["reason"], "InstanceDeletionInProgress")
        code, out = self.s.request("POST", base, {"apiVersion": "example.com/v1", "kind": "Gizmo",
                                                  "metadata": {"name": "late"}})
        self.assertEqual((code, out["message"]), (
            405, "create not allowed while custom resource definition is terminating"))
        # The instance with a finalizer holds the CRD until the finalizer goes.
        held = self.s.request("GET", base + "/held")[1]
        self.assertTrue(held["metadata"].get("deletionTimestamp"))
        code, _ = self.s.request("PATCH", base + "/held", {"metadata": {"finalizers": None}},
                                 MERGE)
        self.assertEqual(code, 200)
        wait_until(lambda: self.s.request("GET", CRD_PATH + "/gizmos.example.com")[0] == 404, 5,
                   what="the CRD gone")
        self.assertEqual(self.s.request("GET", base)[0], 404)
        code, rl = self.s.request("GET", "/apis/example.com/v1")
        self.assertNotIn("gizmos", [r["name"] for r in rl.get("resources", [])] if code == 200
                         else [])
        seen = []
        while True:
            ev = events.get(timeout=10)
            if ev == "end":
                break
            seen.append((ev["type"], ev["object"]["metadata"]["name"]))
        self.assertEqual(seen[-2:], [("DELETED", "plain"), ("DELETED", "held")])
        self.assertIn(("MODIFIED", "held"), seen)

    def test_unknown_builtin_definition(self):
        with self.assertRaises(RuntimeError) as cm:
            ApiServerProcess("--crd", "rayservice").start()
        self.assertIn("--crd: unknown definition rayservice", str(cm.exception))

if __name__ == "__main__":
    unittest.main()
