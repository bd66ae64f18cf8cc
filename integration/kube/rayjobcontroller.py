"""Simulated KubeRay operator (the RayJob controller) for the test API server.

``RayJobController`` (``--controllers rayjob``) reconciles the ``rayjobs.ray.io``
v1 objects (the CRD: ``--crd rayjob``, or KubeRay's own applied later) whose
``spec.managedBy`` is unset or ``ray.io/kuberay-operator``, as KubeRay's
``rayjob_controller.go`` does, through ``status.jobDeploymentStatus``:

* ``""`` (new): the ``ray.io/rayjob-finalizer`` finalizer is added; an invalid
  spec (no ``rayClusterSpec`` and no ``clusterSelector``, a head template
  without containers, an unknown ``submissionMode``) gives
  ``ValidationFailed``; otherwise ``jobId`` (``spec.jobId`` or
  ``<rayjob>-<5 random characters>``), ``rayClusterName``
  (``<rayjob>-raycluster-<5 random characters>``, or the
  ``clusterSelector``'s ``ray.io/cluster``), ``jobStatus: NEW``,
  ``startTime`` and ``Initializing``;
* ``Initializing``: ``spec.suspend`` -> ``Suspending``; past
  ``activeDeadlineSeconds`` -> ``Failed`` (``DeadlineExceeded``); otherwise the
  RayCluster is created (name ``status.rayClusterName``; the RayJob's labels
  plus ``ray.io/originated-from-cr-name`` and ``ray.io/originated-from-crd:
  RayJob``, its annotations; a controller ownerReference; spec =
  ``spec.rayClusterSpec``; the RayCluster controller, ``--controllers
  raycluster``, makes its pods). Once the cluster's ``status.state`` is
  ``ready``: ``dashboardURL``, then in ``K8sJobMode`` (the CRD's default) the
  submitter Job (below), and ``Running`` (``InteractiveMode``: ``Waiting``
  until ``spec.jobId`` is set);
* ``Running``: ``spec.suspend`` -> ``Suspending``; a submitter Job with
  ``Failed=True`` -> ``Failed`` (``jobStatus: FAILED`` and reason
  ``AppFailed`` when the Ray job failed, i.e. a submitter pod failed, else
  reason ``SubmissionFailed`` with "Job submission has failed. Reason: ...
  Message: ..."); otherwise the Ray job's status (``jobStatus``,
  ``message``, ``rayJobInfo``) is read from the simulated Ray job (below), and
  once it is terminal (and, in ``K8sJobMode``, the submitter Job finished)
  ``Complete`` (``SUCCEEDED``, or ``STOPPED``) or ``Failed`` (``FAILED``,
  reason ``AppFailed``), with ``endTime``; ``status.rayClusterStatus`` mirrors
  the RayCluster's status throughout;
* ``Suspending`` (and ``Retrying``): the RayCluster and the submitter Job
  (background propagation) are deleted; once both are gone the cluster and
  job fields are reset, ``jobStatus: NEW`` and ``Suspended`` (``Retrying``:
  new); ``Suspended`` with ``suspend: false`` -> new again (a new cluster name
  and job id);
* ``Complete`` / ``Failed``: with ``shutdownAfterJobFinishes`` the RayCluster
  is deleted ``ttlSecondsAfterFinished`` seconds after ``endTime`` (the
  submitter Job stays). A ``Failed`` RayJob with ``backoffLimit`` left (not
  for DeadlineExceeded) is ``Retrying``. ``succeeded`` and ``failed`` count
  the outcomes;
* a deleted RayJob: the finalizer is removed; then (the garbage collector's
  part) its RayCluster and submitter Job are deleted (custom resources
  default to background propagation; ``Orphan`` removes their ownerReference).

The submitter Job (``K8sJobMode``): named as the RayJob, labels
``ray.io/originated-from-cr-name``, ``ray.io/originated-from-crd: RayJob``,
``app.kubernetes.io/created-by: kuberay-operator``, a controller
ownerReference, ``backoffLimit`` from ``submitterConfig`` (default 2), template
``spec.submitterPodTemplate`` or KubeRay's default: one container
``ray-job-submitter`` with the head's image (``rayproject/ray`` without one),
requests cpu 500m / memory 200Mi, limits cpu 1 / memory 1Gi, restartPolicy
Never. The first container gets the ``ray job submit`` command (unless it has
one) and the ``PYTHONUNBUFFERED``, ``RAY_DASHBOARD_ADDRESS`` and
``RAY_JOB_SUBMISSION_ID`` variables. The Job controller (``--controllers
job``) runs it. In ``SidecarMode`` the same ``ray-job-submitter`` container
(address ``127.0.0.1:8265``) is appended to the head template of the
RayCluster instead; ``HTTPMode`` and ``InteractiveMode`` have neither.

The simulated Ray job: in ``K8sJobMode`` it is the submitter's run:
``PENDING`` until a submitter pod is ready, ``RUNNING`` while one runs,
``SUCCEEDED`` once one succeeded, ``FAILED`` once one failed ("Job entrypoint
command failed with exit code N"). The RayJob's ``fixture.admitd.io/``
annotations (``runtime-seconds``, ``exit-code``, ``unready``) are copied onto
the submitter's pod template unless it sets them, so a test makes the Ray job
finish by annotating the RayJob. In the other modes (no submitter Job) the
Ray job is ``RUNNING`` from ``Running`` on, for ``fixture.admitd.io/
runtime-seconds`` (absent: until suspended or deleted), then ends with
``fixture.admitd.io/exit-code`` (0: ``SUCCEEDED``).

The submitter (its Job and container, and the Ray job read off its run) is
built in raysubmitter.py; this module holds the controller: its events, the
states above, the RayCluster it makes and the garbage collection.

Not simulated: the head Service, the dashboard and its HTTP API,
``HTTPMode`` job submission retries, ``deletionStrategy``, ``schedule``,
events and KubeRay's metrics.
"""

