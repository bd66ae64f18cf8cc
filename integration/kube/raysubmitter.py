"""The submitter of a RayJob, for the simulated KubeRay operator (rayjobcontroller.py).

KubeRay submits a RayJob's Ray job with ``ray job submit``, from a Kubernetes
Job (``K8sJobMode``) or a sidecar of the head (``SidecarMode``). This module
builds them: ``submitter_container`` (KubeRay's default container, with its
command, variables and resources) and ``submitter_job`` (the Job, from
``spec.submitterPodTemplate`` or the default template, with the RayJob's
``fixture.admitd.io/`` annotations copied onto its pod template). It also
reads the simulated Ray job off the submitter's run (``submitter_run``:
``PENDING``, ``RUNNING``, ``SUCCEEDED`` or ``FAILED`` from the Job and its
pods) and tells whether the Job has finished (``job_finished``). What they
look like is described in rayjobcontroller.py's docstring.
"""

import copy

from kcommon import get_condition, now_rfc3339, owner_reference, to_int

SUBMITTER = "ray-job-submitter"
FIXTURE_PREFIX = "fixture.admitd.io/"


def _true(obj, ctype):
    c = get_condition(obj, ctype)
    return c is not None and c.get("status") == "True"


def job_finished(job):
    return _true(job, "Complete") or _true(job, "Failed")


def submitter_container(image, address, status, spec):
    """KubeRay's default submitter: ``ray job submit`` to ``address``, its resources."""
    return {"name": SUBMITTER, "image": image,
            "command": ["/bin/bash", "-ce", "--"],
            "args": ["ray job submit --address http://%s --submission-id %s -- %s" % (
                address, status.get("jobId", ""), spec.get("entrypoint", ""))],
            "env": [{"name": "PYTHONUNBUFFERED", "value": "1"},
                    {"name": "RAY_DASHBOARD_ADDRESS", "value": address},
                    {"name": "RAY_JOB_SUBMISSION_ID", "value": status.get("jobId", "")}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                          "requests": {"cpu": "500m", "memory": "200Mi"}}}


def submitter_job(rj, status, rc):
    """The body of the submitter Job of the RayJob ``rj`` (``K8sJobMode``), whose RayCluster
    is ``rc``."""
    m, spec = rj["metadata"], rj.get("spec") or {}
    if spec.get("submitterPodTemplate"):
        tmpl = copy.deepcopy(spec["submitterPodTemplate"])
    else:
        head = (((rc.get("spec") or {}).get("headGroupSpec") or {}).get("template")
                or {}).get("spec") or {}
        image = ((head.get("containers") or [{}])[0]).get("image") or "rayproject/ray"
        tmpl = {"metadata": {}, "spec": {"restartPolicy": "Never", "containers": [
            submitter_container(image, status.get("dashboardURL", ""), status, spec)]}}
    tm = tmpl.setdefault("metadata", {})
    for k, v in (m.get("annotations") or {}).items():
        if k.startswith(FIXTURE_PREFIX):
            tm.setdefault("annotations", {}).setdefault(k, v)
    containers = tmpl.setdefault("spec", {}).setdefault("containers", [])
    if containers and spec.get("submitterPodTemplate"):
        c = containers[0]  # a user's template: its first container submits
        default = submitter_container("", status.get("dashboardURL", ""), status, spec)
        if not c.get("command"):
            c["command"], c["args"] = default["command"], default["args"]
        c.setdefault("env", []).extend(default["env"])
    limit = (spec.get("submitterConfig") or {}).get("backoffLimit")
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": m["name"], "labels": {
                "ray.io/originated-from-cr-name": m["name"],
                "ray.io/originated-from-crd": "RayJob",
                "app.kubernetes.io/created-by": "kuberay-operator"},
                "ownerReferences": [owner_reference(rj)]},
            "spec": {"backoffLimit": 2 if limit is None else to_int(limit, 2),
                     "template": tmpl}}


def submitter_run(job, pods, old):
    """What the dashboard would say of the Ray job that the submitter Job ``job`` runs (its
    pods: ``pods``): ``old``, the RayJob's ``rayJobInfo``, with a new status, message, times."""
    st = job.get("status") or {}
    if to_int(st.get("succeeded")) > 0 or _true(job, "Complete"):
        return dict(old, status="SUCCEEDED", message="Job finished successfully.",
                    endTime=old.get("endTime") or now_rfc3339())
    failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
    if to_int(st.get("failed")) > 0 or failed:
        code = 1
        for p in failed:
            for cs in (p.get("status") or {}).get("containerStatuses") or []:
                term = (cs.get("state") or {}).get("terminated") or {}
                if term.get("exitCode"):
                    code = term["exitCode"]
        return dict(old, status="FAILED",
                    message="Job entrypoint command failed with exit code %d" % code,
                    endTime=old.get("endTime") or now_rfc3339())
    if to_int(st.get("ready")) > 0 or any(
            (p.get("status") or {}).get("phase") == "Running" for p in pods):
        return dict(old, status="RUNNING", startTime=old.get("startTime")
                    or now_rfc3339())
    return dict(old, status="PENDING")
