"""admitd.aio.AsyncClient: the same calls, as coroutines, and its watch."""

import asyncio

import pytest

import admitd
import admitd.aio
from admitd.v1 import admission_service_pb2 as adm
from conftest import QUEUES, workload

NS = "team"


def test_the_asyncio_client_submits_waits_lists_watches_and_releases(server):
    async def run():
        async with admitd.aio.AsyncClient(server.address) as c:
            await c.apply(QUEUES % {"cpu": 4})
            seen = []
            before = c.list_workloads(namespace=NS)
            assert [w async for w in before] == []

            async def follow():  # from the list's revision: nothing after it is missed
                async for ev in c.watch(since_revision=before.revision, kinds=["Workload"],
                                        namespace=NS):
                    if ev.type != adm.WatchEvent.SYNCED:
                        seen.append((ev.workload.metadata.name, ev.reason))
                    if ("a", "Finished") in seen:
                        return

            watcher = asyncio.ensure_future(follow())
            wl = await c.submit(workload("a"))
            assert wl.metadata.name == "a"
            admitted = await c.wait_admitted("a", NS, timeout=10)
            assert admitted.status.admission.cluster_queue == "cq"
            listing = c.list_workloads(namespace=NS)
            names = [w.metadata.name async for w in listing]
            assert names == ["a"] and listing.revision > before.revision
            await c.release("a", NS, finished=False, message="exit 3")
            await asyncio.wait_for(watcher, 10)
            assert ("a", "Admitted") in seen
            with pytest.raises(admitd.AdmitdError) as e:
                await c.get("nope", NS)
            assert e.value.reason == "NOT_FOUND"
            with pytest.raises(admitd.WaitTimeout):
                await c.submit(workload("big", cpu="9"))
                await c.wait_admitted("big", NS, timeout=0.3)

    asyncio.run(run())
