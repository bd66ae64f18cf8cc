"""Simulated kube-scheduler for the test API server, and the fake nodes it binds to.

``Scheduler`` (``--controllers scheduler``) binds every pod that has no
``spec.nodeName``, no scheduling gates, no deletionTimestamp and
``schedulerName: default-scheduler`` to a node:
* filters: node not ``spec.unschedulable``, Ready not False, labels match
  ``spec.nodeSelector`` and the required node affinity (In, NotIn, Exists,
  DoesNotExist, Gt, Lt; terms ORed), NoSchedule/NoExecute taints tolerated,
  and the sum of container cpu requests of the node's non-terminal pods plus
  the pod's fits ``status.allocatable.cpu`` (also ``pods`` when set);
* score: the most free cpu, then the node name;
* the bind is ``Store.bind`` (what ``POST pods/<name>/binding`` does):
  ``spec.nodeName`` and ``PodScheduled=True`` in one write.
A gated pod gets ``PodScheduled=False`` reason ``SchedulingGated``; a pod that
fits nowhere gets ``PodScheduled=False`` reason ``Unschedulable`` with a
"0/N nodes are available: ..." message, and is retried whenever a node or a
pod changes (no back-off queue, no preemption).

Nodes: ``parse_node_option`` reads ``--node name:k=v,k2=v:cpu=4[:pods=N]
[:memory=Q][:taint=key=value:NoSchedule]...`` and ``node_object`` builds the
Node the server creates at start. Tests may also create Nodes via the API.
"""

import collections

import controllers
from errors import ApiError
from kcommon import (MATCH_ALL, get_condition, now_rfc3339, pod_terminal, quantity_float,
                     set_condition)
from resources import RES_BY_KEY

PODS = RES_BY_KEY["pods"]
NODES = RES_BY_KEY["nodes"]
GATED_MSG = "Scheduling is blocked due to non-empty scheduling gates"


# --------------------------------------------------------------- cpu requests
def pod_cpu_request(pod):
    """Effective cpu request: max(sum over containers, largest init container)."""
    spec = pod.get("spec") or {}

    def req(c):
        r = (c.get("resources") or {})
        return quantity_float((r.get("requests") or {}).get("cpu",
                                                            (r.get("limits") or {}).get("cpu")))

    main = sum(req(c) for c in spec.get("containers") or [])
    init = max([req(c) for c in spec.get("initContainers") or []] or [0.0])
    return max(main, init)


# -------------------------------------------------------------------- nodes
def parse_node_option(text):
    """``name:k=v,k2=v:cpu=4[:taint=key=value:NoSchedule]``.

    Returns (name, labels, cpu, taints, extra) where extra may hold pods, memory.
    """
    parts = text.split(":")
    name, labels, cpu, taints, extra = parts[0], {}, "4", [], {}
    i = 1
    while i < len(parts):
        p = parts[i]
        if p.startswith("taint="):
            kv = p[len("taint="):]
            key, _, value = kv.partition("=")
            effect = parts[i + 1] if i + 1 < len(parts) else "NoSchedule"
            if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise SystemExit("--node %s: taint effect must be NoSchedule, "
                                 "PreferNoSchedule or NoExecute" % text)
            t = {"key": key, "effect": effect}
            if value:
                t["value"] = value
            taints.append(t)
            i += 2
            continue
        if p.startswith("cpu="):
            cpu = p[4:]
        elif p.startswith("pods=") or p.startswith("memory="):
            k, _, v = p.partition("=")
            extra[k] = v
        elif p:
            for kv in p.split(","):
                if kv:
                    k, _, v = kv.partition("=")
                    labels[k] = v
        i += 1
    if not name:
        raise SystemExit("--node %s: a node name is required" % text)
    return name, labels, cpu, taints, extra


def node_object(name, labels=None, cpu="4", taints=None, pods="110", memory="64Gi"):
    """A Ready Node as a kubelet would register it (the labels it sets, capacity)."""
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                  "beta.kubernetes.io/arch": "amd64"}
    all_labels.update(labels or {})
    cap = {"cpu": str(cpu), "memory": memory, "pods": str(pods), "ephemeral-storage": "100Gi"}
    now = now_rfc3339()
    spec = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": all_labels},
            "spec": spec,
            "status": {"capacity": dict(cap), "allocatable": dict(cap),
                       "conditions": [{"type": "Ready", "status": "True",
                                       "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status",
                                       "lastHeartbeatTime": now, "lastTransitionTime": now}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.%d"
                                      % (abs(hash(name)) % 250 + 2)},
                                     {"type": "Hostname", "address": name}],
                       "nodeInfo": {"kubeletVersion": "v1.33.0", "operatingSystem": "linux",
                                    "architecture": "amd64",
                                    "containerRuntimeVersion": "containerd://1.7.0"}}}


def create_nodes(store, options):
    for text in options:
        name, labels, cpu, taints, extra = parse_node_option(text)
        store.create(NODES, None, node_object(name, labels, cpu, taints, **extra))


# ------------------------------------------------------------------ matching
def _match_expr(labels, e):
    key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
    v = labels.get(key)
    if op == "In":
        return v is not None and v in values
    if op == "NotIn":
        return v is None or v not in values
    if op == "Exists":
        return v is not None
    if op == "DoesNotExist":
        return v is None
    if op in ("Gt", "Lt"):
        try:
            a, b = int(v), int(values[0])
        except (TypeError, ValueError, IndexError):
            return False
        return a > b if op == "Gt" else a < b
    return False


