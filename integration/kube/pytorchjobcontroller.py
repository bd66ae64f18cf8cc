"""Simulated Kubeflow training operator (PyTorchJob) for the test API server.

``PyTorchJobController`` (``--controllers pytorchjob``) reconciles the
``pytorchjobs.kubeflow.org`` v1 objects (the CRD: ``--crd pytorchjob``, or the
training operator's own applied later) whose ``spec.runPolicy.managedBy`` is
unset or ``kubeflow.org/training-operator``:

* pods: per replica type of ``spec.pytorchReplicaSpecs`` (``Master``,
  ``Worker``, then any other, by name) and index ``i < replicas``, a pod
  ``<job>-<type in lower case>-<i>`` from the type's ``template``, with the
  template's labels plus ``training.kubeflow.org/job-name``,
  ``training.kubeflow.org/operator-name: pytorchjob-controller``,
  ``training.kubeflow.org/replica-type`` (lower case),
  ``training.kubeflow.org/replica-index`` (and
  ``training.kubeflow.org/job-role: master`` on the master), the template's
  annotations, a controller ownerReference (blockOwnerDeletion), the pod
  ``restartPolicy`` of the replica type (``ExitCode`` runs as ``Never``;
  default ``OnFailure``) and, with a Master, the ``MASTER_ADDR``,
  ``MASTER_PORT`` (23456), ``WORLD_SIZE``, ``RANK`` and ``PYTHONUNBUFFERED``
  variables in the ``pytorch`` container (else the first). A missing pod is
  created again (with the template as it is then); pods with an index >=
  replicas are deleted (scale-down, the highest index first);
* ``spec.runPolicy.suspend: true``: every pod is deleted, ``active`` is 0 and
  the conditions are ``Suspended=True`` and ``Running=False``
  (``PyTorchJobSuspended``, "PyTorchJob <name> is suspended."); resuming sets
  ``Suspended=False`` (``PyTorchJobResumed``, "PyTorchJob <name> is
  resumed."), a new ``startTime``, and the pods are made again;
* status (through ``/status``): ``replicaStatuses.<Type>`` with ``active``
  (Running pods), ``succeeded``, ``failed`` (zeros omitted) and ``selector``;
  ``startTime``, ``completionTime``; conditions (the training operator's
  JobCondition: a changed condition moves to the end, so the last one is the
  state) ``Created`` (``PyTorchJobCreated``), ``Running``
  (``PyTorchJobRunning``, once the Master runs, or a Worker without a Master),
  ``Succeeded`` (``PyTorchJobSucceeded``, once the Master succeeded, or every
  Worker without a Master; ``Running`` turns False) or ``Failed``
  (``PyTorchJobFailed``, "PyTorchJob <ns>/<name> has failed because <n>
  <Type> replica(s) failed."), ``Suspended``. A pod of an ``ExitCode``
  replica type that fails with a retryable code (>= 128) is deleted and made
  again instead. On finishing, ``runPolicy.cleanPodPolicy`` ``All`` deletes
  every pod, ``Running`` the unfinished ones, ``None`` (the default) none;
* a deleted PyTorchJob (the garbage collector's part): its pods are deleted
  (background propagation by default); ``Orphan`` removes their
  ownerReference instead.

Not simulated: the per-pod Services, ``elasticPolicy``, ``backoffLimit``,
``activeDeadlineSeconds``, ``ttlSecondsAfterFinished``, gang scheduling,
events.
"""

import copy

import controllers
from kcommon import MATCH_ALL, controller_ref, now_rfc3339, owner_reference, pod_terminal
from resources import RES_BY_KEY

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "pytorchjobs"
PODS = RES_BY_KEY["pods"]
OWN_MANAGER = "kubeflow.org/training-operator"
PREFIX = "training.kubeflow.org/"
JOB_NAME = PREFIX + "job-name"
OPERATOR_NAME = PREFIX + "operator-name"
OPERATOR = "pytorchjob-controller"
REPLICA_TYPE = PREFIX + "replica-type"
REPLICA_INDEX = PREFIX + "replica-index"
JOB_ROLE = PREFIX + "job-role"
ORDER = ("Master", "Worker")
MASTER_PORT = 23456


def _int(v, default=0):
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def replica_types(specs):
    """The replica types in the operator's order: Master, Worker, then the others by name."""
    return [t for t in ORDER if t in specs] + sorted(t for t in specs if t not in ORDER)


def replicas(rspec):
    r = (rspec or {}).get("replicas")
    return 1 if r is None else _int(r, 1)


def _phase(pod):
    return (pod.get("status") or {}).get("phase")


def _exit_code(pod):
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated") or {}
        if "exitCode" in term:
            return _int(term["exitCode"])
    return None


