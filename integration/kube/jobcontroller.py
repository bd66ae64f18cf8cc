"""Simulated batch/v1 Job controller for the test API server.

``JobController`` (``--controllers job``) does, for each Job not managed by
another controller (``spec.managedBy`` unset or ``kubernetes.io/job-controller``),
what kube-controller-manager's Job controller does as far as a shim can see:
* not suspended: keeps min(parallelism, completions - succeeded) active pods
  (parallelism alone, and no new pods after a success, when completions is
  unset), made from ``spec.template``: generateName ``<job>-`` (``<job>-<i>-``
  for Indexed jobs), the template's labels plus ``batch.kubernetes.io/job-name``,
  ``job-name``, ``batch.kubernetes.io/controller-uid`` and ``controller-uid``,
  a controller ownerReference (blockOwnerDeletion) to the Job; Indexed pods
  also get the ``batch.kubernetes.io/job-completion-index`` annotation and
  label and ``spec.hostname``. Terminating pods do not count as active
  (podReplacementPolicy TerminatingOrFailed), unless the policy is Failed;
* scale-down (parallelism lowered): deletes the excess active pods in
  Kubernetes' order (``controller.ActivePods``: unscheduled, then pending,
  then not ready, then the most recently started first); Indexed jobs drop the
  highest indexes;
* status, through the status subresource with the read resourceVersion:
  ``active``, ``ready``, ``terminating``, ``succeeded``, ``failed``,
  ``completedIndexes`` (Indexed), ``uncountedTerminatedPods: {}``,
  ``startTime`` (set on the first sync while not suspended and reset on every
  resume), conditions ``Suspended`` (True/JobSuspended/"Job suspended",
  False/JobResumed/"Job resumed"), on success ``SuccessCriteriaMet`` then,
  once no pod is terminating, ``Complete`` (reason CompletionsReached) with
  ``completionTime``; on failure (failed > backoffLimit, default 6, or
  activeDeadlineSeconds exceeded) ``FailureTarget`` and the active pods
  deleted, then ``Failed`` (BackoffLimitExceeded / DeadlineExceeded);
* suspended: deletes the active pods and sets ``Suspended=True``; it clears
  ``startTime`` then only with the MutableSchedulingDirectivesForSuspendedJobs
  feature gate (on by default from v1.36, as in Kubernetes); before 1.36
  Kubernetes leaves it (Kueue clears it itself through ``/status``);
* a deleted Job, as the garbage collector would: with propagationPolicy
  Background or Foreground its pods are deleted; with Orphan, or with no
  policy at all (batch/v1's default, kept for compatibility: "child pods are
  preserved by default"), the pods stay and lose their ownerReference to it.
  Foreground is handled like Background (the Job does not wait for its pods).

Counting: a pod is counted once, from the events the controller saw (it keeps
the counted UIDs in memory instead of the ``batch.kubernetes.io/job-tracking``
finalizer): Succeeded -> succeeded; Failed, or deleted before finishing ->
failed, except pods this controller deleted itself (suspension, scale-down,
finished Job), which are not counted.
"""

import copy
import time

import controllers
from errors import ApiError
from kcommon import (MATCH_ALL, get_condition, now_rfc3339, parse_time, pod_ready,
                     pod_removal_order, pod_terminal, set_condition)
from resources import RES_BY_KEY

JOBS = RES_BY_KEY["jobs.batch"]
PODS = RES_BY_KEY["pods"]
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
OWN_MANAGER = "kubernetes.io/job-controller"



def _owner_uid(pod):
    for ref in pod["metadata"].get("ownerReferences") or []:
        if (ref.get("controller") and ref.get("kind") == "Job"
                and ref.get("apiVersion") == "batch/v1"):
            return ref.get("uid"), ref.get("name")
    return None, None


def _index(pod):
    v = (pod["metadata"].get("annotations") or {}).get(INDEX_KEY)
    if v is None:
        v = (pod["metadata"].get("labels") or {}).get(INDEX_KEY)
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def format_indexes(indexes):
    """Sorted ints -> "0-2,4" (the completedIndexes form)."""
    out, run = [], []
    for i in sorted(set(indexes)):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
        run = [i]
    if run:
        out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
    return ",".join(out)


def parse_indexes(text):
    out = set()
    for part in (text or "").split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        try:
            lo, hi = int(a), int(b or a)
        except ValueError:
            continue
        out.update(range(lo, hi + 1))
    return out


