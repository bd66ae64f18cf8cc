"""Helpers of the examples' tests: queues applied as admitd.v1 messages (no YAML, so no
ParseManifests), a worker process that leaves marker files, and the runner as a subprocess."""

import json
import os
import signal
import subprocess
import sys
import time

import yaml

from admitd.v1 import objects_pb2 as obj

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
NS = "team"
FLAVOR = "default-flavor"

# A job's process: notes "start <workload> <flavor> <cluster queue>" in <dir>/<job>.<index>.log,
# "term" on SIGTERM (then exits 143), and once <dir>/go-<job> exists "done" and exits with the
# status given (default 0). It gives up after a minute ("timeout", status 99): a failed test
# leaves nothing running for long.
WORKER = r'''
import os, signal, sys, time
d = sys.argv[1]
job, index = os.environ["ADMITD_JOB"], os.environ["ADMITD_PROCESS_INDEX"]
def note(what):
    with open(os.path.join(d, "%s.%s.log" % (job, index)), "a") as f:
        f.write(what + "\n")
def on_term(*_):
    note("term")
    sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
note("start %s %s %s" % (os.environ["ADMITD_WORKLOAD"], os.environ["ADMITD_FLAVOR"],
                         os.environ["ADMITD_CLUSTER_QUEUE"]))
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(d, "go-" + job)):
    if time.monotonic() > deadline:
        note("timeout")
        sys.exit(99)
    time.sleep(0.02)
note("done")
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
'''


def queue_objects(cpu="2"):
    """A flavor, ClusterQueue cq (``cpu``, preemption within it of lower priorities) and
    LocalQueue team/lq."""
    flavor = obj.QueueObject(resource_flavor=obj.ResourceFlavor(
        metadata=obj.ObjectMeta(name=FLAVOR)))
    cq = obj.QueueObject(cluster_queue=obj.ClusterQueue(
        metadata=obj.ObjectMeta(name="cq"),
        spec=obj.ClusterQueueSpec(
            namespace_selector=obj.LabelSelector(),
            preemption=obj.ClusterQueuePreemption(within_cluster_queue="LowerPriority"),
            resource_groups=[obj.ResourceGroup(covered_resources=["cpu"], flavors=[
                obj.FlavorQuotas(name=FLAVOR, resources=[
                    obj.ResourceQuota(name="cpu", nominal_quota=cpu)])])])))
    lq = obj.QueueObject(local_queue=obj.LocalQueue(
        metadata=obj.ObjectMeta(name="lq", namespace=NS),
        spec=obj.LocalQueueSpec(cluster_queue="cq")))
    return [flavor, cq, lq]


class Markers:
    """The worker's marker files in one directory."""

    def __init__(self, directory):
        self.dir = directory
        self.worker = os.path.join(directory, "worker.py")
        with open(self.worker, "w") as f:
            f.write(WORKER)

    def command(self, status=0):
        return [sys.executable, self.worker, self.dir, str(status)]

    def lines(self, job, index):
        try:
            with open(os.path.join(self.dir, "%s.%d.log" % (job, index))) as f:
                return f.read().split("\n")[:-1]
        except FileNotFoundError:
            return []

    def count(self, job, index, what):
        return sum(1 for line in self.lines(job, index) if line.split(" ")[0] == what)

    def go(self, job):
        open(os.path.join(self.dir, "go-" + job), "w").close()

    def release_all(self):
        """Lets every process that ever started end (a test's cleanup)."""
        for name in os.listdir(self.dir):
            if name.endswith(".log"):
                self.go(name.split(".")[0])


def write_job(directory, filename, **fields):
    """A job file (YAML or JSON by its name), written aside and renamed in (the runner never
    reads half of one)."""
    tmp = os.path.join(directory, "." + filename)
    with open(tmp, "w") as f:
        if filename.endswith(".json"):
            json.dump(fields, f)
        else:
            yaml.safe_dump(fields, f)
    os.rename(tmp, os.path.join(directory, filename))


def wait_for(what, predicate, timeout=20.0, log=None):
    """Polls ``predicate`` until it holds; fails saying ``what`` (and the runner's log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    tail = ""
    if log is not None:
        with open(log) as f:
            tail = "\nrunner log:\n" + f.read()[-4000:]
    raise AssertionError("timed out waiting for: %s%s" % (what, tail))


class RunnerProcess:
    """``python examples/batch_runner.py ARGS`` with its output in ``log``."""

    def __init__(self, args, log):
        self.log = log
        self.out = open(log, "a")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(EXAMPLES, "batch_runner.py")] + list(args),
            stdout=self.out, stderr=subprocess.STDOUT)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def wait(self, timeout=20.0):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("the runner did not exit:\n" + self.text()[-4000:]) from None

    def interrupt(self):
        self.proc.send_signal(signal.SIGINT)

    def kill(self):
        """SIGKILL: the runner dies without a word; its processes live on."""
        self.proc.kill()
        self.proc.wait(10)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.out.close()


def conditions(wl):
    return {c.type: (c.status, c.reason) for c in wl.status.conditions}


def usage_is_zero(client):
    """Nothing of ClusterQueue cq is in use or reserved (ClusterQueueStatus.flavors_usage and
    flavors_reservation)."""
    status = client.get_object("ClusterQueue", "cq").cluster_queue.status
    totals = [r.total for f in list(status.flavors_usage) + list(status.flavors_reservation)
              for r in f.resources]
    return all(t in ("", "0") for t in totals) and status.admitted_workloads == 0
