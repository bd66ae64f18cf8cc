"""The Python client's throughput next to the C++ client's, against one admitd in one run: each
client keeps ``--inflight`` loops of Submit (a one-pod Workload of 1m cpu) then wait_admitted
going for ``--seconds``, in a namespace of its own, the C++ one first (build/integration/bench/
client_loop), then admitd.aio.AsyncClient (one event loop), then admitd.Client (one thread per
loop). Prints a table and one JSON line.

    python3 clients/python/bench/submit_wait_bench.py [--inflight 64] [--seconds 5]
        [--admitd build/server/admitd] [--client-loop build/integration/bench/client_loop]
(with the client installed, e.g. build/python-venv/bin/python after clients/python/tests/run.sh)
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import admitd
import admitd.aio
from admitd.v1 import objects_pb2 as obj

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import conftest  # noqa: E402  (the tests' way of running admitd, and their queues)
from conftest import Admitd  # noqa: E402

# The tests' queues with room for every loop, and a LocalQueue per client's namespace.
QUEUES = conftest.QUEUES % {"cpu": 100000} + "".join("""---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: %s, name: lq}
spec: {clusterQueue: cq}
""" % ns for ns in ("cpp", "py-aio", "py-threads"))


def workload(ns, name):
    wl = obj.Workload()
    wl.metadata.namespace, wl.metadata.name, wl.spec.queue_name = ns, name, "lq"
    ps = wl.spec.pod_sets.add(name="main", count=1)
    c = ps.template.spec.containers.add(name="c")
    c.resources.requests["cpu"] = "1m"
    return wl


def summary(client, inflight, latencies, errors, elapsed):
    latencies.sort()
    pct = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies \
        else 0.0  # noqa: E731
    return {"client": client, "inflight": inflight, "completed": len(latencies),
            "errors": errors, "per_second": round(len(latencies) / elapsed, 1),
            "p50_ms": round(pct(0.5), 2), "p99_ms": round(pct(0.99), 2)}


def run_aio(address, inflight, seconds):
    async def main():
        async with admitd.aio.AsyncClient(address) as c:
            latencies, errors = [], [0]
            end = time.monotonic() + seconds

            async def loop(t):
                i = 0
                while time.monotonic() < end:
                    begin = time.monotonic()
                    try:
                        await c.submit(workload("py-aio", "a-%03d-%07d" % (t, i)))
                        await c.wait_admitted("a-%03d-%07d" % (t, i), "py-aio", timeout=30)
                        latencies.append((time.monotonic() - begin) * 1000)
                    except admitd.AdmitdError:
                        errors[0] += 1
                    i += 1
            start = time.monotonic()
            await asyncio.gather(*(loop(t) for t in range(inflight)))
            return summary("python asyncio", inflight, latencies, errors[0],
                           time.monotonic() - start)
    return asyncio.run(main())


def run_threads(address, inflight, seconds):
    latencies, errors, lock = [], [0], threading.Lock()
    end = time.monotonic() + seconds
    with admitd.Client(address) as c:
        def loop(t):
            i, mine = 0, []
            while time.monotonic() < end:
                begin = time.monotonic()
                try:
                    c.submit(workload("py-threads", "t-%03d-%07d" % (t, i)))
                    c.wait_admitted("t-%03d-%07d" % (t, i), "py-threads", timeout=30)
                    mine.append((time.monotonic() - begin) * 1000)
                except admitd.AdmitdError:
                    with lock:
                        errors[0] += 1
                i += 1
            with lock:
                latencies.extend(mine)
        start = time.monotonic()
        threads = [threading.Thread(target=loop, args=(t,)) for t in range(inflight)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return summary("python threads", inflight, latencies, errors[0], time.monotonic() - start)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inflight", type=int, default=64)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--admitd", default=os.path.join(ROOT, "build", "server", "admitd"))
    p.add_argument("--client-loop",
                   default=os.path.join(ROOT, "build", "integration", "bench", "client_loop"))
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Admitd(tmp, binary=a.admitd)
        server.start()
        try:
            with admitd.Client(server.address) as c:
                c.apply(QUEUES)
            cpp = subprocess.run([a.client_loop, "--server", server.address, "--inflight",
                                  str(a.inflight), "--seconds", str(a.seconds), "--namespace",
                                  "cpp"], capture_output=True, text=True, check=False)
            if cpp.returncode != 0:
                sys.exit("client_loop failed: " + cpp.stderr + cpp.stdout)
            rows = [json.loads(cpp.stdout.strip().splitlines()[-1]),
                    run_aio(server.address, a.inflight, a.seconds),
                    run_threads(server.address, a.inflight, a.seconds)]
        finally:
            server.stop()
    base = rows[0]["per_second"] or 1
    print("Submit + wait admitted, %d loops each, %.0f s, one admitd (%d CPUs)\n" % (
        a.inflight, a.seconds, os.cpu_count()))
    print("%-16s %10s %8s %10s %10s %8s" % ("client", "loops/s", "errors", "p50 ms", "p99 ms",
                                            "vs C++"))
    for r in rows:
        print("%-16s %10.1f %8d %10.2f %10.2f %8.2f" % (r["client"], r["per_second"], r["errors"],
                                                      r["p50_ms"], r["p99_ms"],
                                                      r["per_second"] / base))
    print(json.dumps({"bench": "submit_wait", "rows": rows}))


if __name__ == "__main__":
    main()
