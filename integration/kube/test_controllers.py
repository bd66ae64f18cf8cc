"""The simulated controllers (job, scheduler, kubelet) seen through real clients.

The server runs with ``--controllers job,scheduler,kubelet`` and two fake nodes
(pool=a; pool=b with a NoSchedule taint); the tests use python3-kubernetes
(run with /usr/bin/python3) and, for ``kubectl wait``, /usr/bin/kubectl.
"""

import os
import re
import subprocess
import unittest

import errors
from clientfixtures import KUBECTL, PythonClientServerTest, client, config, needs_python_client
from harness import InProcessApiServer, wait_until

RUNTIME = "fixture.admitd.io/runtime-seconds"
GATE = "kueue.x-k8s.io/admission"
NS = "ctl"


def job_body(name, parallelism=1, completions=1, suspend=False, runtime=None, selector=None,
             exit_code=None, backoff=None, unready=False):
    ann = {}
    if unready:
        ann["fixture.admitd.io/unready"] = "true"
    if runtime is not None:
        ann[RUNTIME] = str(runtime)
    if exit_code is not None:
        ann["fixture.admitd.io/exit-code"] = str(exit_code)
    spec = {"parallelism": parallelism, "completions": completions, "suspend": suspend,
            "template": {"metadata": {"labels": {"app": name}, "annotations": ann},
                         "spec": {"restartPolicy": "Never",
                                  "nodeSelector": selector or {"pool": "a"},
                                  "containers": [{"name": "main", "image": "busybox:1.36",
                                                  "resources": {"requests": {"cpu": "500m"}}}]}}}
    if backoff is not None:
        spec["backoffLimit"] = backoff
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def pod_body(name, selector, gates=None, tolerations=None):
    spec = {"nodeSelector": selector,
            "containers": [{"name": "c", "image": "busybox:1.36",
                            "resources": {"requests": {"cpu": "100m"}}}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def cond(obj, ctype):
    for c in (obj.status.conditions or []):
        if c.type == ctype:
            return c
    return None


@needs_python_client
class ControllersTest(PythonClientServerTest, unittest.TestCase):
    SERVER_ARGS = ("--namespace", NS, "--controllers", "job,scheduler,kubelet",
                   "--kubelet-start-delay", "0.1", "--kubelet-grace-cap", "0.3",
                   "--node", "node-a:pool=a:cpu=8",
                   "--node", "node-b:pool=b:cpu=8:taint=dedicated=b:NoSchedule")
    APIS = {"core": "CoreV1Api", "batch": "BatchV1Api"}

    # ---------------------------------------------------------------- helpers
    def job(self, name):
        return self.batch.read_namespaced_job(name, NS)

    def job_status(self, name):
        """The Job's status as JSON (this client predates status.ready and .terminating)."""
        code, body = self.s.request("GET", "/apis/batch/v1/namespaces/%s/jobs/%s"
                                    % (NS, name))
        self.assertEqual(code, 200, body)
        return body.get("status") or {}

    def job_pods(self, name, live_only=False):
        pods = self.core.list_namespaced_pod(NS, label_selector="job-name=" + name).items
        if live_only:
            pods = [p for p in pods if p.metadata.deletion_timestamp is None
                    and p.status.phase not in ("Succeeded", "Failed")]
        return pods

    def wait_job_cond(self, name, ctype, status="True", timeout=10):
        def check():
            c = cond(self.job(name), ctype)
            return c is not None and c.status == status and self.job(name)
        return wait_until(check, timeout, what="job %s condition %s=%s" % (name, ctype, status))

    def pod(self, name):
        return self.core.read_namespaced_pod(name, NS)

    # ------------------------------------------------------------------ tests
    def test_job_runs_to_completion(self):
        self.batch.create_namespaced_job(NS, job_body("done", 2, 3, runtime=0.3))
        job = self.wait_job_cond("done", "Complete")
        self.assertEqual(job.status.succeeded, 3)
        self.assertFalse(job.status.active)
        self.assertFalse(job.status.failed)
        self.assertIsNotNone(job.status.start_time)
        self.assertIsNotNone(job.status.completion_time)
        c = cond(job, "Complete")
        self.assertEqual(c.reason, "CompletionsReached")
        self.assertEqual(cond(job, "SuccessCriteriaMet").status, "True")
        self.assertIsNone(cond(job, "Suspended"))
        pods = self.job_pods("done")
        self.assertEqual(len(pods), 3)
        uid = job.metadata.uid
        for p in pods:
            self.assertRegex(p.metadata.name, r"^done-[a-z0-9]{5}$")
            self.assertEqual(p.spec.node_name, "node-a")
            self.assertEqual(p.status.phase, "Succeeded")
            labels = p.metadata.labels
            self.assertEqual(labels["app"], "done")
            self.assertEqual(labels["batch.kubernetes.io/job-name"], "done")
            self.assertEqual(labels["batch.kubernetes.io/controller-uid"], uid)
            self.assertEqual(labels["controller-uid"], uid)
            ref = p.metadata.owner_references[0]
            self.assertEqual((ref.kind, ref.name, ref.uid, ref.controller,
                              ref.block_owner_deletion), ("Job", "done", uid, True, True))
            self.assertEqual(cond(p, "PodScheduled").status, "True")
            term = p.status.container_statuses[0].state.terminated
            self.assertEqual((term.exit_code, term.reason), (0, "Completed"))

    def test_a_pod_whose_readiness_probe_fails_runs_unready(self):
        self.batch.create_namespaced_job(NS, job_body("unready", 2, 2, unready=True))
        def running():
            pods = self.job_pods("unready")
            return len(pods) == 2 and all(p.status.phase == "Running" for p in pods) and pods
        pods = wait_until(running, 10, what="both pods to run")
        for p in pods:
            ready = cond(p, "Ready")
            self.assertEqual((ready.status, ready.reason), ("False", "ContainersNotReady"))
            self.assertEqual(ready.message, "containers with unready status: [main]")
            self.assertEqual(cond(p, "ContainersReady").status, "False")
            self.assertFalse(p.status.container_statuses[0].ready)
            self.assertIsNotNone(p.status.container_statuses[0].state.running)
        # The Job controller counts them active, none ready.
        status = wait_until(lambda: (lambda st: st if st.get("active") == 2 else None)(
            self.job_status("unready")), 10, what="two active pods")
        self.assertEqual(status.get("ready"), 0)
        self.batch.delete_namespaced_job("unready", NS, propagation_policy="Background")

    def test_indexed_job(self):
        body = job_body("idx", 2, 3, runtime=0.2)
        body["spec"]["completionMode"] = "Indexed"
        self.batch.create_namespaced_job(NS, body)
        self.wait_job_cond("idx", "Complete")
        self.assertEqual(self.job_status("idx").get("completedIndexes"), "0-2")
        self.assertEqual(self.job("idx").status.succeeded, 3)
        pods = self.job_pods("idx")
        indexes = sorted(p.metadata.annotations["batch.kubernetes.io/job-completion-index"]
                         for p in pods)
        self.assertEqual(indexes, ["0", "1", "2"])
        for p in pods:
            i = p.metadata.annotations["batch.kubernetes.io/job-completion-index"]
            self.assertRegex(p.metadata.name, r"^idx-%s-[a-z0-9]{5}$" % i)
            self.assertEqual(p.spec.hostname, "idx-" + i)

    def test_suspended_job_has_no_pods(self):
        self.batch.create_namespaced_job(NS, job_body("susp", 2, 2, suspend=True))
        job = self.wait_job_cond("susp", "Suspended")
        c = cond(job, "Suspended")
        self.assertEqual((c.reason, c.message), ("JobSuspended", "Job suspended"))
        self.assertIsNone(job.status.start_time)
        self.assertFalse(job.status.active)
        self.assertEqual(self.job_pods("susp"), [])

    def test_suspend_running_job_deletes_pods_then_resume(self):
        self.batch.create_namespaced_job(NS, job_body("runner", 2, 2))
        wait_until(lambda: [p for p in self.job_pods("runner") if p.status.phase == "Running"]
                   and len([p for p in self.job_pods("runner")
                            if p.status.phase == "Running"]) == 2, what="2 running pods")
        wait_until(lambda: self.job_status("runner").get("ready") == 2, what="ready=2")
        self.batch.patch_namespaced_job("runner", NS, {"spec": {"suspend": True}})
        job = self.wait_job_cond("runner", "Suspended")
        self.assertEqual(cond(job, "Suspended").reason, "JobSuspended")
        wait_until(lambda: self.job_pods("runner") == [], what="pods gone")
        st = wait_until(lambda: (lambda s: not s.get("active") and not s.get("terminating")
                                 and s)(self.job_status("runner")), what="active=0")
        self.assertNotIn("failed", st)  # pods deleted for suspension do not count
        self.batch.patch_namespaced_job("runner", NS, {"spec": {"suspend": False}})
        job = self.wait_job_cond("runner", "Suspended", "False")
        c = cond(job, "Suspended")
        self.assertEqual((c.reason, c.message), ("JobResumed", "Job resumed"))
        wait_until(lambda: len(self.job_pods("runner", live_only=True)) == 2,
                   what="pods recreated")

    def test_gated_pod_binds_after_gate_removal(self):
        self.core.create_namespaced_pod(NS, pod_body("gated", {"pool": "a"}, gates=[GATE]))
        p = wait_until(lambda: (lambda p: cond(p, "PodScheduled") and p)(self.pod("gated")),
                       what="PodScheduled on gated pod")
        c = cond(p, "PodScheduled")
        self.assertEqual((c.status, c.reason), ("False", "SchedulingGated"))
        self.assertIsNone(p.spec.node_name)
        self.core.patch_namespaced_pod("gated", NS, {"spec": {"schedulingGates": [
            {"$patch": "delete", "name": GATE}]}})
        p = wait_until(lambda: (lambda p: p.status.phase == "Running" and p)(self.pod("gated")),
                       what="gated pod running")
        self.assertEqual(p.spec.node_name, "node-a")
        self.assertEqual(cond(p, "PodScheduled").status, "True")
        self.assertEqual(cond(p, "Ready").status, "True")
        self.assertTrue(p.status.container_statuses[0].ready)

    def test_unschedulable_pod_until_a_node_appears(self):
        self.core.create_namespaced_pod(NS, pod_body("nowhere", {"pool": "zzz"}))
        p = wait_until(lambda: (lambda p: cond(p, "PodScheduled") and p)(self.pod("nowhere")),
                       what="PodScheduled condition")
        c = cond(p, "PodScheduled")
        self.assertEqual((c.status, c.reason), ("False", "Unschedulable"))
        self.assertIn("nodes are available", c.message)
        self.assertEqual(p.status.phase, "Pending")
        self.assertIsNone(p.spec.node_name)
        self.core.create_node({"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": "node-z", "labels": {"pool": "zzz"}},
                               "status": {"allocatable": {"cpu": "1", "pods": "10"}}})
        p = wait_until(lambda: (lambda p: p.spec.node_name and p)(self.pod("nowhere")),
                       what="binding to node-z")
        self.assertEqual(p.spec.node_name, "node-z")

    def test_taint_needs_toleration(self):
        self.core.create_namespaced_pod(NS, pod_body("untol", {"pool": "b"}))
        self.core.create_namespaced_pod(NS, pod_body("tol", {"pool": "b"}, tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "b", "effect": "NoSchedule"}]))
        p = wait_until(lambda: (lambda p: p.spec.node_name and p)(self.pod("tol")),
                       what="tolerating pod bound")
        self.assertEqual(p.spec.node_name, "node-b")
        p = wait_until(lambda: (lambda p: cond(p, "PodScheduled") and p)(self.pod("untol")),
                       what="untolerating pod condition")
        self.assertEqual(cond(p, "PodScheduled").reason, "Unschedulable")
        self.assertIn("untolerated taint", cond(p, "PodScheduled").message)

    def test_parallelism_scale_up_and_down(self):
        self.batch.create_namespaced_job(NS, job_body("elastic", 2, 10))
        wait_until(lambda: len(self.job_pods("elastic", live_only=True)) == 2, what="2 pods")
        self.batch.patch_namespaced_job("elastic", NS, {"spec": {"parallelism": 4}})
        wait_until(lambda: len(self.job_pods("elastic", live_only=True)) == 4, what="4 pods")
        wait_until(lambda: self.job("elastic").status.active == 4, what="active=4")
        self.batch.patch_namespaced_job("elastic", NS, {"spec": {"parallelism": 1}})
        wait_until(lambda: len(self.job_pods("elastic")) == 1, what="scaled down to 1 pod")
        job = wait_until(lambda: (lambda j: j.status.active == 1 and j)(self.job("elastic")),
                         what="active=1")
        self.assertFalse(job.status.failed)

    def test_failed_job_after_backoff_limit(self):
        self.batch.create_namespaced_job(NS, job_body("boom", 1, 1, runtime=0.1, exit_code=1,
                                                      backoff=1))
        job = self.wait_job_cond("boom", "Failed")
        self.assertEqual(cond(job, "Failed").reason, "BackoffLimitExceeded")
        self.assertEqual(cond(job, "FailureTarget").status, "True")
        self.assertEqual(job.status.failed, 2)
        self.assertIsNone(cond(job, "Complete"))

    def test_deleting_job_deletes_its_pods(self):
        self.batch.create_namespaced_job(NS, job_body("gone", 2, 2))
        wait_until(lambda: len(self.job_pods("gone")) == 2, what="2 pods")
        self.batch.delete_namespaced_job("gone", NS, propagation_policy="Background")
        wait_until(lambda: self.job_pods("gone") == [], what="pods deleted")

    def test_deleting_job_without_policy_orphans_its_pods(self):
        self.batch.create_namespaced_job(NS, job_body("orphans", 1, 1))
        pods = wait_until(lambda: self.job_pods("orphans") or None, what="a pod")
        self.batch.delete_namespaced_job("orphans", NS)  # batch/v1 default: orphan
        p = wait_until(lambda: (lambda p: not p.metadata.owner_references and p)(
            self.pod(pods[0].metadata.name)), what="ownerReference removed")
        self.assertIsNone(p.metadata.deletion_timestamp)

    def test_binding_subresource(self):
        self.core.create_namespaced_pod(NS, pod_body("manual", {"pool": "a"}, gates=[GATE]))
        code, body = self.s.request("POST", "/api/v1/namespaces/%s/pods/manual/binding" % NS,
                                    {"apiVersion": "v1", "kind": "Binding",
                                     "metadata": {"name": "manual"},
                                     "target": {"kind": "Node", "name": "node-a"}})
        self.assertEqual(code, 409, body)  # gated pods cannot be bound
        self.core.patch_namespaced_pod("manual", NS, {"spec": {"schedulingGates": [
            {"$patch": "delete", "name": GATE}]}})
        p = wait_until(lambda: (lambda p: p.spec.node_name and p)(self.pod("manual")),
                       what="bound")
        code, body = self.s.request("POST", "/api/v1/namespaces/%s/pods/manual/binding" % NS,
                                    {"target": {"kind": "Node", "name": "node-b"}})
        self.assertEqual(code, 409)
        self.assertIn("is already assigned to node \"%s\"" % p.spec.node_name, body["message"])

    @unittest.skipUnless(os.path.exists(KUBECTL), "no kubectl")
    def test_kubectl_wait_for_complete(self):
        env = dict(os.environ, HOME=self.s.tmp, KUBECONFIG=self.s.kubeconfig)
        self.batch.create_namespaced_job(NS, job_body("waited", 1, 2, runtime=0.2))
        p = subprocess.run([KUBECTL, "--kubeconfig", self.s.kubeconfig, "-n", NS,
                            "--cache-dir", os.path.join(self.s.tmp, "cache"), "wait",
                            "--for=condition=complete", "job/waited", "--timeout=20s"],
                           env=env, capture_output=True, text=True, timeout=40)
        self.assertEqual(p.returncode, 0, "stdout: %s\nstderr: %s" % (p.stdout, p.stderr))
        self.assertTrue(re.search(r"job.batch/waited condition met", p.stdout), p.stdout)
        self.assertEqual(self.job("waited").status.succeeded, 2)


