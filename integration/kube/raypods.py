"""The pods of a RayCluster, for the simulated KubeRay operator (rayclustercontroller.py).

KubeRay's labels and names, how the operator reads its pods (node type, phase,
readiness, the pods to replace, the order excess workers go in), the desired
number of pods of a worker group, and the bodies of the head and worker pods it
creates (``build_pod``: the template, KubeRay's labels, the autoscaler sidecar,
the ``wait-gcs-ready`` init container, the ownerReference). What the pods look
like is described in rayclustercontroller.py's docstring.
"""

import copy

from kcommon import get_condition, parse_time, to_int

GROUP, VERSION = "ray.io", "v1"

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"
GROUP_LABEL = "ray.io/group"
IS_NODE_LABEL = "ray.io/is-ray-node"
IDENTIFIER_LABEL = "ray.io/identifier"
REPLICA_INDEX_LABEL = "ray.io/worker-group-replica-index"
REPLICA_NAME_LABEL = "ray.io/worker-group-replica-name"
HOST_INDEX_LABEL = "ray.io/replica-host-index"
HEAD_GROUP = "headgroup"


# --------------------------------------------------------------------- reading

def pod_labels(pod):
    return pod["metadata"].get("labels") or {}


def pod_node_type(pod):
    return pod_labels(pod).get(NODE_TYPE_LABEL)


def pod_phase(pod):
    return (pod.get("status") or {}).get("phase")


def pod_ready_condition(pod):
    return get_condition(pod, "Ready")


def running_and_ready(pod):
    c = pod_ready_condition(pod)
    return pod_phase(pod) == "Running" and c is not None and c.get("status") == "True"


def all_pods_running(pods):
    """utils.CheckAllPodsRunning: some pods, all Running, none with Ready other than True."""
    if not pods:
        return False
    for p in pods:
        if pod_phase(p) != "Running":
            return False
        c = pod_ready_condition(p)
        if c is not None and c.get("status") != "True":
            return False
    return True


def num_of_hosts(group):
    n = to_int(group.get("numOfHosts"), 1)
    return n if n > 0 else 1


def desired_pods(group):
    """utils.GetWorkerGroupDesiredReplicas: replicas within [min, max], times numOfHosts."""
    if group.get("suspend"):
        return 0
    lo = to_int(group.get("minReplicas"), 0)
    hi = to_int(group.get("maxReplicas"), 2147483647)
    replicas = group.get("replicas")
    if replicas is None or to_int(replicas) < lo:
        n = lo
    elif to_int(replicas) > hi:
        n = hi
    else:
        n = to_int(replicas)
    return n * to_int(group.get("numOfHosts"), 1)


def should_delete_pod(pod):
    """shouldDeletePod: finished pods, and Running ones whose Ray container (the first) ended
    under restartPolicy Never."""
    if pod_phase(pod) in ("Succeeded", "Failed"):
        return True
    containers = (pod.get("spec") or {}).get("containers") or []
    if pod_phase(pod) == "Running" and containers:
        ray = containers[0].get("name")
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            if cs.get("name") == ray and "terminated" in (cs.get("state") or {}):
                return (pod.get("spec") or {}).get("restartPolicy") == "Never"
    return False


def check_label(s):
    """utils.CheckLabel: keep the last 63 characters; no leading punctuation."""
    if len(s) > 63:
        s = s[len(s) - 63:]
    if s and not s[0].isalnum():
        s = "r" + s[1:]
    return s


def check_name(s):
    """utils.CheckName: keep the last 50 characters; no leading digit or punctuation."""
    if len(s) > 50:
        s = s[len(s) - 50:]
    if s and not s[0].isalpha():
        s = "r" + s[1:]
    return s


def pod_name_prefix(prefix, node_type):
    """utils.PodName with isGenerateName: ``<prefix[:50]>-<type>-``, lower case."""
    return (prefix[:50] + "-" + node_type + "-").lower()


def newest_first(pod):
    """Sort key putting the newest pods first (ties: the highest replica index, then name)."""
    m = pod["metadata"]
    return (-parse_time(m.get("creationTimestamp", "")),
            -to_int(pod_labels(pod).get(REPLICA_INDEX_LABEL), 0), [-ord(c) for c in m["name"]])


