"""The controller runtime of the test API server: base class, work queue and start-up.

A simulated controller is a ``Controller`` subclass with a ``NAME``.
``start(app, names, available)`` instantiates the named ones (the
``--controllers`` option) from the classes ``available``; apiserver.py, the
entry point, passes the list of concrete controllers. This module imports
none of them: they import it. The controllers are ``jobcontroller.py``
(batch/v1 Job controller), ``scheduler.py`` (binds pods to fake nodes),
``kubelet.py`` (pod phases, graceful termination),
``deploymentcontroller.py`` (Deployments and ReplicaSets),
``statefulsetcontroller.py`` (StatefulSets), ``rayclustercontroller.py``
and ``rayjobcontroller.py`` (KubeRay's RayCluster and RayJob controllers),
``jobsetcontroller.py`` (JobSet) and ``pytorchjobcontroller.py`` (the
training operator's PyTorchJob); ``crdfinalizer.py`` (deletes the custom
resources of a deleted CRD) is built on the same base and always runs.

How they work: ``Store.listeners`` calls ``_on_event`` with every committed
``store.WatchEvent`` while the store lock is held, so it only queues the
event. The controller's daemon thread takes events off the queue, turns them
into keys (``keys_for(event)``, which may also record what the event showed)
and calls ``sync(key)`` once per distinct key, level-triggered, reading and
writing through ``app.store`` like an API client does (create, update with a
resourceVersion precondition, the status subresource, delete, the pod binding),
so admission hooks (the admission webhooks included), watch events and 409
conflicts apply to them too. A sync that raises (a 409 included) is retried
after a short back-off. ``after(delay, key)`` schedules a later sync (the
kubelet's timers).

Events queued: those of the built-in kinds named in ``KINDS`` and of the
custom resources named in ``CUSTOM`` (``(group, plural)`` pairs). Helpers for
the concrete controllers: ``get``, ``custom`` (the served resource of a custom
kind, None while its CRD is missing), ``write_status``, ``create`` (with
``generateName`` retries), ``delete`` (UID precondition, grace period,
propagation policy) and ``collect`` (the garbage collector's part: the
dependents of a deleted owner deleted or orphaned).
"""

import copy
import heapq
import itertools
import queue
import sys
import threading
import time
import traceback

from errors import ApiError
from kcommon import MATCH_ALL, controller_ref

