"""Test data shared by the tests of CRDs, the RayCluster controller and the Ray clients.

The paths of RayClusters and Kueue Workloads, the merge and JSON patch
content types, and the bodies the tests create: RayClusters (with their pod
templates), Workloads and an admitted Workload's status, a ``widgets`` CRD
with two versions and printer columns; ``cond``, a condition of an object's
status; ``ray_cluster_spec_yaml``, a RayCluster's spec as the manifests given
to kubectl write it. Used by test_crds_api.py, test_crds_clients.py,
test_raycluster_controller.py and test_workload_clients.py.
"""

import textwrap

RC_PATH = "/apis/ray.io/v1/namespaces/%s/rayclusters"
WL_PATH = "/apis/kueue.x-k8s.io/v1beta2/namespaces/%s/workloads"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


RAY_HEAD_YAML = """rayVersion: '2.41.0'
headGroupSpec:
  rayStartParams: {}
  template:
    spec:
      containers:
      - name: ray-head
        image: rayproject/ray:2.41.0
        resources:
          requests: {cpu: "1", memory: 2G}
"""

RAY_WORKER_TEMPLATE_YAML = """rayStartParams: {}
template:
  spec:
    containers:
    - name: ray-worker
      image: rayproject/ray:2.41.0
      resources:
        requests: {cpu: "1", memory: 1G}
"""


def ray_cluster_spec_yaml(group, replicas, *fields, indent=""):
    """A RayCluster spec in YAML: a head (1 CPU, 2G) and one worker group (1 CPU, 1G a worker).

    The group is ``group`` with ``replicas`` workers and the YAML lines
    ``fields`` (``"minReplicas: 1"``); ``indent`` prefixes every line, to nest
    the spec in a manifest.
    """
    group_lines = (["replicas: %s" % replicas, *fields, "groupName: " + group]
                   + RAY_WORKER_TEMPLATE_YAML.splitlines())
    spec = RAY_HEAD_YAML + "workerGroupSpecs:\n- " + "\n  ".join(group_lines) + "\n"
    return textwrap.indent(spec, indent)


def template(cpu="500m", memory="1Gi", gates=None, annotations=None, restart=None,
             labels=None):
    spec = {"containers": [{"name": "ray", "image": "rayproject/ray:2.41.0",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if restart:
        spec["restartPolicy"] = restart
    meta = {}
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "spec": spec}


def raycluster(name, groups=(("small", 2),), autoscaling=None, suspend=None, hosts=None,
               managed_by=None, worker_template=None):
    spec = {"headGroupSpec": {"rayStartParams": {}, "template": template(cpu="1")},
            "workerGroupSpecs": []}
    for gname, replicas in groups:
        g = {"groupName": gname, "replicas": replicas, "minReplicas": 0, "maxReplicas": 10,
             "rayStartParams": {}, "template": worker_template or template()}
        if hosts:
            g["numOfHosts"] = hosts
        spec["workerGroupSpecs"].append(g)
    if autoscaling is not None:
        spec["enableInTreeAutoscaling"] = autoscaling
    if suspend is not None:
        spec["suspend"] = suspend
    if managed_by:
        spec["managedBy"] = managed_by
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
            "spec": spec}


def workload(name, queue_name="user-queue"):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name},
            "spec": {"queueName": queue_name, "podSets": [{"count": 2, "template": {
                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}]}}


def admitted_status(cq="cluster-queue"):
    t = "2025-01-01T00:00:00Z"
    return {"status": {"admission": {"clusterQueue": cq, "podSetAssignments": []},
                       "conditions": [
                           {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                            "message": "Quota reserved", "lastTransitionTime": t},
                           {"type": "Admitted", "status": "True", "reason": "Admitted",
                            "message": "The workload is admitted", "lastTransitionTime": t}]}}


def widget_crd(name="widgets.example.com", versions=None, scope="Namespaced", **names):
    n = {"plural": "widgets", "kind": "Widget", "shortNames": ["wdg"]}
    n.update(names)
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"size": {"type": "integer", "default": 1}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    if versions is None:
        versions = [
            {"name": "v1", "served": True, "storage": True, "schema": schema,
             "additionalPrinterColumns": [
                 {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                 {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                 {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready",
                  "priority": 1}]},
            {"name": "v1beta1", "served": True, "storage": False, "schema": schema,
             "deprecated": True}]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": "example.com", "scope": scope, "names": n, "versions": versions}}


def cond(obj, ctype):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None
