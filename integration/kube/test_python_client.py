"""Debian's python3-kubernetes client against the test API server.

Run with /usr/bin/python3 (the interpreter that has the package).
"""

import json
import queue
import threading
import time
import unittest
import urllib.request

from clientfixtures import (ApiException, PythonClientServerTest, client, needs_python_client,
                            watch)

GATE = "kueue.x-k8s.io/admission"


def pod_body(name, labels=None, gates=None, finalizers=None):
    meta = {"name": name, "labels": labels or {}}
    if finalizers:
        meta["finalizers"] = finalizers
    spec = {"containers": [{"name": "c", "image": "busybox:1.36",
                            "resources": {"requests": {"cpu": "1"}}}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def status_of(exc):
    return json.loads(exc.body)


@needs_python_client
class PythonClientTest(PythonClientServerTest, unittest.TestCase):
    SERVER_ARGS = ("--bookmark-interval", "0.3", "--namespace", "team")
    APIS = {"core": "CoreV1Api", "batch": "BatchV1Api", "coord": "CoordinationV1Api"}

    def merge_patch_pod(self, name, body, namespace="team"):
        return self.api_client.call_api(
            "/api/v1/namespaces/{namespace}/pods/{name}", "PATCH",
            {"namespace": namespace, "name": name}, [], {
                "Content-Type": "application/merge-patch+json", "Accept": "application/json"},
            body=body, response_type="V1Pod", auth_settings=["BearerToken"],
            _return_http_data_only=True)

    # ------------------------------------------------------------- pods
    def test_pod_create_list_patch_gates(self):
        created = self.core.create_namespaced_pod(
            "team", pod_body("gated", {"app": "x"}, [GATE, "example.com/other"]))
        self.assertEqual(created.metadata.namespace, "team")
        self.assertEqual(len(created.metadata.uid), 36)
        self.assertTrue(created.metadata.resource_version.isdigit())
        self.assertIsNotNone(created.metadata.creation_timestamp)
        self.assertEqual(created.metadata.generation, 1)
        self.assertEqual(created.status.phase, "Pending")
        self.assertEqual(created.status.qos_class, "Burstable")
        self.assertEqual(created.spec.termination_grace_period_seconds, 30)
        self.core.create_namespaced_pod("team", pod_body("other", {"app": "y"}))

        pods = self.core.list_namespaced_pod("team", label_selector="app=x")
        self.assertEqual([p.metadata.name for p in pods.items], ["gated"])
        self.assertTrue(pods.metadata.resource_version.isdigit())
        pods = self.core.list_namespaced_pod("team", label_selector="app in (x, y)")
        self.assertEqual(sorted(p.metadata.name for p in pods.items), ["gated", "other"])
        pods = self.core.list_pod_for_all_namespaces(field_selector="metadata.name=other")
        self.assertEqual([p.metadata.name for p in pods.items], ["other"])

        # Strategic merge patch: schedulingGates merge by name, "$patch: delete" removes one.
        # python3-kubernetes 22 models predate schedulingGates (they drop the field), so
        # these responses are read raw.
        resp = self.core.patch_namespaced_pod("gated", "team", {
            "spec": {"schedulingGates": [{"$patch": "delete", "name": GATE}]}},
            _preload_content=False)
        patched = json.loads(resp.data)
        self.assertEqual(patched["spec"]["schedulingGates"], [{"name": "example.com/other"}])
        self.assertEqual(patched["metadata"]["generation"], 2)
        self.assertGreater(int(patched["metadata"]["resourceVersion"]),
                           int(created.metadata.resource_version))

        # Adding a gate after creation is forbidden (validateOnlyDeletedSchedulingGates).
        with self.assertRaises(ApiException) as cm:
            self.core.patch_namespaced_pod("gated", "team", {
                "spec": {"schedulingGates": [{"name": "example.com/new"}]}})
        self.assertEqual(cm.exception.status, 422)
        st = status_of(cm.exception)
        self.assertEqual(st["kind"], "Status")
        self.assertEqual(st["status"], "Failure")
        self.assertEqual(st["reason"], "Invalid")
        self.assertEqual(st["code"], 422)
        self.assertEqual(st["message"],
                         "Pod \"gated\" is invalid: spec.schedulingGates[1].name: Forbidden: "
                         "only deletion is allowed, but found new scheduling gate "
                         "'example.com/new'")
        self.assertEqual(st["details"], {"name": "gated", "kind": "Pod", "causes": [{
            "reason": "FieldValueForbidden",
            "message": "Forbidden: only deletion is allowed, but found new scheduling gate "
                       "'example.com/new'",
            "field": "spec.schedulingGates[1].name"}]})

        # JSON merge patch: null deletes the key (all remaining gates go at once).
        self.merge_patch_pod("gated", {"spec": {"schedulingGates": None},
                                       "metadata": {"labels": {"kueue": "on"}}})
        raw = json.loads(self.core.read_namespaced_pod("gated", "team",
                                                       _preload_content=False).data)
        self.assertNotIn("schedulingGates", raw["spec"])
        self.assertEqual(raw["metadata"]["labels"], {"app": "x", "kueue": "on"})
        # A JSON patch ("test" then "add") with a pointer-escaped label key.
        patched = self.core.patch_namespaced_pod("gated", "team", [
            {"op": "test", "path": "/metadata/labels/app", "value": "x"},
            {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1managed", "value": "true"}])
        self.assertEqual(patched.metadata.labels["kueue.x-k8s.io/managed"], "true")
        with self.assertRaises(ApiException) as cm:
            self.core.patch_namespaced_pod("gated", "team", [
                {"op": "test", "path": "/metadata/labels/app", "value": "nope"},
                {"op": "add", "path": "/metadata/labels/x", "value": "y"}])
        self.assertEqual(cm.exception.status, 422)
        self.assertNotIn("x", self.core.read_namespaced_pod("gated", "team").metadata.labels)

        # Merge patch with a stale resourceVersion is a conflict.
        with self.assertRaises(ApiException) as cm:
            self.merge_patch_pod("gated", {"metadata": {
                "resourceVersion": created.metadata.resource_version, "labels": {"a": "b"}}})
        self.assertEqual(cm.exception.status, 409)
        self.assertEqual(status_of(cm.exception)["message"],
                         'Operation cannot be fulfilled on pods "gated": the object has been '
                         'modified; please apply your changes to the latest version and try '
                         'again')

    def test_pod_errors(self):
        self.core.create_namespaced_pod("team", pod_body("dup"))
        with self.assertRaises(ApiException) as cm:
            self.core.create_namespaced_pod("team", pod_body("dup"))
        self.assertEqual(cm.exception.status, 409)
        self.assertEqual(status_of(cm.exception), {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'pods "dup" already exists', "reason": "AlreadyExists",
            "details": {"name": "dup", "kind": "pods"}, "code": 409})
        with self.assertRaises(ApiException) as cm:
            self.core.read_namespaced_pod("missing", "team")
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(status_of(cm.exception)["message"], 'pods "missing" not found')
        with self.assertRaises(ApiException) as cm:
            self.batch.read_namespaced_job("missing", "team")
        self.assertEqual(status_of(cm.exception)["message"], 'jobs.batch "missing" not found')
        self.assertEqual(status_of(cm.exception)["details"],
                         {"name": "missing", "group": "batch", "kind": "jobs"})
        with self.assertRaises(ApiException) as cm:
            self.core.create_namespaced_pod("nowhere", pod_body("p"))
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(status_of(cm.exception)["message"], 'namespaces "nowhere" not found')

    def test_finalizer_keeps_pod_until_removed(self):
        self.core.create_namespaced_pod("team", pod_body("fin", finalizers=["example.com/f"]))
        deleted = self.core.delete_namespaced_pod("fin", "team")
        self.assertIsNotNone(deleted.metadata.deletion_timestamp)
        pod = self.core.read_namespaced_pod("fin", "team")
        self.assertIsNotNone(pod.metadata.deletion_timestamp)
        self.assertEqual(pod.metadata.deletion_grace_period_seconds, 0)  # never scheduled
        with self.assertRaises(ApiException) as cm:  # no new finalizers while deleting
            self.core.patch_namespaced_pod("fin", "team", {"metadata": {
                "finalizers": ["example.com/g"]}})
        self.assertEqual(cm.exception.status, 422)
        self.merge_patch_pod("fin", {"metadata": {"finalizers": None}})
        with self.assertRaises(ApiException) as cm:
            self.core.read_namespaced_pod("fin", "team")
        self.assertEqual(cm.exception.status, 404)

    # ------------------------------------------------------------- jobs
    def test_job_status_subresource(self):
        job = client.V1Job(
            metadata=client.V1ObjectMeta(name="j1", labels={
                "kueue.x-k8s.io/queue-name": "user-queue"}),
            spec=client.V1JobSpec(suspend=True, template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(restart_policy="Never", containers=[
                    client.V1Container(name="c", image="busybox:1.36")]))))
        created = self.batch.create_namespaced_job("team", job)
        self.assertTrue(created.spec.suspend)
        self.assertEqual(created.spec.completions, 1)
        self.assertEqual(created.spec.backoff_limit, 6)
        self.assertEqual(created.metadata.generation, 1)
        read = self.batch.read_namespaced_job("j1", "team")
        self.assertEqual(read.metadata.uid, created.metadata.uid)
        self.assertEqual(read.metadata.labels["kueue.x-k8s.io/queue-name"], "user-queue")

        # Status writes through /status change only status...
        st = self.batch.patch_namespaced_job_status("j1", "team", {
            "spec": {"suspend": False},
            "status": {"active": 1, "startTime": "2025-01-01T00:00:00Z",
                       "conditions": [{"type": "Suspended", "status": "False"}]}})
        self.assertEqual(st.status.active, 1)
        self.assertTrue(st.spec.suspend)
        self.assertEqual(st.metadata.generation, 1)
        # ...conditions merge by type (strategic merge patch)...
        st = self.batch.patch_namespaced_job_status("j1", "team", {"status": {
            "conditions": [{"type": "Complete", "status": "True"}]}})
        self.assertEqual(sorted(c.type for c in st.status.conditions), ["Complete", "Suspended"])
        # ...and status in a main-resource write is ignored.
        upd = self.batch.patch_namespaced_job("j1", "team", {
            "spec": {"suspend": False}, "status": {"active": 7}})
        self.assertFalse(upd.spec.suspend)
        self.assertEqual(upd.status.active, 1)
        self.assertEqual(upd.metadata.generation, 2)
        # Clearing startTime through /status (what Kueue does on suspend).
        st = self.batch.replace_namespaced_job_status("j1", "team", {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j1", "resourceVersion": upd.metadata.resource_version},
            "status": {"active": 0}})
        self.assertIsNone(st.status.start_time)
        self.assertFalse(st.spec.suspend)

    # ------------------------------------------------------------- watch
    def _watch_in_thread(self, func, *args, **kwargs):
        events = queue.Queue()
        w = watch.Watch()

        def run():
            try:
                for ev in w.stream(func, *args, **kwargs):
                    events.put(ev)
            except Exception as e:  # surfaced to the test through the queue
                events.put(e)
            events.put(None)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return w, events

    def _next(self, events):
        ev = events.get(timeout=10)
        if isinstance(ev, Exception):
            raise ev
        return ev

    def test_watch_pods(self):
        self.core.create_namespaced_pod("team", pod_body("pre-existing", {"w": "1"}))
        lst = self.core.list_namespaced_pod("team", label_selector="w")
        list_rv = lst.metadata.resource_version
        w, events = self._watch_in_thread(self.core.list_namespaced_pod, "team",
                                          label_selector="w", resource_version=list_rv,
                                          timeout_seconds=10)
        time.sleep(0.2)
        self.core.create_namespaced_pod("team", pod_body("watched", {"w": "1"}))
        self.core.patch_namespaced_pod("watched", "team", {"metadata": {"labels": {"x": "1"}}})
        self.core.delete_namespaced_pod("watched", "team")
        got = [self._next(events) for _ in range(3)]
        w.stop()
        self.assertEqual([e["type"] for e in got], ["ADDED", "MODIFIED", "DELETED"])
        self.assertEqual({e["object"].metadata.name for e in got}, {"watched"})
        self.assertEqual(got[1]["object"].metadata.labels, {"w": "1", "x": "1"})
        rvs = [int(e["object"].metadata.resource_version) for e in got]
        self.assertEqual(rvs, sorted(rvs))
        self.assertGreater(rvs[0], int(list_rv))
        self.assertEqual(got[2]["raw_object"]["metadata"]["labels"], {"w": "1", "x": "1"})

        # Without resourceVersion: synthetic ADDED for existing objects first.
        w, events = self._watch_in_thread(self.core.list_namespaced_pod, "team",
                                          label_selector="w", timeout_seconds=10)
        ev = self._next(events)
        w.stop()
        self.assertEqual((ev["type"], ev["object"].metadata.name), ("ADDED", "pre-existing"))

        # An object that stops matching the selector is delivered as DELETED.
        lst = self.core.list_namespaced_pod("team", label_selector="w=1")
        w, events = self._watch_in_thread(self.core.list_namespaced_pod, "team",
                                          label_selector="w=1",
                                          resource_version=lst.metadata.resource_version,
                                          timeout_seconds=10)
        time.sleep(0.2)
        self.core.patch_namespaced_pod("pre-existing", "team", {"metadata": {"labels": {
            "w": "2"}}})
        ev = self._next(events)
        w.stop()
        self.assertEqual((ev["type"], ev["object"].metadata.name), ("DELETED", "pre-existing"))

    def test_watch_too_old_resource_version(self):
        old_rv = self.core.list_namespaced_pod("team").metadata.resource_version
        self.core.create_namespaced_pod("team", pod_body("churn"))
        code, body = self.s.request("POST", "/_fixture/compact")
        self.assertEqual(code, 200)
        compacted = body["compactedResourceVersion"]
        with self.assertRaises(ApiException) as cm:
            for _ in watch.Watch().stream(self.core.list_namespaced_pod, "team",
                                          resource_version=old_rv, timeout_seconds=5):
                self.fail("no event expected before the error")
        self.assertEqual(cm.exception.status, 410)
        self.assertEqual(cm.exception.reason, "Expired: too old resource version: %s (%s)"
                         % (old_rv, compacted))
        # The same on the wire: HTTP 200, then one ERROR event carrying the Status.
        code, text = self.s.request(
            "GET", "/api/v1/namespaces/team/pods?watch=1&resourceVersion=%s" % old_rv)
        self.assertEqual(code, 200)
        ev = text if isinstance(text, dict) else json.loads(text.splitlines()[0])
        self.assertEqual(ev, {"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "too old resource version: %s (%s)" % (old_rv, compacted),
            "reason": "Expired", "code": 410}})
        # Watching from the current RV still works after the compaction.
        cur = self.core.list_namespaced_pod("team").metadata.resource_version
        w, events = self._watch_in_thread(self.core.list_namespaced_pod, "team",
                                          resource_version=cur, timeout_seconds=10)
        time.sleep(0.2)
        self.core.create_namespaced_pod("team", pod_body("after-compaction"))
        ev = self._next(events)
        w.stop()
        self.assertEqual((ev["type"], ev["object"].metadata.name), ("ADDED", "after-compaction"))

    def test_watch_bookmarks_and_timeout(self):
        rv = self.core.list_namespaced_pod("team").metadata.resource_version
        start = time.time()
        req = urllib.request.Request(
            self.s.url + "/api/v1/namespaces/team/pods?watch=true&allowWatchBookmarks=true"
            "&timeoutSeconds=1&resourceVersion=" + rv)
        with urllib.request.urlopen(req, timeout=10) as resp:
            self.assertEqual(resp.headers["Transfer-Encoding"], "chunked")
            lines = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
        elapsed = time.time() - start
        self.assertGreaterEqual(elapsed, 0.9)
        self.assertLess(elapsed, 5)
        self.assertTrue(lines)
        for ev in lines:
            self.assertEqual(ev["type"], "BOOKMARK")
            self.assertEqual(ev["object"]["kind"], "Pod")
            self.assertGreaterEqual(int(ev["object"]["metadata"]["resourceVersion"]), int(rv))

    # ------------------------------------------------------------- leases
    def test_lease_optimistic_concurrency(self):
        lease = client.V1Lease(metadata=client.V1ObjectMeta(name="c1f6bfd2.kueue.x-k8s.io"),
                               spec=client.V1LeaseSpec(holder_identity="a",
                                                       lease_duration_seconds=15,
                                                       lease_transitions=0))
        created = self.coord.create_namespaced_lease("team", lease)
        self.assertEqual(created.spec.holder_identity, "a")
        read = self.coord.read_namespaced_lease("c1f6bfd2.kueue.x-k8s.io", "team")
        read.spec.holder_identity = "b"
        read.spec.lease_transitions = 1
        updated = self.coord.replace_namespaced_lease("c1f6bfd2.kueue.x-k8s.io", "team", read)
        self.assertEqual(updated.spec.holder_identity, "b")
        self.assertNotEqual(updated.metadata.resource_version, created.metadata.resource_version)
        # The other candidate still holds the old resourceVersion: 409 Conflict.
        created.spec.holder_identity = "c"
        with self.assertRaises(ApiException) as cm:
            self.coord.replace_namespaced_lease("c1f6bfd2.kueue.x-k8s.io", "team", created)
        self.assertEqual(cm.exception.status, 409)
        self.assertEqual(status_of(cm.exception), {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'Operation cannot be fulfilled on leases.coordination.k8s.io '
                       '"c1f6bfd2.kueue.x-k8s.io": the object has been modified; please apply '
                       'your changes to the latest version and try again',
            "reason": "Conflict",
            "details": {"name": "c1f6bfd2.kueue.x-k8s.io", "group": "coordination.k8s.io",
                        "kind": "leases"},
            "code": 409})
        self.assertEqual(self.coord.read_namespaced_lease(
            "c1f6bfd2.kueue.x-k8s.io", "team").spec.holder_identity, "b")

    # ------------------------------------------------------------- events
    def test_core_events(self):
        ev = client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="j1.1"),
            involved_object=client.V1ObjectReference(kind="Job", name="j1", namespace="team",
                                                     api_version="batch/v1"),
            reason="Suspended", message="Job suspended", type="Normal")
        self.core.create_namespaced_event("team", ev)
        got = self.core.list_namespaced_event(
            "team", field_selector="involvedObject.kind=Job,involvedObject.name=j1")
        self.assertEqual([(e.reason, e.message) for e in got.items],
                         [("Suspended", "Job suspended")])


if __name__ == "__main__":
    unittest.main()
