"""The status of a RayCluster, for the simulated KubeRay operator (rayclustercontroller.py).

``calculate_status`` computes what KubeRay's ``calculateStatus`` writes: the
worker counts, the desired resources (quantities summed as Kubernetes'
``Quantity.Add`` does), ``state``, the head's pod, and the conditions
(``HeadPodReady``, ``RayClusterProvisioned``, ``RayClusterSuspending``,
``RayClusterSuspended``); ``inconsistent`` tells whether it must be written.
``suspend_status`` and ``condition_true`` read those conditions for the
controller too (is the cluster suspending or suspended, was it provisioned).
"""

import copy
from fractions import Fraction

from kcommon import format_quantity, now_rfc3339, parse_quantity, to_int
from raypods import (all_pods_running, desired_pods, pod_node_type, pod_phase,
                     pod_ready_condition, running_and_ready)


# ------------------------------------------------------------------ quantities

def _quantity(q):
    """(value, binary format?) of a quantity; zero when it is not one."""
    try:
        return parse_quantity(q)
    except ValueError:
        return Fraction(0), False


class _Sum:
    """A sum of quantities that keeps the format of its first non-zero term (Quantity.Add)."""

    def __init__(self):
        self.value, self.binary = Fraction(0), None

    def add(self, value, binary):
        if self.value == 0:
            self.binary = binary
        self.value += value

    def text(self):
        return format_quantity(self.value, bool(self.binary))


def pod_resources(pod_spec):
    """utils.CalculatePodResource: requests (limits where a request is missing) of the
    containers, per resource name."""
    out = {}
    for c in (pod_spec or {}).get("containers") or []:
        res = c.get("resources") or {}
        merged = dict(res.get("requests") or {})
        for k, v in (res.get("limits") or {}).items():
            merged.setdefault(k, v)
        for k, v in merged.items():
            out.setdefault(k, []).append(_quantity(v))
    return out