def node_selector_matches(pod, node):
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if req:
        terms = req.get("nodeSelectorTerms") or []
        fields = {"metadata.name": node["metadata"]["name"]}
        ok = False
        for t in terms:
            exprs = t.get("matchExpressions") or []
            fexprs = t.get("matchFields") or []
            if not exprs and not fexprs:
                continue
            if (all(_match_expr(labels, e) for e in exprs)
                    and all(_match_expr(fields, e) for e in fexprs)):
                ok = True
                break
        if not ok:
            return False
    return True


def tolerates(tolerations, taint):
    for t in tolerations or []:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        if not t.get("key"):
            if op == "Exists":
                return True
            continue
        if t["key"] != taint.get("key"):
            continue
        if op == "Exists" or (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def untolerated_taint(pod, node):
    tols = (pod.get("spec") or {}).get("tolerations")
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tols, taint):
            return taint
    return None



# ----------------------------------------------------------------- scheduler
class Scheduler(controllers.Controller):
    """Binds schedulable pods to fake nodes (see the module docstring)."""

    NAME = "scheduler"
    KINDS = ("Pod", "Node")

    def initial_keys(self):
        return ["all"]

    def keys_for(self, event):
        return ["all"]

    def sync(self, key):
        nodes, _ = self.store.list(NODES, None, MATCH_ALL, MATCH_ALL)
        pods, _ = self.store.list(PODS, None, MATCH_ALL, MATCH_ALL)
        cpu_used = collections.Counter()
        pods_on = collections.Counter()
        for p in pods:
            n = (p.get("spec") or {}).get("nodeName")
            if n and not pod_terminal(p):
                cpu_used[n] += pod_cpu_request(p)
                pods_on[n] += 1
        pending = [p for p in pods if self._wants_scheduling(p)]
        pending.sort(key=lambda p: (-int((p.get("spec") or {}).get("priority") or 0),
                                    p["metadata"].get("creationTimestamp", ""),
                                    p["metadata"]["name"]))
        retry = False
        for pod in pending:
            m = pod["metadata"]
            if pod["spec"].get("schedulingGates"):
                self._set_scheduled_false(pod, "SchedulingGated", GATED_MSG)
                continue
            node, reasons = self._pick(pod, nodes, cpu_used, pods_on)
            if node is None:
                msg = "0/%d nodes are available: %s." % (len(nodes), ", ".join(
                    "%d %s" % (n, r) for r, n in sorted(reasons.items())) or "no nodes available")
                if nodes:
                    msg += " preemption: 0/%d nodes are available: %d Preemption is not " \
                           "helpful for scheduling." % (len(nodes), len(nodes))
                self._set_scheduled_false(pod, "Unschedulable", msg)
                continue
            try:
                self.store.bind(m["namespace"], m["name"], {
                    "apiVersion": "v1", "kind": "Binding",
                    "metadata": {"name": m["name"], "namespace": m["namespace"],
                                 "uid": m["uid"]},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
            except ApiError as e:
                if e.code not in (404, 409):
                    raise
                retry = True
                continue
            cpu_used[node] += pod_cpu_request(pod)
            pods_on[node] += 1
        if retry:
            self.after(0.05, "all")

    @staticmethod
    def _wants_scheduling(p):
        spec, m = p.get("spec") or {}, p["metadata"]
        return (not spec.get("nodeName") and not m.get("deletionTimestamp")
                and spec.get("schedulerName", "default-scheduler") == "default-scheduler"
                and (p.get("status") or {}).get("phase", "Pending") == "Pending")

    def _pick(self, pod, nodes, cpu_used, pods_on):
        reasons = collections.Counter()
        best = None
        need = pod_cpu_request(pod)
        for node in nodes:
            name = node["metadata"]["name"]
            st = node.get("status") or {}
            alloc = st.get("allocatable") or st.get("capacity") or {}
            ready = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
            if (node.get("spec") or {}).get("unschedulable"):
                reasons["node(s) were unschedulable"] += 1
            elif ready.get("Ready") == "False":
                reasons["node(s) had untolerated taint {node.kubernetes.io/not-ready: }"] += 1
            elif not node_selector_matches(pod, node):
                reasons["node(s) didn't match Pod's node affinity/selector"] += 1
            elif untolerated_taint(pod, node) is not None:
                t = untolerated_taint(pod, node)
                reasons["node(s) had untolerated taint {%s: %s}"
                        % (t.get("key"), t.get("value", ""))] += 1
            elif "pods" in alloc and pods_on[name] + 1 > quantity_float(alloc["pods"]):
                reasons["Too many pods"] += 1
            elif "cpu" in alloc and cpu_used[name] + need > quantity_float(alloc["cpu"]) + 1e-9:
                reasons["Insufficient cpu"] += 1
            else:
                free = quantity_float(alloc.get("cpu")) - cpu_used[name]
                if best is None or free > best[0] + 1e-9:
                    best = (free, name)
        return (best[1] if best else None), reasons

    def _set_scheduled_false(self, pod, reason, message):
        cur = get_condition(pod, "PodScheduled")
        if (cur and cur.get("status") == "False" and cur.get("reason") == reason
                and cur.get("message") == message):
            return
        status = dict(pod.get("status") or {})
        status["conditions"] = set_condition(
            [dict(c) for c in status.get("conditions") or []], "PodScheduled", "False",
            reason, message, now_rfc3339())
        for c in status["conditions"]:
            if c["type"] == "PodScheduled":
                c.setdefault("lastProbeTime", None)
        try:
            self.write_status(PODS, pod, status)
        except ApiError as e:
            if e.code not in (404, 409):
                raise
            self.after(0.05, "all")