# -------------------------------------------------------------------- building

def build_pod(rc, node_type, group, replica_index=None, replica_name=None, host_index=None):
    """buildHeadPod / buildWorkerPod: the body of a head (``node_type`` "head") or worker pod
    of ``group``; a worker has its replica index, and in a multi-host group its replica's name
    and host index."""
    m, spec = rc["metadata"], rc.get("spec") or {}
    tmpl = copy.deepcopy(group.get("template") or {})
    tm = tmpl.get("metadata") or {}
    pspec = tmpl.get("spec") or {}
    merged = dict(tm.get("labels") or {})
    merged.update(group.get("labels") or {})
    group_label = HEAD_GROUP if node_type == "head" else group.get("groupName") or ""
    labels = {IS_NODE_LABEL: "yes", CLUSTER_LABEL: m["name"], NODE_TYPE_LABEL: node_type,
              GROUP_LABEL: group_label,
              IDENTIFIER_LABEL: check_label("%s-%s" % (m["name"], node_type)),
              "app.kubernetes.io/name": "kuberay",
              "app.kubernetes.io/created-by": "kuberay-operator"}
    for k, v in merged.items():
        if k not in (NODE_TYPE_LABEL, GROUP_LABEL, CLUSTER_LABEL):
            labels[k] = v
    containers = pspec.get("containers") or []
    if node_type == "head":
        prefix = pod_name_prefix(m["name"], "head")
        if spec.get("enableInTreeAutoscaling"):
            pspec["serviceAccountName"] = check_name(pspec.get("serviceAccountName")
                                                     or m["name"])
            containers.append(autoscaler_container(spec, containers))
    else:
        prefix = pod_name_prefix("%s-%s" % (m["name"], group.get("groupName") or ""),
                                 "worker")
        labels[REPLICA_INDEX_LABEL] = str(replica_index)
        if num_of_hosts(group) > 1:
            labels[REPLICA_NAME_LABEL] = replica_name
            labels[HOST_INDEX_LABEL] = str(host_index)
        if containers:
            ray = containers[0]
            pspec.setdefault("initContainers", []).append({
                "name": "wait-gcs-ready", "image": ray.get("image", ""),
                "command": ["/bin/bash", "-c", "--"],
                "args": ["until ray health-check --address %s-head-svc.%s.svc.cluster.local"
                         ":6379 > /dev/null 2>&1; do sleep 5; done"
                         % (m["name"], m["namespace"])],
                "resources": {"limits": {"cpu": "200m", "memory": "256Mi"},
                              "requests": {"cpu": "200m", "memory": "256Mi"}}})
    pspec["containers"] = containers
    meta = {"generateName": prefix, "namespace": m["namespace"], "labels": labels,
            "ownerReferences": [{"apiVersion": "%s/%s" % (GROUP, VERSION),
                                 "kind": "RayCluster", "name": m["name"], "uid": m["uid"],
                                 "controller": True, "blockOwnerDeletion": True}]}
    if tm.get("annotations"):
        meta["annotations"] = dict(tm["annotations"])
    if tm.get("finalizers"):
        meta["finalizers"] = list(tm["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pspec}


def autoscaler_container(spec, containers):
    """KubeRay's autoscaler sidecar of the head (``enableInTreeAutoscaling``)."""
    opts = spec.get("autoscalerOptions") or {}
    image = opts.get("image") or (containers[0].get("image", "") if containers else "")
    c = {"name": "autoscaler", "image": image,
         "imagePullPolicy": opts.get("imagePullPolicy") or "IfNotPresent",
         "command": ["/bin/bash", "-c", "--"],
         "args": ["ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
                  "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"],
         "env": [{"name": "RAY_CLUSTER_NAME", "valueFrom": {"fieldRef": {
                     "fieldPath": "metadata.labels['%s']" % CLUSTER_LABEL}}},
                 {"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {
                     "fieldPath": "metadata.namespace"}}}],
         "resources": copy.deepcopy(opts.get("resources")) if opts.get("resources") else {
             "limits": {"cpu": "500m", "memory": "512Mi"},
             "requests": {"cpu": "500m", "memory": "512Mi"}}}
    return c
