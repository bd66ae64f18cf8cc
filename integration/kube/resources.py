"""The resources the test API server serves, and its discovery and OpenAPI documents.

``RESOURCES`` is the table of built-in resources (group, version, kind, scope,
status and scale subresources, field labels, Table printer). A ``Registry``
(one per store) adds the resources that CustomResourceDefinitions define
(crds.py builds them); from the registry come the legacy discovery documents
(APIGroup, APIResourceList; ``deployments/scale`` and the others with their
autoscaling/v1 Scale kind) and the minimal OpenAPI v3 documents (with the
schemas of custom resources).
"""

import base64
import collections
import copy
import hashlib
import json
import re

from tables import (DEFAULT_TABLE, DEPLOYMENT_TABLE, EVENT_TABLE, JOB_TABLE, LEASE_TABLE,
                    NAMESPACE_TABLE, NODE_TABLE, POD_TABLE, REPLICASET_TABLE, STATEFULSET_TABLE)

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


class Resource:
    """One resource: its group-version-kind, scope, subresources and list printing."""

    def __init__(self, group, version, plural, kind, namespaced, singular,
                 short_names=(), categories=(), has_status=False, generation=False,
                 field_labels=(), table=None, strategic=True, list_kind=None, has_scale=False):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced, self.singular = namespaced, singular
        self.short_names, self.categories = list(short_names), list(categories)
        self.has_status, self.generation = has_status, generation
        self.has_scale = has_scale  # the autoscaling/v1 Scale subresource (scale.py)
        self.field_labels = {"metadata.name"} | ({"metadata.namespace"} if namespaced else set())
        self.field_labels |= set(field_labels)
        self.table = table
        self.strategic = strategic
        self.key = plural if not group else plural + "." + group
        self.qualified = self.key
        self.api_version = version if not group else group + "/" + version
        self.list_kind = list_kind or kind + "List"
        # Set on the resources of CustomResourceDefinitions (crds.py):
        self.crd = None  # the CRD's name (plural.group)
        self.storage_api_version = self.api_version  # objects are stored at this version
        self.storage = True  # whether this version is the storage version
        self.schema = None  # the version's openAPIV3Schema
        self.deprecation = None  # the Warning a deprecated version answers with
        self.terminating = False  # the CRD is being deleted: no creates

    @property
    def gv(self):
        return (self.group, self.version)

    def spec_changed(self, new, old):
        """Whether an update changes what ``metadata.generation`` counts.

        Built-in kinds: ``spec``. Custom resources: everything but metadata
        (and status when the status subresource is enabled).
        """
        if self.crd is None:
            return new.get("spec") != old.get("spec")
        skip = {"metadata", "apiVersion", "kind"} | ({"status"} if self.has_status else set())
        return ({k: v for k, v in new.items() if k not in skip}
                != {k: v for k, v in old.items() if k not in skip})

    def present(self, obj):
        """``obj`` as this version serves it (conversion strategy None: the apiVersion only)."""
        if obj is None or self.crd is None or obj.get("apiVersion") == self.api_version:
            return obj
        out = dict(obj)
        out["apiVersion"] = self.api_version
        return out


POD_FIELDS = ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
              "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
              "status.nominatedNodeName")
EVENT_FIELDS = ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                "involvedObject.uid", "involvedObject.apiVersion",
                "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                "reportingComponent", "source", "type")
EVENTS_V1_FIELDS = ("regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
                    "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
                    "reason", "reportingController", "type")

