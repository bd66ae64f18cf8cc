"""CustomResourceDefinitions (apiextensions.k8s.io/v1) in the test API server.

What kube-apiserver's apiextensions part does, as far as clients can tell:

* a CRD is defaulted (``names.singular``, ``names.listKind``,
  ``conversion.strategy: None``), validated (name ``<plural>.<group>``, group,
  scope, versions and their storage flag, schemas required, names, printer
  columns, protected ``*.k8s.io`` groups; group, plural, and once established
  scope and kind, immutable) and at once accepted and established (status
  ``acceptedNames``, ``NamesAccepted`` and ``Established`` conditions,
  ``storedVersions``);
* each served version becomes a ``resources.Resource`` of the store's
  ``Registry`` (``sync_registry``, called by the store on every write of a
  CRD): discovery, OpenAPI v3, list/watch/get/create/update/patch/delete, the
  ``/status`` subresource when the version declares it, Table output from
  ``additionalPrinterColumns`` (tables.crd_table), no strategic merge patch;
  objects are stored at the storage version and served at the requested one
  (conversion strategy None: only ``apiVersion`` changes);
* custom resources (``prepare_create``, ``prepare_update``): status dropped on
  create when the status subresource is enabled, the schema's ``default``
  values applied; ``metadata.generation`` counts changes outside metadata
  (and status) (``Resource.spec_changed``);
* deleting a CRD (``mark_for_deletion``, and crdfinalizer.py): the
  ``customresourcecleanup.apiextensions.k8s.io`` finalizer and a
  ``Terminating`` condition are added, creates are refused (405), every custom
  resource is deleted (their own finalizers honoured), then the finalizer is
  removed and the resource is no longer served.

``install`` creates the definitions the ``--crd`` option names at start;
crddefs.py holds them (``raycluster``, ``rayjob``, ``jobset``, ``pytorchjob``,
``workload``).

Simplified: objects are not validated against the schema, unknown fields are
not pruned and ``fieldValidation`` is ignored (as for built-in kinds here);
no conversion webhooks (every version shares the stored object); no scale
subresource, selectable fields or CEL rules; names are not checked for
conflicts between CRDs.
"""

import copy
import re

import tables
from crddefs import BUILTIN
from errors import ApiError, FieldError
from kcommon import now_rfc3339
from resources import RES_BY_KEY, Resource
from updaterules import GoValue

CRD_RES = RES_BY_KEY["customresourcedefinitions.apiextensions.k8s.io"]
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]
COLUMN_FORMATS = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"]


def _dns1035_errors(value):
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035.match(value):
        errs.append("a DNS-1035 label must consist of lower case alphanumeric characters or "
                    "'-', start with an alphabetic character, and end with an alphanumeric "
                    "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
                    "'[a-z]([-a-z0-9]*[a-z0-9])?')")
    return errs


def _subdomain_errors(value):
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                    "characters, '-' or '.', and must start and end with an alphanumeric "
                    "character (e.g. 'example.com', regex used for validation is "
                    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    return errs


def _dict(v):
    return v if isinstance(v, dict) else {}


def _list(v):
    return v if isinstance(v, list) else []


# ------------------------------------------------------------------ the CRD object

def default_crd(obj):
    """apiextensions/v1 defaults: names.singular, names.listKind, conversion.strategy."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind")
        if not names.get("singular") and isinstance(kind, str) and kind:
            names["singular"] = kind.lower()
        if not names.get("listKind") and isinstance(kind, str) and kind:
            names["listKind"] = kind + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}


def storage_version(obj):
    for v in _list(_dict(obj.get("spec")).get("versions")):
        if isinstance(v, dict) and v.get("storage"):
            return v.get("name")
    return None


def _accepted_names(spec):
    names = copy.deepcopy(_dict(spec.get("names")))
    return names


def set_crd_condition(status, ctype, value, reason, message, now):
    """Set a condition of a CRD's ``status``; lastTransitionTime changes only with the value."""
    conds = status.setdefault("conditions", [])
    for c in conds:
        if c.get("type") == ctype:
            if c.get("status") != value:
                c["lastTransitionTime"] = now
            c.update({"status": value, "reason": reason, "message": message})
            return
    conds.append({"type": ctype, "status": value, "lastTransitionTime": now, "reason": reason,
                  "message": message})


