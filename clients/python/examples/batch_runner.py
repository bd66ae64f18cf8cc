#!/usr/bin/env python3
"""batch_runner: runs batch jobs as local processes, each only while admitd admits it.

A small batch framework that is not Kubernetes, using admitd for admission (quota, priorities,
preemption, elastic resizing) the way Kueue's job integrations do:

    batch_runner.py --server localhost:50051 --namespace team --queue lq --jobs jobs/
    batch_runner.py --namespace team --queue lq --job name=hello,cpu=1,processes=2 -- echo hi

Jobs are files in a directory (YAML or JSON; see runner_jobs.py; files dropped in while it runs
are picked up: write them elsewhere and rename them in) or one ``--job`` on the command line.
The runner exits when every job has finished: 0 if all succeeded, 1 otherwise, 130 on SIGINT.

The protocol, as this runner speaks it (docs/integrating.md has the whole of it):

1. Watch first: ``Client.watch(kinds=["Workload"], namespace=NS)`` in a thread; wait for its
   SYNCED event, so nothing after the submits is missed. It resumes by itself across admitd
   restarts. Each event carries the whole Workload: its state is read from its conditions
   (runner_jobs.state_of), and a state older than one handled (metadata.resource_version) is
   skipped, so a replayed or repeated event changes nothing.
2. Submit each job as a Workload: pod set "main", count = processes, each pod requesting the
   job's cpu; spec.priority; kueue.x-k8s.io/elastic-job: "true" if elastic. Its name is the
   job's and its UID derives from namespace/name: a retried Submit (or a restarted runner's) is
   the same workload, which admitd answers as stored.
3. Admitted=True: start the processes with the admission in their environment: ADMITD_WORKLOAD
   (ns/name), ADMITD_CLUSTER_QUEUE, ADMITD_FLAVOR (the cpu flavor of pod set "main"),
   ADMITD_FLAVORS, ADMITD_JOB, ADMITD_PROCESS_INDEX, ADMITD_PROCESSES.
4. Evicted=True (preempted, deactivated, ...: the workload keeps its quota until told), or the
   admission gone while processes run: stop them (SIGTERM, SIGKILL after --grace-seconds), then
   ReleaseQuota(stopped): the quota goes back and the workload requeues. Admitted again, all
   its processes start again: a run restarts from scratch.
5. Every process exited: ReleaseQuota(finished), succeeded only if all exited 0, the message
   saying which did not.
6. Resize (elastic jobs; ``resize_to`` in the job). Scale-down: stop the extra processes
   (highest indices), then Resize: admitd shrinks the workload and its quota in place.
   Scale-up: Resize with the job's generation + 1 queues a new slice, a Workload admitd names
   (annotation kueue.x-k8s.io/workload-slice-replacement-for: ns/<running one>); the running
   processes go on, the added ones start once the slice is admitted (admitd then finishes the
   old slice, Finished=True/WorkloadSliceReplaced, in the same commit: never both hold quota).
7. Restart: admitd holds the state. Each job's Submit answers its workload as stored: a
   finished one is not run again (rename the job to rerun it); an elastic job's live slices are
   found by their kueue.x-k8s.io/workload-slice-name; an inactive one is activated (a runner
   deactivates its workloads on SIGINT); an evicted one is released (stopped); an admitted one
   is started afresh. (A predecessor killed -9 may have left processes running: it cannot say.
   Requeueing the workload instead would take SetActive false then true: ReleaseQuota(stopped)
   is refused, WORKLOAD_NOT_EVICTED, on a workload that is not evicted.) Resize schedules count
   from this runner's first start of the job.
8. SIGINT/SIGTERM: stop every process, then SetActive(false) and ReleaseQuota(stopped) on every
   live workload: an admitted one gives its quota back, a pending one leaves its queue, and
   nothing is admitted while no runner is there to run it. Exit 130.
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import grpc
import yaml

import admitd
from admitd import admission_service_pb2 as adm
from admitd import objects_pb2 as obj

import runner_jobs as jobs
from runner_jobs import ADMITTED, EVICTED, FINISHED, INACTIVE, JobRun, JobSpec
from runner_procs import describe

log = logging.getLogger("batch-runner")
RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


class Runner:
    """One runner: its jobs, the watch's events, and what it does about them (one thread)."""

    def __init__(self, client: admitd.Client, args: argparse.Namespace):
        self.client, self.namespace, self.queue = client, args.namespace, args.queue
        self.jobs_dir, self.cli_jobs = args.jobs, args.cli_jobs
        self.grace, self.rescan_seconds = args.grace_seconds, args.rescan_seconds
        self.jobs: Dict[str, JobRun] = {}
        self.events: "queue.Queue[Any]" = queue.Queue()
        self.files: Dict[str, float] = {}  # job file -> the mtime it was read at
        self.next_scan = 0.0
        self.interrupted = False
        self.watch: Optional[admitd.Watch] = None

    # ---- the main loop --------------------------------------------------------------------
    def run(self) -> int:
        self.start_watch()
        for spec in self.cli_jobs:
            self.add_job(spec)
        self.rescan()
        if not self.jobs:
            log.info("no jobs to run")
        while self.jobs and not all(j.outcome for j in self.jobs.values()):
            if self.interrupted:
                return self.shutdown()
            self.step()
        self.watch.cancel()
        failed = sorted(n for n, j in self.jobs.items() if j.outcome != "Succeeded")
        log.info("every job finished%s", "; not succeeded: " + ", ".join(failed) if failed else "")
        return 1 if failed else 0

    def step(self) -> None:
        try:
            event = self.events.get(timeout=0.1)
        except queue.Empty:
            event = None
        if isinstance(event, Exception):
            raise event  # the watch gave up (not a restart: those it rides out)
        if event is not None:
            self.on_event(event)
        self.reap()
        self.resize_due()
        self.rescan()

    def call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """An admitd call, retried while admitd is unreachable (restarting): every call the
        runner makes is idempotent."""
        delay, deadline = 0.1, time.monotonic() + 60
        while True:
            try:
                return fn(*args, **kwargs)
            except admitd.AdmitdError as e:
                if e.code not in RETRYABLE or time.monotonic() > deadline:
                    raise
                log.info("%s: %s, retrying", what, e.code.name)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    # ---- the watch ------------------------------------------------------------------------
    def start_watch(self) -> None:
        # backoff_max: how long at most between reconnects while admitd is away (default 5 s).
        self.watch = self.client.watch(kinds=["Workload"], namespace=self.namespace,
                                       backoff_max=2.0)
        threading.Thread(target=self.follow, daemon=True).start()
        try:
            first = self.events.get(timeout=30)  # since_revision 0: no replay, SYNCED first
        except queue.Empty:
            raise TimeoutError("admitd's watch did not start in 30 s") from None
        if isinstance(first, Exception):
            raise first
        log.info("watching workloads in namespace %s", self.namespace)

    def follow(self) -> None:
        try:
            for event in self.watch:
                self.events.put(event)
        except Exception as e:  # noqa: BLE001 - handed to the main loop
            self.events.put(e)

    def on_event(self, event: adm.WatchEvent) -> None:
        if not event.HasField("workload"):
            return
        wl = event.workload
        job = self.jobs.get(jobs.job_name_of(wl))
        if job is None or wl.metadata.namespace != job.spec.namespace:
            return  # not one of ours
        if event.type == adm.WatchEvent.DELETED and wl.metadata.name == job.workload:
            job.say("workload deleted: stopping")
            self.stop(job, "the workload was deleted")
            job.outcome = "Deleted"
            return
        self.observe(job, wl)

    # ---- acting on a workload's state -----------------------------------------------------
    def observe(self, job: JobRun, wl: obj.Workload) -> None:
        """Acts on a workload's state unless a newer one was handled already."""
        name, rv = wl.metadata.name, wl.metadata.resource_version
        if rv <= job.seen.get(name, 0) or job.outcome:
            return
        job.seen[name] = rv
        if name == job.slice:
            self.on_slice(job, wl)
        elif name == job.workload:
            self.reconcile(job, wl)

    def reconcile(self, job: JobRun, wl: obj.Workload) -> None:
        state = jobs.state_of(wl)
        if state == FINISHED:
            if jobs.condition(wl, "Finished").reason == "WorkloadSliceReplaced":
                job.say("%s was replaced by its scale-up slice", wl.metadata.name)
                return  # the slice's admission moves the job on (on_slice)
            self.stop(job, "the workload finished")
            job.outcome = jobs.condition(wl, "Finished").reason
            job.say("finished: %s", jobs.why(wl, "Finished"))
        elif state == EVICTED:
            job.say("evicted (%s)", jobs.why(wl, "Evicted"))
            self.stop(job, "evicted")
            released = self.call("release", self.client.release, wl.metadata.name,
                                 wl.metadata.namespace, stopped=True)
            job.say("released its quota (stopped): %s", jobs.state_of(released))
            self.observe(job, released)
        elif state == ADMITTED:
            if not job.running:
                self.start(job, wl)
        elif job.running:
            job.say("admission removed (%s)", state)
            self.stop(job, "no longer admitted")

    def on_slice(self, job: JobRun, wl: obj.Workload) -> None:
        state = jobs.state_of(wl)
        if state == ADMITTED:
            job.say("scale-up slice %s admitted: it replaces %s", wl.metadata.name, job.workload)
            job.workload, job.slice = wl.metadata.name, None
            if job.running:
                self.start_added(job, wl)
            else:
                self.start(job, wl)
        elif state == FINISHED:
            job.say("scale-up slice %s finished unadmitted (%s)", wl.metadata.name,
                    jobs.why(wl, "Finished"))
            job.slice = None

    # ---- local processes ------------------------------------------------------------------
    def start(self, job: JobRun, wl: obj.Workload) -> None:
        job.count = jobs.admitted_count(wl)
        job.say("admitted to %s (flavor %s): starting %d processes",
                wl.status.admission.cluster_queue,
                jobs.process_environment(wl, job.spec, 0, 0)["ADMITD_FLAVOR"], job.count)
        job.procs.stop_all(self.grace)  # nothing should be left; a run starts afresh
        for i in range(job.count):
            self.start_process(job, wl, i)
        job.running = True
        if job.first_start is None:
            job.first_start = time.monotonic()

    def start_added(self, job: JobRun, wl: obj.Workload) -> None:
        job.count = jobs.admitted_count(wl)
        added = [i for i in range(job.count) if not job.procs.started(i)]
        job.say("starting %d added processes (now %d)", len(added), job.count)
        for i in added:
            self.start_process(job, wl, i)

    def start_process(self, job: JobRun, wl: obj.Workload, index: int) -> None:
        env = jobs.process_environment(wl, job.spec, index, job.count)
        pid = job.procs.start(index, job.spec.command, env)
        job.say("process %d started (pid %d)", index, pid)

    def stop(self, job: JobRun, why: str) -> None:
        if not job.running:
            return
        job.running = False
        job.say("stopping %d processes (%s)", len(job.procs.live), why)
        killed = job.procs.stop_all(self.grace)
        if killed:
            job.say("processes %s needed SIGKILL", killed)

    def reap(self) -> None:
        """Notices exited processes; reports a job whose processes all exited."""
        for job in self.jobs.values():
            if not job.running:
                continue
            for index, status in job.procs.poll():
                job.say("process %d exited with status %d", index, status)
            if job.procs.all_exited():
                self.finish(job)

    def finish(self, job: JobRun) -> None:
        job.running = False
        ok = all(status == 0 for status in job.procs.exits.values())
        message = describe(job.procs.exits)
        job.say("all processes exited: releasing quota, finished=%s (%s)", ok, message)
        wl = self.call("release", self.client.release, job.workload, job.spec.namespace,
                       finished=ok, message=message)
        if job.slice:  # a scale-up that came too late: nothing will run on it
            self.call("release", self.client.release, job.slice, job.spec.namespace,
                      finished=ok, message="the job ended before this slice was admitted")
            job.slice = None
        self.observe(job, wl)

    # ---- resizing (elastic jobs) ----------------------------------------------------------
    def resize_due(self) -> None:
        now = time.monotonic()
        for job in self.jobs.values():
            if job.running and job.resizes and not job.slice and \
                    now >= job.first_start + job.resizes[0][0]:
                self.resize(job, job.resizes.pop(0)[1])

    def resize(self, job: JobRun, count: int) -> None:
        job.generation += 1
        if count < job.count:
            job.say("scale-down %d -> %d: stopping processes %s", job.count, count,
                    list(range(count, job.count)))
            job.procs.stop(range(count, job.count), self.grace)
        try:
            resp = self.call("resize", self.client.resize, {jobs.POD_SET: count}, job.workload,
                             job.spec.namespace, generation=job.generation)
        except admitd.AdmitdError as e:  # e.g. GENERATION_REUSED: the job goes on as it is
            job.say("resize to %d refused: %s", count, e)
            return
        outcome = adm.ResizeResponse.Outcome.Name(resp.outcome)
        if count < job.count:
            job.count = count
        if outcome == "SLICE_CREATED":  # the new slice is the newest live workload
            new = resp.workloads[-1].metadata
            job.slice = new.name
            job.say("scale-up %d -> %d: slice %s (replacement for %s) queued; the added "
                    "processes start once it is admitted", job.count, count, new.name,
                    new.annotations.get(jobs.REPLACEMENT_FOR))
        else:
            job.say("resized to %d: %s", count, outcome)
        for wl in resp.workloads:
            self.observe(job, wl)

    # ---- jobs coming in -------------------------------------------------------------------
    def rescan(self) -> None:
        """Reads the job files that are new or changed since the last look."""
        if not self.jobs_dir or time.monotonic() < self.next_scan:
            return
        self.next_scan = time.monotonic() + self.rescan_seconds
        for path in jobs.job_files(self.jobs_dir):
            try:
                mtime = os.stat(path).st_mtime
                if self.files.get(path) == mtime:
                    continue
                self.files[path] = mtime
                spec = jobs.load_job_file(path, self.namespace, self.queue)
            except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as e:
                log.info("skipping %s: %s", path, e)
                continue
            if spec.name in self.jobs:
                if self.jobs[spec.name].spec.source != path:
                    log.info("skipping %s: job %s is already known", path, spec.name)
                continue
            self.add_job(spec)

    def add_job(self, spec: JobSpec) -> None:
        if spec.namespace != self.namespace:
            log.info("skipping %s: namespace %s (this runner serves %s)", spec.source,
                     spec.namespace, self.namespace)
            return
        job = JobRun(spec=spec, workload=spec.name, resizes=list(spec.resizes))
        self.jobs[spec.name] = job
        try:
            wl = self.call("submit", self.client.submit, jobs.workload_for(spec))
        except admitd.AdmitdError as e:
            job.say("submit refused: %s", e)
            job.outcome = "SubmitRefused"
            return
        job.say("submitted workload %s/%s (%s)", spec.namespace, wl.metadata.name,
                jobs.state_of(wl))
        self.adopt(job, wl)

    def adopt(self, job: JobRun, wl: obj.Workload) -> None:
        """Takes the job's workloads up where they stand (after a restart of the runner)."""
        chain = [wl]
        if job.spec.elastic:  # its slices, oldest first
            listed = self.call("list", lambda: list(self.client.list_workloads(
                namespace=job.spec.namespace, queue_name=job.spec.queue)))
            chain = sorted((w for w in listed if jobs.job_name_of(w) == job.spec.name),
                           key=lambda w: (w.metadata.creation_timestamp.ToNanoseconds(),
                                          w.metadata.name))
        live = [w for w in chain if jobs.state_of(w) != FINISHED]
        if live:
            job.workload = live[0].metadata.name
            job.slice = live[-1].metadata.name if len(live) > 1 else None
        for w in live:
            if jobs.state_of(w) == INACTIVE:
                job.say("activating %s (a runner deactivated it when interrupted)",
                        w.metadata.name)
                self.call("activate", self.client.activate, w.metadata.name, w.metadata.namespace)
        for w in live or chain[-1:]:
            self.observe(job, self.call("get", self.client.get, w.metadata.name,
                                        w.metadata.namespace))

    # ---- SIGINT ---------------------------------------------------------------------------
    def shutdown(self) -> int:
        log.info("interrupted: stopping every job and giving its quota back")
        self.watch.cancel()
        for job in self.jobs.values():
            if job.outcome:
                continue
            self.stop(job, "interrupted")
            for name in filter(None, [job.workload, job.slice]):
                try:
                    self.call("deactivate", self.client.deactivate, name, job.spec.namespace)
                    self.call("release", self.client.release, name, job.spec.namespace,
                              stopped=True)
                    job.say("deactivated %s and released its quota", name)
                except admitd.AdmitdError as e:
                    job.say("could not deactivate %s: %s", name, e)
        return 130


def main(argv: Optional[List[str]] = None) -> int:
    args = jobs.parse_command_line(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s batch-runner %(message)s")
    with admitd.Client(args.server) as client:
        runner = Runner(client, args)

        def interrupt(signum: int, _frame: Any) -> None:
            log.info("got %s", signal.Signals(signum).name)
            runner.interrupted = True

        signal.signal(signal.SIGINT, interrupt)
        signal.signal(signal.SIGTERM, interrupt)
        try:
            return runner.run()
        except Exception:
            log.exception("giving up")
            return 2
        finally:
            for job in runner.jobs.values():  # never leave a process behind
                runner.stop(job, "the runner is exiting")
            if runner.watch is not None:
                runner.watch.cancel()


if __name__ == "__main__":
    sys.exit(main())
