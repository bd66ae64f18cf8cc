"""End to end: MultiKueue with a manager cluster and two worker clusters, each with its own API
server, admitd and shim (docs/multikueue.md). Users create Jobs in the manager cluster only."""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import (ADMITCTL, ADMITD, Stack, condition, free_port, is_true, job,  # noqa: E402
                   queues)
from stack import wait_until as _wait_until  # noqa: E402
from stack import wait_with_logs  # noqa: E402

T = 40  # seconds: generous for a loaded 2-core machine
NS = "team"
MK = "kueue.x-k8s.io/multikueue"

MANAGER_QUEUES = """apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: multikueue}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: workers}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: workers}
spec:
  clusters: [w1, w2]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: dispatch}
spec:
  namespaceSelector: {}
  admissionChecksStrategy:
    admissionChecks: [{name: multikueue}]
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 8}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team, name: lq}
spec: {clusterQueue: dispatch}
"""


class WorkerCluster:
    """One worker cluster: its API server (the stack's second or third), its admitd and its
    shim in the MultiKueue worker role."""

    def __init__(self, stack, name, shim_extra=()):
        self.name = name
        self.api = stack.start_cluster()
        self.address = "127.0.0.1:%d" % free_port()
        self.data_dir = os.path.join(stack.tmp, name)
        self.log = open(os.path.join(stack.tmp, "admitd-%s.log" % name), "a")
        stack.more_logs.append(("admitd " + name, self.log.name))
        self.start_admitd()
        path = os.path.join(stack.tmp, "queues-%s.yaml" % name)
        with open(path, "w") as f:
            f.write(queues(NS, "cq", 4))
        self.admitctl("apply", "-f", path)
        stack.create_namespace(NS, api=self.api)
        self.shim = stack.start_shim("shim-%s" % name,
                                     extra=("--multikueue-worker",) + tuple(shim_extra),
                                     cluster=name, api=self.api, admitd=self.address)

    def start_admitd(self):
        self.admitd = subprocess.Popen(
            [ADMITD, "--listen", self.address, "--data-dir", self.data_dir],
            stdout=self.log, stderr=subprocess.STDOUT)
        _wait_until(lambda: subprocess.run([ADMITCTL, "--server", self.address, "get", "cq"],
                                           capture_output=True).returncode == 0,
                    timeout=20, interval=0.1, what="admitd of %s to serve" % self.name)

    def kill_admitd(self):
        self.admitd.send_signal(signal.SIGKILL)
        self.admitd.wait(10)

    def admitctl(self, *args):
        r = subprocess.run([ADMITCTL, "--server", self.address] + list(args),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("admitctl %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout

    def workloads(self):
        out = self.admitctl("get", "workloads", "-n", NS, "-o", "json").strip()
        docs, dec, i = [], json.JSONDecoder(), 0
        while i < len(out):
            doc, i = dec.raw_decode(out, i)
            docs.append(doc)
            while i < len(out) and out[i].isspace():
                i += 1
        return docs

    def stop(self):
        if self.admitd.poll() is None:
            self.admitd.terminate()
            try:
                self.admitd.wait(10)
            except subprocess.TimeoutExpired:
                self.admitd.kill()
                self.admitd.wait(10)
        self.log.close()


class ManagerAndWorkers:
    """A manager cluster and workers w1, w2 for a whole test class (not a TestCase: the kinds'
    MultiKueue tests mix it in). The class sets API_ARGS (the clusters' API server arguments),
    WORKER_INTEGRATIONS (the workers' --integrations) and MANAGER_KINDS (the manager shim's
    webhook switches, Stack.start_shim_with_webhook)."""

    API_ARGS = ()
    WORKER_INTEGRATIONS = "batch/job"
    MANAGER_KINDS = {}
    TIMEOUT = 40  # seconds: generous for a loaded 2-core machine

    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=("n1:pool=a:cpu=16",), api_args=cls.API_ARGS,
                      admitd_args=("--multikueue-reconnect-backoff", "200ms",
                                   "--multikueue-gc-interval", "2s"))
        cls.workers = {}
        try:
            for name in ("w1", "w2"):
                cls.workers[name] = WorkerCluster(
                    cls.s, name, shim_extra=("--integrations=" + cls.WORKER_INTEGRATIONS,))
            cls.s.create_namespace(NS)
            cls.s.apply(MANAGER_QUEUES + "".join(
                "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: MultiKueueCluster\n"
                "metadata: {name: %s}\nspec:\n  admitd: {address: \"%s\"}\n" % (n, w.address)
                for n, w in cls.workers.items()))
            cls.manager_shim = cls.s.start_shim_with_webhook("shim-manager", **cls.MANAGER_KINDS)
            wait_with_logs(cls.s, lambda: cls.check_active() == "True", "the check to be Active",
                           cls.TIMEOUT)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()
        for w in cls.workers.values():
            w.stop()

    @classmethod
    def check_active(cls):
        return MultiKueueE2E.check_active(cls)

    def wait(self, fn, what, timeout=None):
        return wait_with_logs(self.s, fn, what, timeout or self.TIMEOUT)


class MultiKueueE2E(unittest.TestCase):
    def setUp(self):
        self.s = Stack(nodes=("n1:pool=a:cpu=16",),
                       admitd_args=("--multikueue-worker-lost-timeout", "5s",
                                    "--multikueue-reconnect-backoff", "200ms",
                                    "--multikueue-gc-interval", "2s"))
        self.workers = {}
        try:
            for name in ("w1", "w2"):
                self.workers[name] = WorkerCluster(self.s, name)
            self.s.create_namespace(NS)
            self.s.apply(MANAGER_QUEUES + "".join(
                "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: MultiKueueCluster\n"
                "metadata: {name: %s}\nspec:\n  admitd: {address: \"%s\"}\n" % (n, w.address)
                for n, w in self.workers.items()))
            # The manager's shim serves the webhook: a Job for the MultiKueue queue gets
            # spec.managedBy: kueue.x-k8s.io/multikueue.
            self.manager_shim = self.s.start_shim_with_webhook("shim-manager")
            self.wait_until(lambda: self.check_active() == "True", "the check to be Active")
        except BaseException:
            self.tearDown()
            raise

    def tearDown(self):
        self.s.stop()
        for w in self.workers.values():
            w.stop()

    def wait_until(self, fn, what, timeout=T):
        try:
            return wait_with_logs(self.s, fn, what, timeout)
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, self.workers_state())) from None

    def workers_state(self):
        """Each worker's copies (owner, conditions) and Jobs (uid, suspend, status), for a failing
        test's message: what the process logs do not say."""
        out = []
        for w in self.workers.values():
            try:
                for wl in w.workloads():
                    owners = [(o.get("name"), o.get("uid"))
                              for o in wl["metadata"].get("ownerReferences", [])]
                    conds = [(c["type"], c["status"], c.get("reason"))
                             for c in wl.get("status", {}).get("conditions", [])]
                    out.append("%s copy %s uid=%s owners=%s conditions=%s" % (
                        w.name, wl["metadata"]["name"], wl["metadata"].get("uid"), owners, conds))
                code, body = self.s.kube("GET", "/apis/batch/v1/namespaces/%s/jobs" % NS,
                                         api=w.api)
                for j in (body.get("items", []) if code == 200 else []):
                    out.append("%s job %s uid=%s suspend=%s status=%s" % (
                        w.name, j["metadata"]["name"], j["metadata"].get("uid"),
                        j.get("spec", {}).get("suspend"), json.dumps(j.get("status", {}))))
            except Exception as e:  # the state is a diagnostic: never hide the failure itself
                out.append("%s: state not read: %s" % (w.name, e))
        return "--- workers ---\n" + "\n".join(out)

    def check_active(self):
        out = self.s.admitctl("get", "admissioncheck", "multikueue", "-o", "json", check=False)
        if not out.strip():
            return None
        c = condition(json.loads(out)["admissionCheck"], "Active")
        return c and c["status"]

    def manager_workload(self, job_name):
        for wl in self.s.workloads(NS):
            owners = wl["metadata"].get("ownerReferences", [])
            if owners and owners[0]["name"] == job_name:
                return wl
        return None

    def worker_job(self, worker, name):
        code, body = self.s.kube("GET", "/apis/batch/v1/namespaces/%s/jobs/%s" % (NS, name),
                                 api=worker.api)
        return body if code == 200 else None

    def mk_check(self, wl):
        for c in (wl or {}).get("status", {}).get("admissionChecks", []):
            if c["name"] == "multikueue":
                return c
        return None

    def test_a_job_runs_in_the_winning_worker_only_and_finishes_in_the_manager(self):
        s = self.s
        # No managedBy: the webhook sets it for the MultiKueue queue.
        created = s.create_job(job(NS, "train", parallelism=2, completions=2, runtime=1))
        self.assertEqual(created["spec"].get("managedBy"), MK)
        wl = self.wait_until(lambda: (lambda w: w if w and w["status"].get("clusterName")
                                      else None)(self.manager_workload("train")),
                             "the manager's workload to be admitted in a worker")
        winner = self.workers[wl["status"]["clusterName"]]
        loser = [w for n, w in self.workers.items() if n != winner.name][0]
        self.assertEqual(self.mk_check(wl)["message"],
                         'The workload was admitted on "%s"' % winner.name)
        # The winner's shim creates the Job from the manifest: no managedBy, no selector, the
        # origin label and the copy as its prebuilt workload.
        remote = self.wait_until(lambda: self.worker_job(winner, "train"),
                                 "the Job in the winning worker")
        self.assertNotIn("managedBy", remote["spec"])
        self.assertEqual(remote["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"],
                         "multikueue")
        self.assertEqual(remote["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"],
                         wl["metadata"]["name"])
        # It runs there and completes; the manager's Job shows the worker's status.
        manager = self.wait_until(lambda: (lambda j: j if is_true(j, "Complete") else None)(
            s.job(NS, "train")), "the manager's Job to complete")
        self.assertEqual(manager["status"].get("succeeded"), 2)
        self.assertEqual(s.pods(NS, "train"), [])  # nothing ran in the manager cluster
        self.assertIsNone(self.worker_job(loser, "train"))
        wl = self.wait_until(lambda: (lambda w: w if is_true(w, "Finished") else None)(
            self.manager_workload("train")), "the manager's workload to finish")
        self.assertEqual(condition(wl, "Finished")["reason"], "Succeeded")
        # Finished: the copy and the worker's Job are removed.
        self.wait_until(lambda: not winner.workloads(), "the copy to be removed")
        self.wait_until(lambda: self.worker_job(winner, "train") is None,
                        "the worker's Job to be removed with its copy")
        self.assertGreaterEqual(winner.shim.metric("admitd_shim_multikueue_jobs_created_total"), 1)
        self.assertEqual(loser.shim.metric("admitd_shim_multikueue_jobs_created_total"), 0)

    def test_a_job_not_managed_by_multikueue_is_rejected_and_never_dispatched(self):
        s = self.s
        local = job(NS, "local", runtime=1)
        local["spec"]["managedBy"] = "example.com/other"  # kept by the webhook
        s.create_job(local)
        wl = self.wait_until(lambda: (lambda w: w if (self.mk_check(w) or {}).get("state") ==
                                      "Rejected" else None)(self.manager_workload("local")),
                             "the check to be Rejected")
        self.assertEqual(
            self.mk_check(wl)["message"],
            'The owner is not managed by Kueue: Expecting spec.managedBy to be '
            '"kueue.x-k8s.io/multikueue" not "example.com/other", Previously: "Pending"')
        self.wait_until(lambda: self.manager_workload("local")["spec"].get("active") is False,
                        "the workload to be deactivated")
        self.assertTrue(s.job(NS, "local")["spec"]["suspend"])
        for w in self.workers.values():
            self.assertEqual(w.workloads(), [])
            self.assertIsNone(self.worker_job(w, "local"))


    def test_a_worker_eviction_retries_and_the_job_runs_again(self):
        s = self.s
        manager_job = job(NS, "retry", runtime=6)
        manager_job["spec"]["managedBy"] = MK
        s.create_job(manager_job)
        wl = self.wait_until(lambda: (lambda w: w if w and w["status"].get("clusterName")
                                      else None)(self.manager_workload("retry")),
                             "the manager's workload to be admitted in a worker")
        first = self.workers[wl["status"]["clusterName"]]
        name = wl["metadata"]["name"]
        self.wait_until(lambda: (self.worker_job(first, "retry") or {}).get("status", {})
                        .get("active") == 1, "the Job to run in the first worker")
        self.wait_until(lambda: s.job(NS, "retry").get("status", {}).get("active") == 1,
                        "the manager's Job to show the worker's active pod")
        # The worker evicts its copy (here: deactivated by its operator).
        first.admitctl("deactivate", name, "-n", NS)
        message = ('Workload evicted on worker cluster: "%s", resetting for re-admission. '
                   'Previously: "Ready"' % first.name)
        self.wait_until(lambda: any(e.get("reason") == "MultiKueue" and e.get("message") == message
                                    for e in s.events(NS, "retry")),
                        "the Retry's event on the manager's Job")
        # Dispatched again; the job runs to completion, and the manager's Job completes.
        self.wait_until(lambda: is_true(s.job(NS, "retry"), "Complete"),
                        "the manager's Job to complete after the re-dispatch", timeout=60)
        wl = self.wait_until(lambda: (lambda w: w if is_true(w, "Finished") else None)(
            self.manager_workload("retry")), "the manager's workload to finish")
        self.assertGreaterEqual(wl["status"].get("requeueState", {}).get("count", 0), 1)
        # No copy and no worker Job is left anywhere.
        for w in self.workers.values():
            try:
                self.wait_until(lambda: not w.workloads() and self.worker_job(w, "retry") is None,
                                "%s to hold nothing" % w.name)
            except AssertionError as e:
                held = self.worker_job(w, "retry")
                raise AssertionError("%s\n%s still holds copies %s and Job %s" % (
                    e, w.name, json.dumps(w.workloads()), json.dumps(held))) from None

    def running_in(self, name):
        """The workers whose Job ``name`` has active pods."""
        return [w.name for w in self.workers.values()
                if (self.worker_job(w, name) or {}).get("status", {}).get("active", 0) > 0]

    def test_the_manager_killed_mid_dispatch_resumes_with_no_job_in_two_clusters(self):
        s = self.s
        names = ["batch-%d" % i for i in range(6)]
        for n in names:
            j = job(NS, n, runtime=2)
            j["spec"]["managedBy"] = MK
            s.create_job(j)
        # Killed while the first copies are out, before every winner is recorded.
        self.wait_until(lambda: any(w.workloads() for w in self.workers.values()),
                        "the first copies in the workers")
        s.kill_admitd()
        time.sleep(1)
        s.start_admitd()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            for n in names:
                self.assertLessEqual(len(self.running_in(n)), 1, "%s runs in two clusters" % n)
            if all(is_true(s.job(NS, n), "Complete") for n in names):
                break
            time.sleep(0.2)
        for n in names:
            self.assertTrue(is_true(s.job(NS, n), "Complete"), n)
        # No quota is lost anywhere, and nothing is left in the workers.
        self.wait_until(lambda: s.cq_usage("dispatch", "default") in ("0", ""),
                        "the manager's quota to be free")
        for w in self.workers.values():
            self.wait_until(lambda: not w.workloads(), "%s to hold no copy" % w.name)

    def test_a_worker_lost_longer_than_the_timeout_gives_the_job_to_the_other(self):
        s = self.s
        j = job(NS, "lost", runtime=4)
        j["spec"]["managedBy"] = MK
        s.create_job(j)
        wl = self.wait_until(lambda: (lambda w: w if w and w["status"].get("clusterName")
                                      else None)(self.manager_workload("lost")),
                             "the manager's workload to be admitted in a worker")
        first = self.workers[wl["status"]["clusterName"]]
        other = [w for n, w in self.workers.items() if n != first.name][0]
        self.wait_until(lambda: self.worker_job(first, "lost"), "the Job in the first worker")
        first.kill_admitd()
        # After workerLostTimeout (5 s here) the job is dispatched again and runs in the other.
        self.wait_until(lambda: (self.manager_workload("lost") or {}).get("status", {})
                        .get("clusterName") == other.name, "the job to move to the other worker")
        self.wait_until(lambda: is_true(s.job(NS, "lost"), "Complete"),
                        "the manager's Job to complete", timeout=60)
        # The first worker comes back: its stale copy and its Job are removed.
        first.start_admitd()
        self.wait_until(lambda: not first.workloads(), "the stale copy to be removed")
        self.wait_until(lambda: self.worker_job(first, "lost") is None,
                        "the stale Job to be removed")

    def test_a_copy_deleted_by_hand_is_dispatched_again(self):
        s = self.s
        j = job(NS, "gone", runtime=3)
        j["spec"]["managedBy"] = MK
        s.create_job(j)
        wl = self.wait_until(lambda: (lambda w: w if w and w["status"].get("clusterName")
                                      else None)(self.manager_workload("gone")),
                             "the manager's workload to be admitted in a worker")
        first = self.workers[wl["status"]["clusterName"]]
        self.wait_until(lambda: self.worker_job(first, "gone"), "the Job in the worker")
        first.admitctl("delete", "workload", wl["metadata"]["name"], "-n", NS)
        self.wait_until(lambda: is_true(s.job(NS, "gone"), "Complete"),
                        "the manager's Job to complete after the re-dispatch", timeout=60)
        wl = self.manager_workload("gone")
        self.assertGreaterEqual(wl["status"].get("requeueState", {}).get("count", 0), 1)

    def test_an_elastic_job_scales_up_and_down_while_it_runs_in_a_worker(self):
        s = self.s
        s.create_job(job(NS, "grow", parallelism=1, completions=4, runtime=30, elastic=True))
        wl = self.wait_until(lambda: (lambda w: w if w and w["status"].get("clusterName")
                                      else None)(self.manager_workload("grow")),
                             "the manager's workload to be admitted in a worker")
        worker = self.workers[wl["status"]["clusterName"]]
        other = [w for n, w in self.workers.items() if n != worker.name][0]

        def active():
            return (self.worker_job(worker, "grow") or {}).get("status", {}).get("active", 0)

        self.wait_until(lambda: active() == 1, "one pod to run in the worker")
        # Scale-up: a new slice on the manager goes to the same worker, is admitted there as a
        # replacement, and the worker's Job follows it.
        s.patch_job(NS, "grow", {"spec": {"parallelism": 3}})
        remote = self.wait_until(
            lambda: (lambda j: j if j and j["spec"].get("parallelism") == 3 else None)(
                self.worker_job(worker, "grow")), "the worker's Job to scale up")
        slices = [w for w in self.s.workloads(NS)
                  if not is_true(w, "Finished") and
                  w["metadata"].get("ownerReferences", [{}])[0].get("name") == "grow"]
        self.assertEqual(len(slices), 1, slices)
        self.assertEqual(slices[0]["status"]["clusterName"], worker.name)
        self.assertEqual(
            remote["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"],
            slices[0]["metadata"]["name"])
        self.wait_until(lambda: active() == 3, "three pods to run in the worker")
        # The worker counts the pods once: its ClusterQueue holds 3 CPUs, not 1 + 3.
        self.assertEqual(json.loads(worker.admitctl("get", "cq", "cq", "-o", "json"))
                         ["clusterQueue"]["status"]["flavorsUsage"][0]["resources"][0]["total"],
                         "3")
        # Scale-down: the manager's slice shrinks in place, and so do the copy and the Job.
        s.patch_job(NS, "grow", {"spec": {"parallelism": 2}})
        self.wait_until(lambda: (self.worker_job(worker, "grow") or {}).get("spec", {})
                        .get("parallelism") == 2, "the worker's Job to scale down")
        self.wait_until(lambda: [w["spec"]["podSets"][0]["count"] for w in worker.workloads()
                                 if not is_true(w, "Finished")] == [2],
                        "the worker's copy to scale down in place")
        self.assertIsNone(self.worker_job(other, "grow"))
        self.assertEqual([w for w in other.workloads() if not is_true(w, "Finished")], [])

if __name__ == "__main__":
    unittest.main()
