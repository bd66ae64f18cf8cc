"""The simulated JobSet and PyTorchJob controllers, over the raw API.

Each class starts a server with the CRD (``--crd``) and the controllers the
kind needs (``--controllers jobset,job,...``): the objects they make (names,
labels, owners, specs), status and conditions as the real controllers write
them, suspension and resumption, scaling, failures, a foreign ``managedBy``,
and deletion. The helpers here are shared with test_rayjob_controller.py
(RayJob); kubectl and python3-kubernetes are in test_workload_clients.py. Run
with /usr/bin/python3.
"""

import unittest
import urllib.parse

from harness import ServerTest, wait_until

MERGE = "application/merge-patch+json"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets"
PYTORCHJOBS = "/apis/kubeflow.org/v1/namespaces/%s/pytorchjobs"
JOBS = "/apis/batch/v1/namespaces/%s/jobs"
PODS = "/api/v1/namespaces/%s/pods"
RUNTIME = "fixture.admitd.io/runtime-seconds"
EXIT_CODE = "fixture.admitd.io/exit-code"
FAST = ("--kubelet-start-delay", "0.05", "--kubelet-grace-cap", "0.2")
NS = "default"


def cond(obj, ctype):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def container(name="main", image="busybox:1.36", cpu="100m"):
    return {"name": name, "image": image, "resources": {"requests": {"cpu": cpu}}}


def pod_template(annotations=None, labels=None, **spec):
    meta = {}
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "spec": dict({"containers": [container()]}, **spec)}


class Api:
    """Raw-API helpers over ``self.s``."""

    def create(self, path, body, code=201):
        got, out = self.s.request("POST", path % NS, body)
        self.assertEqual(got, code, out)
        return out

    def get(self, path, name):
        code, out = self.s.request("GET", path % NS + "/" + name)
        return out if code == 200 else None

    def patch(self, path, name, body):
        code, out = self.s.request("PATCH", path % NS + "/" + name, body, MERGE)
        self.assertEqual(code, 200, out)
        return out

    def items(self, path, selector=None):
        q = "?labelSelector=" + urllib.parse.quote(selector) if selector else ""
        return sorted(self.s.request("GET", path % NS + q)[1]["items"],
                      key=lambda o: o["metadata"]["name"])

    def wait_for(self, path, name, fn, what, timeout=10):
        return wait_until(lambda: (lambda o: o is not None and fn(o) and o)(
            self.get(path, name)), timeout, what="%s %s" % (name, what))


# ----------------------------------------------------------------------- JobSet

def jobset(name, suspend=None, workers=2, runtime="0.3", exit_code=None, **spec):
    ann = {RUNTIME: runtime}
    if exit_code is not None:
        ann[EXIT_CODE] = str(exit_code)
    rjobs = [{"name": "leader", "replicas": 1, "template": {"spec": {
                 "parallelism": 1, "completions": 1, "backoffLimit": 0,
                 "template": pod_template(ann, restartPolicy="Never")}}},
             {"name": "workers", "replicas": workers, "template": {"spec": {
                 "parallelism": 2, "completions": 2, "backoffLimit": 0,
                 "template": pod_template(ann, restartPolicy="Never")}}}]
    body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name}, "spec": dict({"replicatedJobs": rjobs}, **spec)}
    if suspend is not None:
        body["spec"]["suspend"] = suspend
    return body


