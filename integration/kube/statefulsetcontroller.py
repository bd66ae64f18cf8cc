"""Simulated StatefulSet controller (apps/v1) for the test API server.

``StatefulSetController`` (``--controllers statefulset``) keeps, for each
StatefulSet, the pods ``<statefulset>-0`` ... ``<statefulset>-(replicas-1)``:

* a pod is made from ``spec.template``: the template's labels plus
  ``controller-revision-hash: <statefulset>-<hash of the template>``,
  ``statefulset.kubernetes.io/pod-name`` and ``apps.kubernetes.io/pod-index``,
  the template's annotations and finalizers, ``spec.hostname`` (the pod's
  name) and ``spec.subdomain`` (``serviceName``), a controller ownerReference
  (blockOwnerDeletion). Creates go through ``Store.create`` as a client's do,
  so the admission webhooks see them (a pod webhook may gate the pods);
* ``podManagementPolicy: OrderedReady`` (the default): ordinal i+1 is created
  only once ordinals 0..i are Running and Ready (a gated pod blocks the next
  ones); scale-down deletes the highest ordinal first, one at a time, each
  once the previous one is gone and while the remaining pods are Running and
  Ready. ``Parallel``: all missing pods are created, and all surplus pods
  deleted, at once;
* a deleted pod is created again with the same name once it is gone; a
  finished pod (Succeeded or Failed) is deleted, then created again;
* ``updateStrategy: RollingUpdate`` (the default): after a template change the
  pods of the old revision with ordinals >= ``partition`` are deleted one at a
  time, from the highest, once all pods are Running and Ready, and come back
  with the new template; ``OnDelete``: only deleted pods get it;
* status (through ``/status``): ``replicas`` (pods not being deleted),
  ``readyReplicas``, ``availableReplicas`` (Running and Ready; minReadySeconds
  ignored), ``currentReplicas``, ``updatedReplicas``, ``currentRevision``,
  ``updateRevision`` (``currentRevision`` follows ``updateRevision`` once
  every pod is updated), ``collisionCount``, ``observedGeneration``;
* a deleted StatefulSet (the garbage collector's part): its pods are deleted
  (apps/v1 defaults to background propagation); ``Orphan`` removes their
  ownerReference instead.

Not simulated: ControllerRevision objects (a revision is only a name; a pod
made again below the partition gets the current template too), volume claim
templates and their PersistentVolumeClaims, ``minReadySeconds``,
``ordinals.start``, ``maxUnavailable``, events.
"""

import copy

import controllers
from kcommon import (MATCH_ALL, controller_ref, owner_reference, pod_running_ready,
                     pod_terminal, short_hash)
from resources import RES_BY_KEY

STATEFULSETS = RES_BY_KEY["statefulsets.apps"]
PODS = RES_BY_KEY["pods"]
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def _int(v, default=0):
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def revision_name(sts):
    """``<statefulset>-<hash of spec.template>``, the value of ``controller-revision-hash``."""
    return "%s-%s" % (sts["metadata"]["name"], short_hash((sts.get("spec") or {}).get(
        "template") or {}))


def ordinal(sts_name, pod):
    """The ordinal of a pod named ``<sts_name>-<i>``, or None."""
    name = pod["metadata"]["name"]
    prefix = sts_name + "-"
    if not name.startswith(prefix) or not name[len(prefix):].isdigit():
        return None
    return int(name[len(prefix):])


