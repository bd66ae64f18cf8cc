"""The blocking client: ``admitd.Client``. Each method is one call to admitd's AdmissionService or
QueueService (a few for paging, manifests and watching); a failure raises ``AdmitdError``.

    with admitd.Client("localhost:50051") as c:
        wl = c.submit(yaml_text)          # a Kueue Workload manifest, a dict, or a v1.Workload
        c.wait_admitted(wl.metadata.name, namespace=wl.metadata.namespace, timeout=60)
        ...
        c.release(wl.metadata.name, namespace=wl.metadata.namespace, finished=True)
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Union

import grpc

from admitd import _requests as rq
from admitd import _tracing
from admitd._api import Operations
from admitd._connection import connect
from admitd._retry import Retry
from admitd._watch import RETRYABLE, Relist, WatchState, code_of
from admitd.errors import AdmitdError
from admitd.v1 import admission_service_pb2 as adm
from admitd.v1 import objects_pb2 as obj
from admitd.v1 import queue_service_pb2 as qs


@dataclass
class ApplyResult:
    """What ``apply`` did with one document: ``action`` is created, configured, unchanged, or
    submitted (a Workload)."""

    kind: str
    namespace: str
    name: str
    action: str

    @classmethod
    def of_apply(cls, kind: str, resp: qs.ApplyResponse) -> "ApplyResult":
        key = rq.object_key(resp.object)
        action = "created" if resp.created else "unchanged" if resp.unchanged else "configured"
        return cls(kind or key["kind"], key["namespace"], key["name"], action)

    @classmethod
    def of_submit(cls, resp: adm.SubmitResponse) -> "ApplyResult":
        meta = resp.workload.metadata
        return cls("Workload", meta.namespace, meta.name, "submitted")


class Client(Operations):
    """A connection to admitd (the arguments: ``Operations``)."""

    _connect = staticmethod(connect)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _unary(self, service, method, request, post=None, timeout=None):
        retry = Retry(method, timeout or self.timeout)
        while True:
            try:
                resp = getattr(self._stubs[service], method)(
                    request, timeout=retry.remaining(), metadata=_tracing.metadata(),
                    wait_for_ready=retry.safe)
                return post(resp) if post else resp
            except grpc.RpcError as e:
                delay = retry.again(e)
                if delay is None:
                    raise AdmitdError.from_rpc_error(e) from None
                time.sleep(delay)

    # ---- calls of several steps ----------------------------------------------------------
    def submit(self, workload: rq.WorkloadLike, namespace: Optional[str] = None) -> obj.Workload:
        """Submits a workload (idempotent: the same one again changes nothing) and returns it as
        admitd stored it. ``namespace`` sets its namespace when given."""
        wl = rq.as_workload(workload)
        if wl is None:
            wl = rq.single_workload(self.parse(workload))
        return self._unary("admission", "Submit", rq.workload_for_submit(wl, namespace),
                           lambda r: r.workload)

    def apply(self, manifests: Union[obj.QueueObject, str, Mapping[str, Any],
                                     Sequence[Mapping[str, Any]]],
              source: str = "") -> List[ApplyResult]:
        """Creates or updates queue objects and submits Workload documents, as
        ``admitctl apply`` does, in dependency order."""
        items = rq.apply_plan(manifests) or self.parse(manifests, source)
        out = []
        for m in items:
            if m.WhichOneof("object") == "workload":
                out.append(self._unary("admission", "Submit",
                                       adm.SubmitRequest(workload=m.workload),
                                       ApplyResult.of_submit))
            else:
                out.append(self._unary("queues", "Apply", qs.ApplyRequest(object=m.queue_object),
                                       lambda r, k=m.kind: ApplyResult.of_apply(k, r)))
        return out

    def list_workloads(self, namespace: str = "", queue_name: str = "", cluster_queue: str = "",
                       state: int = 0, page_size: int = 0) -> "Listing":
        """Every matching workload, page after page (an iterator whose ``revision``, once it
        ran, is where a watch that follows the list starts)."""
        return self._pages("admission", adm.ListWorkloadsRequest(
            namespace=namespace, queue_name=queue_name, cluster_queue=cluster_queue,
            state=state, page_size=page_size), "workloads")

    def list_objects(self, kind: Union[str, int], namespace: str = "") -> "Listing":
        """Every queue object of a kind, page after page (``revision`` as for workloads)."""
        return self._pages("queues", qs.ListObjectsRequest(kind=rq.object_kind(kind),
                                                           namespace=namespace), "objects")

    def _pages(self, service: str, req, field: str) -> "Listing":
        return Listing(self, service, rq.Paging(req, field))

    def watch(self, since_revision: int = 0, kinds: Sequence[Union[str, int]] = (),
              namespace: str = "", cluster_queue: str = "",
              backoff_max: float = 5.0) -> "Watch":
        """The changes after ``since_revision`` (0: from now) as an iterator of WatchEvents that
        outlives admitd's restarts: it resumes from the last revision it saw (no event repeated,
        none lost); when admitd no longer holds that revision (OUT_OF_RANGE) it lists again:
        every object ADDED with reason "Relisted", then SYNCED, then the changes after the list
        (an object the relist does not name is gone: no DELETED event is sent for it). A SYNCED
        event ends each (re)connection's replay. ``cancel()`` ends the watch."""
        return Watch(self, WatchState(since_revision, [rq.object_kind(k) for k in kinds],
                                      namespace, cluster_queue, backoff_max))


