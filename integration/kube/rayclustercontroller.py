"""Simulated KubeRay operator (the RayCluster controller) for the test API server.

``RayClusterController`` (``--controllers raycluster``) reconciles the
``rayclusters.ray.io`` v1 objects (the CRD: ``--crd raycluster``, or any
definition of that resource created later) that ``spec.managedBy`` leaves to
KubeRay (unset or ``ray.io/kuberay-operator``), as KubeRay's
``raycluster_controller.go`` does with its default feature gates
(RayClusterStatusConditions and RayMultiHostIndexing on):

* pods, from the group templates, in the cluster's namespace:
  - one head pod, ``generateName: <cluster>-head-``; with
    ``enableInTreeAutoscaling`` it gets KubeRay's ``autoscaler`` sidecar (the
    head container's image, ``autoscalerOptions.resources`` or requests and
    limits of 500m cpu and 512Mi) and ``serviceAccountName`` (the template's, or
    the cluster's name);
  - per worker group ``replicas`` (clamped to [minReplicas, maxReplicas]) ×
    ``numOfHosts`` workers, ``generateName: <cluster>-<group>-worker-``, with
    KubeRay's ``wait-gcs-ready`` init container (the first container's image,
    200m cpu and 256Mi);
  - labels: the template's and the group's ``labels``, then ``ray.io/cluster``,
    ``ray.io/node-type`` (head|worker), ``ray.io/group`` (``headgroup`` for
    the head), ``ray.io/is-ray-node: yes``, ``ray.io/identifier``,
    ``app.kubernetes.io/name: kuberay``, ``app.kubernetes.io/created-by:
    kuberay-operator``; workers ``ray.io/worker-group-replica-index``, and with
    ``numOfHosts`` > 1 ``ray.io/worker-group-replica-name`` and
    ``ray.io/replica-host-index`` (a replica's hosts are created and deleted
    together);
  - a controller ownerReference to the RayCluster (blockOwnerDeletion);
* scaling: missing pods are created (lowest free replica index first);
  ``scaleStrategy.workersToDelete`` pods are always deleted; excess pods are
  deleted only without ``enableInTreeAutoscaling`` (with it the autoscaler
  decides, through workersToDelete, as KubeRay's default
  ENABLE_RANDOM_POD_DELETE=false), the newest first; a group with
  ``suspend: true`` loses its pods. Pods that finished (Succeeded or Failed)
  are deleted and replaced on the next pass. A group whose deleted pods are
  still there (terminating) waits for them to go (KubeRay's scale
  expectations); terminating pods count until gone;
* suspension: ``spec.suspend: true`` first sets ``RayClusterSuspending=True``,
  then deletes every pod of the cluster, and once none is left sets
  ``RayClusterSuspending=False``, ``RayClusterSuspended=True``,
  ``RayClusterProvisioned=False`` and ``state: suspended``; ``suspend: false``
  sets ``RayClusterSuspended=False``, and the next pass creates the pods again.
  A suspension in progress completes even if ``suspend`` is set back;
* status (through ``/status``, written when KubeRay's consistency check sees a
  change): ``readyWorkerReplicas`` (Running and Ready workers),
  ``availableWorkerReplicas`` (Running workers), ``desiredWorkerReplicas``,
  ``minWorkerReplicas``, ``maxWorkerReplicas``, ``desiredCPU``,
  ``desiredMemory``, ``desiredGPU``, ``desiredTPU`` (the templates' requests,
  limits where a request is missing, × replicas × numOfHosts, plus the head),
  ``observedGeneration``, ``head.podIP`` and ``head.podName``,
  ``lastUpdateTime``, ``stateTransitionTimes``; ``state: ready`` once the pods
  are the desired ones plus the head and all are Running (and Ready when they
  have the condition) -- it then stays ``ready`` until the cluster is
  suspended with no pods left (``state: suspended``), as in KubeRay;
  conditions ``HeadPodReady`` (from the head pod's Ready condition,
  ``HeadPodNotFound`` without one), ``RayClusterProvisioned``
  (``AllPodRunningAndReadyFirstTime`` / ``RayClusterPodsProvisioning``),
  ``RayClusterSuspended``, ``RayClusterSuspending``;
* a deleted RayCluster (the garbage collector's part): its pods are deleted
  (custom resources default to background propagation); with
  ``propagationPolicy: Orphan`` they lose their ownerReference instead.

Not simulated: the head Service (so no ``status.endpoints``,
``head.serviceIP`` or ``head.serviceName``), the ray start command, env,
probes and volumes KubeRay adds to containers, GCS fault tolerance, the
Recreate upgrade strategy, autoscaler v2's head restartPolicy, events, and
KubeRay's validation of the spec (a cluster without a head container is
left alone).
"""

