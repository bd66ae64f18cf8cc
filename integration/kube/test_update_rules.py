"""What pod and Job updates may change: each rule's accepted and refused cases, exact messages.

Raw API through the harness, python3-kubernetes where natural, and the
simulated controllers (their binding, /status writes and suspension must go
through). Run with /usr/bin/python3.
"""

import json
import os
import sys
import unittest

from harness import ApiServerProcess, wait_until

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import updaterules  # noqa: E402

try:
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover
    client = None

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSONPATCH = "application/json-patch+json"
GATE = "kueue.x-k8s.io/admission"
PODS = "/api/v1/namespaces/%s/pods"
JOBS = "/apis/batch/v1/namespaces/%s/jobs"

UPDATABLE = ("pod updates may not change fields other than `spec.containers[*].image`,"
             "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
             "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
             "(allow it to be set to 1 if it was previously negative)")
TOLERATION_CHANGED = ("spec.tolerations: Forbidden: existing toleration can not be modified "
                      "except its tolerationSeconds")
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


class _Api:
    """Helpers over ``self.s`` (an ApiServerProcess) and ``self.ns``."""

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


class PodUpdateRulesTest(_Api, unittest.TestCase):
    """ValidatePodUpdate (§6.5), on pods no controller touches."""

    ns = "default"

    @classmethod
    def setUpClass(cls):
        cls.s = ApiServerProcess().start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def test_scheduling_gates_can_only_be_removed(self):
        self.create(PODS, pod("gates", gates=[GATE, "example.com/b"]))
        out = self.refused(PODS, "gates", {"spec": {"schedulingGates": [
            {"name": GATE}, {"name": "example.com/b"}, {"name": "example.com/new"}]}})
        self.assertEqual(out["message"], 'Pod "gates" is invalid: spec.schedulingGates[2].name: '
                         "Forbidden: only deletion is allowed, but found new scheduling gate "
                         "'example.com/new'")
        self.assertEqual(out["details"], {"name": "gates", "kind": "Pod", "causes": [{
            "reason": "FieldValueForbidden",
            "message": "Forbidden: only deletion is allowed, but found new scheduling gate "
                       "'example.com/new'",
            "field": "spec.schedulingGates[2].name"}]})
        # Removing one (strategic merge by name), then the other (merge patch).
        got = self.accepted(PODS, "gates", {"spec": {"schedulingGates": [
            {"$patch": "delete", "name": "example.com/b"}]}}, STRATEGIC)
        self.assertEqual(got["spec"]["schedulingGates"], [{"name": GATE}])
        got = self.accepted(PODS, "gates", {"spec": {"schedulingGates": None}})
        self.assertNotIn("schedulingGates", got["spec"])
        # An ungated pod cannot get a gate back.
        self.refused_with(PODS, "gates", {"spec": {"schedulingGates": [{"name": GATE}]}},
                          'Pod "gates" is invalid: spec.schedulingGates[0].name: Forbidden: only '
                          "deletion is allowed, but found new scheduling gate '%s'" % GATE)

    def test_tolerations_can_only_be_added(self):
        t1 = {"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute",
              "tolerationSeconds": 30}
        self.create(PODS, pod("tol", tolerations=[t1]))
        # Additions, and a new tolerationSeconds on an existing one, are allowed.
        t1b = dict(t1, tolerationSeconds=60)
        t2 = {"key": "pool", "operator": "Exists", "effect": "NoSchedule"}
        got = self.accepted(PODS, "tol", {"spec": {"tolerations": [t1b, t2]}})
        self.assertEqual(got["spec"]["tolerations"], [t1b, t2])
        # Changing an existing one (here its value) or dropping one is not.
        msg = 'Pod "tol" is invalid: ' + TOLERATION_CHANGED
        out = self.refused_with(PODS, "tol", {"spec": {"tolerations": [dict(t1, value="w"), t2]}},
                                msg)
        self.assertEqual(out["details"]["causes"], [{
            "reason": "FieldValueForbidden", "field": "spec.tolerations",
            "message": "Forbidden: existing toleration can not be modified except its "
                       "tolerationSeconds"}])
        self.refused_with(PODS, "tol", {"spec": {"tolerations": [t2]}}, msg)
        self.refused_with(PODS, "tol", {"spec": {"tolerations": None}}, msg)
        # JSON patch appending one is fine.
        got = self.accepted(PODS, "tol", [{"op": "add", "path": "/spec/tolerations/-",
                                            "value": {"key": "z", "operator": "Exists"}}],
                            JSONPATCH)
        self.assertEqual(len(got["spec"]["tolerations"]), 3)

    def test_node_selector_of_a_gated_pod_may_only_gain_keys(self):
        self.create(PODS, pod("sel", gates=[GATE], node_selector={"a": "1"}))
        got = self.accepted(PODS, "sel", {"spec": {"nodeSelector": {"b": "2"}}})
        self.assertEqual(got["spec"]["nodeSelector"], {"a": "1", "b": "2"})
        self.refused_with(PODS, "sel", {"spec": {"nodeSelector": {"a": "9"}}},
                          'Pod "sel" is invalid: spec.nodeSelector: Invalid value: '
                          'map[string]string{"a":"9", "b":"2"}: ' + NODE_SELECTOR_ONLY_ADDITIONS)
        out = self.refused_with(PODS, "sel", {"spec": {"nodeSelector": {"a": None}}},
                                'Pod "sel" is invalid: spec.nodeSelector: Invalid value: '
                                'map[string]string{"b":"2"}: ' + NODE_SELECTOR_ONLY_ADDITIONS)
        self.assertEqual(out["details"]["causes"], [{
            "reason": "FieldValueInvalid", "field": "spec.nodeSelector",
            "message": 'Invalid value: map[string]string{"b":"2"}: '
                       + NODE_SELECTOR_ONLY_ADDITIONS}])
        self.refused_with(PODS, "sel", {"spec": {"nodeSelector": None}},
                          'Pod "sel" is invalid: spec.nodeSelector: Invalid value: '
                          "map[string]string(nil): " + NODE_SELECTOR_ONLY_ADDITIONS)
        # What Kueue does on admission: the flavor's selector, a toleration and the
        # gate removal in one merge patch (validated against the still gated old pod).
        got = self.accepted(PODS, "sel", {"spec": {
            "nodeSelector": {"flavor": "x"}, "schedulingGates": None,
            "tolerations": [{"key": "flavor", "operator": "Exists"}]}})
        self.assertEqual(got["spec"]["nodeSelector"], {"a": "1", "b": "2", "flavor": "x"})
        self.assertNotIn("schedulingGates", got["spec"])

    def test_node_selector_of_an_ungated_pod_is_immutable(self):
        self.create(PODS, pod("free", node_selector={"a": "1"}))
        self.refused_with(PODS, "free", {"spec": {"nodeSelector": {"b": "2"}}},
                          'Pod "free" is invalid: spec: Forbidden: ' + UPDATABLE + "\n"
                          "  core.PodSpec{\n"
                          '- \tNodeSelector: {"a":"1"},\n'
                          '+ \tNodeSelector: {"a":"1","b":"2"},\n'
                          "  }\n")
        out = self.refused(PODS, "free", {"spec": {"nodeSelector": None}})
        self.assertTrue(out["message"].startswith('Pod "free" is invalid: spec: Forbidden: '
                                                  + UPDATABLE + "\n"), out["message"])
        self.assertEqual(out["details"]["causes"][0]["field"], "spec")
        self.assertTrue(out["details"]["causes"][0]["message"].startswith(
            "Forbidden: " + UPDATABLE + "\n"))

    def test_node_affinity_of_a_gated_pod_may_only_narrow(self):
        term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
        na = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        self.create(PODS, pod("aff", gates=[GATE], affinity={"nodeAffinity": na}))
        narrower = {"matchExpressions": term["matchExpressions"] + [
            {"key": "pool", "operator": "Exists"}]}
        self.accepted(PODS, "aff", {"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [narrower]}}}}})
        prefix = ('Pod "aff" is invalid: spec.affinity.nodeAffinity.'
                  "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")
        self.refused_with(PODS, "aff", {"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                narrower, {"matchFields": [{"key": "metadata.name", "operator": "In",
                                            "values": ["n1"]}]}]}}}}},
            prefix + ": Invalid value: []core.NodeSelectorTerm{core.NodeSelectorTerm{"
            "MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{"
            'Key:"zone", Operator:"In", Values:[]string{"a"}}, core.NodeSelectorRequirement{'
            'Key:"pool", Operator:"Exists", Values:[]string(nil)}}, '
            "MatchFields:[]core.NodeSelectorRequirement(nil)}, core.NodeSelectorTerm{"
            "MatchExpressions:[]core.NodeSelectorRequirement(nil), MatchFields:"
            "[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:\"metadata.name\", "
            'Operator:"In", Values:[]string{"n1"}}}}}: no additions/deletions to non-empty '
            "NodeSelectorTerms list are allowed")
        self.refused_with(PODS, "aff", {"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}}},
            prefix + "[0]: Invalid value: core.NodeSelectorTerm{MatchExpressions:"
            "[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:\"zone\", "
            'Operator:"In", Values:[]string{"b"}}}, MatchFields:'
            "[]core.NodeSelectorRequirement(nil)}: only additions are allowed (no mutations or "
            "deletions)")
        # A gated pod without affinity may get one.
        self.create(PODS, pod("aff2", gates=[GATE]))
        self.accepted(PODS, "aff2", {"spec": {"affinity": {"nodeAffinity": na}}})
        # Once ungated, node affinity is as immutable as the rest of the spec.
        self.accepted(PODS, "aff2", {"spec": {"schedulingGates": None}})
        out = self.refused(PODS, "aff2", {"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [narrower]}}}}})
        self.assertTrue(out["message"].startswith('Pod "aff2" is invalid: spec: Forbidden: '
                                                  + UPDATABLE + "\n  core.PodSpec{\n"))

    def test_images_may_change_containers_may_not_be_added_or_removed(self):
        self.create(PODS, pod("img", initContainers=[{"name": "i", "image": "busybox:1.36"}]))
        # Strategic merge keeps the other container fields (a merge patch would replace
        # the list, the defaulted imagePullPolicy would differ: refused as in Kubernetes).
        got = self.accepted(PODS, "img", {"spec": {
            "containers": [{"name": "c", "image": "busybox:1.37"}],
            "initContainers": [{"name": "i", "image": "busybox:1.37"}]}}, STRATEGIC)
        self.assertEqual(got["spec"]["containers"][0]["image"], "busybox:1.37")
        self.assertEqual(got["spec"]["initContainers"][0]["image"], "busybox:1.37")
        self.refused_with(PODS, "img", {"spec": {"containers": [{"name": "c", "image": ""}]}},
                          'Pod "img" is invalid: spec.containers[0].image: Required value',
                          STRATEGIC)
        self.refused_with(PODS, "img", {"spec": {"containers": [{"name": "d", "image": "x"}]}},
                          'Pod "img" is invalid: spec.containers: Forbidden: pod updates may not '
                          "add or remove containers", STRATEGIC)
        self.refused_with(PODS, "img", [{"op": "remove", "path": "/spec/initContainers/0"}],
                          'Pod "img" is invalid: spec.initContainers: Forbidden: pod updates may '
                          "not add or remove containers", JSONPATCH)
        out = self.refused(PODS, "img", {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}, STRATEGIC)
        self.assertTrue(out["message"].startswith('Pod "img" is invalid: spec: Forbidden: '
                                                  + UPDATABLE + "\n"))

    def test_active_deadline_seconds_may_be_set_or_decreased(self):
        self.create(PODS, pod("ads"))
        self.accepted(PODS, "ads", {"spec": {"activeDeadlineSeconds": 100}})
        self.accepted(PODS, "ads", {"spec": {"activeDeadlineSeconds": 50}})
        self.accepted(PODS, "ads", {"spec": {"activeDeadlineSeconds": 50}})
        self.refused_with(PODS, "ads", {"spec": {"activeDeadlineSeconds": 60}},
                          'Pod "ads" is invalid: spec.activeDeadlineSeconds: Invalid value: 60: '
                          "must be less than or equal to previous value")
        self.refused_with(PODS, "ads", {"spec": {"activeDeadlineSeconds": None}},
                          'Pod "ads" is invalid: spec.activeDeadlineSeconds: Invalid value: '
                          '"null": must not update from a positive integer to nil value')
        self.refused_with(PODS, "ads", {"spec": {"activeDeadlineSeconds": 0}},
                          'Pod "ads" is invalid: spec.activeDeadlineSeconds: Invalid value: 0: '
                          "must be between 1 and 2147483647, inclusive")

    def test_other_spec_fields_are_immutable(self):
        self.create(PODS, pod("other"))
        for change in ({"restartPolicy": "Never"}, {"nodeName": "n1"},
                       {"terminationGracePeriodSeconds": 5}, {"priorityClassName": "high"},
                       {"hostname": "h"}):
            out = self.refused(PODS, "other", {"spec": change})
            self.assertTrue(out["message"].startswith(
                'Pod "other" is invalid: spec: Forbidden: ' + UPDATABLE + "\n  core.PodSpec{\n"),
                out["message"])
        out = self.refused(PODS, "other", {"spec": {"restartPolicy": "Never"}})
        self.assertEqual(out["message"].split("\n", 1)[1],
                         '  core.PodSpec{\n- \tRestartPolicy: "Always",\n'
                         '+ \tRestartPolicy: "Never",\n  }\n')
        # Labels, annotations and finalizers are metadata: free.
        self.accepted(PODS, "other", {"metadata": {"labels": {"a": "b"},
                                                   "annotations": {"c": "d"},
                                                   "finalizers": ["example.com/f"]}})
        self.accepted(PODS, "other", {"metadata": {"finalizers": None}})

    def test_several_errors_are_aggregated(self):
        t = {"key": "k", "operator": "Exists"}
        self.create(PODS, pod("many", gates=[GATE], node_selector={"a": "1"}, tolerations=[t]))
        out = self.refused(PODS, "many", {"spec": {
            "tolerations": None, "nodeSelector": {"a": "2"},
            "schedulingGates": [{"name": GATE}, {"name": "x.io/y"}]}})
        self.assertEqual(out["message"],
                         'Pod "many" is invalid: [' + TOLERATION_CHANGED + ", "
                         "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but "
                         "found new scheduling gate 'x.io/y', spec.nodeSelector: Invalid value: "
                         'map[string]string{"a":"2"}: ' + NODE_SELECTOR_ONLY_ADDITIONS + "]")
        self.assertEqual([c["field"] for c in out["details"]["causes"]],
                         ["spec.tolerations", "spec.schedulingGates[1].name",
                          "spec.nodeSelector"])

    def test_put_of_what_was_read_and_defaulting_on_update(self):
        created = self.create(PODS, pod("put", gates=[GATE]))
        # The object as read: a no-op.
        code, same = self.s.request("PUT", PODS % self.ns + "/put", created)
        self.assertEqual((code, same["metadata"]["resourceVersion"]),
                         (200, created["metadata"]["resourceVersion"]))
        # Without the defaulted fields: defaulted again, so no spec change.
        body = pod("put", gates=[GATE])
        body["metadata"]["labels"] = {"v": "2"}
        code, out = self.s.request("PUT", PODS % self.ns + "/put", body)
        self.assertEqual(code, 200, out)
        self.assertEqual(out["spec"], created["spec"])
        # /status writes do not go through the spec rules.
        code, st = self.s.request("PUT", PODS % self.ns + "/put/status",
                                  dict(out, status={"phase": "Pending", "conditions": [
                                      {"type": "PodScheduled", "status": "False",
                                       "reason": "SchedulingGated"}]}))
        self.assertEqual(code, 200, st)

    def test_binding_sets_the_node_name_a_spec_update_may_not(self):
        self.create(PODS, pod("bind"))
        out = self.refused(PODS, "bind", {"spec": {"nodeName": "n1"}})
        self.assertIn('NodeName: "n1"', out["message"])
        code, out = self.s.request("POST", PODS % self.ns + "/bind/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bind"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})
        self.assertEqual(code, 201, out)
        code, got = self.s.request("GET", PODS % self.ns + "/bind")
        self.assertEqual(got["spec"]["nodeName"], "n1")


class JobUpdateRulesTest(_Api, unittest.TestCase):
    """ValidateJobSpecUpdate (§6.6) as the Job strategy calls it before 1.36 (the default)."""

    ns = "default"

    @classmethod
    def setUpClass(cls):
        cls.s = ApiServerProcess().start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    DIRECTIVES = {"spec": {"template": {
        "metadata": {"labels": {"kueue.x-k8s.io/podset": "main"},
                     "annotations": {"kueue.x-k8s.io/workload": "w"}},
        "spec": {"nodeSelector": {"flavor": "a"},
                 "tolerations": [{"key": "flavor", "operator": "Exists"}],
                 "schedulingGates": [{"name": GATE}],
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "zone", "operator": "In", "values": ["z1"]}]}]}}}}}}}

    def assert_template_refused(self, name, body, ctype=MERGE):
        out = self.refused(JOBS, name, body, ctype)
        prefix = 'Job.batch "%s" is invalid: spec.template: Invalid value: core.PodTemplateSpec{' \
            % name
        self.assertTrue(out["message"].startswith(prefix), out["message"])
        self.assertTrue(out["message"].endswith("}: field is immutable"), out["message"])
        self.assertEqual(len(out["details"]["causes"]), 1)
        cause = out["details"]["causes"][0]
        self.assertEqual((cause["reason"], cause["field"]), ("FieldValueInvalid", "spec.template"))
        self.assertTrue(cause["message"].startswith("Invalid value: core.PodTemplateSpec{"))
        self.assertEqual(out["details"]["group"], "batch")
        self.assertEqual(out["details"]["kind"], "Job")
        return out

    def test_scheduling_directives_while_suspended_and_never_started(self):
        self.create(JOBS, job("sd"))
        got = self.accepted(JOBS, "sd", self.DIRECTIVES)
        tmpl = got["spec"]["template"]
        self.assertEqual(tmpl["spec"]["nodeSelector"], {"flavor": "a"})
        self.assertEqual(tmpl["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main")
        self.assertEqual(got["metadata"]["generation"], 2)
        # Removing them again (Kueue restoring the pod set info), and clearing affinity.
        self.accepted(JOBS, "sd", {"spec": {"template": {
            "metadata": {"labels": {"kueue.x-k8s.io/podset": None}, "annotations": None},
            "spec": {"nodeSelector": None, "tolerations": None, "schedulingGates": None,
                     "affinity": None}}}})
        # Kueue's start: the directives and suspend=false in one patch (old is suspended).
        got = self.accepted(JOBS, "sd", {"spec": {"suspend": False, "template": {"spec": {
            "nodeSelector": {"flavor": "b"}}}}})
        self.assertFalse(got["spec"]["suspend"])
        # Not suspended any more: the template is frozen, directives included.
        self.assert_template_refused("sd", {"spec": {"template": {"spec": {
            "nodeSelector": {"flavor": "c"}}}}})
        self.assert_template_refused("sd", {"spec": {"template": {"metadata": {
            "labels": {"x": "y"}}}}})

    def test_other_template_fields_are_immutable_even_while_suspended(self):
        self.create(JOBS, job("other"))
        self.assert_template_refused("other", {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "busybox:1.37"}]}}}}, STRATEGIC)
        self.assert_template_refused("other", {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}, STRATEGIC)
        self.assert_template_refused("other", {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure"}}}})
        # Pod affinity is not a scheduling directive of the Job strategy.
        self.assert_template_refused("other", {"spec": {"template": {"spec": {"affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}]}}}}}})

    def test_a_started_job_needs_its_start_time_cleared(self):
        self.create(JOBS, job("started"))
        # As if it had run: a startTime, then suspended again.
        self.accepted(JOBS, "started", {"status": {"startTime": "2025-01-01T00:00:00Z"}},
                      sub="/status")
        self.assert_template_refused("started", {"spec": {"template": {"spec": {
            "nodeSelector": {"flavor": "a"}}}}})
        # What Kueue does on stop: clear status.startTime through /status first.
        self.accepted(JOBS, "started", {"status": {"startTime": None}}, sub="/status")
        self.accepted(JOBS, "started", {"spec": {"template": {"spec": {
            "nodeSelector": {"flavor": "a"}}}}})

    def test_suspend_parallelism_and_active_deadline_are_mutable(self):
        self.create(JOBS, job("mut", suspend=False, parallelism=2, completions=4))
        got = self.accepted(JOBS, "mut", {"spec": {"suspend": True, "parallelism": 3,
                                                   "activeDeadlineSeconds": 100,
                                                   "backoffLimit": 2}})
        self.assertEqual((got["spec"]["suspend"], got["spec"]["parallelism"]), (True, 3))

    def test_completions(self):
        self.create(JOBS, job("nonidx", completions=2, parallelism=2))
        self.refused_with(JOBS, "nonidx", {"spec": {"completions": 3, "parallelism": 3}},
                          'Job.batch "nonidx" is invalid: spec.completions: Invalid value: 3: '
                          "field is immutable")
        self.refused_with(JOBS, "nonidx", {"spec": {"completions": None}},
                          'Job.batch "nonidx" is invalid: spec.completions: Invalid value: '
                          '"null": field is immutable')
        # Indexed Jobs scale in tandem (elastic Indexed Jobs).
        self.create(JOBS, job("idx", completions=2, parallelism=2, completionMode="Indexed"))
        got = self.accepted(JOBS, "idx", {"spec": {"completions": 4, "parallelism": 4}})
        self.assertEqual((got["spec"]["completions"], got["spec"]["parallelism"]), (4, 4))
        self.refused_with(JOBS, "idx", {"spec": {"completions": 5}},
                          'Job.batch "idx" is invalid: spec.completions: Invalid value: 5: can '
                          "only be modified in tandem with spec.parallelism")
        self.accepted(JOBS, "idx", {"spec": {"parallelism": 1}})

    def test_selector_managed_by_and_completion_mode_are_immutable(self):
        created = self.create(JOBS, job("imm", managedBy="example.com/mk"))
        uid = created["metadata"]["uid"]
        self.refused_with(JOBS, "imm", {"spec": {"selector": {"matchLabels": {"job-name": "imm"}}}},
                          'Job.batch "imm" is invalid: spec.selector: Invalid value: '
                          "&LabelSelector{MatchLabels:map[string]string{"
                          "batch.kubernetes.io/controller-uid: %s,job-name: imm,},"
                          "MatchExpressions:[]LabelSelectorRequirement{},}: field is immutable"
                          % uid)
        self.refused_with(JOBS, "imm", {"spec": {"managedBy": "example.com/other"}},
                          'Job.batch "imm" is invalid: spec.managedBy: Invalid value: '
                          '"example.com/other": field is immutable')
        self.refused_with(JOBS, "imm", {"spec": {"managedBy": None}},
                          'Job.batch "imm" is invalid: spec.managedBy: Invalid value: "null": '
                          "field is immutable")
        self.refused_with(JOBS, "imm", {"spec": {"completionMode": "Indexed"}},
                          'Job.batch "imm" is invalid: spec.completionMode: Invalid value: '
                          '"Indexed": field is immutable')
        out = self.refused(JOBS, "imm", {"spec": {"completions": 7, "managedBy": None,
                                                  "template": {"spec": {"hostname": "h"}}}})
        self.assertEqual([c["field"] for c in out["details"]["causes"]],
                         ["spec.completions", "spec.template", "spec.managedBy"])
        self.assertTrue(out["message"].startswith(
            'Job.batch "imm" is invalid: [spec.completions: Invalid value: 7: field is '
            "immutable, spec.template: Invalid value: core.PodTemplateSpec{"))
        self.assertTrue(out["message"].endswith(
            '}: field is immutable, spec.managedBy: Invalid value: "null": field is immutable]'))
        # Set on a Job created without it: refused too.
        self.create(JOBS, job("nomb"))
        self.refused_with(JOBS, "nomb", {"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}},
                          'Job.batch "nomb" is invalid: spec.managedBy: Invalid value: '
                          '"kueue.x-k8s.io/multikueue": field is immutable')

    def test_status_writes_do_not_go_through_the_spec_rules(self):
        self.create(JOBS, job("st"))
        got = self.accepted(JOBS, "st", {"spec": {"completions": 9},
                                         "status": {"active": 0}}, sub="/status")
        self.assertEqual(got["spec"]["completions"], 1)  # /status ignores spec


@unittest.skipIf(client is None, "python3-kubernetes is not installed (use /usr/bin/python3)")
class PythonClientUpdateRulesTest(unittest.TestCase):
    """The same rules as python3-kubernetes sees them (ApiException 422)."""

    @classmethod
    def setUpClass(cls):
        cls.server = ApiServerProcess("--namespace", "team").start()
        cls.api_client = config.new_client_from_config(config_file=cls.server.kubeconfig)
        cls.core = client.CoreV1Api(cls.api_client)
        cls.batch = client.BatchV1Api(cls.api_client)

    @classmethod
    def tearDownClass(cls):
        cls.api_client.close()
        cls.server.stop()

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


class _Controllers(_Api):
    """With the simulated scheduler, kubelet and Job controller (``ARGS``)."""

    ns = "default"
    ARGS = ("--controllers", "job,scheduler,kubelet", "--node", "n1:pool=a:cpu=8",
            "--kubelet-start-delay", "0.05")

    @classmethod
    def setUpClass(cls):
        cls.s = ApiServerProcess(*cls.ARGS).start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

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

    ARGS = _Controllers.ARGS + ("--server-version", "v1.36.0")

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


class Kubernetes136RulesTest(_Api, unittest.TestCase):
    """The 1.36 condition on the old Job: suspended, and never started or safely suspended."""

    ns = "default"

    @classmethod
    def setUpClass(cls):
        cls.s = ApiServerProcess("--server-version", "v1.36.0").start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    CHANGE = {"spec": {"template": {"spec": {
        "nodeSelector": {"pool": "a"},
        "containers": [{"name": "c", "image": "busybox:1.36",
                        "resources": {"requests": {"cpu": "300m"}}}]}}}}
    SUSPENDED = {"type": "Suspended", "status": "True", "reason": "JobSuspended",
                 "message": "Job suspended"}

    def test_never_started_needs_no_condition(self):
        self.create(JOBS, job("fresh"))
        self.accepted(JOBS, "fresh", self.CHANGE)

    def test_started_needs_the_suspended_condition_and_no_active_pods(self):
        self.create(JOBS, job("s136"))
        self.accepted(JOBS, "s136", {"status": {"startTime": "2025-01-01T00:00:00Z",
                                                "active": 1}}, sub="/status")
        self.assertEqual(self.refused(JOBS, "s136", self.CHANGE)["details"]["causes"][0]["field"],
                         "spec.template")
        self.accepted(JOBS, "s136", {"status": {"conditions": [self.SUSPENDED]}}, sub="/status")
        self.refused(JOBS, "s136", self.CHANGE)  # still one active pod
        self.accepted(JOBS, "s136", {"status": {"active": None}}, sub="/status")
        self.accepted(JOBS, "s136", self.CHANGE)

    def test_not_suspended_is_frozen(self):
        self.create(JOBS, job("run136", suspend=False))
        self.refused(JOBS, "run136", self.CHANGE)


class FeatureGatesTest(unittest.TestCase):
    def test_defaults_follow_the_server_version_and_overrides_win(self):
        self.assertEqual(updaterules.feature_gates("v1.33.0"), {
            "MutableSchedulingDirectivesForSuspendedJobs": False,
            "MutablePodResourcesForSuspendedJobs": False})
        self.assertEqual(updaterules.feature_gates("v1.36.2"), {
            "MutableSchedulingDirectivesForSuspendedJobs": True,
            "MutablePodResourcesForSuspendedJobs": True})
        self.assertEqual(updaterules.feature_gates(
            "v1.36.0", "MutablePodResourcesForSuspendedJobs=false"), {
            "MutableSchedulingDirectivesForSuspendedJobs": True,
            "MutablePodResourcesForSuspendedJobs": False})
        with self.assertRaises(ValueError) as cm:
            updaterules.feature_gates("v1.33.0", "Nope=true")
        self.assertEqual(str(cm.exception), "unrecognized feature gate: Nope")
        with self.assertRaises(ValueError):
            updaterules.feature_gates("v1.33.0", "MutablePodResourcesForSuspendedJobs=maybe")

    def test_feature_gate_flag_on_the_command_line(self):
        s = ApiServerProcess("--feature-gates", "MutablePodResourcesForSuspendedJobs=true")
        s.start()
        try:
            code, _ = s.request("POST", JOBS % "default", job("fg"))
            self.assertEqual(code, 201)
            code, _ = s.request("PATCH", JOBS % "default" + "/fg", {"spec": {"template": {
                "spec": {"containers": [{"name": "c", "resources": {
                    "requests": {"cpu": "1"}}}]}}}}, STRATEGIC)
            self.assertEqual(code, 200)
        finally:
            s.stop()
        with self.assertRaises(RuntimeError) as cm:
            ApiServerProcess("--feature-gates", "Nope=true").start()
        self.assertIn("--feature-gates: unrecognized feature gate: Nope", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
