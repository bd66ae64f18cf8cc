"""Simulated JobSet controller (jobset.x-k8s.io/v1alpha2) for the test API server.

``JobSetController`` (``--controllers jobset``) reconciles the
``jobsets.jobset.x-k8s.io`` v1alpha2 objects (the CRD: ``--crd jobset``, or
JobSet's own applied later) whose ``spec.managedBy`` is unset or
``jobset.sigs.k8s.io/jobset-controller``, as JobSet's controller does:

* child Jobs: for each replicated job ``r`` and index ``k < replicas``, a
  batch/v1 Job ``<jobset>-<r>-<k>`` (spec = the replicated job's
  ``template.spec``, Indexed and pod restartPolicy OnFailure unless set), with
  the labels and annotations ``jobset.sigs.k8s.io/jobset-name``,
  ``jobset.sigs.k8s.io/replicatedjob-name``,
  ``jobset.sigs.k8s.io/replicatedjob-replicas``,
  ``jobset.sigs.k8s.io/job-index``, ``jobset.sigs.k8s.io/job-global-index``,
  ``jobset.sigs.k8s.io/restart-attempt`` and ``jobset.sigs.k8s.io/job-key``
  on the Job and on its pod template, and a controller ownerReference
  (blockOwnerDeletion). The Job controller (``--controllers job``) runs them.
  Jobs are created suspended while the JobSet is;
* scaling a replicated job's ``replicas``: missing Jobs are created, Jobs with
  an index >= replicas deleted (the highest first; background propagation);
* ``spec.suspend: true``: every unfinished child Job is suspended (the Job
  controller deletes its pods), condition ``Suspended=True``
  (``SuspendedJobs``, "jobset is suspended"); resume: each suspended child
  Job gets the scheduling directives of its replicated job's pod template
  (nodeSelector, tolerations, schedulingGates, labels and annotations merged
  in) -- its ``status.startTime`` is cleared first, as the Job update rules
  require -- and is unsuspended in the same write; ``Suspended=False``
  (``ResumeJobs``, "jobset is resumed");
* status (through ``/status``): ``replicatedJobsStatus`` (per replicated
  job: ``name``, ``ready`` -- Jobs whose ready plus succeeded pods reach
  min(parallelism, completions) --, ``succeeded``, ``failed``, ``active`` --
  Jobs with a pending or running pod --, ``suspended``), ``restarts``,
  ``terminalState``; conditions ``Completed=True`` (``AllJobsCompleted``,
  "jobset completed successfully") when the successPolicy holds (operator
  All: every Job of the target replicated jobs, all by default, succeeded;
  Any: one did) and ``Failed=True`` (``FailedJobs``, "jobset failed due to one
  or more job failures") when a child Job failed and
  ``failurePolicy.maxRestarts`` (default 0) is used up; with restarts left,
  every child Job is deleted and made again with the next
  ``restart-attempt``. A finished JobSet is left as it is;
* a deleted JobSet (the garbage collector's part): its Jobs are deleted, with
  their pods (custom resources default to background propagation);
  ``Orphan`` removes their ownerReference instead.

Not simulated: the headless Service and pod ``subdomain`` of
``network.enableDNSHostnames``, startup policy ``InOrder``, failure policy
rules, ``coordinator``, ``ttlSecondsAfterFinished``, exclusive placement,
events.
"""

import copy
import hashlib

import controllers
from kcommon import MATCH_ALL, controller_ref, get_condition, now_rfc3339, owner_reference
from resources import RES_BY_KEY

GROUP, VERSION, PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"
JOBS = RES_BY_KEY["jobs.batch"]
OWN_MANAGER = "jobset.sigs.k8s.io/jobset-controller"
PREFIX = "jobset.sigs.k8s.io/"
JOBSET_NAME = PREFIX + "jobset-name"
REPLICATED_JOB = PREFIX + "replicatedjob-name"
REPLICAS = PREFIX + "replicatedjob-replicas"
JOB_INDEX = PREFIX + "job-index"
GLOBAL_INDEX = PREFIX + "job-global-index"
RESTART_ATTEMPT = PREFIX + "restart-attempt"
JOB_KEY = PREFIX + "job-key"


def _int(v, default=0):
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def _true(obj, ctype):
    c = get_condition(obj, ctype)
    return c is not None and c.get("status") == "True"


def _labels(obj):
    return (obj.get("metadata") or {}).get("labels") or {}


def _set_condition(conds, ctype, status, reason, message, now):
    """meta.SetStatusCondition (metav1.Condition)."""
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            c.update(status=status, reason=reason, message=message)
            return
    conds.append({"type": ctype, "status": status, "lastTransitionTime": now,
                  "reason": reason, "message": message})


