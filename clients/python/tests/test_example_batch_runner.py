"""examples/batch_runner.py against a real admitd, run as a user runs it: a low-priority job
preempted by a higher one and restarted after it, an elastic job scaled down and up while it
runs, a failing job from the command line, runners killed, interrupted and started again, and
one that follows its workloads across an admitd restart."""

import time

import grpc
import pytest

import admitd
from example_support import (NS, FLAVOR, Markers, RunnerProcess, conditions, queue_objects,
                             usage_is_zero, wait_for, write_job)


@pytest.fixture
def setup(server, tmp_path):
    """(client with cq: 2 cpu, markers, jobs directory, runner log path)."""
    with admitd.Client(server.address) as c:
        for o in queue_objects(cpu="2"):
            c.apply(o)
        jobs = tmp_path / "jobs"
        jobs.mkdir()
        markers = tmp_path / "markers"
        markers.mkdir()
        m = Markers(str(markers))
        try:
            yield c, m, str(jobs), str(tmp_path / "runner.log")
        finally:
            m.release_all()


def runner_args(server, jobs=None, extra=()):
    args = ["--server", server.address, "--namespace", NS, "--queue", "lq",
            "--grace-seconds", "5", "--rescan-seconds", "0.1"]
    return args + (["--jobs", jobs] if jobs else []) + list(extra)


def test_preemption_requeue_and_elastic_resize(server, setup):
    c, m, jobs, log = setup
    job = dict(namespace=NS, queue="lq", command=m.command())
    write_job(jobs, "a-low.yaml", name="low", cpu="1", processes=2, priority=0, **job)
    runner = RunnerProcess(runner_args(server, jobs), log)
    try:
        # 1. The low job is admitted and its two processes start, with their admission.
        wait_for("low's processes start", lambda: all(
            m.count("low", i, "start") == 1 for i in (0, 1)), log=log)
        assert m.lines("low", 0)[0] == "start %s/low %s cq" % (NS, FLAVOR)

        # 2. A higher-priority job needs all the quota: low is preempted, its processes get
        # SIGTERM, its quota is released (stopped) and it requeues; high runs.
        write_job(jobs, "b-high.yaml", name="high", cpu="1", processes=2, priority=100, **job)
        wait_for("low stopped and high started", lambda: all(
            m.count("low", i, "term") == 1 and m.count("high", i, "start") == 1
            for i in (0, 1)), log=log)
        low = c.get("low", NS)
        assert conditions(low)["Requeued"] == ("True", "Preempted")
        assert conditions(low)["QuotaReserved"][0] == "False"  # released, pending again
        assert [(e.reason, e.count) for e in low.status.scheduling_stats.evictions] == \
            [("Preempted", 1)]
        m.go("high")
        wait_for("low restarted after high finished", lambda: all(
            m.count("low", i, "start") == 2 for i in (0, 1)), log=log)
        assert conditions(c.get("high", NS))["Finished"] == ("True", "Succeeded")

        # 3. An elastic job queues behind low, runs once low finished, is scaled down (processes
        # 1 and 2 stopped) and up again (process 1 starts under the new slice), and finishes.
        write_job(jobs, "c-elastic.yaml", name="elastic", cpu="500m", processes=3,
                  elastic=True, resizes=[{"after_seconds": 0.3, "to": 1},
                                         {"after_seconds": 0.6, "to": 2}], **job)
        wait_for("elastic submitted", lambda: any(
            w.metadata.name == "elastic" for w in c.list_workloads(namespace=NS)), log=log)
        assert m.lines("elastic", 0) == []  # pending: low holds the quota
        m.go("low")
        # (On a loaded machine a process may get its SIGTERM before its interpreter has set the
        # handler that notes it: the runner's log says which processes it stopped.)
        def scaled_up():
            last = (m.lines("elastic", 1) or [""])[-1].split(" ")
            return last[0] == "start" and last[1].startswith(NS + "/batchjob-elastic-")
        wait_for("elastic scaled down and up", lambda: (
            "job elastic: scale-down 3 -> 1: stopping processes [1, 2]" in runner.text() and
            scaled_up()), log=log)
        assert m.count("elastic", 0, "start") == 1 and m.count("elastic", 0, "term") == 0
        assert m.count("elastic", 2, "done") == 0  # stopped, never let finish
        slice_workload = m.lines("elastic", 1)[-1].split(" ")[1]
        assert slice_workload.startswith(NS + "/batchjob-elastic-"), m.lines("elastic", 1)
        m.go("elastic")
        assert runner.wait(20) == 0, runner.text()
    finally:
        runner.close()

    # Every workload finished; the slice the scale-up replaced says so; nothing is in use.
    finished = {w.metadata.name: conditions(w)["Finished"] for w in c.list_workloads(namespace=NS)}
    slice_name = slice_workload.split("/")[1]
    assert finished == {"low": ("True", "Succeeded"), "high": ("True", "Succeeded"),
                        "elastic": ("True", "WorkloadSliceReplaced"),
                        slice_name: ("True", "Succeeded")}
    assert c.get(slice_name, NS).spec.pod_sets[0].count == 2
    assert usage_is_zero(c)
    text = runner.text()
    for line in ["job low: evicted (Preempted", "job low: released its quota (stopped)",
                 "job elastic: scale-down 3 -> 1", "job elastic: scale-up 1 -> 2",
                 "job elastic: scale-up slice %s admitted" % slice_name,
                 "job elastic: starting 1 added processes"]:
        assert line in text, text


