"""The pod and Job update rules as their clients meet them.

python3-kubernetes (ApiException 422 with the rules' messages, a replace of
what was read), and the simulated scheduler, kubelet and Job controller, whose
binding, /status writes and suspension must go through: Kueue's ungating
patch, a suspended Job keeping its startTime (its template frozen until it is
cleared), and from 1.36 the startTime cleared and the template opened. Run
with /usr/bin/python3.
"""

import json
import unittest

from clientfixtures import ApiException, PythonClientServerTest, needs_python_client
from harness import ServerTest, wait_until
from updaterulefixtures import (GATE, JOBS, NODE_SELECTOR_ONLY_ADDITIONS, PODS, STRATEGIC,
                                UPDATABLE, RulesApi, job, pod)


@needs_python_client
class PythonClientUpdateRulesTest(PythonClientServerTest, unittest.TestCase):
    """The same rules as python3-kubernetes sees them (ApiException 422)."""

    SERVER_ARGS = ("--namespace", "team")
    APIS = {"core": "CoreV1Api", "batch": "BatchV1Api"}

    def test_pod_tolerations_and_node_selector(self):
        self.core.create_namespaced_pod("team", pod("py", gates=[GATE],
                                                    node_selector={"a": "1"}))
        got = self.core.patch_namespaced_pod("py", "team", {"spec": {
            "tolerations": [{"key": "k", "operator": "Exists"}], "nodeSelector": {"b": "2"}}})
        self.assertEqual(got.spec.node_selector, {"a": "1", "b": "2"})
        with self.assertRaises(ApiException) as cm:
            self.core.patch_namespaced_pod("py", "team", {"spec": {"nodeSelector": {"a": "3"}}})
        self.assertEqual(cm.exception.status, 422)
        st = json.loads(cm.exception.body)
        self.assertEqual(st["message"], 'Pod "py" is invalid: spec.nodeSelector: Invalid value: '
                         'map[string]string{"a":"3", "b":"2"}: ' + NODE_SELECTOR_ONLY_ADDITIONS)
        # replace with the model read back: no spec change (python3-kubernetes 22 drops
        # schedulingGates, which is a removal: allowed).
        cur = self.core.read_namespaced_pod("py", "team")
        cur.metadata.labels = {"x": "y"}
        self.core.replace_namespaced_pod("py", "team", cur)
        cur = self.core.read_namespaced_pod("py", "team")
        cur.spec.node_selector = {"c": "3"}
        with self.assertRaises(ApiException) as cm:
            self.core.replace_namespaced_pod("py", "team", cur)
        self.assertEqual(cm.exception.status, 422)
        self.assertTrue(json.loads(cm.exception.body)["message"].startswith(
            'Pod "py" is invalid: spec: Forbidden: ' + UPDATABLE))

    def test_job_template_and_managed_by(self):
        self.batch.create_namespaced_job("team", job("pyjob"))
        got = self.batch.patch_namespaced_job("pyjob", "team", {"spec": {"template": {"spec": {
            "nodeSelector": {"flavor": "a"}}}}})
        self.assertEqual(got.spec.template.spec.node_selector, {"flavor": "a"})
        self.batch.patch_namespaced_job("pyjob", "team", {"spec": {"suspend": False}})
        with self.assertRaises(ApiException) as cm:
            self.batch.patch_namespaced_job("pyjob", "team", {"spec": {"template": {"spec": {
                "nodeSelector": {"flavor": "b"}}}}})
        self.assertEqual(cm.exception.status, 422)
        st = json.loads(cm.exception.body)
        self.assertEqual(st["details"]["causes"][0]["field"], "spec.template")
        self.assertTrue(st["message"].endswith(": field is immutable"))
        with self.assertRaises(ApiException) as cm:
            self.batch.patch_namespaced_job("pyjob", "team", {"spec": {"completions": 2}})
        self.assertEqual(json.loads(cm.exception.body)["message"],
                         'Job.batch "pyjob" is invalid: spec.completions: Invalid value: 2: '
                         "field is immutable")


def _job_status(s, ns, name):
    code, j = s.request("GET", JOBS % ns + "/" + name)
    assert code == 200, j
    return j


def _pods_of(s, ns, name):
    code, lst = s.request("GET", PODS % ns + "?labelSelector=batch.kubernetes.io/job-name%3D"
                          + name)
    return [p for p in lst["items"] if not p["metadata"].get("deletionTimestamp")]


def _suspended(j):
    return any(c["type"] == "Suspended" and c["status"] == "True"
               for c in j.get("status", {}).get("conditions") or [])