class Controller:
    """Base: queue store events, sync the keys they map to on a daemon thread."""

    NAME = ""
    KINDS = ()  # built-in kinds whose events are queued
    CUSTOM = ()  # (group, plural) of the custom resources whose events are queued

    def __init__(self, app):
        self.app = app
        self.store = app.store
        self.queue = queue.Queue()
        self.timers = []  # heap of (when, seq, key)
        self._seq = itertools.count()
        self.failures = {}
        app.store.listeners.append(self._on_event)
        self.thread = threading.Thread(target=self._loop, name=self.NAME, daemon=True)
        self.thread.start()

    # ---------------------------------------------------------- plumbing
    def stop(self):
        """Stop listening and end the worker thread (for in-process servers)."""
        if self._on_event in self.store.listeners:
            self.store.listeners.remove(self._on_event)
        self.queue.put(None)

    def _on_event(self, event):
        res = event.res
        if (res.kind in self.KINDS and res.crd is None) or (
                res.crd is not None and (res.group, res.plural) in self.CUSTOM):
            self.queue.put(event)

    def after(self, delay, key):
        """Sync ``key`` again in ``delay`` seconds (only call from the worker thread)."""
        heapq.heappush(self.timers, (time.time() + max(0.0, delay), next(self._seq), key))

    def _loop(self):
        for key in self.initial_keys():
            self.after(0, key)
        while True:
            timeout = None
            if self.timers:
                timeout = max(0.0, self.timers[0][0] - time.time())
            events = []
            try:
                events.append(self.queue.get(timeout=timeout))
                while True:
                    events.append(self.queue.get_nowait())
            except queue.Empty:
                pass
            if None in events:
                return
            dirty = {}
            for ev in events:
                try:
                    for key in self.keys_for(ev):
                        dirty[key] = None
                except Exception:  # a bug here must not end the worker thread
                    sys.stderr.write("%s: event %s %s failed:\n" % (self.NAME, ev.type, ev.rv))
                    traceback.print_exc()
            now = time.time()
            while self.timers and self.timers[0][0] <= now:
                dirty[heapq.heappop(self.timers)[2]] = None
            for key in dirty:
                self._sync_one(key)

    def _sync_one(self, key):
        try:
            self.sync(key)
            self.failures.pop(key, None)
        except Exception as e:  # retry with back-off; 409s land here too
            n = self.failures[key] = self.failures.get(key, 0) + 1
            if isinstance(e, ApiError):
                if e.code != 409:  # e.g. a webhook's denial: retried, as a controller would
                    sys.stderr.write("%s: sync %r failed (attempt %d): %d %s: %s\n"
                                     % (self.NAME, key, n, e.code, e.reason, e.message))
            else:
                sys.stderr.write("%s: sync %r failed (attempt %d):\n" % (self.NAME, key, n))
                traceback.print_exc()
            self.after(min(0.05 * (2 ** min(n, 6)), 2.0), key)

    # ------------------------------------------------------ to override
    def initial_keys(self):
        return []

    def keys_for(self, event):
        return []

    def sync(self, key):
        raise NotImplementedError

    # ------------------------------------------------------------ helpers
    def get(self, res, ns, name):
        """The stored object (a deep copy), or None."""
        try:
            return copy.deepcopy(self.store.get(res, ns, name))
        except ApiError as e:
            if e.code == 404:
                return None
            raise

    def custom(self, group, version, plural):
        """The served resource of a custom kind, or None (no CRD defines it)."""
        return self.store.registry.find(group, version, plural)

    def write_status(self, res, obj, status):
        """PUT ``status`` through the status subresource, guarded by the read resourceVersion."""
        if obj.get("status") == status:
            return obj
        body = copy.deepcopy(obj)
        body["status"] = status
        m = obj["metadata"]
        return self.store.update(res, m.get("namespace"), m["name"], body, "status")

    def create(self, res, ns, body):
        """POST ``body``; with ``metadata.generateName`` a name taken already is tried again."""
        for _ in range(5):
            try:
                return self.store.create(res, ns, body)
            except ApiError as e:
                if (e.code != 409 or e.reason != "AlreadyExists"
                        or not body["metadata"].get("generateName")
                        or body["metadata"].get("name")):
                    raise
        raise ApiError(409, "AlreadyExists", "could not generate a unique name", {})

    def delete(self, res, ns, name, uid, grace=None, propagation=None):
        """DELETE with a UID precondition; False when the object is already gone."""
        opts = {"preconditions": {"uid": uid}}
        if grace is not None:
            opts["gracePeriodSeconds"] = grace
        if propagation is not None:
            opts["propagationPolicy"] = propagation
        try:
            self.store.delete(res, ns, name, opts)
            return True
        except ApiError as e:
            if e.code in (404, 409):
                return False
            raise


    def collect(self, uid, ns, dependents, opts, default="Background"):
        """The garbage collector's part when the owner ``uid`` (in ``ns``) is deleted.

        ``dependents`` are the resources to look in; ``opts`` the DeleteOptions
        of the owner's deletion; ``default`` the policy of the owner's kind when
        the request named none (Background for most kinds, Orphan for
        batch/v1 Jobs). Background and Foreground delete the objects whose
        ownerReferences name the owner (with Background propagation, so their
        own dependents follow; Foreground does not hold the owner here);
        Orphan removes that ownerReference and leaves them.
        """
        opts = opts or {}
        policy = opts.get("propagationPolicy")
        if policy is None:
            orphan = opts.get("orphanDependents")
            policy = default if orphan is None else ("Orphan" if orphan else "Background")
        for res in dependents:
            for o in self.store.list(res, ns, MATCH_ALL, MATCH_ALL)[0]:
                m = o["metadata"]
                refs = m.get("ownerReferences") or []
                if not any(r.get("uid") == uid for r in refs):
                    continue
                if policy == "Orphan":
                    rest = [r for r in refs if r.get("uid") != uid]
                    body = {"metadata": {"resourceVersion": m["resourceVersion"],
                                         "ownerReferences": rest or None}}
                    try:
                        self.store.patch(res, m.get("namespace"), m["name"],
                                         "application/merge-patch+json", body)
                    except ApiError as e:
                        if e.code != 404:
                            raise  # 409: the sync is retried
                elif not m.get("deletionTimestamp"):
                    self.delete(res, m.get("namespace"), m["name"], m["uid"],
                                propagation="Background")


def start(app, names, available):
    """Start the controllers called ``names``, picked by ``NAME`` from the classes ``available``."""
    by_name = {cls.NAME: cls for cls in available}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit("unknown controllers: %s (available: %s)"
                         % (", ".join(unknown), ", ".join(sorted(by_name)) or "none"))
    return [by_name[n](app) for n in names]


class CustomOwnerController(Controller):
    """A controller of one custom kind whose objects own objects of one built-in kind (a JobSet's
    Jobs, a PyTorchJob's pods): it queues an owner on its own events and on its dependents',
    collects the dependents when the owner is deleted (with the deletion's propagation policy),
    and hands each live owner to ``reconcile``.

    A subclass sets OWNER_KIND, GROUP, VERSION, PLURAL and DEPENDENTS (the built-in resource),
    KINDS = (DEPENDENTS.kind,), CUSTOM = ((GROUP, PLURAL),), and defines reconcile(res, obj).
    """

    OWNER_KIND = GROUP = VERSION = PLURAL = None
    DEPENDENTS = None

    def __init__(self, app):
        self.delete_opts = {}  # owner uid -> DeleteOptions of the request that deleted it
        super().__init__(app)

    def owners(self):
        """The custom resource, None while its CRD is not installed."""
        return self.custom(self.GROUP, self.VERSION, self.PLURAL)

    def initial_keys(self):
        res = self.owners()
        if res is None:
            return []
        return [(o["metadata"]["namespace"], o["metadata"]["name"])
                for o in self.store.list(res, None, MATCH_ALL, MATCH_ALL)[0]]

    def keys_for(self, ev):
        m = ev.obj["metadata"]
        if ev.res is self.DEPENDENTS:
            ref = controller_ref(ev.obj)
            if ref and ref.get("kind") == self.OWNER_KIND and \
                    str(ref.get("apiVersion", "")).startswith(self.GROUP + "/"):
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
            self.collect(uid, ns, [self.DEPENDENTS], self.delete_opts.pop(uid, None))
            return
        ns, name = key
        res = self.owners()
        if res is None:
            return
        obj = self.get(res, ns, name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        self.reconcile(res, obj)

    def reconcile(self, res, obj):
        raise NotImplementedError