RESOURCES = [
    Resource("", "v1", "namespaces", "Namespace", False, "namespace", ["ns"], [],
             has_status=True, field_labels=("status.phase",), table=NAMESPACE_TABLE),
    Resource("", "v1", "pods", "Pod", True, "pod", ["po"], ["all"], has_status=True,
             generation=True, field_labels=POD_FIELDS, table=POD_TABLE),
    Resource("", "v1", "nodes", "Node", False, "node", ["no"], [], has_status=True,
             field_labels=("spec.unschedulable",), table=NODE_TABLE),
    Resource("", "v1", "events", "Event", True, "event", ["ev"], [],
             field_labels=EVENT_FIELDS, table=EVENT_TABLE),
    Resource("apps", "v1", "deployments", "Deployment", True, "deployment", ["deploy"], ["all"],
             has_status=True, generation=True, table=DEPLOYMENT_TABLE, has_scale=True),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, "replicaset", ["rs"], ["all"],
             has_status=True, generation=True, table=REPLICASET_TABLE, has_scale=True),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True, "statefulset", ["sts"], ["all"],
             has_status=True, generation=True, table=STATEFULSET_TABLE, has_scale=True),
    Resource("batch", "v1", "jobs", "Job", True, "job", [], ["all"], has_status=True,
             generation=True, field_labels=("status.successful",), table=JOB_TABLE),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True, "lease", [], [],
             table=LEASE_TABLE, strategic=True),
    Resource("events.k8s.io", "v1", "events", "Event", True, "event", ["ev"], [],
             field_labels=EVENTS_V1_FIELDS, table=DEFAULT_TABLE),
    Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
             "MutatingWebhookConfiguration", False, "mutatingwebhookconfiguration",
             categories=["api-extensions"], table=DEFAULT_TABLE),
    Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
             "ValidatingWebhookConfiguration", False, "validatingwebhookconfiguration",
             categories=["api-extensions"], table=DEFAULT_TABLE),
    Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
             "CustomResourceDefinition", False, "customresourcedefinition", ["crd", "crds"],
             ["api-extensions"], has_status=True, generation=True, table=DEFAULT_TABLE),
]

GROUP_ORDER = ["", "apps", "batch", "coordination.k8s.io", "events.k8s.io",
               "admissionregistration.k8s.io", "apiextensions.k8s.io"]


RES_BY_KEY = {r.key: r for r in RESOURCES}

# What the scale subresource reads and writes (its kind in discovery and admission).
SCALE_GVK = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
SUBRESOURCE_VERBS = ["get", "patch", "update"]

_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(v):
    """Sort key of Kubernetes' version ordering: GA, then beta, then alpha, newest first; other
    names last, alphabetically (v1 < v1beta2 < v1beta1 < v1alpha1 < foo)."""
    m = _KUBE_VERSION.match(v)
    if not m:
        return (3, 0, 0, v)
    major, level, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    return ({None: 0, "beta": 1, "alpha": 2}[level], -major, -minor, v)


class Registry:
    """The resources a server serves: the built-in ones and those of its CRDs.

    ``custom`` maps a CRD's name to the resources of its served versions
    (crds.py rebuilds them whenever the CRD is written); lookups are by
    (group, version, plural) and by storage key (``plural.group``).
    """

    def __init__(self):
        self.custom = {}
        self._index = {}
        self._reindex()

    def _reindex(self):
        self._index = {(r.group, r.version, r.plural): r for r in self.all()}

    def set_custom(self, crd_name, resources):
        if resources:
            self.custom[crd_name] = list(resources)
        else:
            self.custom.pop(crd_name, None)
        self._reindex()

    def all(self):
        out = list(RESOURCES)
        for name in sorted(self.custom):
            out.extend(self.custom[name])
        return out

    def find(self, group, version, plural):
        return self._index.get((group, version, plural))

    def by_key(self, key):
        """The built-in resource, or the storage version of the custom one, stored under ``key``."""
        if key in RES_BY_KEY:
            return RES_BY_KEY[key]
        for r in self.custom.get(key) or []:
            if r.storage:
                return r
        rs = self.custom.get(key)
        return rs[0] if rs else None

    def group_versions(self):
        """Group -> served versions, preferred first: built-in groups, then the CRDs' groups
        by name (as kube-apiserver orders them)."""
        out = collections.OrderedDict()
        for g in GROUP_ORDER:
            for r in RESOURCES:
                if r.group == g:
                    out.setdefault(g, [])
                    if r.version not in out[g]:
                        out[g].append(r.version)
        custom = collections.defaultdict(set)
        for rs in self.custom.values():
            for r in rs:
                if r.group not in out:
                    custom[r.group].add(r.version)
        for g in sorted(custom):
            out[g] = sorted(custom[g], key=version_priority)
        return out


def _storage_hash(res):
    return base64.b64encode(hashlib.sha256(res.key.encode()).digest()[:8]).decode()