class Listing:
    """The items of a paged List, fetched a page at a time as they are iterated; ``revision``
    is the revision the list was read at (None before the first page)."""

    def __init__(self, client: Client, service: str, paging: rq.Paging):
        self._client, self._service, self._paging = client, service, paging
        self._items = self._run()

    @property
    def revision(self) -> Optional[int]:
        return self._paging.revision

    def __iter__(self) -> "Listing":
        return self

    def __next__(self):
        return next(self._items)

    def _run(self):
        while self._paging.request is not None:
            yield from self._paging.take(
                self._client._unary(self._service, "List", self._paging.request))


class Watch:
    """An iterator of WatchEvents (``Client.watch``); ``revision`` is the last one seen."""

    def __init__(self, client: Client, state: WatchState):
        self._client = client
        self._state = state
        self._lock = threading.Lock()
        self._call = None
        self._cancelled = False
        self._events = self._run()

    @property
    def revision(self) -> int:
        return self._state.revision

    def __iter__(self) -> "Watch":
        return self

    def __next__(self) -> adm.WatchEvent:
        return next(self._events)

    def cancel(self) -> None:
        """Ends the watch from any thread: the iterator stops."""
        with self._lock:
            self._cancelled = True
            if self._call is not None:
                self._call.cancel()

    def _run(self) -> Iterator[adm.WatchEvent]:
        stub = self._client._stubs["admission"]
        while True:
            with self._lock:
                if self._cancelled:
                    return
                self._call = stub.Watch(self._state.request(), metadata=_tracing.metadata(),
                                        wait_for_ready=True)
            try:
                for event in self._call:
                    if self._state.accept(event):
                        yield event
                continue  # the server ended the stream: go on from where it was
            except grpc.RpcError as e:
                if self._cancelled:
                    return
                code = code_of(e)
                if code not in RETRYABLE and code != grpc.StatusCode.OUT_OF_RANGE:
                    raise AdmitdError.from_rpc_error(e) from None
                if code == grpc.StatusCode.OUT_OF_RANGE:
                    try:
                        yield from self._relist()
                        continue
                    except AdmitdError as le:
                        if le.code not in RETRYABLE:
                            raise
            time.sleep(self._state.next_backoff())

    def _relist(self) -> List[adm.WatchEvent]:
        r = Relist(self._state)
        while (call := r.next_call()) is not None:
            r.take(self._client._unary(*call))
        return r.events()
