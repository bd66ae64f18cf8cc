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

The pods' labels, names and bodies are in raypods.py, the status computation
in rayclusterstatus.py; this module holds the controller: its events, the
reconciliation of the pods (scaling, suspension, scale expectations) and the
garbage collection.
"""

import controllers
from errors import ApiError
from kcommon import MATCH_ALL, random_suffix, to_int
from rayclusterstatus import calculate_status, condition_true, inconsistent, suspend_status
from raypods import (CLUSTER_LABEL, GROUP, GROUP_LABEL, REPLICA_INDEX_LABEL, REPLICA_NAME_LABEL,
                     VERSION, build_pod, desired_pods, newest_first, num_of_hosts,
                     pod_labels, pod_node_type, should_delete_pod)
from resources import RES_BY_KEY

PODS = RES_BY_KEY["pods"]
PLURAL = "rayclusters"
OWN_MANAGER = "ray.io/kuberay-operator"
NO_HEAD_RESTART = "ray.io/disable-provisioned-head-restart"

_HEAD = object()  # the expectations key of the head "group"


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
        status = calculate_status(rc, self._pods(ns, name), err)
        if inconsistent(rc.get("status") or {}, status):
            self.write_status(res, rc, status)
        if err:
            self.after(0.3, key)

    def _pods(self, ns, cluster):
        return [p for p in self.store.list(PODS, ns, MATCH_ALL, MATCH_ALL)[0]
                if pod_labels(p).get(CLUSTER_LABEL) == cluster]

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
                    group = _HEAD if pod_node_type(p) == "head" else pod_labels(p).get(GROUP_LABEL)
                    self._delete_pod(p, name, group)
            return None
        if suspending == "RayClusterSuspended" or spec.get("suspend"):
            return None  # suspended, or about to suspend (RayClusterSuspending comes first)

        heads = [p for p in pods if pod_node_type(p) == "head"]
        if self._satisfied(ns, name, _HEAD):
            if len(heads) == 1:
                if should_delete_pod(heads[0]):
                    self._delete_pod(heads[0], name, _HEAD)
                    return "the head Pod %s finished; it is deleted and created again" % (
                        heads[0]["metadata"]["name"])
            elif not heads:
                skip = (condition_true(conds, "RayClusterProvisioned")
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
            gpods = [p for p in pods if pod_node_type(p) == "worker"
                     and pod_labels(p).get(GROUP_LABEL) == gname]
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
                used = {to_int(pod_labels(p).get(REPLICA_INDEX_LABEL), -1) for p in running}
                index = 0
                for _ in range(diff):
                    while index in used:
                        index += 1
                    used.add(index)
                    self._create(rc, "worker", group, replica_index=index)
            elif diff < 0 and not autoscaling:
                for p in sorted(running, key=newest_first)[:-diff]:
                    self._delete_pod(p, name, gname)
        return None

    def _reconcile_multi_host(self, rc, group, gpods, autoscaling):
        """reconcileMultiHostWorkerGroup: replicas of numOfHosts pods, made and removed whole."""
        name, gname, hosts = rc["metadata"]["name"], group.get("groupName") or "", \
            num_of_hosts(group)
        replicas = {}
        for p in gpods:
            rname = pod_labels(p).get(REPLICA_NAME_LABEL)
            if rname:
                replicas.setdefault(rname, []).append(p)
        for rname, members in replicas.items():
            if len(members) < hosts:
                for p in members:
                    self._delete_pod(p, name, gname)
                return "cleaned up incomplete replica group %s, requeueing" % rname
        broken = {pod_labels(p).get(REPLICA_NAME_LABEL) for p in gpods if should_delete_pod(p)}
        broken.discard(None)
        for rname in broken:
            for p in replicas.get(rname, []):
                self._delete_pod(p, name, gname)
        listed = set((group.get("scaleStrategy") or {}).get("workersToDelete") or [])
        doomed = {pod_labels(p).get(REPLICA_NAME_LABEL) for p in gpods
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
            used = {to_int(pod_labels(ps[0]).get(REPLICA_INDEX_LABEL), -1) for ps in valid.values()}
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
            newest = sorted(valid.values(), key=lambda ps: min(newest_first(p) for p in ps))
            for ps in newest[:-diff]:
                for p in ps:
                    self._delete_pod(p, name, gname)
        return None

    def _create(self, rc, node_type, group, replica_index=None, replica_name=None,
                host_index=None):
        """buildHeadPod / buildWorkerPod, then create."""
        body = build_pod(rc, node_type, group, replica_index, replica_name, host_index)
        return self.create(PODS, rc["metadata"]["namespace"], body)

    # ------------------------------------------------------------------ gc
    def _collect(self, ns, name, uid):
        """Garbage collection of the pods of the deleted RayCluster (Background by default)."""
        self.collect(uid, ns, [PODS], self.delete_opts.get(uid))
        for key in [k for k in self.expected_deletes if k[:2] == (ns, name)]:
            del self.expected_deletes[key]
        self.delete_opts.pop(uid, None)