class JobSetTest(Api, ServerTest, unittest.TestCase):
    SERVER_ARGS = ("--crd", "jobset", "--controllers", "jobset,job,scheduler,kubelet",
                   "--node", "na:pool=a:cpu=64", "--node", "nb:pool=b:cpu=64", *FAST)

    def child_jobs(self, name):
        return self.items(JOBS, "jobset.sigs.k8s.io/jobset-name=" + name)

    def rjob_status(self, js):
        return {r["name"]: {k: v for k, v in r.items() if k != "name"}
                for r in (js.get("status") or {}).get("replicatedJobsStatus") or []}

    def test_child_jobs_run_to_completion(self):
        js = self.create(JOBSETS, jobset("train"))
        self.assertEqual(js["spec"]["successPolicy"], {"operator": "All"})
        self.assertEqual(js["spec"]["replicatedJobs"][1]["template"]["spec"]["completionMode"],
                         "Indexed")
        jobs = wait_until(lambda: (lambda j: len(j) == 3 and j)(self.child_jobs("train")), 5,
                          what="3 child Jobs")
        self.assertEqual([j["metadata"]["name"] for j in jobs],
                         ["train-leader-0", "train-workers-0", "train-workers-1"])
        j = jobs[2]
        marks = {"jobset.sigs.k8s.io/jobset-name": "train",
                 "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                 "jobset.sigs.k8s.io/replicatedjob-replicas": "2",
                 "jobset.sigs.k8s.io/job-index": "1",
                 "jobset.sigs.k8s.io/job-global-index": "2",
                 "jobset.sigs.k8s.io/restart-attempt": "0"}
        for meta in (j["metadata"], j["spec"]["template"]["metadata"]):
            for where in ("labels", "annotations"):
                self.assertEqual({k: meta[where][k] for k in marks}, marks)
            self.assertRegex(meta["annotations"]["jobset.sigs.k8s.io/job-key"], r"^[0-9a-f]{40}$")
        self.assertEqual(j["metadata"]["ownerReferences"], [{
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "train",
            "uid": js["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}])
        self.assertEqual((j["spec"]["parallelism"], j["spec"]["completionMode"],
                          j["spec"]["suspend"]), (2, "Indexed", False))
        js = self.wait_for(JOBSETS, "train", lambda o: cond(o, "Completed"), "Completed")
        c = cond(js, "Completed")
        self.assertEqual((c["status"], c["reason"], c["message"]),
                         ("True", "AllJobsCompleted", "jobset completed successfully"))
        self.assertEqual((js["status"]["terminalState"], js["status"]["restarts"]),
                         ("Completed", 0))
        self.assertEqual(self.rjob_status(js), {
            "leader": {"ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0},
            "workers": {"ready": 0, "succeeded": 2, "failed": 0, "active": 0, "suspended": 0}})
        self.assertEqual(len(self.items(PODS, "jobset.sigs.k8s.io/jobset-name=train")), 5)

    def test_suspend_resume_with_scheduling_directives(self):
        self.create(JOBSETS, jobset("queued", suspend=True, runtime="30"))
        js = self.wait_for(JOBSETS, "queued", lambda o: self.rjob_status(o).get(
            "workers", {}).get("suspended") == 2, "child Jobs suspended")
        c = cond(js, "Suspended")
        self.assertEqual((c["status"], c["reason"], c["message"]),
                         ("True", "SuspendedJobs", "jobset is suspended"))
        self.assertTrue(all(j["spec"]["suspend"] for j in self.child_jobs("queued")))
        self.assertEqual(self.items(PODS, "jobset.sigs.k8s.io/jobset-name=queued"), [])
        # What Kueue's start does: the flavor's directives in the templates, then resume.
        rjobs = js["spec"]["replicatedJobs"]
        for r in rjobs:
            t = r["template"]["spec"]["template"]
            t["spec"]["nodeSelector"] = {"pool": "b"}
            t["metadata"].setdefault("labels", {})["kueue.x-k8s.io/podset"] = r["name"]
        self.patch(JOBSETS, "queued", {"spec": {"suspend": False, "replicatedJobs": rjobs}})
        js = self.wait_for(JOBSETS, "queued", lambda o: self.rjob_status(o).get(
            "workers", {}).get("active") == 2 and self.rjob_status(o)["leader"]["ready"] == 1,
            "child Jobs running")
        c = cond(js, "Suspended")
        self.assertEqual((c["status"], c["reason"], c["message"]),
                         ("False", "ResumeJobs", "jobset is resumed"))
        for j in self.child_jobs("queued"):
            t = j["spec"]["template"]
            self.assertEqual(t["spec"]["nodeSelector"], {"pool": "b"})
            self.assertEqual(t["metadata"]["labels"]["kueue.x-k8s.io/podset"],
                             j["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"])
        pods = self.items(PODS, "jobset.sigs.k8s.io/jobset-name=queued")
        self.assertEqual(len(pods), 5)
        wait_until(lambda: {p["spec"].get("nodeName") for p in self.items(
            PODS, "jobset.sigs.k8s.io/jobset-name=queued")} == {"nb"}, 5, what="on pool b")
        # Suspending again suspends the Jobs, whose pods go.
        self.patch(JOBSETS, "queued", {"spec": {"suspend": True}})
        self.wait_for(JOBSETS, "queued", lambda o: self.rjob_status(o)["workers"]["suspended"]
                      == 2 and self.rjob_status(o)["workers"]["active"] == 0, "suspended again")
        wait_until(lambda: not self.items(PODS, "jobset.sigs.k8s.io/jobset-name=queued"), 5,
                   what="pods deleted")

    def test_scaling_a_replicated_job(self):
        self.create(JOBSETS, jobset("elastic", workers=3, runtime="30"))
        wait_until(lambda: len(self.child_jobs("elastic")) == 4, 5, what="4 Jobs")
        js = self.get(JOBSETS, "elastic")
        rjobs = js["spec"]["replicatedJobs"]
        rjobs[1]["replicas"] = 1
        self.patch(JOBSETS, "elastic", {"spec": {"replicatedJobs": rjobs}})
        wait_until(lambda: [j["metadata"]["name"] for j in self.child_jobs("elastic")] == [
            "elastic-leader-0", "elastic-workers-0"], 5, what="workers-1 and -2 deleted")
        rjobs[1]["replicas"] = 2
        self.patch(JOBSETS, "elastic", {"spec": {"replicatedJobs": rjobs}})
        wait_until(lambda: "elastic-workers-1" in [j["metadata"]["name"]
                                                   for j in self.child_jobs("elastic")], 5,
                   what="workers-1 again")

    def test_failure_after_the_restarts(self):
        self.create(JOBSETS, jobset("flaky", workers=1, runtime="0.1", exit_code=1,
                                    failurePolicy={"maxRestarts": 1}))
        js = self.wait_for(JOBSETS, "flaky", lambda o: cond(o, "Failed"), "Failed")
        c = cond(js, "Failed")
        self.assertEqual((c["status"], c["reason"], c["message"]),
                         ("True", "FailedJobs", "jobset failed due to one or more job failures"))
        self.assertEqual((js["status"]["restarts"], js["status"]["terminalState"]), (1, "Failed"))
        self.assertEqual({j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]
                          for j in self.child_jobs("flaky")}, {"1"})

    def test_foreign_manager_and_deletion(self):
        self.create(JOBSETS, jobset("remote", managedBy="kueue.x-k8s.io/multikueue"))
        self.create(JOBSETS, jobset("local", runtime="30"))
        wait_until(lambda: len(self.child_jobs("local")) == 3, 5, what="local Jobs")
        self.assertEqual(self.child_jobs("remote"), [])
        self.assertNotIn("status", self.get(JOBSETS, "remote"))
        wait_until(lambda: len(self.items(PODS, "jobset.sigs.k8s.io/jobset-name=local")) == 5, 5,
                   what="pods")
        self.s.request("DELETE", JOBSETS % NS + "/local")
        wait_until(lambda: not self.child_jobs("local") and not self.items(
            PODS, "jobset.sigs.k8s.io/jobset-name=local"), 10, what="Jobs and pods deleted")


# ------------------------------------------------------------------- PyTorchJob

def pytorchjob(name, master=True, workers=2, master_ann=None, worker_ann=None, policy=None,
               **spec):
    specs = {}
    if master:
        specs["Master"] = {"replicas": 1, "template": pod_template(
            master_ann, containers=[container("pytorch", "pytorch/pytorch:2")])}
    if workers:
        specs["Worker"] = {"replicas": workers, "template": pod_template(
            worker_ann, containers=[container("pytorch", "pytorch/pytorch:2")])}
    if policy:
        for s in specs.values():
            s["restartPolicy"] = policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": dict({"pytorchReplicaSpecs": specs}, **spec)}


def active(job, rtype):
    return (((job.get("status") or {}).get("replicaStatuses") or {}).get(rtype) or {}).get(
        "active", 0)


class PyTorchJobTest(Api, ServerTest, unittest.TestCase):
    SERVER_ARGS = ("--crd", "pytorchjob",
                   "--controllers", "pytorchjob,scheduler,kubelet",
                   "--node", "na:pool=a:cpu=64", "--node", "nb:pool=b:cpu=64", *FAST)

    def pods(self, name):
        return self.items(PODS, "training.kubeflow.org/job-name=" + name)

    def live(self, name):
        return [p["metadata"]["name"] for p in self.pods(name)
                if not p["metadata"].get("deletionTimestamp")]

    def test_pods_status_and_success(self):
        job = self.create(PYTORCHJOBS, pytorchjob("mnist", master_ann={RUNTIME: "0.4"}))
        self.assertEqual(job["spec"]["runPolicy"], {"suspend": False, "cleanPodPolicy": "None"})
        self.assertEqual(job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"],
                         "OnFailure")
        running = self.wait_for(PYTORCHJOBS, "mnist", lambda o: (cond(o, "Running") or {}).get(
            "status") == "True", "Running")
        self.assertEqual([c["type"] for c in running["status"]["conditions"]],
                         ["Created", "Running"])
        self.assertEqual(cond(running, "Created")["message"], "PyTorchJob mnist is created.")
        pods = self.pods("mnist")
        self.assertEqual([p["metadata"]["name"] for p in pods],
                         ["mnist-master-0", "mnist-worker-0", "mnist-worker-1"])
        master = pods[0]
        self.assertEqual(master["metadata"]["labels"], {
            "training.kubeflow.org/job-name": "mnist",
            "training.kubeflow.org/operator-name": "pytorchjob-controller",
            "training.kubeflow.org/replica-type": "master",
            "training.kubeflow.org/replica-index": "0",
            "training.kubeflow.org/job-role": "master"})
        self.assertEqual(pods[2]["metadata"]["labels"]["training.kubeflow.org/replica-index"], "1")
        self.assertEqual(master["metadata"]["ownerReferences"], [{
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "mnist",
            "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}])
        self.assertEqual(master["spec"]["restartPolicy"], "OnFailure")
        env = {e["name"]: e["value"] for e in pods[2]["spec"]["containers"][0]["env"]}
        self.assertEqual(env, {"MASTER_PORT": "23456", "MASTER_ADDR": "mnist-master-0",
                               "WORLD_SIZE": "3", "RANK": "2", "PYTHONUNBUFFERED": "1"})
        done = self.wait_for(PYTORCHJOBS, "mnist", lambda o: cond(o, "Succeeded"), "Succeeded")
        st = done["status"]
        self.assertEqual([(c["type"], c["status"]) for c in st["conditions"]], [
            ("Created", "True"), ("Running", "False"), ("Succeeded", "True")])
        c = cond(done, "Succeeded")
        self.assertEqual((c["reason"], c["message"]), ("PyTorchJobSucceeded",
                                                       "PyTorchJob default/mnist successfully "
                                                       "completed."))
        self.assertEqual(st["replicaStatuses"]["Master"], {
            "succeeded": 1, "selector": "training.kubeflow.org/job-name=mnist,"
            "training.kubeflow.org/operator-name=pytorchjob-controller,"
            "training.kubeflow.org/replica-type=master"})
        self.assertEqual(st["replicaStatuses"]["Worker"]["active"], 2)
        self.assertTrue(st["startTime"] and st["completionTime"])

    def test_suspend_resume_and_scale(self):
        self.create(PYTORCHJOBS, pytorchjob("resnet"))
        self.wait_for(PYTORCHJOBS, "resnet", lambda o: active(o, "Worker") == 2,
                      "2 active workers")
        job = self.patch(PYTORCHJOBS, "resnet", {"spec": {"runPolicy": {"suspend": True}}})
        job = self.wait_for(PYTORCHJOBS, "resnet", lambda o: (cond(o, "Suspended") or {}).get(
            "status") == "True", "Suspended")
        self.assertEqual(job["status"]["conditions"][-1]["type"], "Suspended")
        c = cond(job, "Running")
        self.assertEqual((c["status"], c["reason"], c["message"]),
                         ("False", "PyTorchJobSuspended", "PyTorchJob resnet is suspended."))
        self.assertNotIn("active", job["status"]["replicaStatuses"]["Worker"])
        wait_until(lambda: not self.pods("resnet"), 5, what="pods deleted")
        # Resume with a changed template and three workers.
        specs = job["spec"]["pytorchReplicaSpecs"]
        specs["Worker"]["replicas"] = 3
        specs["Worker"]["template"]["spec"]["nodeSelector"] = {"pool": "b"}
        self.patch(PYTORCHJOBS, "resnet", {"spec": {"runPolicy": {"suspend": False},
                                                    "pytorchReplicaSpecs": specs}})
        job = self.wait_for(PYTORCHJOBS, "resnet", lambda o: active(o, "Worker") == 3,
                            "3 active workers")
        c = cond(job, "Suspended")
        self.assertEqual((c["status"], c["reason"], c["message"]),
                         ("False", "PyTorchJobResumed", "PyTorchJob resnet is resumed."))
        workers = [p for p in self.pods("resnet") if "-worker-" in p["metadata"]["name"]]
        self.assertEqual({p["spec"]["nodeName"] for p in workers}, {"nb"})
        # Scale down: the highest indexes go.
        specs["Worker"]["replicas"] = 1
        self.patch(PYTORCHJOBS, "resnet", {"spec": {"pytorchReplicaSpecs": specs}})
        wait_until(lambda: self.live("resnet") == ["resnet-master-0", "resnet-worker-0"], 5,
                   what="workers 1 and 2 deleted")

    def test_worker_only_success_and_failure(self):
        self.create(PYTORCHJOBS, pytorchjob("workers", master=False, worker_ann={RUNTIME: "0.2"}))
        job = self.wait_for(PYTORCHJOBS, "workers", lambda o: cond(o, "Succeeded"), "Succeeded")
        self.assertEqual(job["status"]["replicaStatuses"]["Worker"]["succeeded"], 2)
        self.assertNotIn("env", self.pods("workers")[0]["spec"]["containers"][0])
        self.create(PYTORCHJOBS, pytorchjob("broken", master=False, workers=1, policy="Never",
                                            worker_ann={RUNTIME: "0.1", EXIT_CODE: "2"}))
        job = self.wait_for(PYTORCHJOBS, "broken", lambda o: cond(o, "Failed"), "Failed")
        c = cond(job, "Failed")
        self.assertEqual((c["reason"], c["message"]), (
            "PyTorchJobFailed", "PyTorchJob default/broken has failed because 1 Worker "
            "replica(s) failed."))
        self.assertEqual(job["status"]["conditions"][-1]["type"], "Failed")

    def test_foreign_manager_and_deletion(self):
        self.create(PYTORCHJOBS, pytorchjob("remote", runPolicy={
            "managedBy": "kueue.x-k8s.io/multikueue"}))
        self.create(PYTORCHJOBS, pytorchjob("local"))
        wait_until(lambda: len(self.pods("local")) == 3, 5, what="pods")
        self.assertEqual(self.pods("remote"), [])
        self.assertNotIn("status", self.get(PYTORCHJOBS, "remote"))
        self.s.request("DELETE", PYTORCHJOBS % NS + "/local")
        wait_until(lambda: not self.pods("local"), 10, what="pods deleted")


if __name__ == "__main__":
    unittest.main()
