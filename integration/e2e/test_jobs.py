"""End to end: batch/v1 Jobs through admitd-shim, admitd and the test cluster, as real processes.

One stack (API server with Job controller, scheduler and kubelet; admitd; one shim) for the
class; each test has its own namespace and ClusterQueue.
"""

import unittest

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import PRIORITY_CLASSES, Stack, condition, is_true, job, queues  # noqa: E402
from stack import wait_with_logs  # noqa: E402

T = 30  # seconds: generous for a loaded 2-core machine


def wait_until(fn, timeout, what):
    return wait_with_logs(JobE2E.s, fn, what, timeout)


class JobE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=("n1:pool=a:cpu=64", "n2:pool=b:cpu=64"))
        cls.shim = cls.s.start_shim()
        wait_until(lambda: cls.shim.metric("admitd_shim_leader") == 1, timeout=T,
                   what="the shim to lead")

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def setUp(self):
        self.ns = self._testMethodName.replace("test_", "").replace("_", "-")[:30].strip("-")
        self.s.create_namespace(self.ns)

    def workload(self, name=None):
        wls = self.s.workloads(self.ns)
        if name is None:
            return wls[0] if len(wls) == 1 else None
        for w in wls:
            if w["metadata"]["ownerReferences"][0]["name"] == name:
                return w
        return None

    def test_a_job_that_fits_runs_on_its_flavors_nodes_and_gives_quota_back(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-fit", 4))
        created = s.create_job(job(ns, "fits", parallelism=2, completions=2, runtime=1))
        self.assertTrue(created["spec"]["suspend"])
        # Admitted, then unsuspended with the flavor's node selector and Kueue's labels.
        j = wait_until(lambda: (lambda j: j if not j["spec"]["suspend"] else None)(
            s.job(ns, "fits")), timeout=T, what="the Job to be unsuspended")
        tmpl = j["spec"]["template"]
        self.assertEqual(tmpl["spec"]["nodeSelector"], {"pool": "a"})
        self.assertEqual(tmpl["metadata"]["labels"]["kueue.x-k8s.io/podset"], "main")
        self.assertEqual(tmpl["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"], "cq-fit")
        # Its pods run on pool-a nodes and finish; the Workload finishes; quota goes back.
        wait_until(lambda: is_true(s.job(ns, "fits"), "Complete"), timeout=T,
                   what="the Job to complete")
        pods = s.pods(ns, "fits")
        self.assertEqual(len(pods), 2)
        self.assertEqual({p["spec"]["nodeName"] for p in pods}, {"n1"})
        wl = wait_until(lambda: (lambda w: w if w and is_true(w, "Finished") else None)(
            self.workload()), timeout=T, what="the Workload to finish")
        self.assertEqual(condition(wl, "Finished")["reason"], "Succeeded")
        self.assertEqual(wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"],
                         created["metadata"]["uid"])
        wait_until(lambda: s.cq_usage("cq-fit", "pool-a") == "0", timeout=T,
                   what="usage to drop to 0")
        reasons = [e["reason"] for e in s.events(ns, "fits")]
        for r in ("CreatedWorkload", "QuotaReserved", "Admitted", "Started", "FinishedWorkload"):
            self.assertIn(r, reasons)
        started = [e for e in s.events(ns, "fits") if e["reason"] == "Started"][0]
        self.assertEqual(started["message"], "Admitted by clusterQueue cq-fit")
        self.assertEqual(started["source"]["component"], "batch/job-kueue-controller")

    def test_a_job_that_does_not_fit_stays_suspended_and_pending(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-nofit", 2))
        s.create_job(job(ns, "hog", parallelism=2, completions=2))  # runs until deleted
        wait_until(lambda: not s.job(ns, "hog")["spec"]["suspend"], timeout=T,
                   what="the first Job to start")
        s.create_job(job(ns, "waits", parallelism=1, completions=1, runtime=1))
        wl = wait_until(lambda: (lambda w: w if w and condition(w, "QuotaReserved") else None)(
            self.workload("waits")), timeout=T, what="a Pending condition")
        qr = condition(wl, "QuotaReserved")
        self.assertEqual(qr["status"], "False")
        self.assertEqual(qr["reason"], "WaitingForQuota")  # Kueue's granular Pending reason
        self.assertIn("insufficient unused quota for cpu in flavor pool-a", qr["message"])
        ev = wait_until(lambda: [e for e in s.events(ns, "waits")
                                 if e["reason"] == qr["reason"]],
                        timeout=T, what="the pending Warning on the Job")
        self.assertEqual(ev[0]["type"], "Warning")
        self.assertEqual(ev[0]["message"], qr["message"])
        self.assertTrue(s.job(ns, "waits")["spec"]["suspend"])
        self.assertEqual(s.pods(ns, "waits"), [])
        # Deleting the first Job frees the quota: the second one runs.
        code, _ = s.kube("DELETE", "/apis/batch/v1/namespaces/%s/jobs/hog" % ns)
        self.assertEqual(code, 200)
        wait_until(lambda: is_true(s.job(ns, "waits"), "Complete"), timeout=T,
                   what="the second Job to run once the first is deleted")
        wait_until(lambda: self.workload("hog") is None, timeout=T,
                   what="the deleted Job's Workload to go")

    def test_a_higher_priority_job_preempts_a_lower_one_which_is_requeued(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-pre", 4, preemption="LowerPriority") + PRIORITY_CLASSES)
        s.create_job(job(ns, "low", parallelism=4, completions=4, runtime=4, priority_class="low"))
        wait_until(lambda: len([p for p in s.pods(ns, "low")
                                if p["status"].get("phase") == "Running"]) == 4,
                   timeout=T, what="the low Job's pods to run")
        low_pods = {p["metadata"]["uid"] for p in s.pods(ns, "low")}
        s.create_job(job(ns, "high", parallelism=2, completions=2, runtime=1,
                         priority_class="high"))
        # The low Job is suspended (Stopped), its pods deleted, its quota released, and the
        # high one runs.
        wait_until(lambda: s.job(ns, "low")["spec"]["suspend"], timeout=T,
                   what="the low Job to be suspended")
        wait_until(lambda: [e for e in s.events(ns, "low") if e["reason"] == "Stopped"],
                   timeout=T, what="a Stopped event")
        wait_until(lambda: not s.job(ns, "high")["spec"]["suspend"], timeout=T,
                   what="the high Job to start")
        low_wl = self.workload("low")
        self.assertEqual(condition(low_wl, "Evicted")["reason"], "Preempted")
        wait_until(lambda: is_true(s.job(ns, "high"), "Complete"), timeout=T,
                   what="the high Job to complete")
        # Requeued and readmitted: new pods, which run to completion.
        wait_until(lambda: is_true(s.job(ns, "low"), "Complete"), timeout=2 * T,
                   what="the low Job to be readmitted and complete")
        self.assertTrue(low_pods.isdisjoint(
            {p["metadata"]["uid"] for p in s.pods(ns, "low")
             if p["status"].get("phase") == "Succeeded"}))
        reasons = [e["reason"] for e in s.events(ns, "low")]
        self.assertGreaterEqual(reasons.count("Started"), 1)
        self.assertIn("EvictedDueToPreempted", reasons)
        wait_until(lambda: s.cq_usage("cq-pre", "pool-a") == "0", timeout=T,
                   what="usage to drop to 0")

    def test_reclaimable_pods_give_quota_back_before_the_job_ends(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-recl", 4))
        # p=2, c=3: once 2 pods succeeded only 1 more is needed, so 1 pod's quota is reclaimable.
        s.create_job(job(ns, "recl", parallelism=2, completions=3, runtime=2))
        wl = wait_until(lambda: (lambda w: w if w and w["status"].get("reclaimablePods") else None)(
            self.workload()), timeout=T, what="reclaimable pods on the Workload")
        self.assertEqual(wl["status"]["reclaimablePods"], [{"name": "main", "count": 1}])
        self.assertFalse(is_true(wl, "Finished"))
        self.assertEqual(s.cq_usage("cq-recl", "pool-a"), "1")
        wait_until(lambda: is_true(s.job(ns, "recl"), "Complete"), timeout=T,
                   what="the Job to complete")

    def test_a_changed_suspended_job_gets_a_new_workload(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-chg", 1))
        s.create_job(job(ns, "hog", parallelism=1, completions=1))  # runs until deleted
        wait_until(lambda: not s.job(ns, "hog")["spec"]["suspend"], timeout=T,
                   what="the first Job to start")
        s.create_job(job(ns, "chg", parallelism=1, completions=1, cpu="1", runtime=1))
        first = wait_until(lambda: self.workload("chg"), timeout=T, what="the Workload")
        # While suspended (and never started), a Job's scheduling directives may change; a new
        # toleration makes the Workload differ (§1.8), so it follows.
        toleration = {"key": "dedicated", "operator": "Equal", "value": "batch",
                      "effect": "NoSchedule"}
        s.patch_job(ns, "chg", {"spec": {"template": {"spec": {"tolerations": [toleration]}}}})
        wl = wait_until(lambda: (lambda w: w if w and w["metadata"]["uid"] !=
                                 first["metadata"]["uid"] else None)(self.workload("chg")),
                        timeout=T, what="a new Workload")
        self.assertEqual(wl["metadata"]["name"], first["metadata"]["name"])
        self.assertEqual(wl["spec"]["podSets"][0]["template"]["spec"]["tolerations"],
                         [toleration])
        ev = wait_until(lambda: [e for e in s.events(ns, "chg") if e["reason"] == "UpdatedWorkload"],
                        timeout=T, what="an UpdatedWorkload event")
        self.assertEqual(ev[0]["message"], "Updated not matching Workload for suspended job: "
                         "%s/%s" % (ns, wl["metadata"]["name"]))
        code, _ = s.kube("DELETE", "/apis/batch/v1/namespaces/%s/jobs/hog" % ns)
        self.assertEqual(code, 200)
        wait_until(lambda: is_true(s.job(ns, "chg"), "Complete"), timeout=T,
                   what="the changed Job to run")

    def test_a_job_created_running_without_the_webhook_is_stopped_then_admitted(self):
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-run", 4))
        s.create_job(job(ns, "eager", parallelism=2, completions=2, runtime=1, suspend=False))
        ev = wait_until(lambda: [e for e in s.events(ns, "eager") if e["reason"] == "Stopped"],
                        timeout=T, what="the running Job to be stopped")
        self.assertEqual(ev[0]["message"], "Missing Workload; unable to restore pod templates")
        wait_until(lambda: is_true(s.job(ns, "eager"), "Complete"), timeout=T,
                   what="the Job to be admitted and complete")
        wl = self.workload("eager")
        self.assertEqual(condition(wl, "Finished")["reason"], "Succeeded")
        reasons = [e["reason"] for e in s.events(ns, "eager")]
        self.assertIn("CreatedWorkload", reasons)
        self.assertIn("Started", reasons)

    def test_a_namespace_selector_on_labels_follows_the_clusters_namespaces(self):
        s = self.s
        s.create_namespace("sales", {"dep": "sales"})
        s.create_namespace("other")
        s.apply(queues("sales", "cq-dep", 4, selector="{matchLabels: {dep: sales}}",
                       more_namespaces=["other"]))
        s.create_job(job("sales", "in-sales", parallelism=1, completions=1, runtime=1))
        s.create_job(job("other", "in-other", parallelism=1, completions=1, runtime=1))
        wait_until(lambda: is_true(s.job("sales", "in-sales"), "Complete"), timeout=T,
                   what="the Job of the labelled namespace to run")
        wl = wait_until(lambda: (lambda w: w if w and condition(w[0], "QuotaReserved") else None)(
            s.workloads("other")), timeout=T, what="the other Workload to be pending")[0]
        qr = condition(wl, "QuotaReserved")
        self.assertEqual(qr["status"], "False")
        self.assertEqual(qr["message"], "workload namespace doesn't match ClusterQueue selector")
        self.assertTrue(s.job("other", "in-other")["spec"]["suspend"])
        # Labelling the namespace in the cluster changes the decision.
        code, _ = s.kube("PATCH", "/api/v1/namespaces/other", {"metadata": {"labels": {
            "dep": "sales"}}}, "application/merge-patch+json")
        self.assertEqual(code, 200)
        wait_until(lambda: is_true(s.job("other", "in-other"), "Complete"), timeout=T,
                   what="the Job to run once its namespace is labelled")
        ns_doc = s.admitctl("get", "namespace", "other", "-o", "json")
        self.assertIn('"dep": "sales"', ns_doc)

    def running(self, name):
        return sorted((p["metadata"]["name"], p["metadata"]["uid"]) for p in self.s.pods(self.ns, name)
                      if p["status"].get("phase") == "Running" and
                      not p["metadata"].get("deletionTimestamp"))

    def gated(self, name):
        return sorted(p["metadata"]["name"] for p in self.s.pods(self.ns, name)
                      if any(g["name"] == "kueue.x-k8s.io/elastic-job"
                             for g in p["spec"].get("schedulingGates") or []))

    def test_elastic_scale_down_gives_quota_back_and_keeps_pods_running(self):
        # KEP-77 story 1.
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-down", 8))
        s.create_job(job(ns, "down", parallelism=4, elastic=True))
        wait_until(lambda: len(self.running("down")) == 4, timeout=T,
                   what="4 running pods")
        wait_until(lambda: s.cq_usage("cq-down", "pool-a") == "4", timeout=T, what="usage 4")
        before = self.running("down")
        s.patch_job(ns, "down", {"spec": {"parallelism": 2}})
        wait_until(lambda: s.cq_usage("cq-down", "pool-a") == "2", timeout=T, what="usage 2")
        wait_until(lambda: len(self.running("down")) == 2, timeout=T, what="2 running pods")
        after = self.running("down")
        self.assertTrue(set(after) <= set(before), (before, after))  # none restarted
        wls = [w for w in s.workloads(ns) if not is_true(w, "Finished")]
        self.assertEqual(len(wls), 1)
        self.assertEqual(wls[0]["spec"]["podSets"][0]["count"], 2)

    def test_elastic_scale_up_ungates_new_pods_once_the_slice_is_admitted(self):
        # KEP-77 story 2, then a scale-up that does not fit.
        s, ns = self.s, self.ns
        s.apply(queues(ns, "cq-up", 4))
        s.create_job(job(ns, "up", parallelism=2, elastic=True))
        wait_until(lambda: len(self.running("up")) == 2, timeout=T, what="2 running pods")
        before = self.running("up")
        s.patch_job(ns, "up", {"spec": {"parallelism": 4}})
        wait_until(lambda: len(self.running("up")) == 4, timeout=T, what="4 running pods")
        self.assertTrue(set(before) <= set(self.running("up")))  # the first two never restarted
        wait_until(lambda: s.cq_usage("cq-up", "pool-a") == "4", timeout=T, what="usage 4")
        live = [w for w in s.workloads(ns) if not is_true(w, "Finished")]
        self.assertEqual(len(live), 1)
        self.assertEqual(live[0]["spec"]["podSets"][0]["count"], 4)
        self.assertIn("kueue.x-k8s.io/workload-slice-replacement-for",
                      live[0]["metadata"]["annotations"])
        # Beyond the quota: the new pods stay gated, the old ones run.
        running = self.running("up")
        s.patch_job(ns, "up", {"spec": {"parallelism": 6}})
        wait_until(lambda: len(self.gated("up")) == 2, timeout=T, what="2 gated pods")
        pending = wait_until(lambda: [w for w in s.workloads(ns)
                                      if w["spec"]["podSets"][0]["count"] == 6 and
                                      condition(w, "QuotaReserved")], timeout=T,
                             what="the scale-up slice to be pending")
        self.assertEqual(condition(pending[0], "QuotaReserved")["status"], "False")
        self.assertEqual(self.running("up"), running)
        self.assertEqual(s.cq_usage("cq-up", "pool-a"), "4")
        self.assertFalse(s.job(ns, "up")["spec"]["suspend"])


if __name__ == "__main__":
    unittest.main()