def _cond(status, ctype):
    return next((c for c in status.get("conditions") or [] if c.get("type") == ctype), None)


def _is_true(status, ctype):
    c = _cond(status, ctype)
    return c is not None and c.get("status") == "True"


def update_condition(status, ctype, value, reason, message, now):
    """The training operator's UpdateJobConditions: nothing after Failed; a changed condition is
    appended at the end (its lastTransitionTime kept when only the reason changed);
    Succeeded and Failed turn Running False."""
    if _is_true(status, "Failed"):
        return
    conds = status.setdefault("conditions", [])
    cur = _cond(status, ctype)
    if cur is not None and cur.get("status") == value and cur.get("reason") == reason:
        return
    new = {"type": ctype, "status": value, "reason": reason, "message": message,
           "lastUpdateTime": now, "lastTransitionTime": now}
    if cur is not None and cur.get("status") == value:
        new["lastTransitionTime"] = cur.get("lastTransitionTime", now)
    out = []
    for c in conds:
        if c.get("type") == ctype:
            continue
        if ctype in ("Succeeded", "Failed") and c.get("type") == "Running":
            c = dict(c, status="False")
        out.append(c)
    out.append(new)
    status["conditions"] = out


class PyTorchJobController(controllers.CustomOwnerController):
    """Pods of PyTorchJobs (see the module docstring)."""

    NAME = "pytorchjob"
    KINDS = ("Pod",)
    CUSTOM = ((GROUP, PLURAL),)
    # The module's constants, as the runtime reads them.
    OWNER_KIND, GROUP, VERSION, PLURAL, DEPENDENTS = "PyTorchJob", GROUP, VERSION, PLURAL, PODS

    # ------------------------------------------------------------------ sync
    def reconcile(self, res, job):
        name = job["metadata"]["name"]
        spec = job.get("spec") or {}
        run = spec.get("runPolicy") or {}
        if run.get("managedBy") not in (None, OWN_MANAGER):
            return
        specs = spec.get("pytorchReplicaSpecs") or {}
        status = copy.deepcopy(job.get("status") or {})
        now = now_rfc3339()
        if _cond(status, "Created") is None:
            update_condition(status, "Created", "True", "PyTorchJobCreated",
                             "PyTorchJob %s is created." % name, now)
        pods = self._pods(job)
        finished = _is_true(status, "Succeeded") or _is_true(status, "Failed")

        if run.get("suspend") and not finished:
            for p in pods:
                self._delete_pod(p)
            self._count(status, specs, pods, job)
            for st in (status.get("replicaStatuses") or {}).values():
                st.pop("active", None)
            msg = "PyTorchJob %s is suspended." % name
            if _is_true(status, "Running"):
                update_condition(status, "Running", "False", "PyTorchJobSuspended", msg, now)
            if not _is_true(status, "Suspended"):
                update_condition(status, "Suspended", "True", "PyTorchJobSuspended", msg, now)
            return self.write_status(res, job, status)

        if _is_true(status, "Suspended"):
            update_condition(status, "Suspended", "False", "PyTorchJobResumed",
                             "PyTorchJob %s is resumed." % name, now)
            status["startTime"] = now
        status.setdefault("startTime", now)

        if not finished:
            pods = self._manage(job, specs, pods)
        self._count(status, specs, pods, job)
        if not finished:
            self._update_state(job, specs, status, now)
            if _is_true(status, "Succeeded") or _is_true(status, "Failed"):
                status.setdefault("completionTime", now)
                self._clean_up(run, self._pods(job))
        self.write_status(res, job, status)

    def _pods(self, job):
        m = job["metadata"]
        return [p for p in self.store.list(PODS, m["namespace"], MATCH_ALL, MATCH_ALL)[0]
                if (controller_ref(p) or {}).get("uid") == m["uid"]]

    def _delete_pod(self, pod):
        m = pod["metadata"]
        if not m.get("deletionTimestamp"):
            self.delete(PODS, m["namespace"], m["name"], m["uid"])

    def _manage(self, job, specs, pods):
        by_name = {p["metadata"]["name"]: p for p in pods}
        changed = False
        for rtype in replica_types(specs):
            rspec = specs[rtype] or {}
            lower = rtype.lower()
            mine = [p for p in pods if (p["metadata"].get("labels") or {}).get(
                REPLICA_TYPE) == lower]
            for p in sorted(mine, key=lambda p: -_int(
                    (p["metadata"].get("labels") or {}).get(REPLICA_INDEX))):
                idx = _int((p["metadata"].get("labels") or {}).get(REPLICA_INDEX))
                if idx >= replicas(rspec):
                    self._delete_pod(p)  # scaled down
                    changed = True
                elif rspec.get("restartPolicy") == "ExitCode" and _phase(p) == "Failed" \
                        and (_exit_code(p) or 0) >= 128:
                    self._delete_pod(p)  # a retryable exit code: made again
                    changed = True
            for i in range(replicas(rspec)):
                pname = "%s-%s-%d" % (job["metadata"]["name"], lower, i)
                if pname not in by_name:
                    self._create_pod(job, specs, rtype, i)
                    changed = True
        return self._pods(job) if changed else pods

    def _create_pod(self, job, specs, rtype, index):
        m = job["metadata"]
        rspec = specs[rtype] or {}
        tmpl = copy.deepcopy(rspec.get("template") or {})
        tm = tmpl.get("metadata") or {}
        lower = rtype.lower()
        labels = dict(tm.get("labels") or {})
        labels.update({JOB_NAME: m["name"], OPERATOR_NAME: OPERATOR, REPLICA_TYPE: lower,
                       REPLICA_INDEX: str(index)})
        if rtype == "Master":
            labels[JOB_ROLE] = "master"
        meta = {"name": "%s-%s-%d" % (m["name"], lower, index), "labels": labels,
                "ownerReferences": [owner_reference(job)]}
        if tm.get("annotations"):
            meta["annotations"] = dict(tm["annotations"])
        pspec = tmpl.get("spec") or {}
        policy = rspec.get("restartPolicy") or "OnFailure"
        pspec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        if "Master" in specs:
            containers = pspec.get("containers") or []
            target = next((c for c in containers if c.get("name") == "pytorch"),
                          containers[0] if containers else None)
            if target is not None:
                world = sum(replicas(specs[t]) for t in specs)
                rank = index if rtype == "Master" else index + replicas(specs["Master"])
                env = [e for e in target.get("env") or [] if e.get("name") not in (
                    "MASTER_PORT", "MASTER_ADDR", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED")]
                env += [{"name": "MASTER_PORT", "value": str(MASTER_PORT)},
                        {"name": "MASTER_ADDR", "value": "%s-master-0" % m["name"]},
                        {"name": "WORLD_SIZE", "value": str(world)},
                        {"name": "RANK", "value": str(rank)},
                        {"name": "PYTHONUNBUFFERED", "value": "1"}]
                target["env"] = env
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pspec}
        return self.create(PODS, m["namespace"], body)

    def _count(self, status, specs, pods, job):
        out = {}
        for rtype in replica_types(specs):
            lower = rtype.lower()
            mine = [p for p in pods if (p["metadata"].get("labels") or {}).get(
                REPLICA_TYPE) == lower]
            st = {"active": sum(1 for p in mine if _phase(p) == "Running"
                                and not p["metadata"].get("deletionTimestamp")),
                  "succeeded": sum(1 for p in mine if _phase(p) == "Succeeded"),
                  "failed": sum(1 for p in mine if _phase(p) == "Failed"
                                and not ((specs[rtype] or {}).get("restartPolicy") == "ExitCode"
                                         and (_exit_code(p) or 0) >= 128))}
            st = {k: v for k, v in st.items() if v}
            st["selector"] = "%s=%s,%s=%s,%s=%s" % (JOB_NAME, job["metadata"]["name"],
                                                    OPERATOR_NAME, OPERATOR, REPLICA_TYPE, lower)
            out[rtype] = st
        status["replicaStatuses"] = out

    def _update_state(self, job, specs, status, now):
        """The PyTorchJob UpdateJobStatus: Running, Succeeded, Failed."""
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        has_master = "Master" in specs
        for rtype in replica_types(specs):
            st = status["replicaStatuses"][rtype]
            expected = replicas(specs[rtype]) - st.get("succeeded", 0)
            running, failed = st.get("active", 0), st.get("failed", 0)
            if (has_master and rtype == "Master") or (not has_master and rtype == "Worker"):
                if expected <= 0:
                    update_condition(status, "Succeeded", "True", "PyTorchJobSucceeded",
                                     "PyTorchJob %s/%s successfully completed." % (ns, name),
                                     now)
                elif running > 0:
                    update_condition(status, "Running", "True", "PyTorchJobRunning",
                                     "PyTorchJob %s/%s is running." % (ns, name), now)
            if failed > 0 and not _is_true(status, "Succeeded"):
                update_condition(status, "Failed", "True", "PyTorchJobFailed",
                                 "PyTorchJob %s/%s has failed because %d %s replica(s) failed."
                                 % (ns, name, failed, rtype), now)

    def _clean_up(self, run, pods):
        policy = run.get("cleanPodPolicy") or "None"
        for p in pods:
            if policy == "All" or (policy == "Running" and not pod_terminal(p)):
                self._delete_pod(p)
