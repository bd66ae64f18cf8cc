"""Test helpers shared by the tests of the pod and Job update rules.

The pod and Job paths, the patch content types, a scheduling gate, the
messages of refusals seen by more than one test module, ``pod`` and ``job``
bodies, and ``RulesApi``, a test case mixin that creates objects and checks
that a patch is accepted or refused (422 and its message). Used by
test_update_rules_pods.py, test_update_rules_jobs.py and
test_update_rules_clients.py.
"""

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
GATE = "kueue.x-k8s.io/admission"
PODS = "/api/v1/namespaces/%s/pods"
JOBS = "/apis/batch/v1/namespaces/%s/jobs"

UPDATABLE = ("pod updates may not change fields other than `spec.containers[*].image`,"
             "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
             "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
             "(allow it to be set to 1 if it was previously negative)")
NODE_SELECTOR_ONLY_ADDITIONS = ("only additions to spec.nodeSelector are allowed "
                                "(no mutations or deletions)")


def pod(name, gates=(), node_selector=None, tolerations=None, **spec):
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}
    if gates:
        body["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    if node_selector is not None:
        body["spec"]["nodeSelector"] = node_selector
    if tolerations is not None:
        body["spec"]["tolerations"] = tolerations
    body["spec"].update(spec)
    return body


def job(name, suspend=True, **spec):
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"suspend": suspend, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox:1.36",
                                "resources": {"requests": {"cpu": "100m"}}}]}}}}
    body["spec"].update(spec)
    return body


class RulesApi:
    """Helpers over ``self.s`` (an ApiServerProcess) and ``self.ns``."""

    ns = "default"

    def create(self, path, body):
        code, out = self.s.request("POST", path % self.ns, body)
        self.assertEqual(code, 201, out)
        return out

    def patch(self, path, name, body, ctype=MERGE, sub=""):
        return self.s.request("PATCH", (path % self.ns) + "/" + name + sub, body, ctype)

    def accepted(self, path, name, body, ctype=MERGE, sub=""):
        code, out = self.patch(path, name, body, ctype, sub)
        self.assertEqual(code, 200, out)
        return out

    def refused(self, path, name, body, ctype=MERGE, sub=""):
        """The 422 Status; checks its shape and returns it."""
        code, out = self.patch(path, name, body, ctype, sub)
        self.assertEqual(code, 422, out)
        self.assertEqual((out["kind"], out["status"], out["reason"], out["code"]),
                         ("Status", "Failure", "Invalid", 422))
        return out

    def refused_with(self, path, name, body, message, ctype=MERGE):
        out = self.refused(path, name, body, ctype)
        self.assertEqual(out["message"], message)
        return out