def prepare_crd_create(obj):
    """Create: defaults, and the status the naming and establishing controllers would write."""
    default_crd(obj)
    now = now_rfc3339()
    spec = _dict(obj.get("spec"))
    status = {"acceptedNames": _accepted_names(spec), "conditions": []}
    set_crd_condition(status, "NamesAccepted", "True", "NoConflicts", "no conflicts found",
                      now)
    set_crd_condition(status, "Established", "True", "InitialNamesAccepted",
                      "the initial names have been accepted", now)
    sv = storage_version(obj)
    status["storedVersions"] = [sv] if sv else []
    obj["status"] = status


def prepare_crd_update(new, old):
    """Update of the main resource: defaults; accepted names and stored versions follow."""
    default_crd(new)
    status = new.setdefault("status", {})
    if isinstance(status, dict) and isinstance(new.get("spec"), dict):
        status["acceptedNames"] = _accepted_names(new["spec"])
        sv = storage_version(new)
        stored = list(status.get("storedVersions") or [])
        if sv and sv not in stored:
            stored.append(sv)
        status["storedVersions"] = stored


def mark_for_deletion(obj):
    """The first DELETE of a CRD: its cleanup finalizer and the Terminating condition."""
    out = copy.deepcopy(obj)
    fins = out["metadata"].setdefault("finalizers", [])
    if CLEANUP_FINALIZER not in fins:
        fins.append(CLEANUP_FINALIZER)
    set_crd_condition(out.setdefault("status", {}), "Terminating", "True",
                      "InstanceDeletionPending", "CustomResourceDefinition marked for deletion; "
                      "CustomResource deletion will begin soon", now_rfc3339())
    return out


def _versions_value():
    return GoValue("[]apiextensions.CustomResourceDefinitionVersion{...}")