def api_resource_list(registry, group, version):
    resources = []
    for r in registry.all():
        if r.gv != (group, version):
            continue
        entry = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                 "kind": r.kind, "verbs": ALL_VERBS}
        if r.short_names:
            entry["shortNames"] = r.short_names
        if r.categories:
            entry["categories"] = r.categories
        if r.storage:
            entry["storageVersionHash"] = _storage_hash(r)
        resources.append(entry)
        if r.has_scale:
            resources.append(dict({"name": r.plural + "/scale", "singularName": "",
                                   "namespaced": r.namespaced}, **SCALE_GVK,
                                  verbs=SUBRESOURCE_VERBS))
        if r.has_status:
            resources.append({"name": r.plural + "/status", "singularName": "",
                              "namespaced": r.namespaced, "kind": r.kind,
                              "verbs": SUBRESOURCE_VERBS})
        if r.kind == "Pod" and r.crd is None:
            resources.append({"name": "pods/binding", "singularName": "", "namespaced": True,
                              "kind": "Binding", "verbs": ["create"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": version if not group else group + "/" + version,
            "resources": resources}


def aggregated_discovery(registry, core):
    """The aggregated discovery document (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) of
    ``/api`` (``core``) or ``/apis``: every group, its versions (preferred first) and their
    resources with scope, verbs, short names, categories and subresources."""
    items = []
    for g, versions in registry.group_versions().items():
        if bool(g) == core:
            continue
        out_versions = []
        for v in versions:
            resources = []
            for r in registry.all():
                if r.gv != (g, v):
                    continue
                kind = {"group": "", "version": "", "kind": r.kind}
                entry = {"resource": r.plural, "responseKind": kind,
                         "scope": "Namespaced" if r.namespaced else "Cluster",
                         "singularResource": r.singular, "verbs": ALL_VERBS}
                if r.short_names:
                    entry["shortNames"] = r.short_names
                if r.categories:
                    entry["categories"] = r.categories
                subs = []
                if r.has_scale:
                    subs.append({"subresource": "scale", "responseKind": dict(SCALE_GVK),
                                 "verbs": SUBRESOURCE_VERBS})
                if r.has_status:
                    subs.append({"subresource": "status", "responseKind": kind,
                                 "verbs": SUBRESOURCE_VERBS})
                if r.kind == "Pod" and r.crd is None:
                    subs.append({"subresource": "binding", "responseKind": {
                        "group": "", "version": "", "kind": "Binding"}, "verbs": ["create"]})
                if subs:
                    entry["subresources"] = subs
                resources.append(entry)
            out_versions.append({"version": v, "resources": resources, "freshness": "Current"})
        meta = {"creationTimestamp": None}
        if g:
            meta = {"name": g, "creationTimestamp": None}
        items.append({"metadata": meta, "versions": out_versions})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}


AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept):
    """Whether an Accept header asks for aggregated discovery v2 (v2beta1, gone from
    kube-apiserver 1.33, is answered with the legacy documents)."""
    for part in (accept or "").split(","):
        params = {}
        for p in part.split(";")[1:]:
            k, _, v = p.strip().partition("=")
            params[k] = v
        if (params.get("g") == "apidiscovery.k8s.io" and params.get("v") == "v2"
                and params.get("as") == "APIGroupDiscoveryList"):
            return True
    return False


def api_group(group, versions):
    vs = [{"groupVersion": group + "/" + v, "version": v} for v in versions]
    return {"name": group, "versions": vs, "preferredVersion": vs[0]}


def schema_name(res, list_kind=False):
    """The component name of a custom resource's schema: the group reversed, the version, the
    kind (``io.ray.v1.RayCluster``), as kube-apiserver names them."""
    return "%s.%s.%s" % (".".join(reversed(res.group.split("."))), res.version,
                         res.list_kind if list_kind else res.kind)


def published_schema(res):
    """The schema kubectl finds for a custom resource in OpenAPI v3 (``kubectl explain``)."""
    schema = copy.deepcopy(res.schema) if isinstance(res.schema, dict) else {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schema.setdefault("type", "object")
    props = schema.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string", "description": (
        "APIVersion defines the versioned schema of this representation of an object.")})
    props.setdefault("kind", {"type": "string", "description": (
        "Kind is a string value representing the REST resource this object represents.")})
    props["metadata"] = {"type": "object", "description": "Standard object's metadata."}
    schema["x-kubernetes-group-version-kind"] = [
        {"group": res.group, "version": res.version, "kind": res.kind}]
    return schema


