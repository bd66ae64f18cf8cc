"""The state of a resuming watch, shared by the blocking and the asyncio client: which revision
to resume from, which events were seen already, and what an error means (reconnect, relist, or
give up), as admitd-shim's AdmitdLink follows admitd."""

from __future__ import annotations

from typing import List, Optional, Sequence

import grpc

from admitd.v1 import admission_service_pb2 as adm
from admitd.v1 import objects_pb2 as obj
from admitd.v1 import queue_service_pb2 as qs

# What a reconnect fixes: admitd restarting or failing over, a connection lost.
RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN,
             grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED,
             grpc.StatusCode.ABORTED}
QUEUE_KINDS = [qs.OBJECT_KIND_RESOURCE_FLAVOR, qs.OBJECT_KIND_COHORT,
               qs.OBJECT_KIND_CLUSTER_QUEUE, qs.OBJECT_KIND_LOCAL_QUEUE,
               qs.OBJECT_KIND_WORKLOAD_PRIORITY_CLASS, qs.OBJECT_KIND_ADMISSION_CHECK,
               qs.OBJECT_KIND_NAMESPACE, qs.OBJECT_KIND_MULTIKUEUE_CONFIG,
               qs.OBJECT_KIND_MULTIKUEUE_CLUSTER]
RELISTED = "Relisted"


class WatchState:
    """One watch's progress.

    ``request()`` is the next Watch request; ``accept(event)`` says whether to hand an event to
    the caller (one at or below the revision already seen is a replay's repeat); after an
    OUT_OF_RANGE the watch relists: ``relist_kinds()`` says what to list, and ``relisted(...)``
    turns what was listed into events and the revision to resume from."""

    def __init__(self, since_revision: int, kinds: Sequence[int], namespace: str,
                 cluster_queue: str, backoff_max: float):
        self.revision = since_revision
        self.kinds = list(kinds)
        self.namespace = namespace
        self.cluster_queue = cluster_queue
        self.backoff = 0.1
        self.backoff_max = backoff_max

    def request(self) -> adm.WatchRequest:
        return adm.WatchRequest(since_revision=self.revision, kinds=self.kinds,
                                namespace=self.namespace, cluster_queue=self.cluster_queue)

    def accept(self, event: adm.WatchEvent) -> bool:
        self.backoff = 0.1
        if event.type == adm.WatchEvent.SYNCED:
            self.revision = max(self.revision, event.revision)
            return True
        if event.revision <= self.revision:
            return False
        self.revision = event.revision
        return True

    def next_backoff(self) -> float:
        delay = self.backoff
        self.backoff = min(self.backoff * 2, self.backoff_max)
        return delay

    def relist_kinds(self) -> List[int]:
        """What a relist reads: the watched kinds that can be listed (all of them by default)."""
        listable = [qs.OBJECT_KIND_WORKLOAD] + QUEUE_KINDS
        return [k for k in (self.kinds or listable) if k in listable]

    def relisted(self, workloads: List[obj.Workload], objects: List[obj.QueueObject],
                 revisions: List[int]) -> List[adm.WatchEvent]:
        """The events a relist yields: every listed object ADDED (reason "Relisted") at the
        oldest revision a page was read at, then SYNCED; the watch resumes from there, so
        nothing that changed while listing is missed (an object listed in a newer state than
        an event replayed after it only repeats a change)."""
        rev = min(revisions) if revisions else self.revision
        out = []
        for wl in workloads:
            out.append(adm.WatchEvent(revision=rev, type=adm.WatchEvent.ADDED,
                                      kind=qs.OBJECT_KIND_WORKLOAD, reason=RELISTED,
                                      workload=wl))
        for o in objects:
            out.append(adm.WatchEvent(revision=rev, type=adm.WatchEvent.ADDED,
                                      kind=_kind_of(o), reason=RELISTED, queue_object=o))
        out.append(adm.WatchEvent(revision=rev, type=adm.WatchEvent.SYNCED))
        self.revision = rev
        return out

class Relist:
    """One relist, as the calls it makes: ``next_call()`` is the next (service, List request)
    or None when done; ``take(response)`` keeps a page; ``events()`` are what the watch yields.

        r = Relist(state)
        while (call := r.next_call()) is not None:
            r.take(unary(*call))
    """

    def __init__(self, state: WatchState):
        self._state = state
        kinds = state.relist_kinds()
        self._calls = []
        if qs.OBJECT_KIND_WORKLOAD in kinds:
            self._calls.append(("admission", adm.ListWorkloadsRequest(
                namespace=state.namespace, cluster_queue=state.cluster_queue)))
        self._calls += [("queues", qs.ListObjectsRequest(
            kind=k, namespace=state.namespace if k == qs.OBJECT_KIND_LOCAL_QUEUE else ""))
            for k in kinds if k != qs.OBJECT_KIND_WORKLOAD]
        self._workloads: List[obj.Workload] = []
        self._objects: List[obj.QueueObject] = []
        self._revisions: List[int] = []

    def next_call(self):
        return (self._calls[0][0], "List", self._calls[0][1]) if self._calls else None

    def take(self, resp) -> None:
        if isinstance(resp, adm.ListWorkloadsResponse):
            self._workloads += resp.workloads
        else:
            self._objects += resp.objects
        self._revisions.append(resp.revision)
        if resp.next_page_token:
            self._calls[0][1].page_token = resp.next_page_token
        else:
            self._calls.pop(0)

    def events(self) -> List[adm.WatchEvent]:
        return self._state.relisted(self._workloads, self._objects, self._revisions)


def _kind_of(o: obj.QueueObject) -> int:
    return {
        "resource_flavor": qs.OBJECT_KIND_RESOURCE_FLAVOR,
        "cohort": qs.OBJECT_KIND_COHORT,
        "cluster_queue": qs.OBJECT_KIND_CLUSTER_QUEUE,
        "local_queue": qs.OBJECT_KIND_LOCAL_QUEUE,
        "workload_priority_class": qs.OBJECT_KIND_WORKLOAD_PRIORITY_CLASS,
        "admission_check": qs.OBJECT_KIND_ADMISSION_CHECK,
        "namespace": qs.OBJECT_KIND_NAMESPACE,
        "multi_kueue_config": qs.OBJECT_KIND_MULTIKUEUE_CONFIG,
        "multi_kueue_cluster": qs.OBJECT_KIND_MULTIKUEUE_CLUSTER,
    }.get(o.WhichOneof("kind"), qs.OBJECT_KIND_UNSPECIFIED)


def code_of(error: grpc.RpcError) -> Optional[grpc.StatusCode]:
    return error.code() if hasattr(error, "code") else None
