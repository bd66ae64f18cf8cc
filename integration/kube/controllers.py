"""Simulated Kubernetes controllers for the test API server (none yet).

A controller is a class with ``NAME`` and ``__init__(self, app)`` that reacts
to committed writes. ``start(app, names)`` instantiates the named ones. A
controller subscribes with ``app.store.listeners.append(fn)``; ``fn(event)``
receives a ``store.WatchEvent`` (rv, res, type, obj, prev) while the store
lock is held, so it must only queue work; a worker thread then reads and writes
through ``app.store`` (create/update/patch/delete) like any client, which keeps
admission hooks and resourceVersion semantics in force.

Planned: job controller (pods for unsuspended Jobs, startTime, conditions),
scheduler (binds ungated pods, PodScheduled condition), kubelet (pod phases,
final deletion after the grace period), namespace controller (empties and
finalizes Terminating namespaces), garbage collector (ownerReferences).
"""

import queue
import threading

REGISTRY = {}


def register(cls):
    REGISTRY[cls.NAME] = cls
    return cls


class Controller:
    """Base: queue events from the store, handle them on a daemon thread."""

    NAME = ""

    def __init__(self, app):
        self.app = app
        self.queue = queue.Queue()
        app.store.listeners.append(self.queue.put)
        self.thread = threading.Thread(target=self._run, name=self.NAME, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            self.handle(self.queue.get())

    def handle(self, event):
        raise NotImplementedError


def start(app, names):
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise SystemExit("unknown controllers: %s (available: %s)"
                         % (", ".join(unknown), ", ".join(sorted(REGISTRY)) or "none"))
    return [REGISTRY[n](app) for n in names]