@needs_python_client
class InProcessConflictTest(unittest.TestCase):
    """Controllers write through the store like clients: 409s reach them and are retried."""

    def test_job_status_conflicts_are_retried(self):
        with InProcessApiServer("--controllers", "job,scheduler,kubelet",
                                "--kubelet-start-delay", "0.05",
                                "--node", "n1:pool=a:cpu=2") as s:
            denied = []

            def conflict_three_times(req):
                if (req.res.kind == "Job" and req.subresource == "status"
                        and req.operation == "UPDATE" and len(denied) < 3):
                    denied.append(req.name)
                    raise errors.conflict(req.res, req.name)

            s.store.admission.append(conflict_three_times)
            events = []
            s.store.listeners.append(lambda ev: events.append((ev.rv, ev.res.kind, ev.type)))
            api = config.new_client_from_config(config_file=s.kubeconfig)
            try:
                batch = client.BatchV1Api(api)
                batch.create_namespaced_job("default", job_body("retry", 1, 1, runtime=0.1))

                def complete():
                    j = batch.read_namespaced_job("retry", "default")
                    return cond(j, "Complete") is not None and j
                job = wait_until(complete, 10, what="job complete despite 409s")
            finally:
                api.rest_client.pool_manager.clear()  # close its sockets to this process
                api.close()
            self.assertEqual(len(denied), 3)
            self.assertEqual(job.status.succeeded, 1)
            rvs = [rv for rv, _, _ in events]
            self.assertEqual(rvs, sorted(rvs))
            self.assertIn(("Pod", "ADDED"), [(k, t) for _, k, t in events])


if __name__ == "__main__":
    unittest.main()
