"""CustomResourceDefinitions and the simulated KubeRay operator.

The raw API (discovery, OpenAPI, status subresource, generation, patches, 415,
validation, versions, deletion), the real kubectl (apply, get with the CRDs'
printer columns, short names, explain, patch), python3-kubernetes'
CustomObjectsApi (list, watch, patch, status), and ``--controllers raycluster``
(pods, labels, scaling, autoscaler deletions, multi-host groups, suspension,
deletion). Run with /usr/bin/python3.
"""

import json
import os
import queue
import subprocess
import threading
import time
import unittest
import urllib.request

from harness import ApiServerProcess, wait_until

try:
    from kubernetes import client, config, watch
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover
    client = None

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")
RC_PATH = "/apis/ray.io/v1/namespaces/%s/rayclusters"
WL_PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/%s/workloads"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
ELASTIC_GATE = "kueue.x-k8s.io/elastic-job"


def template(cpu="500m", memory="1Gi", gates=None, annotations=None, restart=None,
             labels=None):
    spec = {"containers": [{"name": "ray", "image": "rayproject/ray:2.41.0",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if restart:
        spec["restartPolicy"] = restart
    meta = {}
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "spec": spec}


def raycluster(name, groups=(("small", 2),), autoscaling=None, suspend=None, hosts=None,
               managed_by=None, worker_template=None):
    spec = {"headGroupSpec": {"rayStartParams": {}, "template": template(cpu="1")},
            "workerGroupSpecs": []}
    for gname, replicas in groups:
        g = {"groupName": gname, "replicas": replicas, "minReplicas": 0, "maxReplicas": 10,
             "rayStartParams": {}, "template": worker_template or template()}
        if hosts:
            g["numOfHosts"] = hosts
        spec["workerGroupSpecs"].append(g)
    if autoscaling is not None:
        spec["enableInTreeAutoscaling"] = autoscaling
    if suspend is not None:
        spec["suspend"] = suspend
    if managed_by:
        spec["managedBy"] = managed_by
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
            "spec": spec}


def workload(name, queue_name="user-queue"):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name},
            "spec": {"queueName": queue_name, "podSets": [{"count": 2, "template": {
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}]}}


def admitted_status(cq="cluster-queue"):
    t = "2025-01-01T00:00:00Z"
    return {"status": {"admission": {"clusterQueue": cq, "podSetAssignments": []},
                       "conditions": [
                           {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                            "message": "Quota reserved", "lastTransitionTime": t},
                           {"type": "Admitted", "status": "True", "reason": "Admitted",
                            "message": "The workload is admitted", "lastTransitionTime": t}]}}


