"""The asyncio client: ``admitd.aio.AsyncClient``, the same methods as ``admitd.Client`` as
coroutines (``list_*`` and ``watch`` as async iterators), over ``grpc.aio``.

    async with admitd.aio.AsyncClient("localhost:50051") as c:
        wl = await c.submit(manifest)
        await c.wait_admitted(wl.metadata.name, namespace=wl.metadata.namespace)
        async for event in c.watch(kinds=["Workload"]):
            ...
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, List, Mapping, Optional, Sequence, Union

import grpc

from admitd import _requests as rq
from admitd import _tracing
from admitd._api import Operations
from admitd._connection import connect_aio
from admitd._retry import Retry
from admitd._watch import RETRYABLE, Relist, WatchState, code_of
from admitd.client import ApplyResult
from admitd.errors import AdmitdError
from admitd.v1 import admission_service_pb2 as adm
from admitd.v1 import objects_pb2 as obj
from admitd.v1 import queue_service_pb2 as qs


class AsyncClient(Operations):
    """A connection to admitd for asyncio code; the arguments are ``admitd.Client``'s. Create it
    inside the event loop that uses it."""

    _connect = staticmethod(connect_aio)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _unary(self, service, method, request, post=None, timeout=None):
        retry = Retry(method, timeout or self.timeout)
        while True:
            try:
                resp = await getattr(self._stubs[service], method)(
                    request, timeout=retry.remaining(), metadata=_tracing.metadata(),
                    wait_for_ready=retry.safe)
                return post(resp) if post else resp
            except grpc.RpcError as e:
                delay = retry.again(e)
                if delay is None:
                    raise AdmitdError.from_rpc_error(e) from None
                await asyncio.sleep(delay)

    async def submit(self, workload: rq.WorkloadLike,
                     namespace: Optional[str] = None) -> obj.Workload:
        """As ``Client.submit``."""
        wl = rq.as_workload(workload)
        if wl is None:
            wl = rq.single_workload(await self.parse(workload))
        return await self._unary("admission", "Submit", rq.workload_for_submit(wl, namespace),
                                 lambda r: r.workload)

    async def apply(self, manifests: Union[obj.QueueObject, str, Mapping[str, Any],
                                           Sequence[Mapping[str, Any]]],
                    source: str = "") -> List[ApplyResult]:
        """As ``Client.apply``."""
        items = rq.apply_plan(manifests) or await self.parse(manifests, source)
        out = []
        for m in items:
            if m.WhichOneof("object") == "workload":
                out.append(await self._unary("admission", "Submit",
                                             adm.SubmitRequest(workload=m.workload),
                                             ApplyResult.of_submit))
            else:
                out.append(await self._unary(
                    "queues", "Apply", qs.ApplyRequest(object=m.queue_object),
                    lambda r, k=m.kind: ApplyResult.of_apply(k, r)))
        return out

    def list_workloads(self, namespace: str = "", queue_name: str = "", cluster_queue: str = "",
                       state: int = 0, page_size: int = 0) -> "AsyncListing":
        """As ``Client.list_workloads``, an async iterator (with ``revision``)."""
        return self._pages("admission", adm.ListWorkloadsRequest(
            namespace=namespace, queue_name=queue_name, cluster_queue=cluster_queue,
            state=state, page_size=page_size), "workloads")

    def list_objects(self, kind: Union[str, int],
                     namespace: str = "") -> "AsyncListing":
        """As ``Client.list_objects``, an async iterator (with ``revision``)."""
        return self._pages("queues", qs.ListObjectsRequest(kind=rq.object_kind(kind),
                                                           namespace=namespace), "objects")

    def _pages(self, service: str, req, field: str) -> "AsyncListing":
        return AsyncListing(self, service, rq.Paging(req, field))

    async def watch(self, since_revision: int = 0, kinds: Sequence[Union[str, int]] = (),
                    namespace: str = "", cluster_queue: str = "",
                    backoff_max: float = 5.0) -> AsyncIterator[adm.WatchEvent]:
        """As ``Client.watch``, an async iterator (cancel the task, or break, to end it)."""
        state = WatchState(since_revision, [rq.object_kind(k) for k in kinds], namespace,
                           cluster_queue, backoff_max)
        stub = self._stubs["admission"]
        while True:
            call = stub.Watch(state.request(), metadata=_tracing.metadata(), wait_for_ready=True)
            try:
                async for event in call:
                    if state.accept(event):
                        yield event
                continue  # the server ended the stream: go on from where it was
            except grpc.RpcError as e:
                code = code_of(e)
                if code not in RETRYABLE and code != grpc.StatusCode.OUT_OF_RANGE:
                    raise AdmitdError.from_rpc_error(e) from None
                if code == grpc.StatusCode.OUT_OF_RANGE:
                    try:
                        for event in await self._relist(state):
                            yield event
                        continue
                    except AdmitdError as le:
                        if le.code not in RETRYABLE:
                            raise
            finally:
                call.cancel()
            await asyncio.sleep(state.next_backoff())

    async def _relist(self, state: WatchState) -> List[adm.WatchEvent]:
        r = Relist(state)
        while (call := r.next_call()) is not None:
            r.take(await self._unary(*call))
        return r.events()


class AsyncListing:
    """``Client.list_*``'s Listing for asyncio: an async iterator with ``revision``."""

    def __init__(self, client: AsyncClient, service: str, paging: rq.Paging):
        self._client, self._service, self._paging = client, service, paging
        self._page: list = []

    @property
    def revision(self) -> Optional[int]:
        return self._paging.revision

    def __aiter__(self) -> "AsyncListing":
        return self

    async def __anext__(self):
        while not self._page:
            if self._paging.request is None:
                raise StopAsyncIteration
            self._page = self._paging.take(
                await self._client._unary(self._service, "List", self._paging.request))
        return self._page.pop(0)