def desired_resources(spec):
    """utils.CalculateDesiredResources: the head plus replicas x numOfHosts of each group."""
    totals = {}

    def add(resources, times):
        for name, quantities in resources.items():
            for value, binary in quantities:
                totals.setdefault(name, _Sum()).add(value * times, binary)

    head = ((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec")
    add(pod_resources(head), 1)
    for g in spec.get("workerGroupSpecs") or []:
        if g.get("suspend"):
            continue
        times = to_int(g.get("numOfHosts"), 1) * to_int(g.get("replicas"), 0)
        add(pod_resources((g.get("template") or {}).get("spec")), times)
    gpus = _Sum()
    for name, total in totals.items():
        if name.endswith("gpu") and total.value != 0:
            gpus.add(total.value, bool(total.binary))
    return {"desiredCPU": totals.get("cpu", _Sum()).text(),
            "desiredMemory": totals.get("memory", _Sum()).text(),
            "desiredGPU": gpus.text(),
            "desiredTPU": totals.get("google.com/tpu", _Sum()).text()}


# ------------------------------------------------------------------ conditions

def _set_condition(conds, ctype, status, reason, message, now):
    """meta.SetStatusCondition on a list of metav1.Condition dicts."""
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") != status:
                c["status"] = status
                c["lastTransitionTime"] = now
            c["reason"], c["message"] = reason, message
            return
    conds.append({"type": ctype, "status": status, "lastTransitionTime": now,
                  "reason": reason, "message": message})


def condition_true(conds, ctype):
    return any(c.get("type") == ctype and c.get("status") == "True" for c in conds)


def suspend_status(conds):
    """utils.FindRayClusterSuspendStatus."""
    for c in conds:
        if c.get("type") in ("RayClusterSuspending", "RayClusterSuspended") \
                and c.get("status") == "True":
            return c["type"]
    return ""


def inconsistent(old, new):
    """utils.InconsistentRayClusterStatus: only these fields make KubeRay write the status."""
    for k in ("state", "reason", "readyWorkerReplicas", "availableWorkerReplicas",
              "desiredWorkerReplicas", "minWorkerReplicas", "maxWorkerReplicas", "endpoints",
              "head", "conditions"):
        empty = {} if k == "head" else None
        if (old.get(k) or empty) != (new.get(k) or empty):
            return True
    return False


# ---------------------------------------------------------------------- status

def calculate_status(rc, pods, err):
    """calculateStatus: the new status of ``rc``, given its pods and the error text of this
    pass's reconciliation (None when there was none)."""
    old = rc.get("status") or {}
    st = copy.deepcopy(old)
    spec = rc.get("spec") or {}
    now = now_rfc3339()
    conds = st.get("conditions") or []
    if err is None:
        conds = [c for c in conds if c.get("type") != "ReplicaFailure"]
    st["observedGeneration"] = rc["metadata"].get("generation", 0)
    workers = [p for p in pods if pod_node_type(p) == "worker"]
    groups = spec.get("workerGroupSpecs") or []
    counts = {
        "readyWorkerReplicas": sum(1 for p in workers if running_and_ready(p)),
        "availableWorkerReplicas": sum(1 for p in workers if pod_phase(p) == "Running"),
        "desiredWorkerReplicas": sum(desired_pods(g) for g in groups),
        "minWorkerReplicas": sum(to_int(g.get("minReplicas"), 0) * to_int(g.get("numOfHosts"), 1)
                                 for g in groups if not g.get("suspend")),
        "maxWorkerReplicas": min(sum(to_int(g.get("maxReplicas"), 2147483647)
                                     * to_int(g.get("numOfHosts"), 1)
                                     for g in groups if not g.get("suspend")), 2147483647),
    }
    for k, v in counts.items():  # int32 fields with omitempty
        if v:
            st[k] = v
        else:
            st.pop(k, None)
    st.update(desired_resources(spec))
    if err is None and len(pods) == counts["desiredWorkerReplicas"] + 1 \
            and all_pods_running(pods):
        st["state"] = "ready"
        st.pop("reason", None)

    heads = [p for p in pods if pod_node_type(p) == "head"]
    head = heads[0] if len(heads) == 1 else None
    if head is None:
        _set_condition(conds, "HeadPodReady", "False", "HeadPodNotFound",
                       "Head Pod not found", now)
    else:
        ready = pod_ready_condition(head)
        status, reason, message = "False", "Unknown", ""
        if ready is not None:
            status, message = ready.get("status", "False"), ready.get("message", "")
            reason = ready.get("reason") or ("HeadPodRunningAndReady" if status == "True"
                                             else "Unknown")
        _set_condition(conds, "HeadPodReady", status, reason, message, now)
    suspending = suspend_status(conds)
    if not condition_true(conds, "RayClusterProvisioned") and \
            suspending != "RayClusterSuspended":
        if all_pods_running(pods):
            _set_condition(conds, "RayClusterProvisioned", "True",
                           "AllPodRunningAndReadyFirstTime",
                           "All Ray Pods are ready for the first time", now)
        else:
            _set_condition(conds, "RayClusterProvisioned", "False",
                           "RayClusterPodsProvisioning",
                           "RayCluster Pods are being provisioned for first time", now)
    if suspending == "RayClusterSuspending":
        if not pods:
            _set_condition(conds, "RayClusterProvisioned", "False",
                           "RayClusterPodsProvisioning", "RayCluster has been suspended", now)
            _set_condition(conds, "RayClusterSuspending", "False", "RayClusterSuspending",
                           "", now)
            _set_condition(conds, "RayClusterSuspended", "True", "RayClusterSuspended", "",
                           now)
    elif suspending == "RayClusterSuspended":
        if not spec.get("suspend"):
            _set_condition(conds, "RayClusterSuspended", "False", "RayClusterSuspended", "",
                           now)
    else:
        _set_condition(conds, "RayClusterSuspended", "False", "RayClusterSuspended", "", now)
        _set_condition(conds, "RayClusterSuspending",
                       "True" if spec.get("suspend") else "False", "RayClusterSuspending",
                       "", now)
    st["conditions"] = conds
    if spec.get("suspend") and not pods:
        st["state"] = "suspended"
    info = {}
    if head is not None:
        if (head.get("status") or {}).get("podIP"):
            info["podIP"] = head["status"]["podIP"]
        info["podName"] = head["metadata"]["name"]
    st["head"] = info
    st["lastUpdateTime"] = now
    if old.get("state") != st.get("state"):
        st.setdefault("stateTransitionTimes", {})[st["state"]] = now
    return st