def validate_crd(obj, old=None):
    """ValidateCustomResourceDefinition (and ...Update when ``old`` is given): the common checks."""
    errs = []
    meta = _dict(obj.get("metadata"))
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [FieldError("Required", "spec", "")]
    names = _dict(spec.get("names"))
    group = spec.get("group") or ""
    plural = names.get("plural") or ""
    name = meta.get("name") or ""
    if name != "%s.%s" % (plural, group):
        errs.append(FieldError("Invalid", "metadata.name",
                               'must be spec.names.plural+"."+spec.group', name, True))
    if not group:
        errs.append(FieldError("Required", "spec.group", ""))
    elif _subdomain_errors(group):
        errs.append(FieldError("Invalid", "spec.group", ",".join(_subdomain_errors(group)),
                               group, True))
    elif len(group.split(".")) < 2:
        errs.append(FieldError("Invalid", "spec.group", "should be a domain with at least one dot",
                               group, True))
    scope = spec.get("scope") or ""
    if not scope:
        errs.append(FieldError("Required", "spec.scope", ""))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(FieldError("NotSupported", "spec.scope",
                               'supported values: "Cluster", "Namespaced"', scope, True))
    versions = _list(spec.get("versions"))
    storage = 0
    seen, unique = set(), True
    for i, v in enumerate(versions):
        v = _dict(v)
        path = "spec.versions[%d]" % i
        vname = v.get("name") or ""
        if v.get("storage"):
            storage += 1
        if vname in seen:
            unique = False
        seen.add(vname)
        if _dns1035_errors(vname):
            errs.append(FieldError("Invalid", path + ".name", ",".join(_dns1035_errors(vname)),
                                   vname, True))
        if not isinstance(_dict(v.get("schema")).get("openAPIV3Schema"), dict):
            errs.append(FieldError("Required", path + ".schema.openAPIV3Schema",
                                   "schemas are required"))
        for j, col in enumerate(_list(v.get("additionalPrinterColumns"))):
            errs.extend(_column_errors(_dict(col), "%s.additionalPrinterColumns[%d]" % (path, j)))
    if not unique:
        errs.append(FieldError("Invalid", "spec.versions", "must contain unique version names",
                               _versions_value(), True))
    if storage != 1:
        errs.append(FieldError("Invalid", "spec.versions",
                               "must have exactly one version marked as storage version",
                               _versions_value(), True))
    for field in ("plural", "singular", "kind", "listKind"):
        if not names.get(field):
            errs.append(FieldError("Required", "spec.names." + field, ""))
    for field in ("plural", "singular"):
        val = names.get(field) or ""
        if val and _dns1035_errors(val):
            errs.append(FieldError("Invalid", "spec.names." + field,
                                   ",".join(_dns1035_errors(val)), val, True))
    for field in ("kind", "listKind"):
        val = names.get(field) or ""
        if val and _dns1035_errors(val.lower()):
            errs.append(FieldError("Invalid", "spec.names." + field,
                                   "may have mixed case, but should otherwise match: "
                                   + ",".join(_dns1035_errors(val.lower())), val, True))
    for i, short in enumerate(_list(names.get("shortNames"))):
        if not isinstance(short, str) or _dns1035_errors(short):
            errs.append(FieldError("Invalid", "spec.names.shortNames[%d]" % i,
                                   ",".join(_dns1035_errors(str(short))), short, True))
    strategy = _dict(spec.get("conversion")).get("strategy") or ""
    if strategy not in ("None", "Webhook"):
        errs.append(FieldError("NotSupported", "spec.conversion.strategy",
                               'supported values: "None", "Webhook"', strategy, True))
    if _protected(group) and APPROVAL_ANNOTATION not in (meta.get("annotations") or {}):
        errs.append(FieldError("Required", "metadata.annotations[%s]" % APPROVAL_ANNOTATION,
                               'protected groups must have approval annotation "%s", see '
                               "https://github.com/kubernetes/enhancements/pull/1111"
                               % APPROVAL_ANNOTATION))
    if old is not None:
        ospec = _dict(old.get("spec"))
        onames = _dict(ospec.get("names"))
        established = any(c.get("type") == "Established" and c.get("status") == "True"
                          for c in _list(_dict(old.get("status")).get("conditions")))
        immutable = [("spec.group", group, ospec.get("group")),
                     ("spec.names.plural", plural, onames.get("plural"))]
        if established:
            immutable = [("spec.scope", scope, ospec.get("scope")),
                         ("spec.names.kind", names.get("kind"), onames.get("kind"))] + immutable
        for path, new, was in immutable:
            if new != was:
                errs.append(FieldError("Invalid", path, "field is immutable", new, True))
        stored = _list(_dict(old.get("status")).get("storedVersions"))
        names_now = {_dict(v).get("name") for v in versions}
        for i, sv in enumerate(stored):
            if sv not in names_now:
                errs.append(FieldError(
                    "Invalid", "status.storedVersions[%d]" % i,
                    "missing from spec.versions; %s was previously a storage version, and must "
                    "remain in spec.versions until a storage migration ensures no data remains "
                    "persisted in %s and removes %s from status.storedVersions" % (sv, sv, sv),
                    sv, True))
    return errs


def _protected(group):
    return group in ("k8s.io", "kubernetes.io") or group.endswith(".k8s.io") or \
        group.endswith(".kubernetes.io")


def _column_errors(col, path):
    errs = []
    if not col.get("name"):
        errs.append(FieldError("Required", path + ".name", ""))
    typ = col.get("type") or ""
    if not typ:
        errs.append(FieldError("Required", path + ".type",
                               "must be one of " + ",".join(COLUMN_TYPES)))
    elif typ not in COLUMN_TYPES:
        errs.append(FieldError("NotSupported", path + ".type", "supported values: "
                               + ", ".join('"%s"' % t for t in COLUMN_TYPES), typ, True))
    fmt = col.get("format") or ""
    if fmt and fmt not in COLUMN_FORMATS:
        errs.append(FieldError("NotSupported", path + ".format", "supported values: "
                               + ", ".join('"%s"' % t for t in COLUMN_FORMATS), fmt, True))
    jp = col.get("jsonPath") or ""
    if not jp:
        errs.append(FieldError("Required", path + ".jsonPath", ""))
    elif not jp.startswith("."):
        errs.append(FieldError("Invalid", path + ".jsonPath",
                               "must be a simple json path starting with .", jp, True))
    return errs


