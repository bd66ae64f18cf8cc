"""End to end: waitForPodsReady with Jobs, as real processes.

admitd runs with Kueue's waitForPodsReady section (v1beta2 spelling) in its config file: a 3 s
timeout, backoff of 1 s doubling to at most 2 s, and a limit of 2 requeues. A Job whose pods run
but never get ready (the test cluster's kubelet holds them unready, as a failing readiness probe
does) is evicted at the timeout, stopped, requeued after its backoff, admitted again, and after
the limit deactivated; a Job whose pods get ready is reported ready by the shim and keeps running.
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shimcase import ShimCase  # noqa: E402
from stack import condition, is_true, job, queues  # noqa: E402

T = 60  # seconds: generous for a loaded 2-core machine


class PodsReadyE2E(ShimCase, unittest.TestCase):
    NODES = ("n1:pool=a:cpu=16",)
    STACK = {"metrics": True,
             "config": "waitForPodsReady:\n"
                       "  timeout: 3s\n"
                       "  requeuingStrategy:\n"
                       "    timestamp: Eviction\n"
                       "    backoffBaseSeconds: 1\n"
                       "    backoffMaxSeconds: 2\n"
                       "    backoffLimitCount: 2\n"}
    WEBHOOK = False
    TIMEOUT = T

    def setUp(self):
        super().setUp()
        self.s.apply(queues(self.ns, "cq-" + self.ns, 4))

    def workload(self):
        wls = self.s.workloads(self.ns)
        return wls[0] if len(wls) == 1 else None

    def test_a_job_whose_pods_never_get_ready_is_evicted_requeued_and_deactivated(self):
        s, ns = self.s, self.ns
        unready = job(ns, "stuck", parallelism=2, completions=2)
        unready["spec"]["template"]["metadata"]["annotations"]["fixture.admitd.io/unready"] = "true"
        s.create_job(unready)
        started = time.monotonic()
        wl = self.wait(lambda: (lambda w: w if w and is_true(w, "Admitted") else None)(
            self.workload()), "the Workload to be admitted")
        name = wl["metadata"]["name"]
        self.assertEqual(condition(wl, "PodsReady")["reason"], "WaitForStart")
        # The deactivation comes after two timeouts, two backoffs and a third timeout.
        wl = self.wait(lambda: (lambda w: w if w and w["spec"].get("active") is False else None)(
            self.workload()), "the Workload to be deactivated")
        took = time.monotonic() - started
        evicted = condition(wl, "Evicted")
        self.assertEqual(evicted["reason"], "DeactivatedDueToRequeuingLimitExceeded")
        self.assertEqual(evicted["message"], "The workload is deactivated due to exceeding the "
                         "maximum number of re-queuing retries")
        stats = {(e["reason"], e.get("underlyingCause", "")): e["count"]
                 for e in wl["status"]["schedulingStats"]["evictions"]}
        self.assertEqual(stats[("PodsReadyTimeout", "WaitForStart")], 2)
        self.assertEqual(stats[("Deactivated", "RequeuingLimitExceeded")], 1)
        print("\nwaitForPodsReady: admitted, 2 timeouts with backoff 1 s and 2 s, deactivated "
              "at the third after %.1f s (at least 3 x 3 s + 3 s)" % took, flush=True)
        self.assertGreaterEqual(took, 11)
        # The Job is stopped (suspended) and its quota given back; Kueue's events are on it.
        self.wait(lambda: s.job(ns, "stuck")["spec"]["suspend"] and
                  not is_true(self.workload(), "QuotaReserved"), "the Job to be stopped")
        # Repeats of one message are one Event with a count, as client-go's recorder folds them.
        timeout = "Exceeded the PodsReady timeout %s/%s" % (ns, name)
        stopped = [e for e in s.events(ns, "stuck") if e["reason"] == "Stopped"]
        self.assertEqual(sum(e.get("count") or (e.get("series") or {}).get("count", 1)
                             for e in stopped if e["message"] == timeout), 2, stopped)
        self.wait(lambda: any(m.startswith("The workload is deactivated") for m in
                              (e["message"] for e in s.events(ns, "stuck")
                               if e["reason"] == "Stopped")), "the deactivation's Stopped event")
        self.assertEqual(condition(self.workload(), "Requeued")["reason"],
                         "DeactivatedDueToRequeuingLimitExceeded")
        # The eviction counters, under Kueue's names.
        import urllib.request
        metrics = urllib.request.urlopen("http://%s/metrics" % s.admitd_metrics,
                                         timeout=10).read().decode()
        self.assertIn('kueue_evicted_workloads_total{cluster_queue="cq-%s",reason='
                      '"PodsReadyTimeout",underlying_cause="WaitForStart"} 2' % ns, metrics)

    def test_a_job_whose_pods_get_ready_is_reported_ready_and_keeps_running(self):
        s, ns = self.s, self.ns
        s.create_job(job(ns, "fine", parallelism=2, completions=2, runtime=8))
        wl = self.wait(lambda: (lambda w: w if w and is_true(w, "PodsReady") else None)(
            self.workload()), "PodsReady=True")
        ready = condition(wl, "PodsReady")
        self.assertEqual(ready["reason"], "Started")
        self.assertEqual(ready["message"], "All pods reached readiness and the workload is running")
        time.sleep(4)  # past the timeout
        wl = self.workload()
        self.assertFalse(is_true(wl, "Evicted"))
        self.wait(lambda: is_true(s.job(ns, "fine"), "Complete"), "the Job to complete")
        import urllib.request
        metrics = urllib.request.urlopen("http://%s/metrics" % s.admitd_metrics,
                                         timeout=10).read().decode()
        self.assertIn('kueue_admitted_until_ready_wait_time_seconds_count{cluster_queue="cq-%s"}'
                      % ns, metrics)


if __name__ == "__main__":
    unittest.main()