def widget_crd(name="widgets.example.com", versions=None, scope="Namespaced", **names):
    n = {"plural": "widgets", "kind": "Widget", "shortNames": ["wdg"]}
    n.update(names)
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"size": {"type": "integer", "default": 1}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    if versions is None:
        versions = [
            {"name": "v1", "served": True, "storage": True, "schema": schema,
             "additionalPrinterColumns": [
                 {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                 {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                 {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready",
                  "priority": 1}]},
            {"name": "v1beta1", "served": True, "storage": False, "schema": schema,
             "deprecated": True}]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": "example.com", "scope": scope, "names": n, "versions": versions}}


def cond(obj, ctype):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


# ---------------------------------------------------------------------- raw API

class CrdApiTest(unittest.TestCase):
    """The built-in definitions (``--crd raycluster,workload``) over the raw API."""

    @classmethod
    def setUpClass(cls):
        cls.s = ApiServerProcess("--crd", "raycluster", "--crd", "workload",
                                 "--namespace", "team").start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

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


class CrdLifecycleTest(unittest.TestCase):
    """A CRD created through the API: validation, versions, deletion."""

    @classmethod
    def setUpClass(cls):
        cls.s = ApiServerProcess("--namespace", "team").start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

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


# ---------------------------------------------------------------------- kubectl

def kubectl_minor():
    try:
        out = subprocess.run([KUBECTL, "version", "--client", "-o", "json"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
        return int(json.loads(out)["clientVersion"]["minor"].rstrip("+"))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        return None


RAYCLUSTER_YAML = """apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-kuberay
spec:
  rayVersion: '2.41.0'
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.41.0
          resources:
            requests: {cpu: "1", memory: 2G}
  workerGroupSpecs:
  - replicas: %d
    minReplicas: 1
    maxReplicas: 5
    groupName: workergroup
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.41.0
          resources:
            requests: {cpu: "1", memory: 1G}
"""


@unittest.skipIf((kubectl_minor() or 0) < 29, "needs kubectl 1.29 or later at %s" % KUBECTL)
class CrdKubectlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = ApiServerProcess("--crd", "raycluster,workload", "--namespace", "ns",
                                 "--controllers", "raycluster,scheduler,kubelet",
                                 "--node", "n1::cpu=16", "--kubelet-start-delay", "0.05").start()
        cls.env = dict(os.environ, HOME=cls.s.tmp, KUBECONFIG=cls.s.kubeconfig)

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def kubectl(self, *args, check=True, stdin=None):
        cmd = [KUBECTL, "--kubeconfig", self.s.kubeconfig, "--cache-dir",
               os.path.join(self.s.tmp, "cache")] + list(args)
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, input=stdin,
                           timeout=40)
        if check and p.returncode != 0:
            self.fail("%s failed (%d):\nstdout: %s\nstderr: %s" % (
                " ".join(cmd), p.returncode, p.stdout, p.stderr))
        return p

    def rows(self, text):
        return [line.split() for line in text.strip().splitlines()]

    def test_apply_get_patch_raycluster(self):
        p = self.kubectl("apply", "-f", "-", stdin=RAYCLUSTER_YAML % 1)
        self.assertEqual(p.stdout.strip(), "raycluster.ray.io/raycluster-kuberay created")
        rc = json.loads(self.kubectl("get", "raycluster", "raycluster-kuberay", "-o",
                                     "json").stdout)
        self.assertIn("kubectl.kubernetes.io/last-applied-configuration",
                      rc["metadata"]["annotations"])
        wait_until(lambda: "ready" in self.kubectl("get", "rayclusters").stdout, 10,
                   what="the cluster ready")
        out = self.kubectl("get", "rayclusters").stdout
        header, row = out.strip().splitlines()
        self.assertEqual(header.split(), ["NAME", "DESIRED", "WORKERS", "AVAILABLE", "WORKERS",
                                          "CPUS", "MEMORY", "GPUS", "STATUS", "AGE"])
        self.assertEqual(row.split()[:7], ["raycluster-kuberay", "1", "1", "2", "3G", "0",
                                           "ready"])
        wide = self.kubectl("get", "raycluster", "-o", "wide").stdout
        self.assertIn("HEAD POD IP", wide.splitlines()[0])
        # A changed manifest goes as a JSON merge patch (CRDs take no strategic merge).
        p = self.kubectl("apply", "-f", "-", stdin=RAYCLUSTER_YAML % 2)
        self.assertEqual(p.stdout.strip(), "raycluster.ray.io/raycluster-kuberay configured")
        wait_until(lambda: len(self.kubectl("get", "pods", "-l",
                                            "ray.io/cluster=raycluster-kuberay,"
                                            "ray.io/node-type=worker", "-o", "name")
                               .stdout.split()) == 2, 10, what="two workers")
        # The autoscaler's way: a JSON patch of one group's replicas.
        p = self.kubectl("patch", "raycluster", "raycluster-kuberay", "--type", "json", "-p",
                         '[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas",'
                         '"value":1}]')
        self.assertEqual(p.stdout.strip(), "raycluster.ray.io/raycluster-kuberay patched")
        p = self.kubectl("patch", "raycluster", "raycluster-kuberay", "-p",
                         '{"spec":{"suspend":true}}', check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("application/strategic-merge-patch+json is not supported by ray.io/v1, "
                      "Kind=RayCluster", p.stderr)
        p = self.kubectl("patch", "raycluster", "raycluster-kuberay", "--type", "merge", "-p",
                         '{"spec":{"suspend":true}}')
        wait_until(lambda: "suspended" in self.kubectl("get", "rayclusters").stdout, 10,
                   what="the cluster suspended")
        self.assertEqual(self.kubectl("get", "pods", "-l", "ray.io/cluster=raycluster-kuberay",
                                      "-o", "name").stdout.strip(), "")

    def test_get_workloads_with_kueue_columns(self):
        code, _ = self.s.request("POST", WL_PATH % "ns", workload("job-a"))
        self.assertEqual(code, 201)
        self.s.request("PATCH", WL_PATH % "ns" + "/job-a/status", admitted_status(), MERGE)
        self.s.request("POST", WL_PATH % "ns", workload("job-b", "other-queue"))
        out = self.kubectl("get", "workloads", "-n", "ns").stdout
        lines = out.strip().splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED",
                                            "FINISHED", "AGE"])
        self.assertEqual(lines[0].index("RESERVED IN"), lines[0].index("RESERVED"))
        job_a, job_b = self.rows(out)[1:]
        self.assertEqual(job_a[:4], ["job-a", "user-queue", "cluster-queue", "True"])
        self.assertRegex(job_a[4], r"^\d+s$")  # FINISHED is empty
        self.assertEqual(len(job_a), 5)
        self.assertEqual(job_b[:2], ["job-b", "other-queue"])
        # Kueue's short names: kwl (wl was dropped from Kueue's CRD by kueue#8472).
        by_short = self.kubectl("get", "kwl", "-n", "ns").stdout
        self.assertEqual([r[:-1] for r in self.rows(by_short)],
                         [r[:-1] for r in self.rows(out)])  # all but the age
        self.assertEqual(self.kubectl("get", "kueueworkloads", "-n", "ns", "-o", "name")
                         .stdout.split(), ["workload.kueue.x-k8s.io/job-a",
                                           "workload.kueue.x-k8s.io/job-b"])
        p = self.kubectl("get", "wl", "-n", "ns", check=False)
        self.assertIn('the server doesn\'t have a resource type "wl"', p.stderr)
        jp = self.kubectl("get", "workload", "job-a", "-n", "ns", "-o",
                          "jsonpath={.status.admission.clusterQueue}").stdout
        self.assertEqual(jp, "cluster-queue")

    def test_crds_resources_and_explain(self):
        out = self.kubectl("get", "crds").stdout
        self.assertEqual([r[0] for r in self.rows(out)],
                         ["NAME", "rayclusters.ray.io", "workloads.kueue.x-k8s.io"])
        out = self.kubectl("api-resources", "--api-group=kueue.x-k8s.io", "--no-headers").stdout
        self.assertEqual(out.split(), ["workloads", "kwl,kueueworkload,kueueworkloads",
                                       "kueue.x-k8s.io/v1beta2", "true", "Workload"])
        out = self.kubectl("explain", "rayclusters.spec.workerGroupSpecs").stdout
        self.assertIn("numOfHosts\t<integer>", out)
        self.kubectl("wait", "--for=condition=Established", "crd/rayclusters.ray.io",
                     "--timeout=10s")

    def test_apply_and_delete_a_crd(self):
        crd = widget_crd(name="doodads.example.com", plural="doodads", kind="Doodad",
                         shortNames=["dd"])
        p = self.kubectl("apply", "-f", "-", stdin=json.dumps(crd))
        self.assertEqual(p.stdout.strip(),
                         "customresourcedefinition.apiextensions.k8s.io/doodads.example.com "
                         "created")
        p = self.kubectl("apply", "-n", "ns", "-f", "-", stdin=json.dumps({
            "apiVersion": "example.com/v1", "kind": "Doodad", "metadata": {"name": "d1"},
            "spec": {"size": 3}, "status": {"phase": "Up"}}))
        self.assertEqual(p.stdout.strip(), "doodad.example.com/d1 created")
        out = self.kubectl("get", "dd", "-n", "ns").stdout
        self.assertEqual(self.rows(out)[0], ["NAME", "SIZE", "PHASE"])
        self.assertEqual(self.rows(out)[1], ["d1", "3", "Up"])
        self.kubectl("delete", "crd", "doodads.example.com", "--wait=true", "--timeout=20s")
        p = self.kubectl("get", "doodads", "-n", "ns", check=False)
        self.assertNotEqual(p.returncode, 0)


# ------------------------------------------------------------- python3-kubernetes

@unittest.skipIf(client is None, "python3-kubernetes is not installed (use /usr/bin/python3)")
class CustomObjectsApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = ApiServerProcess("--crd", "raycluster,workload", "--namespace", "team").start()
        cls.api_client = config.new_client_from_config(config_file=cls.s.kubeconfig)
        cls.api = client.CustomObjectsApi(cls.api_client)
        cls.ext = client.ApiextensionsV1Api(cls.api_client)

    @classmethod
    def tearDownClass(cls):
        cls.api_client.close()
        cls.s.stop()

    def test_crud_list_and_status(self):
        api = self.api
        created = api.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team",
                                                      "workloads", workload("wl-1"))
        self.assertEqual(created["metadata"]["generation"], 1)
        api.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "default",
                                            "workloads", workload("wl-2"))
        lst = api.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team", "workloads")
        self.assertEqual((lst["kind"], [i["metadata"]["name"] for i in lst["items"]]),
                         ("WorkloadList", ["wl-1"]))
        everywhere = api.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "workloads")
        self.assertEqual(sorted(i["metadata"]["name"] for i in everywhere["items"]),
                         ["wl-1", "wl-2"])
        out = api.patch_namespaced_custom_object_status("kueue.x-k8s.io", "v1beta2", "team",
                                                        "workloads", "wl-1", admitted_status())
        self.assertEqual(out["status"]["admission"]["clusterQueue"], "cluster-queue")
        self.assertEqual(out["metadata"]["generation"], 1)
        got = api.get_namespaced_custom_object_status("kueue.x-k8s.io", "v1beta2", "team",
                                                      "workloads", "wl-1")
        self.assertEqual([c["type"] for c in got["status"]["conditions"]],
                         ["QuotaReserved", "Admitted"])
        out = api.patch_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team",
                                                 "workloads", "wl-1",
                                                 {"spec": {"active": False}})
        self.assertEqual((out["spec"]["active"], out["metadata"]["generation"]), (False, 2))
        # A stale resourceVersion is a 409, as for built-in kinds.
        stale = dict(created)
        with self.assertRaises(ApiException) as cm:
            api.replace_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team",
                                                 "workloads", "wl-1", stale)
        self.assertEqual(cm.exception.status, 409)
        api.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team", "workloads",
                                            "wl-1")
        with self.assertRaises(ApiException) as cm:
            api.get_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team", "workloads",
                                             "wl-1")
        self.assertEqual(cm.exception.status, 404)

    def test_watch(self):
        api = self.api
        rv = api.list_namespaced_custom_object("ray.io", "v1", "team",
                                               "rayclusters")["metadata"]["resourceVersion"]
        events = queue.Queue()
        w = watch.Watch()

        def run():
            try:
                for ev in w.stream(api.list_namespaced_custom_object, "ray.io", "v1", "team",
                                   "rayclusters", resource_version=rv, timeout_seconds=10):
                    events.put(ev)
            except Exception as e:  # surfaced through the queue
                events.put(e)

        threading.Thread(target=run, daemon=True).start()
        time.sleep(0.2)
        api.create_namespaced_custom_object("ray.io", "v1", "team", "rayclusters",
                                            raycluster("watched"))
        api.patch_namespaced_custom_object_status("ray.io", "v1", "team", "rayclusters",
                                                  "watched", {"status": {"state": "ready"}})
        api.delete_namespaced_custom_object("ray.io", "v1", "team", "rayclusters", "watched")
        got = []
        for _ in range(3):
            ev = events.get(timeout=10)
            if isinstance(ev, Exception):
                raise ev
            got.append(ev)
        w.stop()
        self.assertEqual([e["type"] for e in got], ["ADDED", "MODIFIED", "DELETED"])
        self.assertEqual(got[1]["object"]["status"], {"state": "ready"})
        self.assertEqual(got[0]["object"]["kind"], "RayCluster")

    def test_crd_through_apiextensions_api(self):
        crd = self.ext.read_custom_resource_definition("rayclusters.ray.io")
        self.assertEqual((crd.spec.group, crd.spec.names.kind, crd.spec.scope),
                         ("ray.io", "RayCluster", "Namespaced"))
        self.assertEqual([c.type for c in crd.status.conditions],
                         ["NamesAccepted", "Established"])
        cols = crd.spec.versions[0].additional_printer_columns
        self.assertEqual(cols[6].name, "status")