class JobController(controllers.Controller):
    """Creates, counts and deletes the pods of batch/v1 Jobs (see the module docstring)."""

    NAME = "job"
    KINDS = ("Job", "Pod")

    def __init__(self, app):
        self.finished_pods = {}  # job uid -> {pod uid: (phase, index)} seen terminal or gone
        self.counted = {}  # job uid -> set of pod uids already in status counts
        self.removed = set()  # pod uids this controller deleted
        self.delete_opts = {}  # job uid -> DeleteOptions of the request that deleted it
        super().__init__(app)

    def initial_keys(self):
        jobs, _ = self.store.list(JOBS, None, MATCH_ALL, MATCH_ALL)
        return [(j["metadata"]["namespace"], j["metadata"]["name"]) for j in jobs]

    def keys_for(self, ev):
        m = ev.obj["metadata"]
        if ev.res is JOBS:
            if ev.opts is not None:
                self.delete_opts[m["uid"]] = ev.opts
            if ev.type == "DELETED":
                self.counted.pop(m["uid"], None)
                self.finished_pods.pop(m["uid"], None)
                return [("gc", m["namespace"], m["name"], m["uid"])]
            return [(m["namespace"], m["name"])]
        uid, name = _owner_uid(ev.obj)
        if uid is None:
            return []
        phase = (ev.obj.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            self.finished_pods.setdefault(uid, {})[m["uid"]] = (phase, _index(ev.obj))
        elif ev.type == "DELETED":
            self.finished_pods.setdefault(uid, {})[m["uid"]] = ("Deleted", _index(ev.obj))
        return [(m["namespace"], name)]

    # ------------------------------------------------------------------ sync
    def sync(self, key):
        if key[0] == "gc":
            return self._collect(*key[1:])
        ns, name = key
        job = self.get(JOBS, ns, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        spec = job.get("spec") or {}
        if spec.get("managedBy") not in (None, OWN_MANAGER):
            return
        uid = job["metadata"]["uid"]
        status = copy.deepcopy(job.get("status") or {})
        conds = status.setdefault("conditions", [])
        now = now_rfc3339()
        pods = [p for p in self.store.list(PODS, ns, MATCH_ALL, MATCH_ALL)[0]
                if _owner_uid(p)[0] == uid]
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")

        # Count pods that finished (or vanished) since the last sync.
        counted = self.counted.setdefault(uid, set())
        newly = []
        done_idx = parse_indexes(status.get("completedIndexes"))
        for puid, (phase, idx) in list(self.finished_pods.get(uid, {}).items()):
            if puid in counted:
                continue
            counted.add(puid)
            newly.append(puid)
            if phase == "Succeeded":
                if indexed:
                    if idx is not None and idx not in done_idx:
                        done_idx.add(idx)
                else:
                    status["succeeded"] = status.get("succeeded", 0) + 1
            elif puid not in self.removed:
                status["failed"] = status.get("failed", 0) + 1
        if indexed:
            status["succeeded"] = len([i for i in done_idx if completions is None
                                       or i < completions])
            if done_idx:
                status["completedIndexes"] = format_indexes(done_idx)
        succeeded, failed = status.get("succeeded", 0), status.get("failed", 0)

        live = [p for p in pods if not pod_terminal(p)]
        active = [p for p in live if not p["metadata"].get("deletionTimestamp")]
        terminating = [p for p in live if p["metadata"].get("deletionTimestamp")]
        suspended = bool(spec.get("suspend"))
        finished = any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                       for c in conds)
        success_met = any(c.get("type") == "SuccessCriteriaMet" and c.get("status") == "True"
                          for c in conds)
        failure_target = next((c for c in conds if c.get("type") == "FailureTarget"
                               and c.get("status") == "True"), None)

        if not finished and not success_met and not failure_target:
            if completions is not None and succeeded >= completions:
                set_condition(conds, "SuccessCriteriaMet", "True", "CompletionsReached",
                              "Reached expected number of succeeded pods", now, True)
                success_met = True
            elif completions is None and succeeded > 0 and not active:
                set_condition(conds, "SuccessCriteriaMet", "True", "CompletionsReached",
                              "Reached expected number of succeeded pods", now, True)
                success_met = True
            elif failed > int(spec.get("backoffLimit", 6)):
                failure_target = set_condition(
                    conds, "FailureTarget", "True", "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit", now, True)[-1]
            elif self._past_deadline(job, status):
                failure_target = set_condition(
                    conds, "FailureTarget", "True", "DeadlineExceeded",
                    "Job was active longer than specified deadline", now, True)[-1]

        if finished or success_met or failure_target:
            for p in active:
                self._delete_pod(p)
            terminating += active
            active = []
            if not finished and not terminating:
                if success_met:
                    set_condition(conds, "Complete", "True", "CompletionsReached",
                                  "Reached expected number of succeeded pods", now, True)
                    status["completionTime"] = now
                else:
                    set_condition(conds, "Failed", "True", failure_target["reason"],
                                  failure_target["message"], now, True)
        elif suspended:
            for p in active:
                self._delete_pod(p)
            terminating += active
            active = []
            susp = get_condition({"status": status}, "Suspended")
            just_suspended = susp is None or susp.get("status") != "True"
            set_condition(conds, "Suspended", "True", "JobSuspended", "Job suspended", now, True)
            gates = self.store.features
            if just_suspended and gates.get("MutableSchedulingDirectivesForSuspendedJobs"):
                status.pop("startTime", None)  # 1.36: cleared when marked suspended
        else:
            susp = get_condition({"status": status}, "Suspended")
            if susp is not None and susp.get("status") == "True":
                set_condition(conds, "Suspended", "False", "JobResumed", "Job resumed", now,
                              True)
                status["startTime"] = now
            if not status.get("startTime"):
                status["startTime"] = now
            active = self._manage(job, active, terminating, done_idx, succeeded)
            deadline = spec.get("activeDeadlineSeconds")
            if deadline is not None and status.get("startTime"):
                left = parse_time(status["startTime"]) + int(deadline) - time.time()
                self.after(max(left, 0) + 0.05, key)

        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if pod_ready(p))
        status["terminating"] = len(terminating)
        status["uncountedTerminatedPods"] = {}
        for k in ("active", "succeeded", "failed"):  # omitempty fields
            if not status.get(k):
                status.pop(k, None)
        if not conds:
            status.pop("conditions")
        try:
            self.write_status(JOBS, job, status)
        except ApiError:
            counted.difference_update(newly)  # count them again against the fresh object
            raise

    @staticmethod
    def _past_deadline(job, status):
        deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
        if deadline is None or not status.get("startTime") or job["spec"].get("suspend"):
            return False
        return time.time() >= parse_time(status["startTime"]) + int(deadline)

    def _manage(self, job, active, terminating, done_idx, succeeded):
        """Create or delete pods so that the right number is active; returns the active list."""
        spec = job["spec"]
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism") if spec.get("parallelism") is not None else 1)
        busy = list(active)
        if spec.get("podReplacementPolicy") == "Failed":
            busy += terminating
        if completions is None:
            want = len(busy) if succeeded > 0 else parallelism
            want = min(want, parallelism)
        else:
            want = max(0, min(parallelism, completions - succeeded))
        if spec.get("completionMode") == "Indexed":
            return self._manage_indexed(job, active, busy, done_idx, want, completions)
        if len(active) > want:
            excess = sorted(active, key=pod_removal_order)[:len(active) - want]
            for p in excess:
                self._delete_pod(p)
            gone = {p["metadata"]["uid"] for p in excess}
            return [p for p in active if p["metadata"]["uid"] not in gone]
        for _ in range(want - len(busy)):
            active.append(self._create_pod(job, None))
        return active

    def _manage_indexed(self, job, active, busy, done_idx, want, completions):
        keep, extra = [], []
        seen = set()
        for p in sorted(active, key=lambda p: (_index(p) if _index(p) is not None else 1 << 30,
                                               p["metadata"].get("creationTimestamp", ""))):
            i = _index(p)
            if i is None or i in seen or i in done_idx or (completions is not None
                                                           and i >= completions):
                extra.append(p)
            else:
                seen.add(i)
                keep.append(p)
        if len(keep) > want:
            keep.sort(key=lambda p: _index(p))
            extra += keep[want:]
            keep = keep[:want]
        for p in extra:
            self._delete_pod(p)
        taken = {_index(p) for p in busy} | done_idx
        i = 0
        count = len(keep) + len([p for p in busy if p not in active])
        while count < want and (completions is None or i < completions):
            if i not in taken:
                keep.append(self._create_pod(job, i))
                count += 1
            i += 1
        return keep

    def _create_pod(self, job, index):
        spec, m = job["spec"], job["metadata"]
        tmpl = copy.deepcopy(spec.get("template") or {})
        tm = tmpl.get("metadata") or {}
        labels = dict(tm.get("labels") or {})
        labels.update({"batch.kubernetes.io/controller-uid": m["uid"],
                       "batch.kubernetes.io/job-name": m["name"],
                       "controller-uid": m["uid"], "job-name": m["name"]})
        annotations = dict(tm.get("annotations") or {})
        pspec = tmpl.get("spec") or {}
        prefix = m["name"] + "-"
        if index is not None:
            annotations[INDEX_KEY] = str(index)
            labels[INDEX_KEY] = str(index)
            prefix = "%s-%d-" % (m["name"], index)
            pspec.setdefault("hostname", "%s-%d" % (m["name"], index))
        meta = {"generateName": prefix, "labels": labels,
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": m["name"],
                                     "uid": m["uid"], "controller": True,
                                     "blockOwnerDeletion": True}]}
        if annotations:
            meta["annotations"] = annotations
        if tm.get("finalizers"):
            meta["finalizers"] = list(tm["finalizers"])
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pspec}
        return self.create(PODS, m["namespace"], body)

    def _delete_pod(self, pod):
        m = pod["metadata"]
        self.removed.add(m["uid"])
        if len(self.removed) > 100000:
            self.removed.clear()
        self.delete(PODS, m["namespace"], m["name"], m["uid"])

    def _collect(self, ns, name, uid):
        """Garbage collection of the pods of the deleted Job (batch/v1 defaults to Orphan)."""
        self.collect(uid, ns, [PODS], self.delete_opts.get(uid), default="Orphan")
        self.delete_opts.pop(uid, None)
