"""The jobs of batch_runner.py: how they are written (job files, ``--job``, the command line),
the admitd Workload each one becomes, how to read a Workload's state back, and what the runner
keeps about each job while it runs (JobRun).

A job file is YAML or JSON (JSON is YAML), one job per file::

    name: train                 # the Workload's name too: a DNS label, unique in the namespace
    namespace: team             # default: the runner's --namespace
    queue: lq                   # the LocalQueue; default: the runner's --queue
    cpu: 500m                   # what each process requests (a Kubernetes quantity)
    processes: 4                # how many run at once (the pod set's count)
    command: [python, train.py] # argv of every process
    priority: 10                # optional: spec.priority (higher preempts lower)
    elastic: true               # optional: may be resized while it runs
    resize_to: 2                # optional, elastic: resize to 2 processes ...
    resize_after_seconds: 30    # ... 30 s after the job first started
    resizes: [{after_seconds: 30, to: 2}, {after_seconds: 60, to: 3}]   # several steps

On the command line the same keys are ``key=value`` pairs and the command follows ``--``::

    batch_runner.py --job name=train,cpu=500m,processes=4,elastic=true -- python train.py
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import yaml

from admitd import objects_pb2 as obj
from runner_procs import ProcessGroup

# How admitd (as Kueue) marks elastic workloads and the slices of one job.
ELASTIC_JOB = "kueue.x-k8s.io/elastic-job"
SLICE_NAME = "kueue.x-k8s.io/workload-slice-name"
REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"
# The "job" that owns each Workload: this runner's own kind. Resize finds a job's slices by it.
OWNER_API_VERSION = "batch-runner.example.com/v1"
OWNER_KIND = "BatchJob"
JOB_LABEL = "batch-runner.example.com/job"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"  # admitd names the job by it in eviction messages
POD_SET = "main"
_UID_NAMESPACE = uuid.UUID("5b1e0c2a-8d4e-4f0e-9a51-6a0d3c9e7b21")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
JOB_FILE_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class JobSpec:
    """One job as its file (or ``--job``) describes it."""

    name: str
    command: List[str]
    namespace: str
    queue: str
    cpu: str = "1"
    processes: int = 1
    priority: Optional[int] = None
    elastic: bool = False
    resizes: List[Tuple[float, int]] = field(default_factory=list)  # (after seconds, processes)
    source: str = ""

    @property
    def key(self) -> str:
        return "%s/%s" % (self.namespace, self.name)


@dataclass
class JobRun:
    """What the runner knows of one job."""

    spec: JobSpec
    workload: str                 # the Workload (slice) the job runs under
    slice: Optional[str] = None   # a scale-up slice waiting to be admitted
    procs: ProcessGroup = field(default_factory=ProcessGroup)
    running: bool = False         # processes started for the current admission
    count: int = 0                # processes the current admission runs
    generation: int = 1           # the job's generation: + 1 per resize
    seen: Dict[str, int] = field(default_factory=dict)  # resource_version handled, per workload
    first_start: Optional[float] = None
    resizes: List[Tuple[float, int]] = field(default_factory=list)
    outcome: Optional[str] = None  # the Finished reason once done

    def say(self, text: str, *args: Any) -> None:
        logging.getLogger("batch-runner").info("job %s: " + text, self.spec.name, *args)



def job_from_dict(d: Mapping[str, Any], namespace: str, queue: str, source: str) -> JobSpec:
    """A JobSpec from a job file's fields; ValueError names what is wrong."""
    known = {"name", "namespace", "queue", "cpu", "processes", "command", "priority", "elastic",
             "resize_to", "resize_after_seconds", "resizes"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError("%s: unknown fields %s" % (source, ", ".join(unknown)))
    name = str(d.get("name", ""))
    if not _DNS_LABEL.match(name):
        raise ValueError("%s: name %r is not a DNS label" % (source, name))
    command = d.get("command")
    if isinstance(command, str):
        command = shlex.split(command)
    if not command or not all(isinstance(a, (str, int, float)) for a in command):
        raise ValueError("%s: command must be a non-empty list of strings" % source)
    resizes = [(float(r["after_seconds"]), int(r["to"])) for r in d.get("resizes", [])]
    if "resize_to" in d:
        resizes.append((float(d.get("resize_after_seconds", 0)), int(d["resize_to"])))
    spec = JobSpec(name=name, command=[str(a) for a in command],
                   namespace=str(d.get("namespace") or namespace),
                   queue=str(d.get("queue") or queue), cpu=str(d.get("cpu", "1")),
                   processes=int(d.get("processes", 1)),
                   priority=int(d["priority"]) if d.get("priority") is not None else None,
                   elastic=_boolean(d.get("elastic", False)),
                   resizes=sorted(resizes), source=source)
    if spec.processes < 1 or any(n < 1 for _, n in spec.resizes):
        raise ValueError("%s: processes and resize_to must be >= 1" % source)
    if spec.resizes and not spec.elastic:
        raise ValueError("%s: only an elastic job can be resized (elastic: true)" % source)
    return spec


def _boolean(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "on")
    return bool(value)


def load_job_file(path: str, namespace: str, queue: str) -> JobSpec:
    with open(path) as f:
        d = yaml.safe_load(f)
    if not isinstance(d, Mapping):
        raise ValueError("%s: a job file holds one mapping" % path)
    return job_from_dict(d, namespace, queue, path)


def job_files(directory: str) -> List[str]:
    """The job files of a directory, by name (a file being written elsewhere and renamed in
    appears whole)."""
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if n.endswith(JOB_FILE_SUFFIXES) and not n.startswith("."))