import copy
from fractions import Fraction

import controllers
from errors import ApiError
from kcommon import (MATCH_ALL, format_quantity, get_condition, now_rfc3339, parse_quantity,
                     parse_time, random_suffix)
from resources import RES_BY_KEY

PODS = RES_BY_KEY["pods"]
GROUP, VERSION, PLURAL = "ray.io", "v1", "rayclusters"
OWN_MANAGER = "ray.io/kuberay-operator"

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"
GROUP_LABEL = "ray.io/group"
IS_NODE_LABEL = "ray.io/is-ray-node"
IDENTIFIER_LABEL = "ray.io/identifier"
REPLICA_INDEX_LABEL = "ray.io/worker-group-replica-index"
REPLICA_NAME_LABEL = "ray.io/worker-group-replica-name"
HOST_INDEX_LABEL = "ray.io/replica-host-index"
HEAD_GROUP = "headgroup"
NO_HEAD_RESTART = "ray.io/disable-provisioned-head-restart"

_HEAD = object()  # the expectations key of the head "group"


# --------------------------------------------------------------------- helpers

def _labels(pod):
    return pod["metadata"].get("labels") or {}


def _node_type(pod):
    return _labels(pod).get(NODE_TYPE_LABEL)


def _phase(pod):
    return (pod.get("status") or {}).get("phase")


def _ready_condition(pod):
    return get_condition(pod, "Ready")


def _running_and_ready(pod):
    c = _ready_condition(pod)
    return _phase(pod) == "Running" and c is not None and c.get("status") == "True"


def all_pods_running(pods):
    """utils.CheckAllPodsRunning: some pods, all Running, none with Ready other than True."""
    if not pods:
        return False
    for p in pods:
        if _phase(p) != "Running":
            return False
        c = _ready_condition(p)
        if c is not None and c.get("status") != "True":
            return False
    return True


def _int(v, default=0):
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def num_of_hosts(group):
    n = _int(group.get("numOfHosts"), 1)
    return n if n > 0 else 1


def desired_pods(group):
    """utils.GetWorkerGroupDesiredReplicas: replicas within [min, max], times numOfHosts."""
    if group.get("suspend"):
        return 0
    lo = _int(group.get("minReplicas"), 0)
    hi = _int(group.get("maxReplicas"), 2147483647)
    replicas = group.get("replicas")
    if replicas is None or _int(replicas) < lo:
        n = lo
    elif _int(replicas) > hi:
        n = hi
    else:
        n = _int(replicas)
    return n * _int(group.get("numOfHosts"), 1)


def should_delete_pod(pod):
    """shouldDeletePod: finished pods, and Running ones whose Ray container (the first) ended
    under restartPolicy Never."""
    if _phase(pod) in ("Succeeded", "Failed"):
        return True
    containers = (pod.get("spec") or {}).get("containers") or []
    if _phase(pod) == "Running" and containers:
        ray = containers[0].get("name")
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            if cs.get("name") == ray and "terminated" in (cs.get("state") or {}):
                return (pod.get("spec") or {}).get("restartPolicy") == "Never"
    return False


def check_label(s):
    """utils.CheckLabel: keep the last 63 characters; no leading punctuation."""
    if len(s) > 63:
        s = s[len(s) - 63:]
    if s and not s[0].isalnum():
        s = "r" + s[1:]
    return s


def check_name(s):
    """utils.CheckName: keep the last 50 characters; no leading digit or punctuation."""
    if len(s) > 50:
        s = s[len(s) - 50:]
    if s and not s[0].isalpha():
        s = "r" + s[1:]
    return s