def expected_pods(job):
    """min(parallelism, completions) of a Job spec (each defaulting to 1)."""
    spec = job.get("spec") or {}
    parallelism = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    return parallelism if completions is None else min(parallelism, _int(completions))


class JobSetController(controllers.CustomOwnerController):
    """Child Jobs of JobSets (see the module docstring)."""

    NAME = "jobset"
    KINDS = ("Job",)
    CUSTOM = ((GROUP, PLURAL),)
    # The module's constants, as the runtime reads them.
    OWNER_KIND, GROUP, VERSION, PLURAL, DEPENDENTS = "JobSet", GROUP, VERSION, PLURAL, JOBS

    # ------------------------------------------------------------------ sync
    def reconcile(self, res, js):
        spec = js.get("spec") or {}
        if spec.get("managedBy") not in (None, OWN_MANAGER):
            return
        status = copy.deepcopy(js.get("status") or {})
        conds = status.setdefault("conditions", [])
        now = now_rfc3339()
        jobs = self._jobs(js)
        finished = _true({"status": status}, "Completed") or _true({"status": status}, "Failed")
        if not finished:
            jobs = self._reconcile(js, status, conds, jobs, now)
        status["replicatedJobsStatus"] = self._replicated_status(js, jobs)
        status.setdefault("restarts", 0)
        if not conds:
            del status["conditions"]
        self.write_status(res, js, status)

    def _jobs(self, js):
        m = js["metadata"]
        return [j for j in self.store.list(JOBS, m["namespace"], MATCH_ALL, MATCH_ALL)[0]
                if (controller_ref(j) or {}).get("uid") == m["uid"]]

    def _reconcile(self, js, status, conds, jobs, now):
        spec = js.get("spec") or {}
        ns = js["metadata"]["namespace"]
        attempt = _int(status.get("restarts"))
        suspended = bool(spec.get("suspend"))
        desired = {}
        global_index = 0
        for rjob in spec.get("replicatedJobs") or []:
            for k in range(_int(rjob.get("replicas"), 1)):
                desired[self._job_name(js, rjob, k)] = (rjob, k, global_index)
                global_index += 1

        # Failure and success first (on the Jobs of the current attempt).
        current = [j for j in jobs if _labels(j).get(RESTART_ATTEMPT) == str(attempt)]
        if any(_true(j, "Failed") for j in current):
            policy = spec.get("failurePolicy") or {}
            if attempt < _int(policy.get("maxRestarts")):
                status["restarts"] = attempt + 1
                status["restartsCountTowardsMax"] = _int(
                    status.get("restartsCountTowardsMax")) + 1
                for j in jobs:
                    self._delete_job(j)
                return []
            _set_condition(conds, "Failed", "True", "FailedJobs",
                           "jobset failed due to one or more job failures", now)
            status["terminalState"] = "Failed"
            return jobs
        if self._succeeded(js, current):
            _set_condition(conds, "Completed", "True", "AllJobsCompleted",
                           "jobset completed successfully", now)
            status["terminalState"] = "Completed"
            return jobs

        keep = []
        for j in sorted(jobs, key=lambda j: -_int(_labels(j).get(JOB_INDEX))):
            name = j["metadata"]["name"]
            if name not in desired or _labels(j).get(RESTART_ATTEMPT) != str(attempt):
                self._delete_job(j)  # scaled down, removed, or of an earlier attempt
            else:
                keep.append(j)
        existing = {j["metadata"]["name"] for j in jobs}
        for name, (rjob, k, gi) in desired.items():
            if name not in existing:
                keep.append(self.store.create(JOBS, ns, self._job_body(js, rjob, k, gi, attempt)))

        out = []
        by_rjob = {r.get("name"): r for r in spec.get("replicatedJobs") or []}
        for j in keep:
            if _true(j, "Complete") or _true(j, "Failed"):
                out.append(j)
                continue
            job_suspended = bool((j.get("spec") or {}).get("suspend"))
            if suspended and not job_suspended:
                j = self._set_suspend(j, True, None)
            elif not suspended and job_suspended:
                j = self._set_suspend(j, False, by_rjob.get(_labels(j).get(REPLICATED_JOB)))
            out.append(j)

        cond = get_condition({"status": status}, "Suspended")
        if suspended:
            _set_condition(conds, "Suspended", "True", "SuspendedJobs", "jobset is suspended",
                           now)
        elif cond is not None and cond.get("status") == "True":
            _set_condition(conds, "Suspended", "False", "ResumeJobs", "jobset is resumed", now)
        return out

    def _succeeded(self, js, jobs):
        spec = js.get("spec") or {}
        policy = spec.get("successPolicy") or {}
        targets = policy.get("targetReplicatedJobs") or [
            r.get("name") for r in spec.get("replicatedJobs") or []]
        wanted = {r.get("name"): _int(r.get("replicas"), 1)
                  for r in spec.get("replicatedJobs") or [] if r.get("name") in targets}
        done = [j for j in jobs if _labels(j).get(REPLICATED_JOB) in wanted
                and _true(j, "Complete")]
        if (policy.get("operator") or "All") == "Any":
            return bool(done)
        return bool(wanted) and len(done) >= sum(wanted.values())

    @staticmethod
    def _job_name(js, rjob, k):
        return "%s-%s-%d" % (js["metadata"]["name"], rjob.get("name", ""), k)

    def _job_body(self, js, rjob, k, global_index, attempt):
        m = js["metadata"]
        name = self._job_name(js, rjob, k)
        spec = copy.deepcopy((rjob.get("template") or {}).get("spec") or {})
        spec.setdefault("completionMode", "Indexed")
        pod = spec.setdefault("template", {})
        pod.setdefault("spec", {}).setdefault("restartPolicy", "OnFailure")
        job_key = hashlib.sha1(("%s/%s" % (m["namespace"], name)).encode()).hexdigest()
        marks = {JOBSET_NAME: m["name"], REPLICATED_JOB: rjob.get("name", ""),
                 REPLICAS: str(_int(rjob.get("replicas"), 1)), JOB_INDEX: str(k),
                 GLOBAL_INDEX: str(global_index), RESTART_ATTEMPT: str(attempt),
                 JOB_KEY: job_key}
        tmeta = (rjob.get("template") or {}).get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        labels.update(marks)
        annotations = dict(tmeta.get("annotations") or {})
        annotations.update(marks)
        pm = pod.setdefault("metadata", {})
        pm["labels"] = dict(pm.get("labels") or {}, **marks)
        pm["annotations"] = dict(pm.get("annotations") or {}, **marks)
        spec["suspend"] = bool((js.get("spec") or {}).get("suspend"))
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name, "labels": labels, "annotations": annotations,
                             "ownerReferences": [owner_reference(js)]},
                "spec": spec}

    def _set_suspend(self, job, suspend, rjob):
        """Suspend a child Job, or resume it with its replicated job's scheduling directives."""
        m = job["metadata"]
        if not suspend and (job.get("status") or {}).get("startTime"):
            # The template may only change while the Job has no startTime.
            st = copy.deepcopy(job["status"])
            del st["startTime"]
            job = self.write_status(JOBS, job, st)
        body = copy.deepcopy(job)
        body["spec"]["suspend"] = suspend
        if not suspend and rjob is not None:
            src = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
            src_meta, src_spec = src.get("metadata") or {}, src.get("spec") or {}
            pod = body["spec"].setdefault("template", {})
            pm, ps = pod.setdefault("metadata", {}), pod.setdefault("spec", {})
            for k in ("labels", "annotations"):
                if src_meta.get(k):
                    pm[k] = dict(pm.get(k) or {}, **src_meta[k])
            for k in ("nodeSelector", "tolerations", "schedulingGates"):
                if src_spec.get(k):
                    ps[k] = copy.deepcopy(src_spec[k])
                else:
                    ps.pop(k, None)
        return self.store.update(JOBS, m["namespace"], m["name"], body)

    def _delete_job(self, job):
        m = job["metadata"]
        if not m.get("deletionTimestamp"):
            self.delete(JOBS, m["namespace"], m["name"], m["uid"], propagation="Background")

    def _replicated_status(self, js, jobs):
        out = []
        for rjob in (js.get("spec") or {}).get("replicatedJobs") or []:
            mine = [j for j in jobs if _labels(j).get(REPLICATED_JOB) == rjob.get("name")
                    and _labels(j).get(JOBSET_NAME) == js["metadata"]["name"]]
            entry = {"name": rjob.get("name", ""), "ready": 0, "succeeded": 0, "failed": 0,
                     "active": 0, "suspended": 0}
            for j in mine:
                st = j.get("status") or {}
                if _true(j, "Complete"):
                    entry["succeeded"] += 1
                elif _true(j, "Failed"):
                    entry["failed"] += 1
                elif (j.get("spec") or {}).get("suspend"):
                    entry["suspended"] += 1
                else:
                    if _int(st.get("active")) > 0 and not j["metadata"].get("deletionTimestamp"):
                        entry["active"] += 1
                    if _int(st.get("ready")) + _int(st.get("succeeded")) >= expected_pods(j):
                        entry["ready"] += 1
            out.append(entry)
        return out

