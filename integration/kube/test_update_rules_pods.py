"""What pod updates may change (ValidatePodUpdate): each rule's accepted and refused cases.

Over the raw API, on pods no controller touches, with the exact messages and
causes: scheduling gates, tolerations, a gated pod's nodeSelector and node
affinity, images and containers, activeDeadlineSeconds, the other fields,
aggregated errors, PUT with defaulting, and the binding subresource. Run with
/usr/bin/python3.
"""

import unittest

from harness import ServerTest
from updaterulefixtures import (GATE, NODE_SELECTOR_ONLY_ADDITIONS, PODS, STRATEGIC, UPDATABLE,
                                RulesApi, pod)

JSONPATCH = "application/json-patch+json"
TOLERATION_CHANGED = ("spec.tolerations: Forbidden: existing toleration can not be modified "
                      "except its tolerationSeconds")


class PodUpdateRulesTest(RulesApi, ServerTest, unittest.TestCase):
    """ValidatePodUpdate (§6.5), on pods no controller touches."""

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

if __name__ == "__main__":
    unittest.main()