def pod_name_prefix(prefix, node_type):
    """utils.PodName with isGenerateName: ``<prefix[:50]>-<type>-``, lower case."""
    return (prefix[:50] + "-" + node_type + "-").lower()


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
        times = _int(g.get("numOfHosts"), 1) * _int(g.get("replicas"), 0)
        add(pod_resources((g.get("template") or {}).get("spec")), times)
    gpus = _Sum()
    for name, total in totals.items():
        if name.endswith("gpu") and total.value != 0:
            gpus.add(total.value, bool(total.binary))
    return {"desiredCPU": totals.get("cpu", _Sum()).text(),
            "desiredMemory": totals.get("memory", _Sum()).text(),
            "desiredGPU": gpus.text(),
            "desiredTPU": totals.get("google.com/tpu", _Sum()).text()}


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


def _condition_true(conds, ctype):
    return any(c.get("type") == ctype and c.get("status") == "True" for c in conds)


def suspend_status(conds):
    """utils.FindRayClusterSuspendStatus."""
    for c in conds:
        if c.get("type") in ("RayClusterSuspending", "RayClusterSuspended") \
                and c.get("status") == "True":
            return c["type"]
    return ""


def _inconsistent(old, new):
    """utils.InconsistentRayClusterStatus: only these fields make KubeRay write the status."""
    for k in ("state", "reason", "readyWorkerReplicas", "availableWorkerReplicas",
              "desiredWorkerReplicas", "minWorkerReplicas", "maxWorkerReplicas", "endpoints",
              "head", "conditions"):
        empty = {} if k == "head" else None
        if (old.get(k) or empty) != (new.get(k) or empty):
            return True
    return False


def _newest_first(pod):
    m = pod["metadata"]
    return (-parse_time(m.get("creationTimestamp", "")),
            -_int(_labels(pod).get(REPLICA_INDEX_LABEL), 0), [-ord(c) for c in m["name"]])


# ------------------------------------------------------------------ controller

