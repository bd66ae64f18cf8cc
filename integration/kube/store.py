"""The object store of the test API server.

``Store`` holds every object, the one global resourceVersion counter and a
bounded history of watch events (``WatchEvent``) that watches read and that
``compact()`` drops; it implements get, list, create, update, patch and delete
with resourceVersion and UID preconditions, finalizers and grace periods.

Extension points (webhooks.py adds the admission webhook hook):
* ``Store.admission``: callables ``hook(req)`` run on every create/update/
  delete before the write, in order; ``req`` is an ``AdmissionRequest``; a hook
  may replace ``req.object`` (mutation) or raise ``ApiError`` (denial).
* ``Store.listeners``: callables ``fn(event)`` run after every committed
  write with a ``WatchEvent``; they run under the store lock and must not block
  (queue the work). ``controllers.py`` builds simulated controllers on them;
  ``WatchEvent.opts`` carries the DeleteOptions of a delete.
``Store.bind`` is the pod binding subresource (``POST pods/<name>/binding``);
``Store.get_scale``, ``update_scale`` and ``patch_scale`` the scale subresource
of Deployments, ReplicaSets and StatefulSets (scale.py: the admission hooks see
autoscaling/v1 Scale objects, subresource ``scale``).

``Store.registry`` (resources.Registry) holds the served resources; every
write of a CustomResourceDefinition updates it (crds.sync_registry). Custom
resources are stored at their storage version and returned at the version
asked for (``Resource.present``).
"""

import collections
import copy
import threading
import uuid

import crds
import kpatch
import scale
from errors import (ApiError, FieldError, already_exists, bad_request, conflict, forbidden,
                    invalid, not_found, unsupported_media_type)
from kcommon import now_rfc3339, random_suffix
from objects import (name_errors, prepare_for_create, prepare_for_update, validate_create,
                     validate_update)
from resources import RES_BY_KEY, RESOURCES, Registry

# ``opts``: the DeleteOptions of the delete request that wrote the event (None otherwise).
WatchEvent = collections.namedtuple("WatchEvent", "rv res type obj prev opts", defaults=(None,))


class AdmissionRequest:
    """What an admission hook sees; it may replace ``object``."""

    def __init__(self, operation, res, subresource, namespace, name, obj, old, dry_run):
        self.operation, self.res, self.subresource = operation, res, subresource
        self.namespace, self.name = namespace, name
        self.object, self.old_object, self.dry_run = obj, old, dry_run


def _strip_rv(obj):
    o = dict(obj)
    m = dict(o.get("metadata") or {})
    m.pop("resourceVersion", None)
    m.pop("managedFields", None)
    o["metadata"] = m
    return o


