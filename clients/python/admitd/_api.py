"""The calls both clients make, written once: each public method builds its request and says
what to return from the answer; ``_unary`` (blocking in ``Client``, a coroutine in
``AsyncClient``) makes the call. Calls of several steps (paging, manifests, watching) are the
clients' own."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Union

from admitd import _requests as rq
from admitd._connection import ConnectionOptions
from admitd.errors import WaitTimeout
from admitd.v1 import admission_service_pb2 as adm
from admitd.v1 import admission_service_pb2_grpc as adm_grpc
from admitd.v1 import objects_pb2 as obj
from admitd.v1 import queue_service_pb2 as qs
from admitd.v1 import queue_service_pb2_grpc as qs_grpc


def _admitted_or_raise(name: str, namespace: str) -> Callable[[adm.AdmitResponse], obj.Workload]:
    def post(resp: adm.AdmitResponse) -> obj.Workload:
        if resp.admitted or resp.state == obj.WORKLOAD_STATE_FINISHED:
            return resp.workload
        raise WaitTimeout("%s/%s" % (namespace, name), obj.WorkloadState.Name(resp.state),
                          resp.pending_reason, resp.pending_message)
    return post


def options_from(target: Optional[str], options: Optional[ConnectionOptions],
                 overrides: Mapping[str, Any]) -> ConnectionOptions:
    """``options`` as given, else the environment's (admitctl's variables) for ``target``; then
    the keyword arguments that were given."""
    o = options or ConnectionOptions.from_environment(target)
    for key, value in overrides.items():
        if value is not None:
            setattr(o, key, value)
    if overrides.get("token_file"):
        o.token = ""
    return o


class Operations:
    """The connection and the single-call methods of ``Client`` and ``AsyncClient`` (awaitable
    there).

    Args:
        target: ``host:port`` of admitd (default ``$ADMITD_SERVER``, else ``localhost:50051``).
        tls, ca_file, cert_file, key_file, server_name, token, token_file: as in
            ``ConnectionOptions``; those not given come from the ``ADMITD_*`` variables.
        options: all of them at once instead (the environment is then not read).
        timeout: seconds each call may take (``wait_admitted`` adds its own wait).
    """

    def __init__(self, target: Optional[str] = None, *, tls: Optional[bool] = None,
                 ca_file: Optional[str] = None, cert_file: Optional[str] = None,
                 key_file: Optional[str] = None, server_name: Optional[str] = None,
                 token: Optional[str] = None, token_file: Optional[str] = None,
                 options: Optional[ConnectionOptions] = None, timeout: float = 30.0):
        self.options = options_from(target, options, dict(
            tls=tls, ca_file=ca_file, cert_file=cert_file, key_file=key_file,
            server_name=server_name, token=token, token_file=token_file))
        self.timeout = timeout
        self._channel = self._connect(self.options)
        self._stubs = {"admission": adm_grpc.AdmissionServiceStub(self._channel),
                       "queues": qs_grpc.QueueServiceStub(self._channel)}

    @staticmethod
    def _connect(options: ConnectionOptions):
        raise NotImplementedError

    def _unary(self, service: str, method: str, request: Any,
               post: Optional[Callable[[Any], Any]] = None,
               timeout: Optional[float] = None) -> Any:
        raise NotImplementedError

    def ping(self):
        """Raises unless admitd answers (and accepts the credentials)."""
        return self._unary("queues", "Ping", qs.PingRequest(), lambda _: None)

    def get(self, name: str, namespace: str = "default"):
        """The workload ``namespace/name`` (NOT_FOUND: ``AdmitdError``)."""
        return self._unary("admission", "Get",
                           adm.GetWorkloadRequest(namespace=namespace, name=name))

    def delete(self, name: str, namespace: str = "default", uid: str = ""):
        """Deletes the workload (its quota goes back); ``uid`` guards against a namesake."""
        return self._unary("admission", "Delete",
                           adm.DeleteWorkloadRequest(namespace=namespace, name=name, uid=uid),
                           lambda _: None)

    def admit(self, name: str, namespace: str = "default", *, wait: bool = False,
              timeout: float = 30.0, dry_run: bool = False):
        """Where the workload stands (an AdmitResponse); with ``wait``, once it is admitted or
        ``timeout`` seconds passed; with ``dry_run``, with the explanation of its next
        scheduling attempt."""
        return self._unary("admission", "Admit",
                           rq.admit_request(name, namespace, wait, timeout, dry_run),
                           timeout=self.timeout + (timeout if wait else 0))

    def wait_admitted(self, name: str, namespace: str = "default", timeout: float = 30.0):
        """The workload once admitted (or finished); ``WaitTimeout`` (a ``TimeoutError``)
        carrying its state and pending reason when ``timeout`` seconds pass first."""
        return self._unary("admission", "Admit",
                           rq.admit_request(name, namespace, True, timeout, False),
                           _admitted_or_raise(name, namespace), timeout=self.timeout + timeout)

    def explain(self, name: str, namespace: str = "default"):
        """Why the workload is pending, and what the next scheduling attempt would do (an
        Explanation)."""
        return self._unary("admission", "Admit", rq.admit_request(name, namespace, dry_run=True),
                           lambda r: r.explanation)

    def release(self, name: str, namespace: str = "default", *, finished: Optional[bool] = None,
                stopped: bool = False, reclaimable: Optional[Mapping[str, int]] = None,
                message: str = "", uid: str = ""):
        """Gives quota back, exactly one of: ``finished=True`` (succeeded) or ``False`` (failed),
        with ``message``; ``stopped=True``, after an eviction (the workload requeues); or
        ``reclaimable={pod_set: pods}`` that no longer need it. Returns the workload."""
        req = rq.release_request(name, namespace, finished=finished, stopped=stopped,
                                 reclaimable=reclaimable, message=message, uid=uid)
        return self._unary("admission", "ReleaseQuota", req, lambda r: r.workload)

    def resize(self, counts: Mapping[str, int], name: str = "", namespace: str = "default", *,
               generation: int = 0, job: Optional[Mapping[str, str]] = None):
        """Changes a job's pod counts ({pod_set: count}): in place (a scale-down, or not admitted
        yet), or through a new workload slice (a scale-up of an admitted elastic workload; needs
        the job's new ``generation``). ``job`` ({api_version, kind, name, uid}) names the job
        instead of its workload. Returns the ResizeResponse (outcome, live workloads)."""
        return self._unary("admission", "Resize",
                           rq.resize_request(counts, name, namespace, generation, job))

    def activate(self, name: str, namespace: str = "default", uid: str = ""):
        """spec.active=true: an inactive workload queues again. Returns the workload."""
        return self._set_active(name, namespace, True, uid)

    def deactivate(self, name: str, namespace: str = "default", uid: str = ""):
        """spec.active=false: evicts a workload that holds quota. Returns the workload."""
        return self._set_active(name, namespace, False, uid)

    def _set_active(self, name: str, namespace: str, active: bool, uid: str):
        return self._unary("admission", "SetActive", adm.SetActiveRequest(
            namespace=namespace, name=name, active=active, uid=uid), lambda r: r.workload)

    def report_pods_ready(self, name: str, namespace: str = "default", ready: bool = True,
                          uid: str = ""):
        """Tells admitd whether every pod the job needs is ready (waitForPodsReady): the
        workload's PodsReady condition follows. Returns the workload."""
        return self._unary("admission", "ReportPodsReady", adm.ReportPodsReadyRequest(
            namespace=namespace, name=name, uid=uid, ready=ready), lambda r: r.workload)

    def check(self, name: str, check: str, state: str, namespace: str = "default",
              message: str = "", requeue_after_seconds: Optional[int] = None):
        """Reports the state of an admission check (Pending, Ready, Retry, Rejected) on the
        workload, as a check controller does. Returns the workload."""
        req = adm.SetAdmissionCheckStateRequest(namespace=namespace, name=name, check=check,
                                                state=state, message=message)
        if requeue_after_seconds is not None:
            req.requeue_after_seconds = requeue_after_seconds
        return self._unary("admission", "SetAdmissionCheckState", req, lambda r: r.workload)

    def cycles(self, count: int = 1, advance_seconds: int = 0):
        """Runs ``count`` scheduling cycles now (admitd started with --manual-scheduling; with
        --manual-clock, the clock moves ``advance_seconds`` first). A
        RunSchedulingCyclesResponse."""
        return self._unary("queues", "RunSchedulingCycles", qs.RunSchedulingCyclesRequest(
            count=count, advance_clock_seconds=advance_seconds))

    def get_object(self, kind: Union[str, int], name: str, namespace: str = ""):
        """A queue object (QueueObject) by kind (``"ClusterQueue"``, ``"cq"``, ...) and name."""
        return self._unary("queues", "Get", qs.GetObjectRequest(
            kind=rq.object_kind(kind), namespace=namespace, name=name))

    def delete_object(self, kind: Union[str, int], name: str, namespace: str = "",
                      expected_resource_version: int = 0):
        return self._unary("queues", "Delete", qs.DeleteObjectRequest(
            kind=rq.object_kind(kind), namespace=namespace, name=name,
            expected_resource_version=expected_resource_version), lambda _: None)

    def parse(self, manifests, source: str = ""):
        """Kueue manifests (YAML text, a dict, or a list of dicts; kueue.x-k8s.io/v1beta1 or
        v1beta2) read by admitd exactly as admitctl reads them, in the order they apply in (a
        list of ParsedManifest). INVALID_ARGUMENT names every bad field."""
        return self._unary("queues", "ParseManifests",
                           rq.parse_request(rq.manifest_text(manifests), source),
                           lambda r: list(r.manifests))