def test_a_failing_job_from_the_command_line(server, setup):
    c, m, _, log = setup
    m.go("oops")
    runner = RunnerProcess(runner_args(server, extra=[
        "--job", "name=oops,cpu=500m,processes=2", "--"] + m.command(status=3)), log)
    try:
        assert runner.wait(20) == 1, runner.text()
    finally:
        runner.close()
    wl = c.get("oops", NS)
    finished = [x for x in wl.status.conditions if x.type == "Finished"][0]
    assert (finished.status, finished.reason) == ("True", "Failed")
    assert finished.message == ("process 0 exited with status 3; process 1 exited with status 3")
    assert usage_is_zero(c)


def test_restarted_runners_take_their_workloads_up(server, setup):
    c, m, jobs, log = setup
    write_job(jobs, "sleepy.json", name="sleepy", namespace=NS, queue="lq", cpu="1",
              processes=1, command=m.command())
    # 1. A runner killed -9 leaves its workload admitted (and its process running: it cannot
    # tell a successor about it). The next runner's Submit is the same workload (a stable UID),
    # admitted: it starts the job afresh.
    first = RunnerProcess(runner_args(server, jobs), log)
    try:
        wait_for("sleepy starts", lambda: m.count("sleepy", 0, "start") == 1, log=log)
        first.kill()
    finally:
        first.close()
    uid = c.get("sleepy", NS).metadata.uid
    second = RunnerProcess(runner_args(server, jobs), log)
    try:
        wait_for("sleepy starts afresh", lambda: m.count("sleepy", 0, "start") == 2, log=log)
        # 2. SIGINT: the runner stops the process, deactivates the workload and releases its
        # quota (stopped).
        second.interrupt()
        assert second.wait(20) == 130, second.text()
    finally:
        second.close()
    assert m.count("sleepy", 0, "term") == 1  # the second runner's; the orphan still waits
    wl = c.get("sleepy", NS)
    assert not wl.spec.active and conditions(wl)["QuotaReserved"][0] == "False"
    assert usage_is_zero(c)

    # 3. A third runner activates the workload and runs the job to its end.
    third = RunnerProcess(runner_args(server, jobs), log)
    try:
        wait_for("sleepy starts again", lambda: m.count("sleepy", 0, "start") == 3, log=log)
        m.go("sleepy")
        assert third.wait(20) == 0, third.text()
    finally:
        third.close()
    wl = c.get("sleepy", NS)
    assert wl.metadata.uid == uid
    assert conditions(wl)["Finished"] == ("True", "Succeeded")
    assert usage_is_zero(c)
    assert "activating sleepy" in third.text()


def retry(fn, timeout=20.0):
    """``fn()`` once admitd answers again (after a restart)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except admitd.AdmitdError as e:
            if e.code != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_runner_follows_its_workloads_across_an_admitd_restart(server, setup):
    c, m, jobs, log = setup
    write_job(jobs, "steady.yaml", name="steady", namespace=NS, queue="lq", cpu="1",
              processes=1, command=m.command())
    runner = RunnerProcess(runner_args(server, jobs), log)
    try:
        wait_for("steady starts", lambda: m.count("steady", 0, "start") == 1, log=log)
        server.kill()
        server.start()  # SIGKILL: the runner's watch breaks, and resumes once admitd is back
        # An eviction the runner can only learn from its resumed watch: it stops the process
        # and releases the quota; reactivated, the workload is admitted and started again.
        retry(lambda: c.deactivate("steady", NS))
        wait_for("steady stopped and released", lambda: m.count("steady", 0, "term") == 1 and
                 conditions(c.get("steady", NS))["QuotaReserved"][0] == "False", log=log)
        c.activate("steady", NS)
        wait_for("steady starts again", lambda: m.count("steady", 0, "start") == 2, log=log)
        m.go("steady")
        assert runner.wait(20) == 0, runner.text()
    finally:
        runner.close()
    assert conditions(c.get("steady", NS))["Finished"] == ("True", "Succeeded")
    assert usage_is_zero(c)
    assert "job steady: evicted (Deactivated" in runner.text()
