"""End to end, when things go wrong: the shim restarted during a scale-up, admitd killed with
SIGKILL during admissions, two shim replicas with a leader that dies, and the webhook (served by
the shim, then unreachable with failurePolicy Fail). A fresh stack for each test.
"""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, condition, is_true, job, queues  # noqa: E402
from stack import wait_with_logs  # noqa: E402

T = 30


class ResilienceE2E(unittest.TestCase):
    def setUp(self):
        self.s = Stack(nodes=("n1:pool=a:cpu=64",))
        self.addCleanup(self.s.stop)
        self.ns = "r"
        self.s.create_namespace(self.ns)

    def wait(self, fn, what, timeout=T):
        return wait_with_logs(self.s, fn, what, timeout)

    def pods(self, name, pred):
        return sorted((p["metadata"]["name"], p["metadata"]["uid"])
                      for p in self.s.pods(self.ns, name) if pred(p))

    def running(self, name):
        return self.pods(name, lambda p: p["status"].get("phase") == "Running" and
                         not p["metadata"].get("deletionTimestamp"))

    def gated(self, name):
        return self.pods(name, lambda p: any(g["name"] == "kueue.x-k8s.io/elastic-job"
                                             for g in p["spec"].get("schedulingGates") or []))

    def test_shim_restarted_in_the_middle_of_a_scale_up(self):
        s, ns = self.s, self.ns
        shim = s.start_shim("shim-0")
        s.apply(queues(ns, "cq", 3))
        s.create_job(job(ns, "el", parallelism=2, elastic=True))
        self.wait(lambda: len(self.running("el")) == 2, "2 running pods")
        first = self.running("el")
        s.patch_job(ns, "el", {"spec": {"parallelism": 4}})  # needs 4 cpu, 3 available
        self.wait(lambda: len(self.gated("el")) == 2, "2 new gated pods")
        self.wait(lambda: [w for w in s.workloads(ns) if w["spec"]["podSets"][0]["count"] == 4],
                  "the scale-up slice")
        shim.kill()  # SIGKILL: no clean hand-over of the lease
        shim = s.start_shim("shim-1")
        self.wait(lambda: shim.metric("admitd_shim_leader") == 1, "the new shim to lead",
                  timeout=2 * T)
        s.apply(queues(ns, "cq", 4))  # now the slice fits
        self.wait(lambda: len(self.running("el")) == 4, "4 running pods")
        self.assertTrue(set(first) <= set(self.running("el")), "a first pod was restarted")
        self.assertEqual(self.gated("el"), [])
        self.wait(lambda: s.cq_usage("cq", "pool-a") == "4", "usage 4")
        live = [w for w in s.workloads(ns) if not is_true(w, "Finished")]
        self.assertEqual([w["spec"]["podSets"][0]["count"] for w in live], [4])

    def test_a_job_deleted_while_the_shim_was_down_loses_its_workload(self):
        s, ns = self.s, self.ns
        shim = s.start_shim("shim-0")
        s.apply(queues(ns, "cq", 4))
        s.create_job(job(ns, "gone", parallelism=2, completions=2))  # runs until deleted
        self.wait(lambda: len(self.running("gone")) == 2, "2 running pods")
        self.assertEqual(len(s.workloads(ns)), 1)
        shim.kill()
        code, _ = s.kube("DELETE", "/apis/batch/v1/namespaces/%s/jobs/gone" % ns)
        self.assertEqual(code, 200)
        s.start_shim("shim-1")
        self.wait(lambda: s.workloads(ns) == [], "the orphaned Workload to go", timeout=2 * T)
        self.wait(lambda: s.cq_usage("cq", "pool-a") == "0", "usage 0")

    def test_admitd_killed_with_sigkill_during_admissions(self):
        s, ns = self.s, self.ns
        shim = s.start_shim()
        s.apply(queues(ns, "cq", 2))
        names = ["j%d" % i for i in range(6)]
        for n in names:
            s.create_job(job(ns, n, parallelism=1, completions=1, runtime=1))
        self.wait(lambda: any(not s.job(ns, n)["spec"]["suspend"] for n in names),
                  "a first Job to start")
        s.kill_admitd()
        self.wait(lambda: "[-]admitd unreachable" in shim.get("/healthz")[1],
                  "/healthz to show admitd unreachable")
        self.assertEqual(shim.get("/healthz")[0], 200)
        self.assertEqual(shim.metric("admitd_shim_admitd_reachable"), 0)
        s.start_admitd()
        self.wait(lambda: all(is_true(s.job(ns, n), "Complete") for n in names),
                  "every Job to complete after admitd's restart", timeout=3 * T)
        self.wait(lambda: shim.metric("admitd_shim_admitd_reachable") == 1, "admitd reachable")
        wls = s.workloads(ns)
        self.assertEqual(len(wls), 6)
        for w in wls:
            self.assertEqual(condition(w, "Finished")["reason"], "Succeeded", w["metadata"]["name"])
        for n in names:  # each ran once
            self.assertEqual(len(s.pods(ns, n)), 1, n)
        self.wait(lambda: s.cq_usage("cq", "pool-a") == "0", "usage 0")

    def test_only_the_leader_acts_and_another_replica_takes_over(self):
        s, ns = self.s, self.ns
        a = s.start_shim("shim-a")
        self.wait(lambda: a.metric("admitd_shim_leader") == 1, "shim-a to lead")
        b = s.start_shim("shim-b")
        self.wait(lambda: b.metric("admitd_shim_synced") == 1, "shim-b to sync")
        s.apply(queues(ns, "cq", 4))
        s.create_job(job(ns, "one", parallelism=2, completions=2, runtime=1))
        self.wait(lambda: is_true(s.job(ns, "one"), "Complete"), "the first Job to complete")
        self.assertEqual(b.metric("admitd_shim_leader"), 0)
        self.assertEqual(b.metric("admitd_shim_reconciles_total"), 0)
        self.assertEqual(b.metric("admitd_shim_events_recorded_total"), 0)
        self.assertGreater(a.metric("admitd_shim_reconciles_total"), 0)
        a.kill()
        self.wait(lambda: b.metric("admitd_shim_leader") == 1, "shim-b to take over")
        s.create_job(job(ns, "two", parallelism=2, completions=2, runtime=1))
        self.wait(lambda: is_true(s.job(ns, "two"), "Complete"), "the second Job to complete")
        code, lease = s.kube("GET", "/apis/coordination.k8s.io/v1/namespaces/admitd-system/"
                                    "leases/admitd-shim")
        self.assertEqual(code, 200)
        self.assertEqual(lease["spec"]["holderIdentity"], "shim-b")
        # A replica stopped cleanly (SIGTERM) hands the lease over at once.
        c = s.start_shim("shim-c")
        self.wait(lambda: c.metric("admitd_shim_synced") == 1, "shim-c to sync")
        b.kill(signal.SIGTERM)
        self.assertEqual(b.proc.returncode, 0)
        _, lease = s.kube("GET", "/apis/coordination.k8s.io/v1/namespaces/admitd-system/"
                                 "leases/admitd-shim")
        self.assertIn(lease["spec"]["holderIdentity"], ("", "shim-c"))
        self.wait(lambda: c.metric("admitd_shim_leader") == 1, "shim-c to lead")

    def test_webhook_defaults_and_validates_jobs_and_unreachable_fails_closed(self):
        s, ns = self.s, self.ns
        shim = s.start_shim_with_webhook("shim-0")
        self.wait(lambda: shim.metric("admitd_shim_leader") == 1, "the shim to lead")
        s.apply(queues(ns, "cq", 4))
        # Created unsuspended: the webhook suspends it; then it is admitted and runs.
        created = s.create_job(job(ns, "web", parallelism=1, completions=1, runtime=1,
                                   suspend=False))
        self.assertTrue(created["spec"]["suspend"])
        self.wait(lambda: is_true(s.job(ns, "web"), "Complete"), "the Job to complete")
        # Kueue's validation, with its message.
        bad = job(ns, "bad", parallelism=3, completions=3)
        bad["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "5"
        code, resp = s.kube("POST", "/apis/batch/v1/namespaces/%s/jobs" % ns, bad)
        self.assertEqual(code, 403, resp)
        self.assertEqual(resp["message"],
                         'admission webhook "vjob.kb.io" denied the request: '
                         'metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: '
                         'Invalid value: 5: should be between 0 and 2')
        # The webhook unreachable with failurePolicy Fail: Jobs cannot be created at all.
        shim.kill()
        code, resp = s.kube("POST", "/apis/batch/v1/namespaces/%s/jobs" % ns,
                            job(ns, "refused", suspend=False))
        self.assertEqual(code, 500, resp)
        self.assertIn('failed calling webhook "mjob.kb.io"', resp["message"])
        code, _ = s.kube("GET", "/apis/batch/v1/namespaces/%s/jobs/refused" % ns)
        self.assertEqual(code, 404)


if __name__ == "__main__":
    unittest.main()