import copy
import time

import controllers
from errors import ApiError
from kcommon import (MATCH_ALL, controller_ref, get_condition, now_rfc3339, owner_reference,
                     parse_time, random_suffix, to_int)
from raysubmitter import job_finished, submitter_container, submitter_job, submitter_run
from resources import RES_BY_KEY

GROUP, VERSION = "ray.io", "v1"
JOBS = RES_BY_KEY["jobs.batch"]
PODS = RES_BY_KEY["pods"]
OWN_MANAGER = "ray.io/kuberay-operator"
FINALIZER = "ray.io/rayjob-finalizer"
RUNTIME_ANNOTATION = "fixture.admitd.io/runtime-seconds"
EXIT_CODE_ANNOTATION = "fixture.admitd.io/exit-code"
TERMINAL_JOB_STATUSES = ("SUCCEEDED", "FAILED", "STOPPED")
MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
CLUSTER_SELECTOR_KEY = "ray.io/cluster"
RESET_FIELDS = ("rayClusterName", "dashboardURL", "jobId", "message", "reason")


def validation_error(spec):
    """What KubeRay's spec validation refuses (a few of its rules), or None."""
    mode = spec.get("submissionMode") or "K8sJobMode"
    if mode not in MODES:
        return "invalid submissionMode %s" % mode
    if not spec.get("rayClusterSpec") and not spec.get("clusterSelector"):
        return "one of RayClusterTemplateSpec or clusterSelector must be set"
    if spec.get("clusterSelector"):
        if CLUSTER_SELECTOR_KEY not in spec["clusterSelector"]:
            return "failed to get cluster name in ClusterSelector map, the default key is %s" \
                % CLUSTER_SELECTOR_KEY
        return None
    head = (((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template")
            or {}).get("spec") or {}
    if not head.get("containers"):
        return "headGroupSpec should have at least one container"
    return None


class RayJobController(controllers.Controller):
    """Runs RayJobs through RayClusters and submitter Jobs (see the module docstring)."""

    NAME = "rayjob"
    KINDS = ("Job",)
    CUSTOM = ((GROUP, "rayjobs"), (GROUP, "rayclusters"))

    def __init__(self, app):
        self.delete_opts = {}  # RayJob uid -> DeleteOptions of the request that deleted it
        self.started = {}  # (RayJob uid, job id) -> when its simulated Ray job started
        super().__init__(app)

    def _rayjobs(self):
        return self.custom(GROUP, VERSION, "rayjobs")

    def _rayclusters(self):
        return self.custom(GROUP, VERSION, "rayclusters")

    def initial_keys(self):
        res = self._rayjobs()
        if res is None:
            return []
        return [(o["metadata"]["namespace"], o["metadata"]["name"])
                for o in self.store.list(res, None, MATCH_ALL, MATCH_ALL)[0]]

    def keys_for(self, ev):
        m = ev.obj["metadata"]
        if ev.res.crd is not None and ev.res.plural == "rayjobs":
            if ev.opts is not None:
                self.delete_opts[m["uid"]] = ev.opts
            if ev.type == "DELETED":
                return [("gc", m["namespace"], m["name"], m["uid"])]
            return [(m["namespace"], m["name"])]
        ref = controller_ref(ev.obj)
        if ref and ref.get("kind") == "RayJob" and \
                str(ref.get("apiVersion", "")).startswith(GROUP + "/"):
            return [(m["namespace"], ref.get("name"))]
        return []

    # ------------------------------------------------------------------ sync
    def sync(self, key):
        if key[0] == "gc":
            _, ns, _, uid = key
            for k in [k for k in self.started if k[0] == uid]:
                del self.started[k]
            deps = [r for r in (self._rayclusters(), JOBS) if r is not None]
            self.collect(uid, ns, deps, self.delete_opts.pop(uid, None))
            return
        ns, name = key
        res = self._rayjobs()
        if res is None:
            return
        rj = self.get(res, ns, name)
        if rj is None:
            return
        spec = rj.get("spec") or {}
        if spec.get("managedBy") not in (None, OWN_MANAGER):
            return
        m = rj["metadata"]
        if m.get("deletionTimestamp"):
            if FINALIZER in (m.get("finalizers") or []):
                body = copy.deepcopy(rj)
                body["metadata"]["finalizers"] = [f for f in m["finalizers"] if f != FINALIZER]
                self.store.update(res, ns, name, body)
            return
        status = copy.deepcopy(rj.get("status") or {})
        state = status.get("jobDeploymentStatus") or ""
        handler = {
            "": self._new, "Initializing": self._initializing, "Waiting": self._waiting,
            "Running": self._running, "Suspending": self._suspending,
            "Retrying": self._suspending, "Suspended": self._suspended,
            "Complete": self._finished, "Failed": self._finished,
        }.get(state)
        if handler is None:
            return  # ValidationFailed, or a state this simulation does not know
        rj, status = handler(res, rj, status)
        if status is None:
            return
        new_state = status.get("jobDeploymentStatus") or ""
        if new_state != state or status.get("jobStatus") != (rj.get("status") or {}).get(
                "jobStatus"):
            self._count_outcome(rj, status, state)
        if not new_state:
            status.pop("jobDeploymentStatus", None)
        self.write_status(res, rj, status)  # its event brings the next state

    def _count_outcome(self, rj, status, old_state):
        """checkBackoffLimitAndUpdateStatusIfNeeded, at a transition; endTime."""
        new_state = status.get("jobDeploymentStatus")
        failed, succeeded = to_int(status.get("failed")), to_int(status.get("succeeded"))
        if new_state != old_state and new_state in ("Complete", "Failed"):
            status["endTime"] = now_rfc3339()
            if new_state == "Failed":
                failed += 1
            elif status.get("jobStatus") == "SUCCEEDED":
                succeeded += 1
        status["failed"], status["succeeded"] = failed, succeeded
        limit = (rj.get("spec") or {}).get("backoffLimit")
        if new_state == "Failed" and limit is not None and failed < to_int(limit) + 1 \
                and status.get("reason") != "DeadlineExceeded":
            status["jobDeploymentStatus"] = "Retrying"

    # ------------------------------------------------------------ the states
    def _new(self, res, rj, status):
        m, spec = rj["metadata"], rj.get("spec") or {}
        if FINALIZER not in (m.get("finalizers") or []):
            body = copy.deepcopy(rj)
            body["metadata"]["finalizers"] = list(m.get("finalizers") or []) + [FINALIZER]
            rj = copy.deepcopy(self.store.update(res, m["namespace"], m["name"], body))
        err = validation_error(spec)
        if err:
            status.update(jobDeploymentStatus="ValidationFailed", reason="ValidationFailed",
                          message=err)
            return rj, status
        mode = spec.get("submissionMode") or "K8sJobMode"
        if mode != "InteractiveMode" and not status.get("jobId"):
            status["jobId"] = spec.get("jobId") or "%s-%s" % (m["name"], random_suffix())
        if not status.get("rayClusterName"):
            selector = spec.get("clusterSelector") or {}
            status["rayClusterName"] = selector.get(CLUSTER_SELECTOR_KEY) or \
                "%s-raycluster-%s" % (m["name"], random_suffix())
        status.setdefault("jobStatus", "NEW")
        if not status["jobStatus"]:
            status["jobStatus"] = "NEW"
        status["jobDeploymentStatus"] = "Initializing"
        status["startTime"] = now_rfc3339()
        return rj, status

    def _suspend_or_deadline(self, rj, status):
        """updateStatusToSuspendingIfNeeded, checkActiveDeadlineAndUpdateStatusIfNeeded."""
        spec = rj.get("spec") or {}
        if spec.get("suspend"):
            status["jobDeploymentStatus"] = "Suspending"
            return True
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None and status.get("startTime"):
            end = parse_time(status["startTime"]) + to_int(deadline)
            if time.time() >= end:
                status.update(jobDeploymentStatus="Failed", reason="DeadlineExceeded",
                              message="The RayJob has passed the activeDeadlineSeconds. "
                                      "StartTime: %s. ActiveDeadlineSeconds: %d"
                              % (status["startTime"], to_int(deadline)))
                return True
            self.after(end - time.time() + 0.05,
                       (rj["metadata"]["namespace"], rj["metadata"]["name"]))
        return False

    def _initializing(self, res, rj, status):
        if self._suspend_or_deadline(rj, status):
            return rj, status
        rc = self._cluster(rj, status, create=True)
        if rc is None:
            return rj, status  # clusterSelector naming a cluster that does not exist (yet)
        if rc.get("status"):
            status["rayClusterStatus"] = copy.deepcopy(rc["status"])
        if not status.get("dashboardURL"):
            if (rc.get("status") or {}).get("state") != "ready":
                return rj, status  # waits for the cluster (its events bring us back)
            status["dashboardURL"] = "%s-head-svc.%s.svc.cluster.local:8265" % (
                rc["metadata"]["name"], rc["metadata"]["namespace"])
        mode = (rj.get("spec") or {}).get("submissionMode") or "K8sJobMode"
        if mode == "InteractiveMode":
            status["jobDeploymentStatus"] = "Waiting"
            return rj, status
        if mode == "K8sJobMode" and self._submitter(rj) is None:
            self._create_submitter(rj, status, rc)
        status["jobDeploymentStatus"] = "Running"
        return rj, status

    def _waiting(self, res, rj, status):
        job_id = (rj.get("spec") or {}).get("jobId")
        if job_id:
            status.update(jobId=job_id, jobDeploymentStatus="Running")
        return rj, status

    def _running(self, res, rj, status):
        if self._suspend_or_deadline(rj, status):
            return rj, status
        spec = rj.get("spec") or {}
        mode = spec.get("submissionMode") or "K8sJobMode"
        job = None
        if mode == "K8sJobMode":
            job = self._submitter(rj)
            if job is None:
                self.after(1.0, (rj["metadata"]["namespace"], rj["metadata"]["name"]))
                return rj, status
            failed = get_condition(job, "Failed")
            if failed is not None and failed.get("status") == "True":
                status["jobDeploymentStatus"] = "Failed"
                info = self._ray_job(rj, status, job)
                if info["status"] == "FAILED":  # what the dashboard said before the Job failed
                    status.update(jobStatus="FAILED", reason="AppFailed",
                                  message=info["message"])
                else:
                    status["reason"] = "SubmissionFailed"
                    status["message"] = "Job submission has failed. Reason: %s. Message: %s" % (
                        failed.get("reason", ""), failed.get("message", ""))
                return rj, status
        rc = self._cluster(rj, status, create=False)
        if rc is not None and rc.get("status"):
            status["rayClusterStatus"] = copy.deepcopy(rc["status"])
        info = self._ray_job(rj, status, job)
        job_status, message = info["status"], info.get("message", "")
        terminal = job_status in TERMINAL_JOB_STATUSES
        if mode == "K8sJobMode":
            terminal = terminal and job_finished(job)
        state, reason = "Running", ""
        if terminal:
            state = "Complete"
            if job_status == "FAILED":
                state, reason = "Failed", "AppFailed"
        status.update(jobStatus=job_status, jobDeploymentStatus=state, message=message,
                      reason=reason)
        ray_info = {}
        for k in ("startTime", "endTime"):
            if info.get(k):
                ray_info[k] = info[k]
        status["rayJobInfo"] = ray_info
        for k in ("message", "reason"):
            if not status[k]:
                del status[k]
        return rj, status

    def _suspending(self, res, rj, status):
        cluster_gone = True
        if not (rj.get("spec") or {}).get("clusterSelector"):
            rc = self._cluster(rj, status, create=False)
            if rc is not None:
                cluster_gone = False
                if not rc["metadata"].get("deletionTimestamp"):
                    m = rc["metadata"]
                    self.delete(self._rayclusters(), m["namespace"], m["name"], m["uid"])
        job_gone = True
        job = self._submitter(rj)
        if job is not None:
            job_gone = False
            if not job["metadata"].get("deletionTimestamp"):
                m = job["metadata"]
                self.delete(JOBS, m["namespace"], m["name"], m["uid"], propagation="Background")
        if not (cluster_gone and job_gone):
            return rj, None  # the deletions' events bring us back
        status.pop("rayClusterStatus", None)
        for k in RESET_FIELDS:
            status.pop(k, None)
        status.pop("rayJobInfo", None)
        status["jobStatus"] = "NEW"
        status["jobDeploymentStatus"] = "Suspended" if status.get(
            "jobDeploymentStatus") == "Suspending" else ""
        return rj, status

    def _suspended(self, res, rj, status):
        if (rj.get("spec") or {}).get("suspend"):
            return rj, None
        status["jobStatus"] = "NEW"
        status["jobDeploymentStatus"] = ""
        return rj, status

    def _finished(self, res, rj, status):
        spec = rj.get("spec") or {}
        if spec.get("shutdownAfterJobFinishes") and not spec.get("clusterSelector"):
            end = parse_time(status.get("endTime") or now_rfc3339())
            due = end + to_int(spec.get("ttlSecondsAfterFinished"))
            if time.time() < due:
                self.after(due - time.time() + 0.05,
                           (rj["metadata"]["namespace"], rj["metadata"]["name"]))
            else:
                rc = self._cluster(rj, status, create=False)
                if rc is not None and not rc["metadata"].get("deletionTimestamp"):
                    m = rc["metadata"]
                    self.delete(self._rayclusters(), m["namespace"], m["name"], m["uid"])
        return rj, None

    # ------------------------------------------------------------- children
    def _cluster(self, rj, status, create):
        """The RayCluster named in the status (created when ``create``), or None."""
        res = self._rayclusters()
        name = status.get("rayClusterName")
        if res is None or not name:
            if create:
                raise ApiError(404, "NotFound", "the RayCluster resource is not served "
                               "(rayclusters.ray.io: --crd raycluster)", {})
            return None
        m = rj["metadata"]
        rc = self.get(res, m["namespace"], name)
        if rc is not None or not create or (rj.get("spec") or {}).get("clusterSelector"):
            return rc
        labels = dict(m.get("labels") or {})
        labels.update({"ray.io/originated-from-cr-name": m["name"],
                       "ray.io/originated-from-crd": "RayJob"})
        meta = {"name": name, "labels": labels, "ownerReferences": [owner_reference(rj)]}
        if m.get("annotations"):
            meta["annotations"] = dict(m["annotations"])
        spec = rj.get("spec") or {}
        cluster_spec = copy.deepcopy(spec.get("rayClusterSpec") or {})
        if spec.get("submissionMode") == "SidecarMode":
            head = cluster_spec.setdefault("headGroupSpec", {}).setdefault(
                "template", {}).setdefault("spec", {})
            containers = head.setdefault("containers", [])
            image = (containers[0].get("image") if containers else None) or "rayproject/ray"
            containers.append(submitter_container(image, "127.0.0.1:8265", status, spec))
        body = {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "RayCluster",
                "metadata": meta, "spec": cluster_spec}
        return copy.deepcopy(self.store.create(res, m["namespace"], body))

    def _submitter(self, rj):
        m = rj["metadata"]
        job = self.get(JOBS, m["namespace"], m["name"])
        ref = controller_ref(job) if job is not None else None
        if ref is None or ref.get("uid") != m["uid"]:
            return None
        return job

    def _create_submitter(self, rj, status, rc):
        body = submitter_job(rj, status, rc)
        try:
            return self.store.create(JOBS, rj["metadata"]["namespace"], body)
        except ApiError as e:
            if e.code == 409 and e.reason == "AlreadyExists":
                return None  # someone else's Job has the name: KubeRay leaves it alone
            raise

    # ---------------------------------------------------------- the Ray job
    def _ray_job(self, rj, status, job):
        """What the dashboard would say about the Ray job: status, message, times."""
        old = status.get("rayJobInfo") or {}
        if job is not None:  # K8sJobMode: the submitter's run
            pods = [p for p in self.store.list(PODS, job["metadata"]["namespace"], MATCH_ALL,
                                               MATCH_ALL)[0]
                    if (controller_ref(p) or {}).get("uid") == job["metadata"]["uid"]]
            return submitter_run(job, pods, old)
        # No submitter Job: the Ray job starts with Running and lasts runtime-seconds.
        info = dict(old, status="RUNNING", startTime=old.get("startTime") or now_rfc3339())
        started = self.started.setdefault((rj["metadata"]["uid"], status.get("jobId")),
                                          time.time())
        ann = rj["metadata"].get("annotations") or {}
        if ann.get(RUNTIME_ANNOTATION) is None:
            return info
        try:
            end = started + float(ann[RUNTIME_ANNOTATION])
        except ValueError:
            return info
        if time.time() < end:
            self.after(end - time.time() + 0.05,
                       (rj["metadata"]["namespace"], rj["metadata"]["name"]))
            return info
        code = to_int(ann.get(EXIT_CODE_ANNOTATION), 1) if ann.get(EXIT_CODE_ANNOTATION) else 0
        if code == 0:
            return dict(info, status="SUCCEEDED", message="Job finished successfully.",
                        endTime=old.get("endTime") or now_rfc3339())
        return dict(info, status="FAILED",
                    message="Job entrypoint command failed with exit code %d" % code,
                    endTime=old.get("endTime") or now_rfc3339())
