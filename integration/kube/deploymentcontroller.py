"""Simulated Deployment and ReplicaSet controllers (apps/v1) for the test API server.

``DeploymentController`` (``--controllers deployment``) plays both controllers
of kube-controller-manager:

* ReplicaSets (those of Deployments and standalone ones): keeps
  ``spec.replicas`` active pods (not finished, not being deleted) made from
  ``spec.template``: ``generateName: <replicaset>-``, the template's labels,
  annotations and finalizers, a controller ownerReference (blockOwnerDeletion)
  to the ReplicaSet. Creates go through ``Store.create`` as a client's do, so
  the admission webhooks see them (a pod webhook may gate the pods; a denial
  is retried). Missing pods (deleted, or finished: a finished pod no longer
  counts) are replaced; surplus pods are deleted in Kubernetes' order
  (``controller.ActivePods``: unscheduled, pending, not ready, most recently
  started first). Status through ``/status``: ``replicas``,
  ``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas`` (ready
  for ``minReadySeconds``), ``observedGeneration``;
* Deployments: the ReplicaSet of the current template is the one whose
  template equals it but for the ``pod-template-hash`` label; without one a
  ReplicaSet ``<deployment>-<hash>`` is created (labels and selector plus
  ``pod-template-hash: <hash>``, controller ownerReference, annotations
  ``deployment.kubernetes.io/revision``, ``desired-replicas`` and
  ``max-replicas``; the Deployment gets the revision annotation too). Rollout:
  ``Recreate`` scales the old ReplicaSets to 0 and the new one up once their
  pods are gone; ``RollingUpdate`` (the default) scales the new ReplicaSet up
  within ``maxSurge`` and the old ones down within ``maxUnavailable`` (25 %
  each by default; surge rounded up, unavailable down), counting available
  pods, as the Deployment controller does; old ReplicaSets at 0 beyond
  ``revisionHistoryLimit`` are deleted. Status: ``replicas``,
  ``updatedReplicas``, ``readyReplicas``, ``availableReplicas``,
  ``unavailableReplicas``, ``observedGeneration`` and the conditions
  ``Available`` (``MinimumReplicasAvailable`` / ``MinimumReplicasUnavailable``)
  and ``Progressing`` (``NewReplicaSetCreated``, ``ReplicaSetUpdated``,
  ``NewReplicaSetAvailable``), so ``kubectl wait --for=condition=Available``
  works;
* a deleted Deployment or ReplicaSet (the garbage collector's part): its
  ReplicaSets, or pods, are deleted (apps/v1 defaults to background
  propagation); ``Orphan`` removes their ownerReference instead.

Not simulated: ``paused``, ``progressDeadlineSeconds`` (no
``ProgressDeadlineExceeded``), hash collisions (``collisionCount``), adoption
of orphans matching a selector, slow-start batches of pod creations, events.
"""

import copy
import math
import time

import controllers
from errors import ApiError
from kcommon import (MATCH_ALL, controller_ref, get_condition, now_rfc3339, owner_reference,
                     parse_time, pod_ready, pod_removal_order, pod_terminal, short_hash)
from resources import RES_BY_KEY

DEPLOYMENTS = RES_BY_KEY["deployments.apps"]
REPLICASETS = RES_BY_KEY["replicasets.apps"]
PODS = RES_BY_KEY["pods"]
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"


def _int(v, default=0):
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def replicas(obj):
    r = (obj.get("spec") or {}).get("replicas")
    return 1 if r is None else _int(r, 1)


def owned_by(obj, owner_kind, uid):
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == uid and ref.get("kind") == owner_kind


def scaled_value(value, total, round_up):
    """intstr.GetScaledValueFromIntOrPercent: an int, or a percentage of ``total``."""
    if isinstance(value, str) and value.endswith("%"):
        pct = _int(value[:-1])
        exact = pct * total / 100.0
        return int(math.ceil(exact)) if round_up else int(math.floor(exact))
    return _int(value)