class _Controllers(RulesApi, ServerTest):
    """With the simulated scheduler, kubelet and Job controller (``SERVER_ARGS``)."""

    SERVER_ARGS = ("--controllers", "job,scheduler,kubelet", "--node", "n1:pool=a:cpu=8",
                   "--kubelet-start-delay", "0.05")

    def run_then_suspend(self, name):
        self.create(JOBS, job(name, suspend=False, parallelism=2, completions=2))
        # The scheduler binds (pods/binding) and the kubelet writes /status: both go through.
        wait_until(lambda: len([p for p in _pods_of(self.s, self.ns, name)
                                if p["status"].get("phase") == "Running"]) == 2,
                   what="two running pods")
        started = _job_status(self.s, self.ns, name)["status"]["startTime"]
        self.accepted(JOBS, name, {"spec": {"suspend": True}})
        j = wait_until(lambda: (lambda j: j if _suspended(j) and not j["status"].get("active")
                                else None)(_job_status(self.s, self.ns, name)),
                       what="the Job suspended with no active pods")
        wait_until(lambda: not _pods_of(self.s, self.ns, name), what="its pods gone")
        return started, j

    def assert_refused_template(self, name):
        out = self.refused(JOBS, name, {"spec": {"template": {"spec": {
            "nodeSelector": {"pool": "b"}}}}})
        self.assertEqual(out["details"]["causes"][0]["field"], "spec.template")
        return out

    def test_gated_job_pods_take_kueues_ungate_patch(self):
        self.create(JOBS, job("gated", suspend=False, template={"spec": {
            "restartPolicy": "Never", "schedulingGates": [{"name": GATE}],
            "containers": [{"name": "c", "image": "busybox:1.36"}]}}))
        pods = wait_until(lambda: _pods_of(self.s, self.ns, "gated"), what="a gated pod")
        name = pods[0]["metadata"]["name"]
        self.refused(PODS, name, {"spec": {"nodeSelector": {"pool": "b"}, "schedulingGates": [
            {"name": GATE}, {"name": "x.io/late"}]}})
        self.accepted(PODS, name, {"spec": {"nodeSelector": {"pool": "a"},
                                            "schedulingGates": None}})
        wait_until(lambda: (lambda p: p["spec"].get("nodeName") == "n1"
                            and p["status"].get("phase") == "Running")(
            self.s.request("GET", PODS % self.ns + "/" + name)[1]), what="the pod running")
        self.refused(PODS, name, {"spec": {"nodeSelector": {"pool": "a", "more": "x"}}})


class ControllersUnderUpdateRulesTest(_Controllers, unittest.TestCase):
    """Before 1.36 (the default v1.33.0): suspension keeps status.startTime."""

    def test_suspension_keeps_start_time_so_the_template_stays_frozen(self):
        started, j = self.run_then_suspend("frozen")
        self.assertEqual(j["status"].get("startTime"), started)
        self.assert_refused_template("frozen")
        # Clearing startTime (as Kueue does) opens the directives, not the rest.
        self.accepted(JOBS, "frozen", {"status": {"startTime": None}}, sub="/status")
        self.accepted(JOBS, "frozen", {"spec": {"template": {"spec": {
            "nodeSelector": {"pool": "a"}}}}})
        self.assertEqual(self.refused(JOBS, "frozen", {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "200m"}}}]}}}},
            STRATEGIC)["details"]["causes"][0]["field"], "spec.template")
        # Resumed: it runs on the new selector's node, startTime set again.
        self.accepted(JOBS, "frozen", {"spec": {"suspend": False}})
        wait_until(lambda: len([p for p in _pods_of(self.s, self.ns, "frozen")
                                if p["spec"].get("nodeSelector") == {"pool": "a"}
                                and p["spec"].get("nodeName") == "n1"]) == 2,
                   what="pods with the new nodeSelector bound")
        self.assertTrue(_job_status(self.s, self.ns, "frozen")["status"].get("startTime"))
        self.assert_refused_template("frozen")


class Kubernetes136ControllersTest(_Controllers, unittest.TestCase):
    """--server-version v1.36.0: both suspended-Job gates on by default."""

    SERVER_ARGS = _Controllers.SERVER_ARGS + ("--server-version", "v1.36.0")

    def test_suspension_clears_start_time_and_opens_the_template(self):
        started, j = self.run_then_suspend("open")
        self.assertTrue(started)
        self.assertNotIn("startTime", j["status"])
        self.accepted(JOBS, "open", {"spec": {"template": {"spec": {
            "nodeSelector": {"pool": "a"}}}}})
        # Container resources too (MutablePodResourcesForSuspendedJobs)...
        got = self.accepted(JOBS, "open", {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "200m"}}}]}}}}, STRATEGIC)
        self.assertEqual(got["spec"]["template"]["spec"]["containers"][0]["resources"],
                         {"requests": {"cpu": "200m"}})
        # ... but nothing else: compared as spec.template.spec then.
        out = self.refused(JOBS, "open", {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "busybox:1.37"}]}}}}, STRATEGIC)
        self.assertTrue(out["message"].startswith(
            'Job.batch "open" is invalid: spec.template.spec: Invalid value: core.PodSpec{'),
            out["message"])
        self.assertTrue(out["message"].endswith("}: field is immutable"))
        self.assertEqual(out["details"]["causes"][0]["field"], "spec.template.spec")
        # Resumed: pods with the new resources, and the template frozen again.
        self.accepted(JOBS, "open", {"spec": {"suspend": False}})
        wait_until(lambda: len([p for p in _pods_of(self.s, self.ns, "open")
                                if p["spec"]["containers"][0]["resources"]
                                == {"requests": {"cpu": "200m"}}]) == 2,
                   what="pods with the new resources")
        self.assert_refused_template("open")

if __name__ == "__main__":
    unittest.main()