# --------------------------------------------------------------- the KubeRay operator

class RayOperatorTest(unittest.TestCase):
    """``--controllers raycluster,scheduler,kubelet``: pods run, the status follows."""

    @classmethod
    def setUpClass(cls):
        cls.s = ApiServerProcess("--crd", "raycluster", "--namespace", "ray",
                                 "--controllers", "raycluster,scheduler,kubelet",
                                 "--node", "n1:pool=a:cpu=32", "--node", "n2:pool=a:cpu=32",
                                 "--kubelet-start-delay", "0.05",
                                 "--kubelet-grace-cap", "0.2").start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def create(self, body):
        code, out = self.s.request("POST", RC_PATH % "ray", body)
        self.assertEqual(code, 201, out)
        return out

    def get(self, name):
        return self.s.request("GET", RC_PATH % "ray" + "/" + name)[1]

    def patch(self, name, body, ctype=JSON_PATCH):
        code, out = self.s.request("PATCH", RC_PATH % "ray" + "/" + name, body, ctype)
        self.assertEqual(code, 200, out)
        return out

    def pods(self, cluster, extra=""):
        sel = "ray.io/cluster=%s%s" % (cluster, extra)
        return self.s.request("GET", "/api/v1/namespaces/ray/pods?labelSelector="
                              + urllib.request.quote(sel))[1]["items"]

    def live(self, cluster, extra=""):
        return [p for p in self.pods(cluster, extra) if not p["metadata"].get("deletionTimestamp")]

    def wait_state(self, name, state, timeout=10):
        return wait_until(lambda: (self.get(name).get("status") or {}).get("state") == state
                          and self.get(name), timeout, what="%s %s" % (name, state))

    def wait_workers(self, name, n, timeout=10):
        return wait_until(lambda: len(self.pods(name, ",ray.io/node-type=worker")) == n
                          and self.pods(name, ",ray.io/node-type=worker"), timeout,
                          what="%d workers of %s" % (n, name))

    def test_pods_labels_owners_and_status(self):
        rc = self.create(raycluster("basic", groups=(("small", 2), ("big", 1))))
        rc = self.wait_state("basic", "ready")
        pods = self.pods("basic")
        self.assertEqual(len(pods), 4)
        heads = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
        self.assertEqual(len(heads), 1)
        head = heads[0]
        self.assertRegex(head["metadata"]["name"], r"^basic-head-[a-z0-9]{5}$")
        self.assertEqual(head["metadata"]["labels"], {
            "ray.io/is-ray-node": "yes", "ray.io/cluster": "basic", "ray.io/node-type": "head",
            "ray.io/group": "headgroup", "ray.io/identifier": "basic-head",
            "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator"})
        self.assertEqual(head["metadata"]["ownerReferences"], [{
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "basic",
            "uid": rc["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}])
        small = sorted(self.pods("basic", ",ray.io/group=small"),
                       key=lambda p: p["metadata"]["labels"]["ray.io/worker-group-replica-index"])
        self.assertEqual(len(small), 2)
        for i, p in enumerate(small):
            self.assertRegex(p["metadata"]["name"], r"^basic-small-worker-[a-z0-9]{5}$")
            self.assertEqual(p["metadata"]["labels"]["ray.io/node-type"], "worker")
            self.assertEqual(p["metadata"]["labels"]["ray.io/worker-group-replica-index"], str(i))
            self.assertEqual(p["spec"]["initContainers"][0]["name"], "wait-gcs-ready")
            self.assertEqual(p["status"]["phase"], "Running")
        self.assertEqual(len(self.pods("basic", ",ray.io/group=big")), 1)
        st = rc["status"]
        self.assertEqual({k: st.get(k) for k in (
            "desiredWorkerReplicas", "readyWorkerReplicas", "availableWorkerReplicas",
            "minWorkerReplicas", "maxWorkerReplicas", "desiredCPU", "desiredMemory", "desiredGPU",
            "observedGeneration")}, {
            "desiredWorkerReplicas": 3, "readyWorkerReplicas": 3, "availableWorkerReplicas": 3,
            "minWorkerReplicas": None, "maxWorkerReplicas": 20, "desiredCPU": "2500m",
            "desiredMemory": "4Gi", "desiredGPU": "0", "observedGeneration": 1})
        self.assertEqual(st["head"], {"podIP": head["status"]["podIP"],
                                      "podName": head["metadata"]["name"]})
        self.assertEqual([(c["type"], c["status"], c["reason"]) for c in st["conditions"]], [
            ("HeadPodReady", "True", "HeadPodRunningAndReady"),
            ("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime"),
            ("RayClusterSuspended", "False", "RayClusterSuspended"),
            ("RayClusterSuspending", "False", "RayClusterSuspending")])
        self.assertIn("ready", st["stateTransitionTimes"])
        # Deleting the cluster deletes its pods (background propagation).
        self.s.request("DELETE", RC_PATH % "ray" + "/basic")
        wait_until(lambda: not self.pods("basic"), 10, what="the pods of basic gone")

    def test_scale_down_and_up(self):
        self.create(raycluster("scaled", groups=(("g", 2),)))
        self.wait_state("scaled", "ready")
        before = {p["metadata"]["name"]: p for p in self.pods("scaled", ",ray.io/node-type=worker")}
        newest = max(before.values(), key=lambda p: (
            p["metadata"]["creationTimestamp"],
            p["metadata"]["labels"]["ray.io/worker-group-replica-index"]))
        out = self.patch("scaled", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas",
                                     "value": 1}])
        self.assertEqual(out["metadata"]["generation"], 2)
        left = self.wait_workers("scaled", 1)
        self.assertNotEqual(left[0]["metadata"]["name"], newest["metadata"]["name"])
        rc = wait_until(lambda: self.get("scaled")["status"].get("desiredWorkerReplicas") == 1
                        and self.get("scaled"), 5, what="desired 1")
        self.assertEqual(rc["status"]["observedGeneration"], 2)
        self.assertEqual(rc["status"]["state"], "ready")
        self.patch("scaled", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas",
                               "value": 2}])
        pods = self.wait_workers("scaled", 2)
        self.assertIn(left[0]["metadata"]["name"], [p["metadata"]["name"] for p in pods])
        self.assertEqual(sorted(p["metadata"]["labels"]["ray.io/worker-group-replica-index"]
                                for p in pods), ["0", "1"])
        rc = wait_until(lambda: self.get("scaled")["status"].get("readyWorkerReplicas") == 2
                        and self.get("scaled"), 5, what="two ready workers")
        self.assertEqual(rc["status"]["desiredCPU"], "2")

    def test_autoscaler_decides_deletions(self):
        self.create(raycluster("auto", groups=(("g", 2),), autoscaling=True))
        self.wait_state("auto", "ready")
        head = self.pods("auto", ",ray.io/node-type=head")[0]
        self.assertEqual([c["name"] for c in head["spec"]["containers"]], ["ray", "autoscaler"])
        self.assertEqual(head["spec"]["containers"][1]["resources"]["requests"],
                         {"cpu": "500m", "memory": "512Mi"})
        self.assertEqual(head["spec"]["serviceAccountName"], "auto")
        # Fewer replicas alone delete nothing: the autoscaler names the pods to go.
        self.patch("auto", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas",
                             "value": 1}])
        wait_until(lambda: self.get("auto")["status"].get("desiredWorkerReplicas") == 1, 5,
                   what="desired 1")
        time.sleep(0.3)
        workers = self.live("auto", ",ray.io/node-type=worker")
        self.assertEqual(len(workers), 2)
        victim = workers[1]["metadata"]["name"]
        self.patch("auto", {"spec": {"workerGroupSpecs": [dict(
            self.get("auto")["spec"]["workerGroupSpecs"][0],
            scaleStrategy={"workersToDelete": [victim]})]}}, MERGE)
        left = self.wait_workers("auto", 1)
        self.assertNotEqual(left[0]["metadata"]["name"], victim)

    def test_multi_host_group(self):
        self.create(raycluster("multi", groups=(("tpu", 2),), hosts=2))
        self.wait_state("multi", "ready")
        workers = self.pods("multi", ",ray.io/node-type=worker")
        self.assertEqual(len(workers), 4)
        by_replica = {}
        for p in workers:
            labels = p["metadata"]["labels"]
            by_replica.setdefault(labels["ray.io/worker-group-replica-name"], []).append(
                (labels["ray.io/worker-group-replica-index"], labels["ray.io/replica-host-index"]))
        self.assertEqual(sorted(sorted(v) for v in by_replica.values()),
                         [[("0", "0"), ("0", "1")], [("1", "0"), ("1", "1")]])
        for rname in by_replica:
            self.assertRegex(rname, r"^tpu-[a-z0-9]{5}$")
        self.assertEqual(self.get("multi")["status"]["desiredWorkerReplicas"], 4)
        self.patch("multi", [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas",
                              "value": 1}])
        left = self.wait_workers("multi", 2)
        self.assertEqual(len({p["metadata"]["labels"]["ray.io/worker-group-replica-name"]
                              for p in left}), 1)

    def test_suspend_and_resume(self):
        self.create(raycluster("susp", groups=(("g", 2),)))
        self.wait_state("susp", "ready")
        self.patch("susp", {"spec": {"suspend": True}}, MERGE)
        rc = self.wait_state("susp", "suspended")
        self.assertEqual(self.pods("susp"), [])
        conds = {c["type"]: (c["status"], c["reason"], c["message"])
                 for c in rc["status"]["conditions"]}
        self.assertEqual(conds["RayClusterSuspended"], ("True", "RayClusterSuspended", ""))
        self.assertEqual(conds["RayClusterSuspending"], ("False", "RayClusterSuspending", ""))
        self.assertEqual(conds["RayClusterProvisioned"], (
            "False", "RayClusterPodsProvisioning", "RayCluster has been suspended"))
        self.assertEqual(conds["HeadPodReady"], ("False", "HeadPodNotFound",
                                                 "Head Pod not found"))
        self.assertNotIn("readyWorkerReplicas", rc["status"])
        self.patch("susp", {"spec": {"suspend": False}}, MERGE)
        rc = self.wait_state("susp", "ready")
        self.assertEqual(len(self.pods("susp")), 3)
        self.assertEqual(cond(rc, "RayClusterSuspended")["status"], "False")
        self.assertEqual(cond(rc, "RayClusterProvisioned")["reason"],
                         "AllPodRunningAndReadyFirstTime")
        self.assertEqual(sorted(rc["status"]["stateTransitionTimes"]), ["ready", "suspended"])

    def test_created_suspended_then_gated_pods(self):
        # What a Kueue shim sees: created suspended, no pods; started with the elastic gate in
        # the templates, the pods wait (state not ready) until they are ungated.
        body = raycluster("gated", groups=(("g", 1),), suspend=True,
                          worker_template=template(gates=[ELASTIC_GATE]))
        self.create(body)
        rc = self.wait_state("gated", "suspended")
        self.assertEqual(self.pods("gated"), [])
        self.assertEqual(cond(rc, "RayClusterSuspended")["status"], "True")
        self.patch("gated", {"spec": {"suspend": False}}, MERGE)
        worker = self.wait_workers("gated", 1)[0]
        self.assertEqual(worker["spec"]["schedulingGates"], [{"name": ELASTIC_GATE}])
        time.sleep(0.3)
        self.assertEqual(self.get("gated")["status"]["state"], "suspended")
        self.s.request("PATCH", "/api/v1/namespaces/ray/pods/" + worker["metadata"]["name"],
                       {"spec": {"schedulingGates": None}}, MERGE)
        self.wait_state("gated", "ready")

    def test_finished_pods_are_replaced(self):
        body = raycluster("flaky", groups=(("g", 1),), worker_template=template(
            restart="Never", annotations={"fixture.admitd.io/runtime-seconds": "0.3"}))
        self.create(body)
        first = self.wait_workers("flaky", 1)[0]["metadata"]["name"]
        wait_until(lambda: [p["metadata"]["name"] for p in self.live(
            "flaky", ",ray.io/node-type=worker")] not in ([], [first]), 10,
            what="a new worker")

    def test_managed_elsewhere_is_left_alone(self):
        self.create(raycluster("remote", managed_by="kueue.x-k8s.io/multikueue"))
        time.sleep(0.5)
        self.assertEqual(self.pods("remote"), [])
        self.assertNotIn("status", self.get("remote"))


if __name__ == "__main__":
    unittest.main()