def published_list_schema(res):
    """The schema of a custom resource's list in OpenAPI v3."""
    return {"type": "object", "required": ["items"], "properties": {
        "apiVersion": {"type": "string"},
        "items": {"type": "array", "items": {"$ref": "#/components/schemas/" + schema_name(res)}},
        "kind": {"type": "string"},
        "metadata": {"type": "object"}},
        "x-kubernetes-group-version-kind": [
            {"group": res.group, "version": res.version, "kind": res.list_kind}]}


def openapi_v3_doc(registry, group, version, server_version):
    """A minimal OpenAPI v3 document: the paths and operations of each resource.

    kubectl reads it to learn that PATCH supports the ``fieldValidation`` query
    parameter (then it leaves validation to the server) and which patch
    content types each kind accepts. Built-in kinds have no component schemas,
    so kubectl computes apply patches from its compiled-in types; custom
    resources have the schema of their CRD (``published_schema``), with
    ``x-kubernetes-group-version-kind``, and no strategic merge patch.
    """
    paths = {}
    schemas = {}
    prefix = "/api/v1" if not group else "/apis/%s/%s" % (group, version)
    params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
              for n in ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")]
    for r in registry.all():
        if r.gv != (group, version):
            continue
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        ok = {"description": "OK"}
        if r.crd is not None:
            schemas[schema_name(r)] = published_schema(r)
            schemas[schema_name(r, True)] = published_list_schema(r)
            ok = {"description": "OK", "content": {"application/json": {"schema": {
                "$ref": "#/components/schemas/" + schema_name(r)}}}}
        base = prefix + ("/namespaces/{namespace}/" if r.namespaced else "/") + r.plural
        content = ["application/json-patch+json", "application/merge-patch+json",
                   "application/apply-patch+yaml"]
        if r.strategic:
            content.append("application/strategic-merge-patch+json")
        suffixes = [("/{name}", gvk, ok, "")]
        if r.has_status:
            suffixes.append(("/{name}/status", gvk, ok, "Status"))
        if r.has_scale:  # the Scale of an object: its own kind, autoscaling/v1
            suffixes.append(("/{name}/scale", SCALE_GVK, {"description": "OK"}, "Scale"))
        for suffix, op_gvk, op_ok, sub in suffixes:
            ops = {}
            for verb in ("get", "put", "patch", "delete"):
                if sub and verb == "delete":
                    continue
                op = {"operationId": "%s%s%s" % (verb, r.kind, sub), "parameters": params,
                      "responses": {"200": op_ok},
                      "x-kubernetes-action": verb, "x-kubernetes-group-version-kind": op_gvk}
                if verb == "patch":
                    op["requestBody"] = {"content": {c: {"schema": {
                        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}}
                        for c in content}, "required": True}
                ops[verb] = op
            paths[base + suffix] = ops
        paths[base] = {"get": {"operationId": "list" + r.kind, "parameters": params,
                               "responses": {"200": {"description": "OK"}},
                               "x-kubernetes-action": "list",
                               "x-kubernetes-group-version-kind": gvk},
                       "post": {"operationId": "create" + r.kind, "parameters": params,
                                "responses": {"201": {"description": "Created"}},
                                "x-kubernetes-action": "post",
                                "x-kubernetes-group-version-kind": gvk}}
    schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Patch"] = {
        "type": "object",
        "description": "Patch is provided to give a concrete name and type to the "
                       "Kubernetes PATCH request body."}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": server_version},
            "paths": paths, "components": {"schemas": schemas}}


def openapi_v3_index(registry, server_version):
    """``/openapi/v3``: each group-version's document path, with the hash of its content."""
    paths = {}
    for g, vs in registry.group_versions().items():
        for v in vs:
            key = "api/v1" if not g else "apis/%s/%s" % (g, v)
            doc = json.dumps(openapi_v3_doc(registry, g, v, server_version), sort_keys=True)
            h = hashlib.sha512(doc.encode()).hexdigest().upper()[:128]
            paths[key] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (key, h)}
    return {"paths": paths}
