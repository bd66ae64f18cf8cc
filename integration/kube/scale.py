"""The ``scale`` subresource of Deployments, ReplicaSets and StatefulSets (autoscaling/v1 Scale).

A Scale is a view of its parent object, as kube-apiserver's ScaleREST builds
it: the parent's name, namespace, uid, resourceVersion and creationTimestamp;
``spec.replicas`` (left out when 0: the field is an int32 with omitempty);
``status.replicas`` (the parent's, 0 when unset) and ``status.selector`` (the
parent's label selector as a selector string, left out when empty).

A write of the subresource (``Store.update_scale``, ``Store.patch_scale``)
changes only the parent's ``spec.replicas``; the body is decoded as a Scale
(``decode``: wrong kinds and non-integer replicas are 400s) and validated
(``validate``: 422 ``Scale.autoscaling "<name>" is invalid: spec.replicas:
Invalid value: -1: must be greater than or equal to 0``). The admission hooks
see Scale objects (old and new), with the parent's resource and subresource
``scale``, as kube-apiserver's admission webhooks do: a webhook must name
``deployments/scale`` (or ``*/scale``, ``*/*``) to see them, and those
registered for ``deployments`` alone are not called (kubernetes#84530).
"""

import collections
import copy
import json

from errors import FieldError, bad_request
from kcommon import label_selector_string
from resources import SCALE_GVK, Resource
from tables import SCALE_TABLE

API_VERSION = SCALE_GVK["group"] + "/" + SCALE_GVK["version"]
KIND = SCALE_GVK["kind"]
INT32 = (-2 ** 31, 2 ** 31 - 1)

# The Scale as a resource of its own: how a 422 names it (``Scale.autoscaling``) and how
# kubectl's Table form prints it. It is served only as a subresource.
SCALE = Resource(SCALE_GVK["group"], SCALE_GVK["version"], "scale", KIND, True, "",
                 table=SCALE_TABLE)
# What errors.conflict needs to name the subresource (``deployments/scale.apps``).
Subresource = collections.namedtuple("Subresource", "qualified group plural")


def subresource(res):
    """The subresource ``res``'s Scale is (the name of a UID precondition's 409)."""
    plural = res.plural + "/scale"
    return Subresource(plural + ("." + res.group if res.group else ""), res.group, plural)


def scale_of(obj):
    """The Scale of a Deployment, ReplicaSet or StatefulSet (a stored object)."""
    meta = obj.get("metadata") or {}
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                     "creationTimestamp") if meta.get(k) is not None}
    out_spec = {}
    if spec.get("replicas"):
        out_spec["replicas"] = spec["replicas"]
    out_status = {"replicas": status.get("replicas") or 0}
    selector = label_selector_string(spec.get("selector"))
    if selector:
        out_status["selector"] = selector
    return {"kind": KIND, "apiVersion": API_VERSION, "metadata": out_meta, "spec": out_spec,
            "status": out_status}


def _cannot_handle(why):
    return bad_request('%s in version "%s" cannot be handled as a %s: json: %s'
                       % (KIND, SCALE_GVK["version"], KIND, why))


def _json_type(value):
    """How Go's encoding/json names the JSON type of ``value`` in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number %s" % json.dumps(value)
    return {str: "string", list: "array", dict: "object"}.get(type(value), "value")


def _type_error(value, go_field, field, go_type):
    return _cannot_handle("cannot unmarshal %s into Go struct field %s.%s of type %s"
                          % (_json_type(value), go_field, field, go_type))


def _int32(value, go_field, field):
    """The value of an int32 field of the body (0 when absent or null), or a 400."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) \
            or not INT32[0] <= value <= INT32[1]:
        raise _type_error(value, go_field, field, "int32")
    return value


def decode(body, ns, name):
    """The Scale of a PUT body or of a patched Scale, as Go decodes it (unknown fields dropped).

    400 when it is not a Scale (another kind or apiVersion), when a field has
    the wrong type, or when its name or namespace is not the request's.
    Metadata is kept as sent, with the request's name and namespace filled in.
    """
    if not isinstance(body, dict):
        raise bad_request("the object provided is unrecognized (must be of type %s)" % KIND)
    if body.get("apiVersion") not in (None, "", API_VERSION):
        raise bad_request("the API version in the data (%s) does not match the expected API "
                          "version (%s)" % (body["apiVersion"], API_VERSION))
    if body.get("kind") not in (None, "", KIND):
        raise bad_request("the object provided is unrecognized (must be of type %s): %s"
                          % (KIND, body["kind"]))
    parts = {}
    for field, go_type in (("metadata", "v1.ObjectMeta"), ("spec", "v1.ScaleSpec"),
                           ("status", "v1.ScaleStatus")):
        value = body.get(field)
        if value is not None and not isinstance(value, dict):
            raise _type_error(value, "Scale", field, go_type)
        parts[field] = value or {}
    meta, spec, status = copy.deepcopy(parts["metadata"]), parts["spec"], parts["status"]
    if meta.get("name") and meta["name"] != name:
        raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                          % (meta["name"], name))
    if meta.get("namespace") and meta["namespace"] != ns:
        raise bad_request("the namespace of the provided object does not match the namespace "
                          "sent on the request")
    meta["name"], meta["namespace"] = name, ns
    replicas = _int32(spec.get("replicas"), "ScaleSpec", "spec.replicas")
    out_status = {"replicas": _int32(status.get("replicas"), "ScaleStatus", "status.replicas")}
    if status.get("selector") is not None and not isinstance(status["selector"], str):
        raise _type_error(status["selector"], "ScaleStatus", "status.selector", "string")
    if status.get("selector"):
        out_status["selector"] = status["selector"]
    return {"kind": KIND, "apiVersion": API_VERSION, "metadata": meta,
            "spec": {"replicas": replicas} if replicas else {}, "status": out_status}


def replicas(scale):
    """``spec.replicas`` of a decoded Scale (0 when left out)."""
    return (scale.get("spec") or {}).get("replicas") or 0


def validate(scale):
    """ValidateScale: the field errors of a Scale (replicas must not be negative)."""
    n = replicas(scale)
    if isinstance(n, (int, float)) and not isinstance(n, bool) and n < 0:
        return [FieldError("Invalid", "spec.replicas", "must be greater than or equal to 0",
                           n, True)]
    return []


def with_replicas(parent, n):
    """A copy of the parent object with ``spec.replicas`` set to ``n``."""
    new = copy.deepcopy(parent)
    new.setdefault("spec", {})["replicas"] = n
    return new
