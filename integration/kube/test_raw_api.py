"""Wire-level checks of the test API server (urllib only): shapes clients rely on."""

import unittest

from harness import ServerTest


def pod(name, **labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


class RawApiTest(ServerTest, unittest.TestCase):
    def test_discovery_documents(self):
        code, body = self.s.request("GET", "/api")
        self.assertEqual((code, body["kind"], body["versions"]), (200, "APIVersions", ["v1"]))
        code, body = self.s.request("GET", "/apis")
        self.assertEqual([g["name"] for g in body["groups"]],
                         ["apps", "batch", "coordination.k8s.io", "events.k8s.io",
                          "admissionregistration.k8s.io", "apiextensions.k8s.io"])
        code, body = self.s.request("GET", "/apis/batch/v1")
        self.assertEqual(body["groupVersion"], "batch/v1")
        self.assertEqual([r["name"] for r in body["resources"]], ["jobs", "jobs/status"])
        self.assertEqual(body["resources"][1]["verbs"], ["get", "patch", "update"])
        code, body = self.s.request("GET", "/openapi/v3")
        self.assertIn("apis/batch/v1", body["paths"])
        code, body = self.s.request("GET", "/api/v1/nonsense")
        self.assertEqual((code, body), (404, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server could not find the requested resource",
            "reason": "NotFound", "details": {}, "code": 404}))

    def test_list_pagination_and_table(self):
        self.s.request("POST", "/api/v1/namespaces", {"metadata": {"name": "page"}})
        for i in range(5):
            code, _ = self.s.request("POST", "/api/v1/namespaces/page/pods", pod("p%d" % i))
            self.assertEqual(code, 201)
        code, first = self.s.request("GET", "/api/v1/namespaces/page/pods?limit=2")
        self.assertEqual(first["kind"], "PodList")
        self.assertEqual([p["metadata"]["name"] for p in first["items"]], ["p0", "p1"])
        self.assertNotIn("kind", first["items"][0])  # typed list items carry no kind
        self.assertEqual(first["metadata"]["remainingItemCount"], 3)
        names = [p["metadata"]["name"] for p in first["items"]]
        cont = first["metadata"]["continue"]
        while cont:
            code, page = self.s.request("GET", "/api/v1/namespaces/page/pods?limit=2&continue="
                                        + cont)
            self.assertEqual(page["metadata"]["resourceVersion"],
                             first["metadata"]["resourceVersion"])
            names += [p["metadata"]["name"] for p in page["items"]]
            cont = page["metadata"].get("continue")
        self.assertEqual(names, ["p0", "p1", "p2", "p3", "p4"])
        code, table = self.s.request("GET", "/api/v1/namespaces/page/pods/p0", headers={
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
        self.assertEqual(table["kind"], "Table")
        self.assertEqual(table["rows"][0]["cells"][0], "p0")
        self.assertEqual(table["rows"][0]["object"]["kind"], "PartialObjectMetadata")

    def test_update_semantics(self):
        code, created = self.s.request("POST", "/api/v1/namespaces/default/pods", pod("u"))
        # PUT without resourceVersion is an unconditional overwrite; status is kept.
        body = dict(created)
        body["metadata"] = {"name": "u", "labels": {"v": "2"}}
        body["status"] = {"phase": "Running"}
        code, updated = self.s.request("PUT", "/api/v1/namespaces/default/pods/u", body)
        self.assertEqual(code, 200)
        self.assertEqual(updated["metadata"]["labels"], {"v": "2"})
        self.assertEqual(updated["metadata"]["uid"], created["metadata"]["uid"])
        self.assertEqual(updated["status"]["phase"], "Pending")
        # An identical PUT is a no-op: same resourceVersion.
        code, again = self.s.request("PUT", "/api/v1/namespaces/default/pods/u", updated)
        self.assertEqual(again["metadata"]["resourceVersion"],
                         updated["metadata"]["resourceVersion"])
        # Name mismatch with the URL.
        code, st = self.s.request("PUT", "/api/v1/namespaces/default/pods/u", pod("other"))
        self.assertEqual((code, st["reason"], st["message"]), (
            400, "BadRequest", "the name of the object (other) does not match the name on the "
            "URL (u)"))
        # Unknown patch content type.
        code, st = self.s.request("PATCH", "/api/v1/namespaces/default/pods/u", {},
                                  content_type="application/foo")
        self.assertEqual((code, st["reason"]), (415, "UnsupportedMediaType"))
        # Delete of a job answers a Success Status; of a pod, the pod.
        code, _ = self.s.request("POST", "/apis/batch/v1/namespaces/default/jobs", {
            "metadata": {"name": "dj"}, "spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})
        self.assertEqual(code, 201)
        code, st = self.s.request("DELETE", "/apis/batch/v1/namespaces/default/jobs/dj")
        self.assertEqual((code, st["kind"], st["status"], st["details"]["kind"],
                          st["details"]["group"]), (200, "Status", "Success", "jobs", "batch"))
        code, deleted = self.s.request("DELETE", "/api/v1/namespaces/default/pods/u")
        self.assertEqual((code, deleted["kind"], deleted["metadata"]["name"]), (200, "Pod", "u"))

    def test_too_large_resource_version(self):
        code, st = self.s.request("GET", "/api/v1/pods?resourceVersion=999999999")
        self.assertEqual((code, st["reason"]), (504, "Timeout"))
        self.assertEqual(st["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")

    def test_invalid_name_and_selector(self):
        code, st = self.s.request("POST", "/api/v1/namespaces/default/pods", pod("Bad_Name"))
        self.assertEqual((code, st["reason"]), (422, "Invalid"))
        self.assertTrue(st["message"].startswith(
            'Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase '
            'RFC 1123 subdomain'), st["message"])
        code, st = self.s.request("GET", "/api/v1/pods?labelSelector=a%20in%20(")
        self.assertEqual((code, st["reason"]), (400, "BadRequest"))


if __name__ == "__main__":
    unittest.main()