# ------------------------------------------------------- the served resources

def resources_for(crd):
    """The ``Resource`` of each served version of ``crd`` (empty when it serves none)."""
    spec = _dict(crd.get("spec"))
    names = _dict(_dict(crd.get("status")).get("acceptedNames")) or _dict(spec.get("names"))
    group = spec.get("group") or ""
    versions = [_dict(v) for v in _list(spec.get("versions"))]
    sv = storage_version(crd)
    out = []
    for v in versions:
        if not v.get("served"):
            continue
        kind = names.get("kind") or ""
        res = Resource(group, v.get("name"), names.get("plural") or "", kind,
                       spec.get("scope") == "Namespaced",
                       names.get("singular") or kind.lower(),
                       short_names=_list(names.get("shortNames")),
                       categories=_list(names.get("categories")),
                       has_status="status" in _dict(v.get("subresources")),
                       generation=True,
                       table=tables.crd_table(_list(v.get("additionalPrinterColumns"))),
                       strategic=False, list_kind=names.get("listKind"))
        res.crd = crd["metadata"]["name"]
        res.storage_api_version = group + "/" + (sv or v.get("name"))
        res.storage = v.get("name") == sv
        res.schema = _dict(v.get("schema")).get("openAPIV3Schema")
        if v.get("deprecated"):
            res.deprecation = v.get("deprecationWarning") or "%s/%s %s is deprecated" % (
                group, v.get("name"), kind)
        res.terminating = bool(crd["metadata"].get("deletionTimestamp"))
        out.append(res)
    return out


def sync_registry(store, crd, typ):
    """After a write of a CRD: (un)register the resources it defines (store lock held)."""
    name = crd["metadata"]["name"]
    resources = [] if typ == "DELETED" else resources_for(crd)
    store.registry.set_custom(name, resources)
    if resources:
        store.objects.setdefault(resources[0].key, {})
    # Stored custom resources stay when the CRD goes (they reappear if it is created again,
    # as objects left in etcd would); the cleanup finalizer normally deleted them first.


# ----------------------------------------------------------- custom resources

def apply_defaults(schema, value, root=True):
    """Set the schema's ``default`` values of absent fields (structural defaulting)."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if not isinstance(sub, dict) or (root and key == "metadata"):
                    continue
                if key not in value and "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                if key in value:
                    apply_defaults(sub, value[key], False)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in list(value):
                if not (isinstance(props, dict) and key in props):
                    apply_defaults(extra, value[key], False)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for v in value:
                apply_defaults(items, v, False)


def prepare_create(res, obj):
    if res.has_status:
        obj.pop("status", None)
    apply_defaults(res.schema, obj)


def prepare_update(res, new):
    apply_defaults(res.schema, new)


def prepare_status_update(res, new):
    """A write through ``/status``: the status schema's defaults (the rest is the old object)."""
    if isinstance(res.schema, dict) and isinstance(new.get("status"), dict):
        apply_defaults(((res.schema.get("properties") or {}).get("status")), new["status"], False)


def refuse_create_if_terminating(res):
    if res.terminating:
        raise ApiError(405, "MethodNotAllowed",
                       "create not allowed while custom resource definition is terminating",
                       {"group": res.group, "kind": res.plural})


def install(store, names):
    """Create the ``--crd`` definitions (``crddefs.BUILTIN`` names) at start."""
    unknown = [n for n in names if n not in BUILTIN]
    if unknown:
        raise SystemExit("--crd: unknown definition %s (available: %s)"
                         % (", ".join(unknown), ", ".join(sorted(BUILTIN))))
    for n in names:
        store.create(CRD_RES, None, BUILTIN[n]())
