"""What Job updates may change (ValidateJobSpecUpdate): each rule's accepted and refused cases.

Over the raw API, with the exact messages: the scheduling directives of a
suspended Job that never started, the rest of the template, a started Job,
the mutable fields, completions, the immutable ones, /status; the 1.36 rules
(``--server-version v1.36.0``) and the feature gates. Run with
/usr/bin/python3.
"""

import os
import sys
import unittest

from harness import ApiServerProcess, ServerTest
from updaterulefixtures import GATE, JOBS, MERGE, STRATEGIC, RulesApi, job

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import updaterules  # noqa: E402


class JobUpdateRulesTest(RulesApi, ServerTest, unittest.TestCase):
    """ValidateJobSpecUpdate (§6.6) as the Job strategy calls it before 1.36 (the default)."""

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


class Kubernetes136RulesTest(RulesApi, ServerTest, unittest.TestCase):
    """The 1.36 condition on the old Job: suspended, and never started or safely suspended."""

    SERVER_ARGS = ("--server-version", "v1.36.0")

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