class Store:
    """All objects, one global resourceVersion counter and a bounded event history."""

    def __init__(self, history_size=10000):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 0
        self.objects = {r.key: {} for r in RESOURCES}
        self.registry = Registry()
        self.history = collections.deque()
        self.history_size = history_size
        self.compacted_rv = 0  # events with rv <= compacted_rv are gone
        self.admission = []
        self.listeners = []
        self.features = {}  # feature gates (updaterules.feature_gates); none on by default

    # ------------------------------------------------------------- internals
    def _commit(self, res, typ, obj, prev, opts=None):
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        if res.crd is not None:
            obj["apiVersion"] = res.storage_api_version
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if typ == "DELETED":
            self.objects[res.key].pop(key, None)
        else:
            self.objects[res.key][key] = obj
        ev = WatchEvent(self.rv, res, typ, obj, prev, opts)
        if res is crds.CRD_RES:
            crds.sync_registry(self, obj, typ)
        self.history.append(ev)
        while len(self.history) > self.history_size:
            self.compacted_rv = self.history.popleft().rv
        for fn in self.listeners:
            fn(ev)
        self.cond.notify_all()
        return obj

    def compact(self):
        """Drop the whole event history (as an etcd compaction would)."""
        with self.lock:
            self.history.clear()
            self.compacted_rv = self.rv

    def _admit(self, op, res, sub, ns, name, obj, old, dry_run):
        req = AdmissionRequest(op, res, sub, ns, name, obj, old, dry_run)
        for hook in self.admission:
            hook(req)
        return req.object

    def events_since(self, rv):
        """Events with rv > ``rv``; None when ``rv`` is older than the history."""
        with self.lock:
            if rv < self.compacted_rv:
                return None
            start = rv - self.compacted_rv
            if start >= len(self.history):
                return []
            return [self.history[i] for i in range(start, len(self.history))]

    def _get(self, res, ns, name):
        return self.objects[res.key].get((ns if res.namespaced else "", name))

    # ------------------------------------------------------------ reads
    def get(self, res, ns, name):
        with self.lock:
            obj = self._get(res, ns, name)
            if obj is None:
                raise not_found(res, name)
            return res.present(obj)

    def list(self, res, ns, lsel, fsel):
        with self.lock:
            items = [res.present(o) for (ons, _), o in sorted(self.objects[res.key].items())
                     if (ns is None or ons == ns) and lsel.matches(o["metadata"].get("labels"))
                     and fsel.matches(o)]
            return items, self.rv

    # ------------------------------------------------------------ create
    def create(self, res, ns, body, dry_run=False):
        if not isinstance(body, dict):
            raise bad_request("the object provided is unrecognized (must be of type %s)" % res.kind)
        obj = copy.deepcopy(body)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        with self.lock:
            if res.namespaced:
                if meta.get("namespace") and meta["namespace"] != ns:
                    raise bad_request("the namespace of the provided object does not match "
                                      "the namespace sent on the request")
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            name = meta.get("name") or ""
            if not name and meta.get("generateName"):
                name = meta["generateName"] + random_suffix()
                meta["name"] = name
            if not name:
                raise invalid(res, "", [FieldError("Required", "metadata.name",
                                                   "name or generateName is required")])
            errs = name_errors(res, name)
            if errs:
                raise invalid(res, name, errs)
            if res.namespaced:
                nsobj = self.objects["namespaces"].get(("", ns))
                if nsobj is None:
                    raise not_found(RES_BY_KEY["namespaces"], ns)
                if nsobj["metadata"].get("deletionTimestamp"):
                    raise forbidden(res, name, "unable to create new content in namespace %s "
                                    "because it is being terminated" % ns)
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
            for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "managedFields"):
                meta.pop(k, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            if res.generation:
                meta["generation"] = 1
            else:
                meta.pop("generation", None)
            prepare_for_create(res, obj)
            errs = validate_create(res, obj)
            if errs:
                raise invalid(res, name, errs)
            obj = self._admit("CREATE", res, "", ns, name, obj, None, dry_run)
            if self._get(res, ns, name) is not None:
                raise already_exists(res, name)
            if dry_run:
                return obj
            return res.present(self._commit(res, "ADDED", obj, None))

    # ------------------------------------------------------------ update
    def update(self, res, ns, name, body, sub="", dry_run=False, old=None):
        if not isinstance(body, dict):
            raise bad_request("the object provided is unrecognized (must be of type %s)" % res.kind)
        with self.lock:
            if old is None:
                old = self._get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            meta = body.get("metadata") or {}
            if meta.get("name") and meta["name"] != name:
                raise bad_request("the name of the object (%s) does not match the name on the "
                                  "URL (%s)" % (meta["name"], name))
            if res.namespaced and meta.get("namespace") and meta["namespace"] != ns:
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            rv = meta.get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(res, name)
            if meta.get("uid") and meta["uid"] != old["metadata"]["uid"]:
                raise conflict(res, name, "Precondition failed: UID in precondition: %s, UID in "
                               "object meta: %s" % (old["metadata"]["uid"], meta["uid"]))
            if sub == "status":
                new = copy.deepcopy(old)
                if "status" in body:
                    new["status"] = copy.deepcopy(body["status"])
                else:
                    new.pop("status", None)
                if res is crds.CRD_RES and isinstance(meta.get("finalizers"), list):
                    # The CRD status strategy resets only spec, labels, annotations, owners.
                    new["metadata"]["finalizers"] = list(meta["finalizers"])
                    if not new["metadata"]["finalizers"]:
                        del new["metadata"]["finalizers"]
                if res.crd is not None:
                    crds.prepare_status_update(res, new)
            else:
                new = copy.deepcopy(body)
                new["metadata"] = copy.deepcopy(meta)
                if res.has_status:
                    if "status" in old:
                        new["status"] = copy.deepcopy(old["status"])
                    else:
                        new.pop("status", None)
                prepare_for_update(res, new, old)
            nm, om = new["metadata"], old["metadata"]
            for k in ("uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation"):
                if k in om:
                    nm[k] = om[k]
                else:
                    nm.pop(k, None)
            nm["name"] = name
            if res.namespaced:
                nm["namespace"] = ns
            else:
                nm.pop("namespace", None)
            nm.pop("managedFields", None)
            new["apiVersion"], new["kind"] = res.api_version, res.kind
            errs = validate_update(res, new, old, sub, self.features)
            if errs:
                raise invalid(res, name, errs)
            new = self._admit("UPDATE", res, sub, ns, name, new, res.present(old), dry_run)
            if res.crd is not None:
                new["apiVersion"] = res.storage_api_version
            if res.generation and res.spec_changed(new, old):
                new["metadata"]["generation"] = om.get("generation", 0) + 1
            new["metadata"]["resourceVersion"] = om["resourceVersion"]
            if _strip_rv(new) == _strip_rv(old):
                return res.present(old)  # no-op update: no new resourceVersion, no watch event
            if dry_run:
                return res.present(new)
            nm = new["metadata"]
            pending = list(nm.get("finalizers") or [])
            if res.kind == "Namespace" and res.crd is None:
                pending += list((new.get("spec") or {}).get("finalizers") or [])
            if (nm.get("deletionTimestamp") and not pending
                    and nm.get("deletionGracePeriodSeconds", 0) == 0):
                return res.present(self._commit(res, "DELETED", new, old))
            return res.present(self._commit(res, "MODIFIED", new, old))

    # ------------------------------------------------------------- patch
    @staticmethod
    def _apply_patch(obj, ptype, patch, kind):
        """``obj`` patched (a new object); 400, 415 or 422 when the patch does not apply."""
        try:
            if ptype == "application/merge-patch+json":
                if not isinstance(patch, dict):
                    raise kpatch.PatchError("json: cannot unmarshal into object", 400)
                patched = kpatch.merge_patch(obj, patch)
            elif ptype == "application/json-patch+json":
                patched = kpatch.json_patch(obj, patch)
            elif ptype == "application/strategic-merge-patch+json":
                patched = kpatch.strategic_merge_patch(obj, patch, kind)
            else:
                raise unsupported_media_type(ptype)
        except kpatch.PatchError as e:
            if e.code == 400:
                raise bad_request(str(e))
            raise ApiError(422, "Invalid", "the server rejected our request due to an error "
                           "in our request", {"causes": [{"reason": "UnexpectedServerResponse",
                                                          "message": str(e)}]})
        if not isinstance(patched, dict):
            raise bad_request("the patched object is not an object")
        return patched

    def patch(self, res, ns, name, ptype, patch, sub="", dry_run=False):
        with self.lock:
            old = self._get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            patched = self._apply_patch(old, ptype, patch, res.kind)
            meta = patched.get("metadata")
            if not isinstance(meta, dict):
                patched["metadata"] = meta = {}
            if meta.get("name") not in (None, name):
                raise bad_request("the name of the object (%s) does not match the name on the "
                                  "URL (%s)" % (meta.get("name"), name))
            return self.update(res, ns, name, patched, sub, dry_run, old=old)

    # ------------------------------------------------------------- scale
    def get_scale(self, res, ns, name):
        """GET <parent>/<name>/scale: the autoscaling/v1 Scale of the object."""
        with self.lock:
            obj = self._get(res, ns, name)
            if obj is None:
                raise not_found(res, name)
            return scale.scale_of(obj)

    def update_scale(self, res, ns, name, body, dry_run=False, old=None):
        """PUT <parent>/<name>/scale: set the parent's ``spec.replicas`` from a Scale.

        The Scale's resourceVersion and uid are preconditions (409); the
        admission hooks see Scale objects; then the parent is written as any
        spec change is (validation, generation, a MODIFIED event; nothing when
        the replicas do not change). Returns the new Scale.
        """
        with self.lock:
            if old is None:
                old = self._get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            req = scale.decode(body, ns, name)
            errs = scale.validate(req)
            if errs:
                raise invalid(scale.SCALE, name, errs)
            meta, om = req["metadata"], old["metadata"]
            if meta.get("resourceVersion") and meta["resourceVersion"] != om["resourceVersion"]:
                raise conflict(res, name)
            if meta.get("uid") and meta["uid"] != om["uid"]:
                raise conflict(scale.subresource(res), name, "Precondition failed: UID in "
                               "precondition: %s, UID in object meta: %s"
                               % (om["uid"], meta["uid"]))
            req = self._admit("UPDATE", res, "scale", ns, name, req, scale.scale_of(old),
                              dry_run)
            errs = scale.validate(req)
            if errs:
                raise invalid(scale.SCALE, name, errs)
            new = scale.with_replicas(old, scale.replicas(req))
            errs = validate_update(res, new, old, "scale", self.features)
            if errs:
                raise invalid(res, name, errs)
            if res.generation and res.spec_changed(new, old):
                new["metadata"]["generation"] = om.get("generation", 0) + 1
            if new == old:
                return scale.scale_of(old)  # no-op: no new resourceVersion, no watch event
            if dry_run:
                return scale.scale_of(new)
            return scale.scale_of(self._commit(res, "MODIFIED", new, old))

    def patch_scale(self, res, ns, name, ptype, patch, dry_run=False):
        """PATCH <parent>/<name>/scale: the patch applies to the Scale, then ``update_scale``."""
        with self.lock:
            old = self._get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            patched = self._apply_patch(scale.scale_of(old), ptype, patch, scale.KIND)
            return self.update_scale(res, ns, name, patched, dry_run, old=old)

    # ------------------------------------------------------------ delete
    def delete(self, res, ns, name, opts, dry_run=False):
        with self.lock:
            old = self._get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            pre = opts.get("preconditions") or {}
            om = old["metadata"]
            if pre.get("uid") and pre["uid"] != om["uid"]:
                raise conflict(res, name, "Precondition failed: UID in precondition: %s, UID in "
                               "object meta: %s" % (pre["uid"], om["uid"]))
            if pre.get("resourceVersion") and pre["resourceVersion"] != om["resourceVersion"]:
                raise conflict(res, name, "Precondition failed: ResourceVersion in precondition: "
                               "%s, ResourceVersion in object meta: %s"
                               % (pre["resourceVersion"], om["resourceVersion"]))
            self._admit("DELETE", res, "", ns, name, None, res.present(old), dry_run)
            if res is crds.CRD_RES and not om.get("deletionTimestamp"):
                old = crds.mark_for_deletion(old)  # the cleanup finalizer holds it
                om = old["metadata"]
            grace = self._grace_period(res, old, opts)
            finalizers = list(om.get("finalizers") or [])
            if res.kind == "Namespace" and res.crd is None:
                finalizers += list((old.get("spec") or {}).get("finalizers") or [])
            if not finalizers and grace == 0:
                if dry_run:
                    return res.present(old), True
                return res.present(self._commit(res, "DELETED", old, old, opts)), True
            # Graceful or blocked by finalizers: mark and keep.
            new = copy.deepcopy(old)
            nm = new["metadata"]
            if nm.get("deletionTimestamp"):
                cur = nm.get("deletionGracePeriodSeconds", 0)
                if grace >= cur:
                    return res.present(old), False
            nm["deletionTimestamp"] = now_rfc3339(grace)
            nm["deletionGracePeriodSeconds"] = grace
            if res.kind == "Namespace" and res.crd is None:
                new.setdefault("status", {})["phase"] = "Terminating"
            if res.generation and "generation" in nm and (res.kind != "Pod" or res.crd):
                nm["generation"] += 1
            if dry_run:
                return res.present(new), False
            if not finalizers and grace == 0:
                return res.present(self._commit(res, "DELETED", new, old, opts)), True
            return res.present(self._commit(res, "MODIFIED", new, old, opts)), False

    # ------------------------------------------------------------ binding
    def bind(self, ns, name, body, dry_run=False):
        """POST pods/<name>/binding: set spec.nodeName and PodScheduled=True in one write.

        As the pod binding registry does (``assignPod``): 409 when the pod is
        already bound or being deleted; UID precondition from the Binding's
        metadata.uid.
        """
        res = RES_BY_KEY["pods"]
        if not isinstance(body, dict) or not isinstance(body.get("target"), dict):
            raise bad_request("the object provided is unrecognized (must be of type Binding)")
        node = body["target"].get("name") or ""
        if not node:
            raise invalid(RES_BY_KEY["pods"], name, [FieldError("Required", "target.name", "")])
        with self.lock:
            old = self._get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            uid = (body.get("metadata") or {}).get("uid")
            if uid and uid != old["metadata"]["uid"]:
                raise conflict(res, name, "Precondition failed: UID in precondition: %s, UID in "
                               "object meta: %s" % (uid, old["metadata"]["uid"]))
            if old["metadata"].get("deletionTimestamp"):
                raise conflict(res, name, "pod %s is being deleted, cannot be assigned to a "
                               "host" % name)
            if (old.get("spec") or {}).get("nodeName"):
                raise conflict(res, name, "pod %s is already assigned to node \"%s\""
                               % (name, old["spec"]["nodeName"]))
            if (old.get("spec") or {}).get("schedulingGates"):
                raise conflict(res, name, "pod %s has non-empty .spec.schedulingGates" % name)
            new = copy.deepcopy(old)
            new["spec"]["nodeName"] = node
            conds = [c for c in new.setdefault("status", {}).get("conditions") or []
                     if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": now_rfc3339()})
            new["status"]["conditions"] = conds
            self._admit("CREATE", res, "binding", ns, name, body, None, dry_run)
            if dry_run:
                return new
            return self._commit(res, "MODIFIED", new, old)

    @staticmethod
    def _grace_period(res, obj, opts):
        if res.kind != "Pod" or res.crd is not None:
            return 0
        spec, st = obj.get("spec") or {}, obj.get("status") or {}
        if opts.get("gracePeriodSeconds") is not None:
            grace = int(opts["gracePeriodSeconds"])
        else:
            grace = int(spec.get("terminationGracePeriodSeconds", 30))
        if not spec.get("nodeName") or st.get("phase") in ("Succeeded", "Failed"):
            grace = 0
        if grace < 0:
            grace = 1
        return grace
