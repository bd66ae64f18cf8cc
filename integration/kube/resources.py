"""The resources the test API server serves, and its discovery and OpenAPI documents.

``RESOURCES`` is the resource table (group, version, kind, scope, status
subresource, field labels, Table printer); from it come the legacy discovery
documents (APIGroup, APIResourceList) and the minimal OpenAPI v3 documents.
"""

import base64
import collections
import hashlib
import json

from tables import (DEFAULT_TABLE, EVENT_TABLE, JOB_TABLE, LEASE_TABLE, NAMESPACE_TABLE,
                    NODE_TABLE, POD_TABLE)

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


class Resource:
    """One resource: its group-version-kind, scope, subresources and list printing."""

    def __init__(self, group, version, plural, kind, namespaced, singular,
                 short_names=(), categories=(), has_status=False, generation=False,
                 field_labels=(), table=None, strategic=True):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced, self.singular = namespaced, singular
        self.short_names, self.categories = list(short_names), list(categories)
        self.has_status, self.generation = has_status, generation
        self.field_labels = {"metadata.name"} | ({"metadata.namespace"} if namespaced else set())
        self.field_labels |= set(field_labels)
        self.table = table
        self.strategic = strategic
        self.key = plural if not group else plural + "." + group
        self.qualified = self.key
        self.api_version = version if not group else group + "/" + version

    @property
    def gv(self):
        return (self.group, self.version)


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
]

GROUP_ORDER = ["", "batch", "coordination.k8s.io", "events.k8s.io",
               "admissionregistration.k8s.io"]


RES_BY_KEY = {r.key: r for r in RESOURCES}


def find_resource(group, version, plural):
    for r in RESOURCES:
        if r.group == group and r.version == version and r.plural == plural:
            return r
    return None


def group_versions():
    out = collections.OrderedDict()
    for g in GROUP_ORDER:
        for r in RESOURCES:
            if r.group == g:
                out.setdefault(g, [])
                if r.version not in out[g]:
                    out[g].append(r.version)
    return out


def _storage_hash(res):
    return base64.b64encode(hashlib.sha256(res.key.encode()).digest()[:8]).decode()


def api_resource_list(group, version):
    resources = []
    for r in RESOURCES:
        if r.gv != (group, version):
            continue
        entry = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                 "kind": r.kind, "verbs": ALL_VERBS}
        if r.short_names:
            entry["shortNames"] = r.short_names
        if r.categories:
            entry["categories"] = r.categories
        entry["storageVersionHash"] = _storage_hash(r)
        resources.append(entry)
        if r.has_status:
            resources.append({"name": r.plural + "/status", "singularName": "",
                              "namespaced": r.namespaced, "kind": r.kind,
                              "verbs": ["get", "patch", "update"]})
        if r.kind == "Pod":
            resources.append({"name": "pods/binding", "singularName": "", "namespaced": True,
                              "kind": "Binding", "verbs": ["create"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": version if not group else group + "/" + version,
            "resources": resources}


def api_group(group, versions):
    vs = [{"groupVersion": group + "/" + v, "version": v} for v in versions]
    return {"name": group, "versions": vs, "preferredVersion": vs[0]}


def openapi_v3_doc(group, version, server_version):
    """A minimal OpenAPI v3 document: the paths and operations of each resource.

    kubectl reads it to learn that PATCH supports the ``fieldValidation`` query
    parameter (then it leaves validation to the server) and which patch
    content types each kind accepts. No component schemas are published, so
    kubectl computes apply patches from its compiled-in types.
    """
    paths = {}
    prefix = "/api/v1" if not group else "/apis/%s/%s" % (group, version)
    params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
              for n in ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")]
    for r in RESOURCES:
        if r.gv != (group, version):
            continue
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        base = prefix + ("/namespaces/{namespace}/" if r.namespaced else "/") + r.plural
        content = ["application/json-patch+json", "application/merge-patch+json",
                   "application/apply-patch+yaml"]
        if r.strategic:
            content.append("application/strategic-merge-patch+json")
        for suffix in ("/{name}",) + (("/{name}/status",) if r.has_status else ()):
            ops = {}
            for verb, action in (("get", "get"), ("put", "put"), ("patch", "patch"),
                                 ("delete", "delete")):
                if suffix.endswith("status") and verb == "delete":
                    continue
                op = {"operationId": "%s%s" % (verb, r.kind), "parameters": params,
                      "responses": {"200": {"description": "OK"}},
                      "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk}
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
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": server_version},
            "paths": paths,
            "components": {"schemas": {"io.k8s.apimachinery.pkg.apis.meta.v1.Patch": {
                "type": "object",
                "description": "Patch is provided to give a concrete name and type to the "
                               "Kubernetes PATCH request body."}}}}


def openapi_v3_index(server_version):
    """``/openapi/v3``: each group-version's document path, with the hash of its content."""
    paths = {}
    for g, vs in group_versions().items():
        for v in vs:
            key = "api/v1" if not g else "apis/%s/%s" % (g, v)
            doc = json.dumps(openapi_v3_doc(g, v, server_version), sort_keys=True)
            h = hashlib.sha512(doc.encode()).hexdigest().upper()[:128]
            paths[key] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (key, h)}
    return {"paths": paths}