class RayClusterController(controllers.Controller):
    """Creates, scales, suspends and reports the pods of RayClusters (module docstring)."""

    NAME = "raycluster"

    def __init__(self, app):
        self.expected_deletes = {}  # (ns, cluster, group or _HEAD) -> pod names not yet gone
        self.delete_opts = {}  # RayCluster uid -> DeleteOptions of the request that deleted it
        super().__init__(app)

    # -------------------------------------------------------------- events
    def _rayclusters(self):
        return self.store.registry.find(GROUP, VERSION, PLURAL)

    def _on_event(self, ev):
        if ev.res is PODS or (ev.res.crd is not None and ev.res.group == GROUP
                              and ev.res.plural == PLURAL):
            self.queue.put(ev)

    def initial_keys(self):
        res = self._rayclusters()
        if res is None:
            return []
        items, _ = self.store.list(res, None, MATCH_ALL, MATCH_ALL)
        return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items]

    def keys_for(self, ev):
        m = ev.obj["metadata"]
        ns = m.get("namespace")
        if ev.res is not PODS:
            if ev.opts is not None:
                self.delete_opts[m["uid"]] = ev.opts
            if ev.type == "DELETED":
                return [("gc", ns, m["name"], m["uid"])]
            return [(ns, m["name"])]
        keys = []
        cluster = (m.get("labels") or {}).get(CLUSTER_LABEL)
        if cluster:
            keys.append((ns, cluster))
        for ref in m.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == "RayCluster" and \
                    str(ref.get("apiVersion", "")).startswith(GROUP + "/") and \
                    (ns, ref.get("name")) not in keys:
                keys.append((ns, ref.get("name")))
        return keys

    # ---------------------------------------------------------------- sync
    def sync(self, key):
        if key[0] == "gc":
            return self._collect(*key[1:])
        ns, name = key
        res = self._rayclusters()
        if res is None:
            return
        rc = self.get(res, ns, name)
        if rc is None or rc["metadata"].get("deletionTimestamp"):
            return
        spec = rc.get("spec") or {}
        if spec.get("managedBy") not in (None, OWN_MANAGER):
            return
        head_tmpl = ((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
        if not head_tmpl.get("containers"):
            return  # KubeRay's validation refuses it (an event, no pods)
        err = self._reconcile_pods(rc, self._pods(ns, name))
        status = self._status(rc, self._pods(ns, name), err)
        if _inconsistent(rc.get("status") or {}, status):
            self.write_status(res, rc, status)
        if err:
            self.after(0.3, key)

    def _pods(self, ns, cluster):
        return [p for p in self.store.list(PODS, ns, MATCH_ALL, MATCH_ALL)[0]
                if _labels(p).get(CLUSTER_LABEL) == cluster]

    # ---------------------------------------------------------------- pods
    def _satisfied(self, ns, cluster, group):
        """Scale expectations: the pods this controller deleted in the group are gone."""
        key = (ns, cluster, group)
        names = self.expected_deletes.get(key)
        if not names:
            return True
        for n in list(names):
            try:
                self.store.get(PODS, ns, n)
            except ApiError as e:
                if e.code == 404:
                    names.discard(n)
                    continue
                raise
        if not names:
            del self.expected_deletes[key]
        return not names

    def _delete_pod(self, pod, cluster, group):
        m = pod["metadata"]
        if self.delete(PODS, m["namespace"], m["name"], m["uid"]):
            self.expected_deletes.setdefault((m["namespace"], cluster, group), set()).add(
                m["name"])
            return True
        return False

    def _reconcile_pods(self, rc, pods):
        """reconcilePods; returns an error text when the cluster must be looked at again."""
        m, spec = rc["metadata"], rc.get("spec") or {}
        ns, name = m["namespace"], m["name"]
        conds = (rc.get("status") or {}).get("conditions") or []
        suspending = suspend_status(conds)
        if suspending == "RayClusterSuspending":
            for p in pods:
                if not p["metadata"].get("deletionTimestamp"):
                    group = _HEAD if _node_type(p) == "head" else _labels(p).get(GROUP_LABEL)
                    self._delete_pod(p, name, group)
            return None
        if suspending == "RayClusterSuspended" or spec.get("suspend"):
            return None  # suspended, or about to suspend (RayClusterSuspending comes first)

        heads = [p for p in pods if _node_type(p) == "head"]
        if self._satisfied(ns, name, _HEAD):
            if len(heads) == 1:
                if should_delete_pod(heads[0]):
                    self._delete_pod(heads[0], name, _HEAD)
                    return "the head Pod %s finished; it is deleted and created again" % (
                        heads[0]["metadata"]["name"])
            elif not heads:
                skip = (_condition_true(conds, "RayClusterProvisioned")
                        and (m.get("annotations") or {}).get(NO_HEAD_RESTART) == "true")
                if not skip:
                    self._create(rc, "head", spec.get("headGroupSpec") or {})
            else:
                return "%d head pods found %s. Please delete extra head pods" % (
                    len(heads), [p["metadata"]["name"] for p in heads])

        autoscaling = bool(spec.get("enableInTreeAutoscaling"))
        for group in spec.get("workerGroupSpecs") or []:
            gname = group.get("groupName") or ""
            if not self._satisfied(ns, name, gname):
                continue
            gpods = [p for p in pods if _node_type(p) == "worker"
                     and _labels(p).get(GROUP_LABEL) == gname]
            if group.get("suspend"):
                for p in gpods:
                    self._delete_pod(p, name, gname)
                continue
            if num_of_hosts(group) > 1:
                err = self._reconcile_multi_host(rc, group, gpods, autoscaling)
                if err:
                    return err
                continue
            unhealthy = [p for p in gpods if should_delete_pod(p)]
            for p in unhealthy:
                self._delete_pod(p, name, gname)
            if unhealthy:
                return "delete %d unhealthy worker Pods" % len(unhealthy)
            deleted = set()
            for pname in ((group.get("scaleStrategy") or {}).get("workersToDelete") or []):
                try:
                    p = self.store.get(PODS, ns, pname)
                except ApiError as e:
                    if e.code == 404:
                        continue
                    raise
                if self._delete_pod(p, name, gname):
                    deleted.add(pname)
            running = [p for p in gpods if p["metadata"]["name"] not in deleted]
            diff = desired_pods(group) - len(running)
            if diff > 0:
                used = {_int(_labels(p).get(REPLICA_INDEX_LABEL), -1) for p in running}
                index = 0
                for _ in range(diff):
                    while index in used:
                        index += 1
                    used.add(index)
                    self._create(rc, "worker", group, replica_index=index)
            elif diff < 0 and not autoscaling:
                for p in sorted(running, key=_newest_first)[:-diff]:
                    self._delete_pod(p, name, gname)
        return None

    def _reconcile_multi_host(self, rc, group, gpods, autoscaling):
        """reconcileMultiHostWorkerGroup: replicas of numOfHosts pods, made and removed whole."""
        name, gname, hosts = rc["metadata"]["name"], group.get("groupName") or "", \
            num_of_hosts(group)
        replicas = {}
        for p in gpods:
            rname = _labels(p).get(REPLICA_NAME_LABEL)
            if rname:
                replicas.setdefault(rname, []).append(p)
        for rname, members in replicas.items():
            if len(members) < hosts:
                for p in members:
                    self._delete_pod(p, name, gname)
                return "cleaned up incomplete replica group %s, requeueing" % rname
        broken = {_labels(p).get(REPLICA_NAME_LABEL) for p in gpods if should_delete_pod(p)}
        broken.discard(None)
        for rname in broken:
            for p in replicas.get(rname, []):
                self._delete_pod(p, name, gname)
        listed = set((group.get("scaleStrategy") or {}).get("workersToDelete") or [])
        doomed = {_labels(p).get(REPLICA_NAME_LABEL) for p in gpods
                  if p["metadata"]["name"] in listed} - {None} - broken
        if doomed:
            for rname in doomed:
                for p in replicas.get(rname, []):
                    self._delete_pod(p, name, gname)
            return "deleted worker Pods based on ScaleStrategy, requeueing"
        valid = {r: ps for r, ps in replicas.items() if r not in broken}
        expected = desired_pods(group)
        if expected % hosts:
            return "desired worker pods (%d) is not a multiple of NumOfHosts (%d) for group %s" \
                % (expected, hosts, gname)
        diff = expected // hosts - len(valid)
        if diff > 0:
            used = {_int(_labels(ps[0]).get(REPLICA_INDEX_LABEL), -1) for ps in valid.values()}
            index = 0
            for _ in range(diff):
                while index in used:
                    index += 1
                used.add(index)
                rname = "%s-%s" % (gname, random_suffix())
                for host in range(hosts):
                    self._create(rc, "worker", group, replica_index=index, replica_name=rname,
                                 host_index=host)
        elif diff < 0 and not autoscaling:
            newest = sorted(valid.values(), key=lambda ps: min(_newest_first(p) for p in ps))
            for ps in newest[:-diff]:
                for p in ps:
                    self._delete_pod(p, name, gname)
        return None

    def _create(self, rc, node_type, group, replica_index=None, replica_name=None,
                host_index=None):
        """buildHeadPod / buildWorkerPod, then create."""
        m, spec = rc["metadata"], rc.get("spec") or {}
        tmpl = copy.deepcopy(group.get("template") or {})
        tm = tmpl.get("metadata") or {}
        pspec = tmpl.get("spec") or {}
        merged = dict(tm.get("labels") or {})
        merged.update(group.get("labels") or {})
        group_label = HEAD_GROUP if node_type == "head" else group.get("groupName") or ""
        labels = {IS_NODE_LABEL: "yes", CLUSTER_LABEL: m["name"], NODE_TYPE_LABEL: node_type,
                  GROUP_LABEL: group_label,
                  IDENTIFIER_LABEL: check_label("%s-%s" % (m["name"], node_type)),
                  "app.kubernetes.io/name": "kuberay",
                  "app.kubernetes.io/created-by": "kuberay-operator"}
        for k, v in merged.items():
            if k not in (NODE_TYPE_LABEL, GROUP_LABEL, CLUSTER_LABEL):
                labels[k] = v
        containers = pspec.get("containers") or []
        if node_type == "head":
            prefix = pod_name_prefix(m["name"], "head")
            if spec.get("enableInTreeAutoscaling"):
                pspec["serviceAccountName"] = check_name(pspec.get("serviceAccountName")
                                                         or m["name"])
                containers.append(self._autoscaler(spec, containers))
        else:
            prefix = pod_name_prefix("%s-%s" % (m["name"], group.get("groupName") or ""),
                                     "worker")
            labels[REPLICA_INDEX_LABEL] = str(replica_index)
            if num_of_hosts(group) > 1:
                labels[REPLICA_NAME_LABEL] = replica_name
                labels[HOST_INDEX_LABEL] = str(host_index)
            if containers:
                ray = containers[0]
                pspec.setdefault("initContainers", []).append({
                    "name": "wait-gcs-ready", "image": ray.get("image", ""),
                    "command": ["/bin/bash", "-c", "--"],
                    "args": ["until ray health-check --address %s-head-svc.%s.svc.cluster.local"
                             ":6379 > /dev/null 2>&1; do sleep 5; done"
                             % (m["name"], m["namespace"])],
                    "resources": {"limits": {"cpu": "200m", "memory": "256Mi"},
                                  "requests": {"cpu": "200m", "memory": "256Mi"}}})
        pspec["containers"] = containers
        meta = {"generateName": prefix, "namespace": m["namespace"], "labels": labels,
                "ownerReferences": [{"apiVersion": "%s/%s" % (GROUP, VERSION),
                                     "kind": "RayCluster", "name": m["name"], "uid": m["uid"],
                                     "controller": True, "blockOwnerDeletion": True}]}
        if tm.get("annotations"):
            meta["annotations"] = dict(tm["annotations"])
        if tm.get("finalizers"):
            meta["finalizers"] = list(tm["finalizers"])
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pspec}
        return self.create(PODS, m["namespace"], body)

    @staticmethod
    def _autoscaler(spec, containers):
        opts = spec.get("autoscalerOptions") or {}
        image = opts.get("image") or (containers[0].get("image", "") if containers else "")
        c = {"name": "autoscaler", "image": image,
             "imagePullPolicy": opts.get("imagePullPolicy") or "IfNotPresent",
             "command": ["/bin/bash", "-c", "--"],
             "args": ["ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
                      "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"],
             "env": [{"name": "RAY_CLUSTER_NAME", "valueFrom": {"fieldRef": {
                         "fieldPath": "metadata.labels['%s']" % CLUSTER_LABEL}}},
                     {"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {
                         "fieldPath": "metadata.namespace"}}}],
             "resources": copy.deepcopy(opts.get("resources")) if opts.get("resources") else {
                 "limits": {"cpu": "500m", "memory": "512Mi"},
                 "requests": {"cpu": "500m", "memory": "512Mi"}}}
        return c

    # -------------------------------------------------------------- status
    def _status(self, rc, pods, err):
        """calculateStatus."""
        old = rc.get("status") or {}
        st = copy.deepcopy(old)
        spec = rc.get("spec") or {}
        now = now_rfc3339()
        conds = st.get("conditions") or []
        if err is None:
            conds = [c for c in conds if c.get("type") != "ReplicaFailure"]
        st["observedGeneration"] = rc["metadata"].get("generation", 0)
        workers = [p for p in pods if _node_type(p) == "worker"]
        groups = spec.get("workerGroupSpecs") or []
        counts = {
            "readyWorkerReplicas": sum(1 for p in workers if _running_and_ready(p)),
            "availableWorkerReplicas": sum(1 for p in workers if _phase(p) == "Running"),
            "desiredWorkerReplicas": sum(desired_pods(g) for g in groups),
            "minWorkerReplicas": sum(_int(g.get("minReplicas"), 0) * _int(g.get("numOfHosts"), 1)
                                     for g in groups if not g.get("suspend")),
            "maxWorkerReplicas": min(sum(_int(g.get("maxReplicas"), 2147483647)
                                         * _int(g.get("numOfHosts"), 1)
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

        heads = [p for p in pods if _node_type(p) == "head"]
        head = heads[0] if len(heads) == 1 else None
        if head is None:
            _set_condition(conds, "HeadPodReady", "False", "HeadPodNotFound",
                           "Head Pod not found", now)
        else:
            ready = _ready_condition(head)
            status, reason, message = "False", "Unknown", ""
            if ready is not None:
                status, message = ready.get("status", "False"), ready.get("message", "")
                reason = ready.get("reason") or ("HeadPodRunningAndReady" if status == "True"
                                                 else "Unknown")
            _set_condition(conds, "HeadPodReady", status, reason, message, now)
        suspending = suspend_status(conds)
        if not _condition_true(conds, "RayClusterProvisioned") and \
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

    # ------------------------------------------------------------------ gc
    def _collect(self, ns, name, uid):
        """Garbage collection of the pods of the deleted RayCluster (Background by default)."""
        self.collect(uid, ns, [PODS], self.delete_opts.get(uid))
        for key in [k for k in self.expected_deletes if k[:2] == (ns, name)]:
            del self.expected_deletes[key]
        self.delete_opts.pop(uid, None)
