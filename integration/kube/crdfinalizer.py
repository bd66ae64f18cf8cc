"""The cleanup finalizer of CustomResourceDefinitions in the test API server.

``CRDFinalizer`` is the controller that lets a deleted CRD go (crds.py marks
it with the ``customresourcecleanup.apiextensions.k8s.io`` finalizer and a
``Terminating`` condition on its first DELETE). It is part of the API server:
apiserver.py always starts it, it is not a ``--controllers`` option.
"""

import copy

import controllers
from crds import CLEANUP_FINALIZER, CRD_RES, set_crd_condition
from kcommon import MATCH_ALL, now_rfc3339


class CRDFinalizer(controllers.Controller):
    """Deletes the custom resources of a CRD being deleted, then lets the CRD go.

    As apiextensions-apiserver's finalizing controller: condition
    ``Terminating=True`` ``InstanceDeletionInProgress``, every instance deleted
    (finalizers of the instances are waited for: the CRD stays until they are
    gone), then ``Terminating=False`` ``InstanceDeletionCompleted`` and the
    ``customresourcecleanup.apiextensions.k8s.io`` finalizer removed through
    ``/status`` (which, for CRDs, keeps the finalizers of the request).
    """

    NAME = "crd-finalizer"

    def _on_event(self, event):
        if event.res.kind == "CustomResourceDefinition" and event.res.group == CRD_RES.group:
            self.queue.put(event)
        elif event.res.crd is not None and event.type == "DELETED":
            self.queue.put(event)

    def initial_keys(self):
        items, _ = self.store.list(CRD_RES, None, MATCH_ALL, MATCH_ALL)
        return [o["metadata"]["name"] for o in items if o["metadata"].get("deletionTimestamp")]

    def keys_for(self, ev):
        if ev.res.crd is not None:
            return [ev.res.crd]
        if ev.type != "DELETED" and ev.obj["metadata"].get("deletionTimestamp"):
            return [ev.obj["metadata"]["name"]]
        return []

    def sync(self, name):
        crd = self.get(CRD_RES, None, name)
        if crd is None or not crd["metadata"].get("deletionTimestamp"):
            return
        if CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or []):
            return
        status = copy.deepcopy(crd.get("status") or {})
        set_crd_condition(status, "Terminating", "True", "InstanceDeletionInProgress",
                          "CustomResource deletion is in progress", now_rfc3339())
        crd = self.write_status(CRD_RES, crd, status)
        res = self.store.registry.by_key(name)
        remaining = 0
        if res is not None:
            items, _ = self.store.list(res, None, MATCH_ALL, MATCH_ALL)
            for o in items:
                m = o["metadata"]
                remaining += 1
                if not m.get("deletionTimestamp"):
                    self.delete(res, m.get("namespace"), m["name"], m["uid"])
            items, _ = self.store.list(res, None, MATCH_ALL, MATCH_ALL)
            remaining = len(items)
        if remaining:
            self.after(1.0, name)  # instances with finalizers: look again later
            return
        body = copy.deepcopy(crd)
        set_crd_condition(body["status"], "Terminating", "False", "InstanceDeletionCompleted",
                          "removed all instances", now_rfc3339())
        body["metadata"]["finalizers"] = [f for f in body["metadata"].get("finalizers") or []
                                          if f != CLEANUP_FINALIZER]
        self.store.update(CRD_RES, None, name, body, "status")