def surge_and_unavailable(d):
    """deploymentutil.ResolveFenceposts: (maxSurge, maxUnavailable) of a RollingUpdate."""
    ru = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    want = replicas(d)
    surge = scaled_value(ru.get("maxSurge", "25%"), want, True)
    unavailable = scaled_value(ru.get("maxUnavailable", "25%"), want, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def template_hash(template):
    """The ``pod-template-hash`` of a pod template (stable; without the label itself)."""
    t = copy.deepcopy(template or {})
    ((t.get("metadata") or {}).get("labels") or {}).pop(HASH_LABEL, None)
    return short_hash(t)


def _without_hash(template):
    t = copy.deepcopy(template or {})
    labels = (t.get("metadata") or {}).get("labels")
    if labels is not None:
        labels.pop(HASH_LABEL, None)
    return t


def pod_available(pod, min_ready, now):
    """Ready for at least ``min_ready`` seconds (podutil.IsPodAvailable)."""
    if not pod_ready(pod) or (pod.get("status") or {}).get("phase") != "Running":
        return False
    if min_ready <= 0:
        return True
    since = (get_condition(pod, "Ready") or {}).get("lastTransitionTime")
    return bool(since) and parse_time(since) + min_ready <= now


def _set_deployment_condition(conds, ctype, status, reason, message, now):
    """deploymentutil.SetDeploymentCondition: kept as is when status and reason are the same."""
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") == status and c.get("reason") == reason:
                if c.get("message") != message:
                    c["message"], c["lastUpdateTime"] = message, now
                return
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            c.update(status=status, reason=reason, message=message, lastUpdateTime=now)
            return
    conds.append({"type": ctype, "status": status, "lastUpdateTime": now,
                  "lastTransitionTime": now, "reason": reason, "message": message})


class DeploymentController(controllers.Controller):
    """Deployments -> ReplicaSets -> pods (see the module docstring)."""

    NAME = "deployment"
    KINDS = ("Deployment", "ReplicaSet", "Pod")

    def __init__(self, app):
        self.delete_opts = {}  # uid -> DeleteOptions of the request that deleted it
        super().__init__(app)

    def initial_keys(self):
        keys = []
        for res, kind in ((DEPLOYMENTS, "deploy"), (REPLICASETS, "rs")):
            for o in self.store.list(res, None, MATCH_ALL, MATCH_ALL)[0]:
                keys.append((kind, o["metadata"]["namespace"], o["metadata"]["name"]))
        return keys

    def keys_for(self, ev):
        m = ev.obj["metadata"]
        ns = m.get("namespace")
        if ev.res is PODS:
            ref = controller_ref(ev.obj)
            if ref and ref.get("kind") == "ReplicaSet" and ref.get("apiVersion") == "apps/v1":
                return [("rs", ns, ref.get("name"))]
            return []
        if ev.opts is not None:
            self.delete_opts[m["uid"]] = ev.opts
        kind = "deploy" if ev.res is DEPLOYMENTS else "rs"
        keys = [("gc", kind, ns, m["name"], m["uid"])] if ev.type == "DELETED" \
            else [(kind, ns, m["name"])]
        ref = controller_ref(ev.obj)
        if kind == "rs" and ref and ref.get("kind") == "Deployment" \
                and ref.get("apiVersion") == "apps/v1":
            keys.append(("deploy", ns, ref.get("name")))
        return keys

    def sync(self, key):
        if key[0] == "gc":
            _, kind, ns, name, uid = key
            dependents = [REPLICASETS] if kind == "deploy" else [PODS]
            self.collect(uid, ns, dependents, self.delete_opts.pop(uid, None))
            return
        if key[0] == "rs":
            return self._sync_replicaset(key[1], key[2])
        return self._sync_deployment(key[1], key[2])

    # ------------------------------------------------------------ ReplicaSet
    def _pods(self, rs):
        m = rs["metadata"]
        return [p for p in self.store.list(PODS, m["namespace"], MATCH_ALL, MATCH_ALL)[0]
                if owned_by(p, "ReplicaSet", m["uid"])]

    def _sync_replicaset(self, ns, name):
        rs = self.get(REPLICASETS, ns, name)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        active = [p for p in self._pods(rs)
                  if not pod_terminal(p) and not p["metadata"].get("deletionTimestamp")]
        diff = replicas(rs) - len(active)
        if diff > 0:
            for _ in range(diff):
                self._create_pod(rs)
        elif diff < 0:
            for p in sorted(active, key=pod_removal_order)[:-diff]:
                self.delete(PODS, ns, p["metadata"]["name"], p["metadata"]["uid"])
        if diff:
            active = [p for p in self._pods(rs)
                      if not pod_terminal(p) and not p["metadata"].get("deletionTimestamp")]
        now = time.time()
        min_ready = _int((rs.get("spec") or {}).get("minReadySeconds"))
        tmpl_labels = (((rs.get("spec") or {}).get("template") or {}).get("metadata")
                       or {}).get("labels") or {}
        status = copy.deepcopy(rs.get("status") or {})
        status.update({
            "replicas": len(active),
            "fullyLabeledReplicas": sum(1 for p in active if all(
                (p["metadata"].get("labels") or {}).get(k) == v for k, v in tmpl_labels.items())),
            "readyReplicas": sum(1 for p in active if pod_ready(p)),
            "availableReplicas": sum(1 for p in active if pod_available(p, min_ready, now)),
            "observedGeneration": rs["metadata"].get("generation", 1)})
        for k in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if not status[k]:
                del status[k]  # omitempty; replicas is always written
        self.write_status(REPLICASETS, rs, status)
        if min_ready > 0 and status.get("readyReplicas", 0) > status.get("availableReplicas", 0):
            self.after(min_ready / 2.0, ("rs", ns, name))

    def _create_pod(self, rs):
        m = rs["metadata"]
        tmpl = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
        tm = tmpl.get("metadata") or {}
        meta = {"generateName": m["name"] + "-", "labels": dict(tm.get("labels") or {}),
                "ownerReferences": [owner_reference(rs)]}
        if tm.get("annotations"):
            meta["annotations"] = dict(tm["annotations"])
        if tm.get("finalizers"):
            meta["finalizers"] = list(tm["finalizers"])
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": tmpl.get("spec") or {}}
        return self.create(PODS, m["namespace"], body)

    # ------------------------------------------------------------ Deployment
    def _replicasets(self, d):
        m = d["metadata"]
        out = [rs for rs in self.store.list(REPLICASETS, m["namespace"], MATCH_ALL, MATCH_ALL)[0]
               if owned_by(rs, "Deployment", m["uid"])]
        return sorted(out, key=lambda rs: (rs["metadata"].get("creationTimestamp", ""),
                                           rs["metadata"]["name"]))

    def _sync_deployment(self, ns, name):
        d = self.get(DEPLOYMENTS, ns, name)
        if d is None or d["metadata"].get("deletionTimestamp"):
            return
        spec = d.get("spec") or {}
        want = replicas(d)
        template = spec.get("template") or {}
        all_rs = self._replicasets(d)
        current = _without_hash(template)
        new = next((rs for rs in all_rs if _without_hash(
            (rs.get("spec") or {}).get("template")) == current), None)
        old = [rs for rs in all_rs if rs is not new]
        revisions = [_int((rs["metadata"].get("annotations") or {}).get(REVISION))
                     for rs in all_rs]
        created = False
        if new is None:
            revision = max(revisions or [0]) + 1
            new = self._create_replicaset(d, revision)
            created = True
        revision = (new["metadata"].get("annotations") or {}).get(REVISION, "1")
        if (d["metadata"].get("annotations") or {}).get(REVISION) != revision:
            body = copy.deepcopy(d)
            body["metadata"].setdefault("annotations", {})[REVISION] = revision
            d = self.store.update(DEPLOYMENTS, ns, name, body)

        strategy = (spec.get("strategy") or {}).get("type") or "RollingUpdate"
        if strategy == "Recreate":
            for rs in old:
                if replicas(rs) != 0:
                    self._scale(rs, 0, d)
            if all(_int((rs.get("status") or {}).get("replicas")) == 0
                   and replicas(rs) == 0 for rs in old):
                self._scale(new, want, d)
        else:
            self._rolling(d, new, old, want)
        self._cleanup(d, old)
        self._write_status(d, new, created)

    def _create_replicaset(self, d, revision):
        m, spec = d["metadata"], d.get("spec") or {}
        tmpl = copy.deepcopy(spec.get("template") or {})
        h = template_hash(tmpl)
        tmpl.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        sel = copy.deepcopy(spec.get("selector") or {})
        sel.setdefault("matchLabels", {})[HASH_LABEL] = h
        surge, _ = surge_and_unavailable(d)
        want = replicas(d)
        initial = want
        if ((spec.get("strategy") or {}).get("type") or "RollingUpdate") == "RollingUpdate" \
                and self._replicasets(d):
            initial = 0  # scaled up by the rollout, within maxSurge
        body = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "%s-%s" % (m["name"], h),
                             "labels": dict(tmpl["metadata"]["labels"]),
                             "annotations": {REVISION: str(revision), DESIRED: str(want),
                                             MAX_REPLICAS: str(want + surge)},
                             "ownerReferences": [owner_reference(d)]},
                "spec": {"replicas": initial, "minReadySeconds": _int(spec.get("minReadySeconds")),
                         "selector": sel, "template": tmpl}}
        try:
            return self.store.create(REPLICASETS, m["namespace"], body)
        except ApiError as e:
            if e.code == 409 and e.reason == "AlreadyExists":
                got = self.get(REPLICASETS, m["namespace"], body["metadata"]["name"])
                if got is not None and owned_by(got, "Deployment", m["uid"]):
                    return got
            raise

    def _scale(self, rs, n, d):
        if replicas(rs) == n:
            return rs
        body = copy.deepcopy(rs)
        body["spec"]["replicas"] = n
        ann = body["metadata"].setdefault("annotations", {})
        surge, _ = surge_and_unavailable(d)
        ann[DESIRED], ann[MAX_REPLICAS] = str(replicas(d)), str(replicas(d) + surge)
        m = rs["metadata"]
        return self.store.update(REPLICASETS, m["namespace"], m["name"], body)

    def _rolling(self, d, new, old, want):
        """rolloutRolling: scale the new ReplicaSet up, then the old ones down, within bounds."""
        surge, unavailable = surge_and_unavailable(d)
        total = replicas(new) + sum(replicas(rs) for rs in old)
        if replicas(new) < want:
            room = want + surge - total
            if room > 0:
                new = self._scale(new, min(want, replicas(new) + room), d)
        elif replicas(new) > want:
            new = self._scale(new, want, d)
        live_old = [rs for rs in old if replicas(rs) > 0]
        if not live_old:
            return
        all_pods = replicas(new) + sum(replicas(rs) for rs in live_old)
        new_unavailable = replicas(new) - _int((new.get("status") or {}).get("availableReplicas"))
        budget = all_pods - (want - unavailable) - max(new_unavailable, 0)
        if budget <= 0:
            return
        # Old ReplicaSets' unavailable pods go first, then the oldest ReplicaSets' pods.
        for rs in live_old:
            bad = replicas(rs) - _int((rs.get("status") or {}).get("availableReplicas"))
            cut = min(max(bad, 0), budget)
            if cut:
                rs = self._scale(rs, replicas(rs) - cut, d)
                budget -= cut
        for rs in live_old:
            current = self.get(REPLICASETS, rs["metadata"]["namespace"], rs["metadata"]["name"])
            if budget <= 0 or current is None:
                break
            cut = min(replicas(current), budget)
            if cut:
                self._scale(current, replicas(current) - cut, d)
                budget -= cut

    def _cleanup(self, d, old):
        limit = _int((d.get("spec") or {}).get("revisionHistoryLimit"), 10)
        idle = [rs for rs in old if replicas(rs) == 0
                and _int((rs.get("status") or {}).get("replicas")) == 0
                and not rs["metadata"].get("deletionTimestamp")]
        idle.sort(key=lambda rs: _int((rs["metadata"].get("annotations") or {}).get(REVISION)))
        for rs in idle[:max(len(idle) - limit, 0)]:
            m = rs["metadata"]
            self.delete(REPLICASETS, m["namespace"], m["name"], m["uid"],
                        propagation="Background")

    def _write_status(self, d, new, created):
        all_rs = self._replicasets(d)
        new = next((rs for rs in all_rs if rs["metadata"]["uid"] == new["metadata"]["uid"]), new)
        want = replicas(d)
        _, unavailable = surge_and_unavailable(d)

        def total(field):
            return sum(_int((rs.get("status") or {}).get(field)) for rs in all_rs)

        nst = new.get("status") or {}
        status = copy.deepcopy(d.get("status") or {})
        status.update({
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": total("replicas"),
            "updatedReplicas": _int(nst.get("replicas")),
            "readyReplicas": total("readyReplicas"),
            "availableReplicas": total("availableReplicas"),
            "unavailableReplicas": max(sum(replicas(rs) for rs in all_rs)
                                       - total("availableReplicas"), 0)})
        for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                  "unavailableReplicas"):
            if not status[k]:
                del status[k]  # omitempty
        now = now_rfc3339()
        conds = status.setdefault("conditions", [])
        if status.get("availableReplicas", 0) >= want - unavailable:
            _set_deployment_condition(conds, "Available", "True", "MinimumReplicasAvailable",
                                      "Deployment has minimum availability.", now)
        else:
            _set_deployment_condition(conds, "Available", "False", "MinimumReplicasUnavailable",
                                      "Deployment does not have minimum availability.", now)
        rs_name = new["metadata"]["name"]
        complete = (status.get("updatedReplicas", 0) == want
                    and status.get("replicas", 0) == want
                    and status.get("availableReplicas", 0) == want
                    and _int(nst.get("availableReplicas")) == want)
        before = d.get("status") or {}
        progressed = any(status.get(k, 0) != before.get(k, 0) for k in (
            "replicas", "updatedReplicas", "readyReplicas", "availableReplicas"))
        if complete:
            _set_deployment_condition(conds, "Progressing", "True", "NewReplicaSetAvailable",
                                      'ReplicaSet "%s" has successfully progressed.' % rs_name,
                                      now)
        elif created:
            _set_deployment_condition(conds, "Progressing", "True", "NewReplicaSetCreated",
                                      'Created new replica set "%s"' % rs_name, now)
        elif progressed or get_condition({"status": status}, "Progressing") is None:
            _set_deployment_condition(conds, "Progressing", "True", "ReplicaSetUpdated",
                                      'ReplicaSet "%s" is progressing.' % rs_name, now)
        self.write_status(DEPLOYMENTS, d, status)