class StatefulSetController(controllers.Controller):
    """Ordered pods of StatefulSets (see the module docstring)."""

    NAME = "statefulset"
    KINDS = ("StatefulSet", "Pod")

    def __init__(self, app):
        self.delete_opts = {}  # uid -> DeleteOptions of the request that deleted it
        super().__init__(app)

    def initial_keys(self):
        return [(o["metadata"]["namespace"], o["metadata"]["name"])
                for o in self.store.list(STATEFULSETS, None, MATCH_ALL, MATCH_ALL)[0]]

    def keys_for(self, ev):
        m = ev.obj["metadata"]
        if ev.res is PODS:
            ref = controller_ref(ev.obj)
            if ref and ref.get("kind") == "StatefulSet" and ref.get("apiVersion") == "apps/v1":
                return [(m["namespace"], ref.get("name"))]
            return []
        if ev.opts is not None:
            self.delete_opts[m["uid"]] = ev.opts
        if ev.type == "DELETED":
            return [("gc", m["namespace"], m["name"], m["uid"])]
        return [(m["namespace"], m["name"])]

    def sync(self, key):
        if key[0] == "gc":
            _, ns, _, uid = key
            self.collect(uid, ns, [PODS], self.delete_opts.pop(uid, None))
            return
        ns, name = key
        sts = self.get(STATEFULSETS, ns, name)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        want = _int(spec.get("replicas"), 1)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        update_rev = revision_name(sts)
        pods = self._pods(sts)

        # Create (or re-create) ordinals 0..want-1, in order unless Parallel.
        blocked = False
        for i in range(want):
            p = pods.get(i)
            if p is None:
                self._create_pod(sts, i, update_rev)
                blocked = True
            elif p["metadata"].get("deletionTimestamp"):
                blocked = True  # wait until it is gone, then create it again
            elif pod_terminal(p):
                self.delete(PODS, ns, p["metadata"]["name"], p["metadata"]["uid"])
                blocked = True
            elif not pod_running_ready(p):
                blocked = True
            if blocked and not parallel:
                break

        # Scale down: the highest ordinals first.
        condemned = sorted((i for i in pods if i >= want), reverse=True)
        if parallel:
            for i in condemned:
                self._delete_pod(pods[i])
        elif condemned and not blocked:
            if not any(pods[i]["metadata"].get("deletionTimestamp") for i in condemned):
                self._delete_pod(pods[condemned[0]])

        # Rolling update: one old-revision pod at a time, from the highest ordinal.
        strategy = spec.get("updateStrategy") or {}
        if (strategy.get("type") or "RollingUpdate") == "RollingUpdate" and not blocked \
                and not condemned:
            partition = _int((strategy.get("rollingUpdate") or {}).get("partition"))
            live = [pods[i] for i in range(want) if i in pods]
            if not any(p["metadata"].get("deletionTimestamp") for p in live):
                for i in sorted((i for i in pods if partition <= i < want), reverse=True):
                    labels = pods[i]["metadata"].get("labels") or {}
                    if labels.get(REVISION_LABEL) != update_rev:
                        self._delete_pod(pods[i])
                        break

        self._write_status(sts, update_rev)

    def _pods(self, sts):
        m = sts["metadata"]
        out = {}
        for p in self.store.list(PODS, m["namespace"], MATCH_ALL, MATCH_ALL)[0]:
            ref = controller_ref(p)
            if ref is None or ref.get("uid") != m["uid"]:
                continue
            i = ordinal(m["name"], p)
            if i is not None:
                out[i] = p
        return out

    def _delete_pod(self, pod):
        m = pod["metadata"]
        if not m.get("deletionTimestamp"):
            self.delete(PODS, m["namespace"], m["name"], m["uid"])

    def _create_pod(self, sts, i, revision):
        m, spec = sts["metadata"], sts.get("spec") or {}
        tmpl = copy.deepcopy(spec.get("template") or {})
        tm = tmpl.get("metadata") or {}
        name = "%s-%d" % (m["name"], i)
        labels = dict(tm.get("labels") or {})
        labels.update({REVISION_LABEL: revision, POD_NAME_LABEL: name, POD_INDEX_LABEL: str(i)})
        meta = {"name": name, "labels": labels, "ownerReferences": [owner_reference(sts)]}
        if tm.get("annotations"):
            meta["annotations"] = dict(tm["annotations"])
        if tm.get("finalizers"):
            meta["finalizers"] = list(tm["finalizers"])
        pspec = tmpl.get("spec") or {}
        pspec["hostname"] = name
        if spec.get("serviceName"):
            pspec["subdomain"] = spec["serviceName"]
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pspec}
        return self.create(PODS, m["namespace"], body)

    def _write_status(self, sts, update_rev):
        pods = [p for p in self._pods(sts).values() if not p["metadata"].get("deletionTimestamp")]
        old = sts.get("status") or {}
        current_rev = old.get("currentRevision") or update_rev
        want = _int((sts.get("spec") or {}).get("replicas"), 1)

        def revision(p):
            return (p["metadata"].get("labels") or {}).get(REVISION_LABEL)

        updated = sum(1 for p in pods if revision(p) == update_rev)
        if updated == want and len(pods) == want:
            current_rev = update_rev  # the rollout is over
        ready = sum(1 for p in pods if pod_running_ready(p))
        status = copy.deepcopy(old)
        status.update({
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(pods), "readyReplicas": ready, "availableReplicas": ready,
            "currentReplicas": sum(1 for p in pods if revision(p) == current_rev),
            "updatedReplicas": updated, "currentRevision": current_rev,
            "updateRevision": update_rev, "collisionCount": 0})
        for k in ("readyReplicas", "currentReplicas", "updatedReplicas"):
            if not status[k]:
                del status[k]  # omitempty; replicas and availableReplicas are always written
        self.write_status(STATEFULSETS, sts, status)
