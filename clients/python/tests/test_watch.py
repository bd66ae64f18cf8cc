"""watch(): resumes across an admitd kill -9 and restart with no event missed or repeated, and
relists when admitd no longer holds the revision (OUT_OF_RANGE)."""

import tempfile
import threading
import time

import admitd
from admitd.v1 import admission_service_pb2 as adm
from conftest import QUEUES, Admitd, workload

NS = "team"


def collect(watch, events, stop_when):
    for ev in watch:
        events.append(ev)
        if stop_when(events):
            return


def submitted(events):
    return {ev.workload.metadata.name for ev in events
            if ev.type != adm.WatchEvent.SYNCED and ev.HasField("workload")}


def test_watch_resumes_across_a_kill_and_restart():
    with tempfile.TemporaryDirectory() as tmp:
        server = Admitd(tmp)
        server.start()
        try:
            with admitd.Client(server.address) as c:
                c.apply(QUEUES % {"cpu": 100})
                names = ["a%d" % i for i in range(5)] + ["b%d" % i for i in range(5)]
                events = []
                listing = c.list_workloads(namespace=NS)
                assert list(listing) == []
                # From the list's revision: what follows it is seen however late the watch
                # connects.
                watch = c.watch(since_revision=listing.revision, kinds=["Workload"],
                                namespace=NS, backoff_max=0.2)
                t = threading.Thread(target=collect, args=(
                    watch, events, lambda evs: set(names) <= submitted(evs)), daemon=True)
                t.start()
                for n in names[:5]:
                    c.submit(workload(n, cpu="100m"))
                deadline = time.monotonic() + 10
                while not set(names[:5]) <= submitted(events) and time.monotonic() < deadline:
                    time.sleep(0.05)
                server.kill()  # SIGKILL: acknowledged writes survive, the stream breaks
                server.start()
                for n in names[5:]:
                    c.submit(workload(n, cpu="100m"))
                t.join(20)
                assert not t.is_alive(), "the watch never saw every workload: %s" % sorted(
                    submitted(events))
                watch.cancel()
        finally:
            server.stop()
    live = [ev for ev in events if ev.type != adm.WatchEvent.SYNCED]
    revisions = [ev.revision for ev in live]
    assert revisions == sorted(set(revisions)), "an event repeated or out of order"
    assert set(names) <= submitted(events)
    # One SYNCED per connection: the first, and the one after the restart.
    assert sum(1 for ev in events if ev.type == adm.WatchEvent.SYNCED) >= 2


def test_a_revision_admitd_no_longer_holds_relists():
    with tempfile.TemporaryDirectory() as tmp:
        server = Admitd(tmp, ["--event-retention", "5"])
        server.start()
        try:
            with admitd.Client(server.address) as c:
                c.apply(QUEUES % {"cpu": 100})
                # admitd compacts its log every 64 commits: one Submit after another is one
                # commit each.
                for i in range(70):
                    c.submit(workload("w%d" % i, cpu="10m"))
                watch = c.watch(since_revision=1, kinds=["Workload"], namespace=NS)
                events = []
                for ev in watch:
                    events.append(ev)
                    if ev.type == adm.WatchEvent.SYNCED:
                        break
                relisted = [ev for ev in events if ev.reason == "Relisted"]
                assert {ev.workload.metadata.name for ev in relisted} == {
                    "w%d" % i for i in range(70)}
                assert all(ev.type == adm.WatchEvent.ADDED for ev in relisted)
                # Then the changes after the list.
                c.submit(workload("later", cpu="100m"))
                for ev in watch:
                    if ev.HasField("workload") and ev.workload.metadata.name == "later":
                        break
                assert watch.revision > events[-1].revision
                watch.cancel()
        finally:
            server.stop()