def job_from_cli(spec: str, command: List[str], namespace: str, queue: str) -> JobSpec:
    """``name=train,cpu=500m,processes=4[,priority=N][,elastic=true][,resize_to=N,
    resize_after_seconds=S]`` and the command given after ``--``."""
    d: Dict[str, Any] = {}
    for item in filter(None, spec.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError("--job: %r is not key=value" % item)
        d[key.strip()] = value.strip()
    d["command"] = command
    return job_from_dict(d, namespace, queue, "--job")


def parse_command_line(argv: List[str]) -> argparse.Namespace:
    command: List[str] = []
    if "--" in argv:
        argv, command = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    p = argparse.ArgumentParser(description="Runs batch jobs as local processes while admitd "
                                "admits them (see the module docstring).")
    p.add_argument("--server", help="admitd's host:port (default $ADMITD_SERVER, else "
                   "localhost:50051; TLS and tokens from the ADMITD_* variables)")
    p.add_argument("--jobs", metavar="DIR", help="a directory of job files (.yaml, .yml, .json)")
    p.add_argument("--job", metavar="KEY=VALUE,...", help="one job, its command after --: "
                   "name=N,cpu=Q,processes=N[,priority=P][,elastic=true][,resize_to=N,"
                   "resize_after_seconds=S]")
    p.add_argument("--namespace", default="default", help="the jobs' namespace (default: default)")
    p.add_argument("--queue", default="default", help="LocalQueue of jobs that name none")
    p.add_argument("--grace-seconds", type=float, default=10.0,
                   help="between SIGTERM and SIGKILL when stopping processes (default 10)")
    p.add_argument("--rescan-seconds", type=float, default=1.0,
                   help="how often --jobs is read again for new files (default 1)")
    args = p.parse_args(argv)
    args.command = command
    if args.job and not command:
        p.error("--job needs its command after --")
    if not args.jobs and not args.job:
        p.error("give --jobs DIR, or --job SPEC -- COMMAND")
    if args.jobs and not os.path.isdir(args.jobs):
        p.error("--jobs %s is not a directory" % args.jobs)
    try:
        args.cli_jobs = [job_from_cli(args.job, command, args.namespace, args.queue)] \
            if args.job else []
    except (ValueError, KeyError) as e:
        p.error(str(e))
    return args


def stable_uid(kind: str, spec: JobSpec) -> str:
    """The same UID every time for the same job: a retried (or a restarted runner's) Submit is
    then the same workload, which admitd answers as stored instead of refusing the name."""
    return str(uuid.uuid5(_UID_NAMESPACE, "%s:%s" % (kind, spec.key)))


def workload_for(spec: JobSpec) -> obj.Workload:
    """The Workload a job is admitted as: one pod set "main" of ``processes`` pods, each asking
    for ``cpu``; owned by the job (a BatchJob of this runner) so its elastic slices chain."""
    wl = obj.Workload()
    meta = wl.metadata
    meta.name, meta.namespace = spec.name, spec.namespace
    meta.uid = stable_uid("workload", spec)
    meta.labels[JOB_LABEL] = spec.name
    meta.labels[JOB_UID_LABEL] = stable_uid("job", spec)
    if spec.elastic:
        meta.annotations[ELASTIC_JOB] = "true"
    meta.owner_references.add(api_version=OWNER_API_VERSION, kind=OWNER_KIND, name=spec.name,
                              uid=stable_uid("job", spec), controller=True)
    wl.spec.queue_name = spec.queue
    if spec.priority is not None:
        wl.spec.priority = spec.priority
    pod_set = wl.spec.pod_sets.add(name=POD_SET, count=spec.processes)
    pod_set.template.spec.containers.add(name="main").resources.requests["cpu"] = spec.cpu
    return wl


def job_name_of(wl: obj.Workload) -> str:
    """The job a Workload belongs to: its own name, or for a scale-up slice the first slice's
    (which is the job's name)."""
    return wl.metadata.annotations.get(SLICE_NAME) or wl.metadata.name


# ---- reading a Workload's state from its conditions -------------------------------------------
FINISHED, EVICTED, ADMITTED, INACTIVE, PENDING = (
    "finished", "evicted", "admitted", "inactive", "pending")


def condition(wl: obj.Workload, kind: str) -> Optional[obj.Condition]:
    return next((c for c in wl.status.conditions if c.type == kind), None)


def is_true(wl: obj.Workload, kind: str) -> bool:
    c = condition(wl, kind)
    return c is not None and c.status == "True"


def state_of(wl: obj.Workload) -> str:
    """finished; evicted (told to stop, still holding its quota until ReleaseQuota(stopped));
    admitted (may run); inactive (spec.active=false); pending."""
    if is_true(wl, "Finished"):
        return FINISHED
    if is_true(wl, "Evicted") and is_true(wl, "QuotaReserved"):
        return EVICTED
    if is_true(wl, "Admitted"):
        return ADMITTED
    if wl.spec.HasField("active") and not wl.spec.active:
        return INACTIVE
    return PENDING


def why(wl: obj.Workload, kind: str) -> str:
    """``reason: message`` of a condition, for the log."""
    c = condition(wl, kind)
    return "%s: %s" % (c.reason, c.message) if c else ""


def admitted_count(wl: obj.Workload) -> int:
    """How many processes the admission allows: the pod set's count, capped by the count the
    admission granted (an in-place scale-down lowers the first, not the second)."""
    count = next(p.count for p in wl.spec.pod_sets if p.name == POD_SET)
    for a in wl.status.admission.pod_set_assignments:
        if a.name == POD_SET and a.count:
            count = min(count, a.count)
    return count


def process_environment(wl: obj.Workload, spec: JobSpec, index: int, count: int) -> Dict[str, str]:
    """What a process learns of its admission."""
    flavors: Dict[str, str] = {}
    for a in wl.status.admission.pod_set_assignments:
        if a.name == POD_SET:
            flavors = dict(a.flavors)
    return {"ADMITD_WORKLOAD": "%s/%s" % (wl.metadata.namespace, wl.metadata.name),
            "ADMITD_CLUSTER_QUEUE": wl.status.admission.cluster_queue,
            "ADMITD_FLAVOR": flavors.get("cpu", ""),
            "ADMITD_FLAVORS": json.dumps(flavors, sort_keys=True),
            "ADMITD_JOB": spec.name,
            "ADMITD_PROCESS_INDEX": str(index),
            "ADMITD_PROCESSES": str(count)}
