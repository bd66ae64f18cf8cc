"""The requests of the client's calls, built from plain arguments (shared by the blocking and the
asyncio client), and the conversions of what callers pass in."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from google.protobuf import json_format

from admitd.v1 import admission_service_pb2 as adm
from admitd.v1 import objects_pb2 as obj
from admitd.v1 import queue_service_pb2 as qs

# The kinds a caller names, as admitctl's `get KIND` spells them, and their ObjectKind.
KINDS = {
    "resourceflavor": qs.OBJECT_KIND_RESOURCE_FLAVOR,
    "cohort": qs.OBJECT_KIND_COHORT,
    "clusterqueue": qs.OBJECT_KIND_CLUSTER_QUEUE,
    "localqueue": qs.OBJECT_KIND_LOCAL_QUEUE,
    "workloadpriorityclass": qs.OBJECT_KIND_WORKLOAD_PRIORITY_CLASS,
    "admissioncheck": qs.OBJECT_KIND_ADMISSION_CHECK,
    "namespace": qs.OBJECT_KIND_NAMESPACE,
    "multikueueconfig": qs.OBJECT_KIND_MULTIKUEUE_CONFIG,
    "multikueuecluster": qs.OBJECT_KIND_MULTIKUEUE_CLUSTER,
    "workload": qs.OBJECT_KIND_WORKLOAD,
}
_SHORT = {"rf": "resourceflavor", "flavor": "resourceflavor", "cq": "clusterqueue",
          "lq": "localqueue", "wpc": "workloadpriorityclass", "ac": "admissioncheck",
          "wl": "workload", "ns": "namespace"}

WorkloadLike = Union[obj.Workload, Mapping[str, Any], str]


def object_kind(kind: Union[str, int]) -> int:
    """An ObjectKind from a name (``"ClusterQueue"``, ``"clusterqueues"``, ``"cq"``) or value."""
    if isinstance(kind, int):
        return kind
    k = kind.lower().replace("-", "").replace("_", "")
    k = _SHORT.get(k, k)
    if k not in KINDS and k.endswith("s") and k[:-1] in KINDS:
        k = k[:-1]
    if k not in KINDS:
        raise ValueError("unknown kind %r (known: %s)" % (kind, ", ".join(sorted(KINDS))))
    return KINDS[k]


def is_kueue_manifest(value: Any) -> bool:
    """A Kueue document (YAML text, or a dict with a kueue.x-k8s.io apiVersion)."""
    if isinstance(value, str):
        return True
    return isinstance(value, Mapping) and str(value.get("apiVersion", "")).startswith(
        "kueue.x-k8s.io/")


def manifest_text(value: Union[str, Mapping[str, Any], Iterable[Mapping[str, Any]]]) -> str:
    """YAML text for ParseManifests: text as it is; a dict or a list of dicts as JSON documents
    (JSON is YAML)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return json.dumps(value)
    return "\n---\n".join(json.dumps(v) for v in value)


def workload_from_dict(value: Mapping[str, Any]) -> obj.Workload:
    """A Workload from admitd's own JSON shape (the proto's fields, camelCase or snake_case)."""
    wl = obj.Workload()
    json_format.ParseDict(value, wl)
    return wl


def parse_request(text: str, source: str = "") -> qs.ParseManifestsRequest:
    return qs.ParseManifestsRequest(text=text, source=source or "manifest", apply_order=True)


def admit_request(name: str, namespace: str, wait: bool = False, timeout: float = 30.0,
                  dry_run: bool = False) -> adm.AdmitRequest:
    req = adm.AdmitRequest(namespace=namespace, name=name, wait=wait, dry_run=dry_run)
    if wait:
        req.timeout.FromMilliseconds(int(timeout * 1000))
    return req


def release_request(name: str, namespace: str, *, finished: Optional[bool], stopped: bool,
                    reclaimable: Optional[Mapping[str, int]], message: str,
                    uid: str) -> adm.ReleaseQuotaRequest:
    given = [finished is not None, stopped, reclaimable is not None]
    if sum(given) != 1:
        raise ValueError("release: give exactly one of finished=True|False, stopped=True, "
                         "reclaimable={pod_set: count}")
    req = adm.ReleaseQuotaRequest(namespace=namespace, name=name, uid=uid)
    if finished is not None:
        req.finished.succeeded = bool(finished)
        req.finished.message = message
    elif stopped:
        req.stopped.SetInParent()
    else:
        for pod_set, count in reclaimable.items():
            req.reclaimable.pods.add(name=pod_set, count=int(count))
    return req


def resize_request(counts: Mapping[str, int], name: str, namespace: str, generation: int,
                   job: Optional[Mapping[str, str]]) -> adm.ResizeRequest:
    if not counts:
        raise ValueError("resize: counts must name at least one pod set")
    req = adm.ResizeRequest(namespace=namespace, name=name, generation=generation)
    if job:
        req.job.CopyFrom(adm.JobReference(**job))
    elif not name:
        raise ValueError("resize: give the workload's name or its job")
    for pod_set, count in counts.items():
        req.pod_sets.add(name=pod_set, count=int(count))
    return req


def object_key(o: obj.QueueObject) -> Dict[str, str]:
    """The kind (oneof case) and metadata of a queue object."""
    which = o.WhichOneof("kind")
    meta = getattr(o, which).metadata
    return {"kind": which, "name": meta.name, "namespace": meta.namespace}


def single_workload(parsed) -> obj.Workload:
    """The one Workload of parsed manifests (``submit`` takes one)."""
    if len(parsed) != 1 or parsed[0].WhichOneof("object") != "workload":
        raise ValueError("submit takes one Workload document; apply takes several")
    return parsed[0].workload


def workload_for_submit(workload: obj.Workload, namespace: Optional[str]) -> adm.SubmitRequest:
    req = adm.SubmitRequest()
    req.workload.CopyFrom(workload)
    if namespace is not None:
        req.workload.metadata.namespace = namespace
    return req


def as_workload(workload: Any) -> Optional[obj.Workload]:
    """A v1.Workload, or one from admitd's JSON shape; None for a Kueue manifest (to parse)."""
    if isinstance(workload, obj.Workload):
        return workload
    if is_kueue_manifest(workload):
        return None
    if isinstance(workload, Mapping):
        return workload_from_dict(workload)
    raise TypeError("a workload is a v1.Workload, a Kueue manifest or a dict, not %s" %
                    type(workload).__name__)


def apply_plan(manifests: Any):
    """(the parsed manifests, or None when ``manifests`` is one QueueObject to apply as is)."""
    if isinstance(manifests, obj.QueueObject):
        return [qs.ParsedManifest(queue_object=manifests)]
    return None


class Paging:
    """A paged List's progress, shared by the blocking and the asyncio listing: ``request`` is
    the next page's request (None once done), ``take(response)`` keeps a page and answers its
    items, and ``revision`` is the oldest revision a page was read at: a watch from there misses
    no change made while listing."""

    def __init__(self, request, field: str):
        self.request = request
        self._field = field
        self.revision: Optional[int] = None

    def take(self, resp):
        self.revision = resp.revision if self.revision is None else min(self.revision,
                                                                         resp.revision)
        if resp.next_page_token:
            self.request.page_token = resp.next_page_token
        else:
            self.request = None
        return list(getattr(resp, self._field))
