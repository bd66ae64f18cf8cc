"""End to end: pod groups that each need a cluster of their own — preemption with and without
KEP-6143's fast quota release, admitd-shim killed while a group is being admitted, and a shim
stopping while admitd does not answer.
"""

import datetime
import json
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, condition, is_true, queues  # noqa: E402
from test_pods import T, PodCase, pod  # noqa: E402

# The victims' grace period, and the test kubelet's cap on it: long enough that "still
# terminating" and "gone" are seconds apart.
GRACE = 8


def timestamp(text):
    """An RFC 3339 time (seconds, or any fraction of them) as an aware datetime."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", text)
    assert m, text
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
    micros = int((m.group(2) or "0")[:6].ljust(6, "0"))
    return t.replace(microsecond=micros, tzinfo=datetime.timezone.utc)


def new_stack(test, **kwargs):
    s = Stack(nodes=("n1:pool=a:cpu=64",), **kwargs)
    test.addCleanup(s.stop)
    test.s = s
    return s


class FastQuotaReleaseE2E(PodCase):
    """KEP-6143 story 1: a long-running pod group preempted by a higher-priority workload."""

    def preempt(self, fast, victims, cap=GRACE, timeout=T):
        """A group of ``victims`` ({name: grace seconds}, 4 CPUs in all) preempted by a pod of
        4 CPUs: (the preemptor's admission time, the victims as they were when it was seen)."""
        s = new_stack(self, api_args=("--kubelet-grace-cap", str(cap)),
                      admitd_args=("--feature-gates", "PodIntegrationFastQuotaRelease=true")
                      if fast else ())
        shim = s.start_shim_with_webhook(pods=True)
        self.wait(lambda: shim.metric("admitd_shim_leader") == 1, "the shim to lead")
        ns = "preempt"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-preempt", 4, preemption="LowerPriority"))
        for name, grace in victims.items():  # they run until deleted
            self.create_pod(pod(ns, name, cpu=str(4 // len(victims)), group="low",
                                total=len(victims), grace=grace, priority=("low", 10)))
        self.wait(lambda: all(self.phase(ns, n) == "Running" for n in victims),
                  "the low group to run")
        self.create_pod(pod(ns, "high", cpu="4", runtime=1, priority=("high", 1000)))
        # The low group is preempted: the shim marks its pods and deletes them.
        self.wait(lambda: all(self.get_pod(ns, n)["metadata"].get("deletionTimestamp")
                              for n in victims), "the victim's pods to be deleted")
        self.assertEqual(condition(self.workload(ns, "low"), "Evicted")["reason"], "Preempted")
        for name in victims:
            target = condition(self.get_pod(ns, name), "TerminationTarget")
            self.assertEqual((target["status"], target["reason"]),
                             ("True", "WorkloadEvictedDueToPreempted"))
            self.wait(lambda: self.pod_events(ns, name, "Stopped"), "Stopped on " + name)

        def admitted():
            wl = self.workload(ns, "high")
            if not (wl and is_true(wl, "Admitted")):
                return None
            # Read after the Workload: a victim running now was running at its admission.
            return wl, [self.get_pod(ns, n) for n in victims]
        wl, pods = self.wait(admitted, "the higher-priority pod to be admitted", timeout=timeout)
        admitted_at = timestamp(condition(wl, "QuotaReserved")["lastTransitionTime"])
        self.assertEqual(condition(self.workload(ns, "low"), "QuotaReserved")["status"], "False")
        self.wait(lambda: self.phase(ns, "high") in ("Running", "Succeeded"), "the high pod to run")
        # Each victim deleted once, however often the directive came (answers, the watch).
        self.assertEqual(shim.metric("admitd_shim_pods_deleted_total"), len(victims))
        for name in victims:
            self.assertEqual([e.get("count", 1) for e in self.pod_events(ns, name, "Stopped")],
                             [1], name)
        return admitted_at, pods

    def assert_admitted_after(self, admitted_at, pods):
        for p in pods:
            if p is None:
                continue  # gone altogether
            self.assertNotEqual(p["status"]["phase"], "Running", p["metadata"]["name"])
            # The kubelet killed it at the end of its grace period (deletionTimestamp).
            self.assertGreaterEqual(admitted_at, timestamp(p["metadata"]["deletionTimestamp"]))
            finished = p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
            self.assertGreaterEqual(admitted_at, timestamp(finished))

    def test_with_fast_release_the_preemptor_is_admitted_while_the_victims_terminate(self):
        admitted_at, pods = self.preempt(True, {"low-1": GRACE, "low-2": GRACE})
        for p in pods:
            self.assertEqual(p["status"]["phase"], "Running", p["metadata"]["name"])
            # deletionTimestamp: when the grace period ends.
            self.assertLess(admitted_at, timestamp(p["metadata"]["deletionTimestamp"]))

    def test_without_fast_release_the_preemptor_waits_for_the_victims(self):
        self.assert_admitted_after(*self.preempt(False, {"low-1": GRACE}))

    def test_without_fast_release_victims_stopping_one_after_the_other(self):
        # Victims whose grace periods end at different times: low-1 ends (Failed, deleted with
        # grace 0) while low-2 still runs; the quota goes back only once low-2 is gone too, and
        # admitd keeps answering meanwhile (a deadline already passed arms no timer).
        self.assert_admitted_after(*self.preempt(False, {"low-1": 1, "low-2": 3}, cap=3,
                                                 timeout=12))


class ShimRestartE2E(PodCase):
    def watch_history(self, ns, since):
        """The pod watch events in ``ns`` after resourceVersion ``since``."""
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods?watch=true&resourceVersion=%s"
                                 "&timeoutSeconds=1" % (ns, since))
        self.assertEqual(code, 200, body)
        if isinstance(body, dict):
            return [body]
        return [json.loads(line) for line in body.splitlines() if line.strip()]

    def test_a_shim_killed_while_a_group_is_admitted_converges_without_repeating_itself(self):
        s = new_stack(self)
        first = s.start_shim_with_webhook(pods=True)
        self.wait(lambda: first.metric("admitd_shim_leader") == 1, "the shim to lead")
        ns, names = "restart", ("g-1", "g-2", "g-3")
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-restart", 2))
        for name in names:
            self.create_pod(pod(ns, name, runtime=2, group="g", total=3))
        self.wait(lambda: (condition(self.workload(ns, "g") or {}, "QuotaReserved") or {}).get(
            "status") == "False", "the group to be pending")
        self.assertEqual(first.metric("admitd_shim_pods_ungated_by_directive_total"), 0)
        first.kill()  # SIGKILL: no lease handed over
        before = {n: self.get_pod(ns, n)["metadata"] for n in names}
        # The quota arrives while no shim runs: admitd admits the group, nobody ungates it.
        s.apply(queues(ns, "cq-restart", 3))
        self.wait(lambda: is_true(self.workload(ns, "g"), "Admitted"), "the group to be admitted")
        for n in names:
            self.assertEqual(self.get_pod(ns, n)["metadata"]["resourceVersion"],
                             before[n]["resourceVersion"])
        code, listed = s.kube("GET", "/api/v1/namespaces/%s/pods" % ns)
        since = listed["metadata"]["resourceVersion"]
        second = s.start_shim("shim-1", first.webhook_args)
        self.wait(lambda: second.metric("admitd_shim_leader") == 1, "the new shim to lead")
        self.wait(lambda: all(self.phase(ns, n) == "Succeeded" for n in names),
                  "the group to run and succeed")
        self.wait(lambda: is_true(self.workload(ns, "g"), "Finished"), "the group to finish")
        self.wait(lambda: all(not self.get_pod(ns, n)["metadata"].get("finalizers")
                              for n in names), "the finalizers to be removed")
        # The same pods, each ungated once and finalized once, nothing deleted.
        for n in names:
            self.assertEqual(self.get_pod(ns, n)["metadata"]["uid"], before[n]["uid"])
        ungates = {n: 0 for n in names}
        finalizes = {n: 0 for n in names}
        previous = {n: before[n] for n in names}
        for ev in self.watch_history(ns, since):
            if ev["type"] == "BOOKMARK":
                continue
            meta = ev["object"]["metadata"]
            self.assertEqual(ev["type"], "MODIFIED", meta.get("name"))
            self.assertEqual(meta["uid"], before[meta["name"]]["uid"])
            gates = ev["object"]["spec"].get("schedulingGates") or []
            was_gated = previous[meta["name"]].get("gated", True)
            if was_gated and not gates:
                ungates[meta["name"]] += 1
            had = "kueue.x-k8s.io/managed" in (previous[meta["name"]].get("finalizers") or [])
            if had and "kueue.x-k8s.io/managed" not in (meta.get("finalizers") or []):
                finalizes[meta["name"]] += 1
            previous[meta["name"]] = dict(meta, gated=bool(gates))
        self.assertEqual(ungates, {n: 1 for n in names})
        self.assertEqual(finalizes, {n: 1 for n in names})
        self.assertEqual(second.metric("admitd_shim_pods_ungated_by_directive_total"), 3)
        self.assertEqual(second.metric("admitd_shim_pods_deleted_total"), 0)
        self.assertEqual(second.metric("admitd_shim_pod_finalizers_removed_total"), 3)
        for n in names:
            started = self.pod_events(ns, n, "Started")
            self.assertEqual([e.get("count", 1) for e in started], [1], n)

    def test_a_shim_stops_at_once_while_admitd_does_not_answer(self):
        # A report in flight to an admitd that hangs must not hold the shim's stop (and with it
        # the lease's handover) for the call's deadline.
        s = new_stack(self)
        shim = s.start_shim_with_webhook(pods=True)
        self.wait(lambda: shim.metric("admitd_shim_leader") == 1, "the shim to lead")
        s.create_namespace("hang")
        s.apply(queues("hang", "cq-hang", 4))
        self.create_pod(pod("hang", "a"))
        self.wait(lambda: self.phase("hang", "a") == "Running", "the pod to run")
        reports = shim.metric("admitd_shim_pod_reports_total")
        s.admitd.send_signal(signal.SIGSTOP)
        self.addCleanup(lambda: s.admitd.send_signal(signal.SIGCONT))
        self.patch_pod("hang", "a", {"metadata": {"labels": {"touched": "yes"}}})
        # Time for the shim to see the change and send its report, which nothing shows (the
        # counters move on answers): no answer comes.
        time.sleep(1)
        self.assertEqual(shim.metric("admitd_shim_pod_reports_total"), reports)
        started = time.monotonic()
        shim.proc.send_signal(signal.SIGTERM)
        shim.proc.wait(15)
        self.assertLess(time.monotonic() - started, 5, shim.log()[-2000:])


if __name__ == "__main__":
    unittest.main()
