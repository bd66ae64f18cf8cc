"""Fixtures of the client's tests: a real admitd (the binary $ADMITD_BIN, built with the project)
on a free loopback port with its data in a temporary directory, killed and restarted at will."""

import os
import signal
import socket
import subprocess
import tempfile
import time

import pytest

import admitd

ADMITD = os.environ.get("ADMITD_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "build", "server", "admitd")

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
spec: {nodeLabels: {pool: a}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: %(cpu)s}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team, name: lq}
spec: {clusterQueue: cq}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workload(name, cpu="1", count=1, namespace="team", queue="lq", priority=None,
             elastic=False):
    """A Kueue Workload manifest (YAML text) of one pod set."""
    prio = "\n  priority: %d" % priority if priority is not None else ""
    notes = ', annotations: {kueue.x-k8s.io/elastic-job: "true"}' if elastic else ""
    return """apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: %s, namespace: %s%s}
spec:
  queueName: %s%s
  podSets:
  - name: main
    count: %d
    template:
      spec:
        containers:
        - name: c
          image: busybox
          resources: {requests: {cpu: "%s"}}
""" % (name, namespace, notes, queue, prio, count, cpu)


class Admitd:
    """One admitd process; ``kill()`` (SIGKILL) and ``start()`` again keep its data and port."""

    def __init__(self, tmp, args=(), binary=None):
        self.binary = binary or ADMITD
        self.port = free_port()
        self.address = "127.0.0.1:%d" % self.port
        self.data = os.path.join(tmp, "data")
        self.log_path = os.path.join(tmp, "admitd.log")
        self.args = list(args)
        self.proc = None

    def start(self):
        served = self._serving_lines()
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([self.binary, "--listen", self.address, "--data-dir", self.data] +
                                     self.args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("admitd exited: " + open(self.log_path).read()[-2000:])
            if self._serving_lines() > served:  # this process's, not an earlier one's
                return
            time.sleep(0.05)
        raise RuntimeError("admitd did not start: " + open(self.log_path).read()[-2000:])

    def _serving_lines(self):
        if not os.path.exists(self.log_path):
            return 0
        with open(self.log_path) as f:
            return f.read().count("msg=serving")

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)

    def stop(self):
        self.kill(signal.SIGTERM)


@pytest.fixture
def server():
    """A running admitd (no TLS, no authentication)."""
    with tempfile.TemporaryDirectory() as tmp:
        a = Admitd(tmp)
        a.start()
        try:
            yield a
        finally:
            a.stop()


@pytest.fixture
def client(server):
    """A client of ``server`` with the test queues (cq: 4 cpu; LocalQueue team/lq) applied."""
    with admitd.Client(server.address) as c:
        c.apply(QUEUES % {"cpu": 4})
        yield c
