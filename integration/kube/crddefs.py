"""The CustomResourceDefinitions the test API server installs with ``--crd``.

Each is the definition its project ships, as far as clients see it: group,
names, scope, served version, status subresource, printer columns and the
schema defaults the controllers rely on, with permissive schemas
(``x-kubernetes-preserve-unknown-fields``) around the fields a shim reads:

* ``raycluster``: ``rayclusters.ray.io`` v1 (KubeRay);
* ``rayjob``: ``rayjobs.ray.io`` v1 (KubeRay; ``submissionMode`` defaults to
  ``K8sJobMode``, the RayJob's ``rayClusterSpec`` has the RayCluster's worker
  group defaults);
* ``jobset``: ``jobsets.jobset.x-k8s.io`` v1alpha2 (JobSet; the defaults
  JobSet's webhook writes are schema defaults here: replicas 1, Indexed child
  Jobs, pod restartPolicy OnFailure, successPolicy All, startupPolicy
  AnyOrder);
* ``pytorchjob``: ``pytorchjobs.kubeflow.org`` v1 (Kubeflow training operator;
  the defaults of its webhook, replicas 1 and restartPolicy OnFailure per
  replica type, cleanPodPolicy None, are schema defaults here);
* ``workload``: ``workloads.kueue.x-k8s.io`` v1beta2 (Kueue).

``BUILTIN`` maps these names to functions returning the CRD objects. Run as a
program, this module prints the named definitions as a JSON List, which
``kubectl apply -f -`` accepts: ``python3 crddefs.py rayjob jobset``.

This module imports no other module of the server.
"""

import json
import sys


def _int(default=None, fmt="int32"):
    s = {"type": "integer", "format": fmt}
    if default is not None:
        s["default"] = default
    return s


def _open(**props):
    s = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if props:
        s["properties"] = props
    return s


def _crd(group, kind, plural, versions, scope="Namespaced", categories=None,
         short_names=None):
    names = {"kind": kind, "listKind": kind + "List", "plural": plural,
             "singular": kind.lower()}
    if categories:
        names["categories"] = categories
    if short_names:
        names["shortNames"] = short_names
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": scope, "names": names, "versions": versions}}


def _schema(description, spec, status):
    return {"type": "object", "description": description,
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                           "metadata": {"type": "object"}, "spec": spec, "status": status}}


_CONDITIONS = {"type": "array", "items": _open()}


def raycluster_crd():
    """``rayclusters.ray.io``: KubeRay's names, v1 printer columns and schema defaults."""
    columns = [
        {"jsonPath": ".status.desiredWorkerReplicas", "name": "desired workers",
         "type": "integer"},
        {"jsonPath": ".status.availableWorkerReplicas", "name": "available workers",
         "type": "integer"},
        {"jsonPath": ".status.desiredCPU", "name": "cpus", "type": "string"},
        {"jsonPath": ".status.desiredMemory", "name": "memory", "type": "string"},
        {"jsonPath": ".status.desiredGPU", "name": "gpus", "type": "string"},
        {"jsonPath": ".status.desiredTPU", "name": "tpus", "priority": 1, "type": "string"},
        {"jsonPath": ".status.state", "name": "status", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "age", "type": "date"},
        {"jsonPath": ".status.head.podIP", "name": "head pod IP", "priority": 1,
         "type": "string"},
        {"jsonPath": ".status.head.serviceIP", "name": "head service IP", "priority": 1,
         "type": "string"},
    ]
    spec = raycluster_spec_schema()
    spec["properties"].update(suspend={"type": "boolean"}, managedBy={"type": "string"})
    status = raycluster_status_schema()
    schema = {"type": "object", "description": "RayCluster is the Schema for the RayClusters API",
              "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                             "metadata": {"type": "object"}, "spec": spec, "status": status}}
    return _crd("ray.io", "RayCluster", "rayclusters", [{
        "name": "v1", "served": True, "storage": True, "additionalPrinterColumns": columns,
        "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}],
        categories=["all"])


def raycluster_spec_schema():
    """KubeRay's RayClusterSpec, with the worker group defaults its CRD declares (also the
    ``rayClusterSpec`` of a RayJob)."""
    worker = _open(
        groupName={"type": "string"},
        replicas=_int(0), minReplicas=_int(0), maxReplicas=_int(2147483647),
        numOfHosts=_int(1), priority=_int(0), suspend={"type": "boolean"},
        idleTimeoutSeconds=_int(),
        rayStartParams={"type": "object", "additionalProperties": {"type": "string"}},
        scaleStrategy={"type": "object", "properties": {
            "workersToDelete": {"type": "array", "items": {"type": "string"}}}},
        template=_open())
    worker["required"] = ["groupName", "template"]
    spec = _open(
        enableInTreeAutoscaling={"type": "boolean"}, rayVersion={"type": "string"},
        autoscalerOptions=_open(),
        headGroupSpec=_open(
            rayStartParams={"type": "object", "additionalProperties": {"type": "string"}},
            serviceType={"type": "string"}, template=_open()),
        workerGroupSpecs={"type": "array", "items": worker})
    spec["required"] = ["headGroupSpec"]
    return spec


def raycluster_status_schema():
    """KubeRay's RayClusterStatus (also a RayJob's ``status.rayClusterStatus``)."""
    return _open(
        state={"type": "string"}, reason={"type": "string"},
        readyWorkerReplicas=_int(), availableWorkerReplicas=_int(),
        desiredWorkerReplicas=_int(), minWorkerReplicas=_int(), maxWorkerReplicas=_int(),
        observedGeneration=_int(fmt="int64"),
        desiredCPU={"anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True},
        desiredMemory={"anyOf": [{"type": "integer"}, {"type": "string"}],
                       "x-kubernetes-int-or-string": True},
        desiredGPU={"anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True},
        desiredTPU={"anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True},
        head={"type": "object", "properties": {k: {"type": "string"} for k in (
            "podIP", "podName", "serviceIP", "serviceName")}},
        conditions={"type": "array", "items": _open()},
        lastUpdateTime={"type": "string", "format": "date-time", "nullable": True})


def rayjob_crd():
    """``rayjobs.ray.io``: KubeRay's names, v1 printer columns and defaults."""
    columns = [
        {"jsonPath": ".status.jobStatus", "name": "job status", "type": "string"},
        {"jsonPath": ".status.jobDeploymentStatus", "name": "deployment status",
         "type": "string"},
        {"jsonPath": ".status.rayClusterName", "name": "ray cluster name", "type": "string"},
        {"jsonPath": ".status.startTime", "name": "start time", "type": "string"},
        {"jsonPath": ".status.endTime", "name": "end time", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "age", "type": "date"},
    ]
    spec = _open(
        entrypoint={"type": "string"}, jobId={"type": "string"},
        suspend={"type": "boolean"}, managedBy={"type": "string"},
        shutdownAfterJobFinishes={"type": "boolean"},
        ttlSecondsAfterFinished=_int(0), activeDeadlineSeconds=_int(), backoffLimit=_int(0),
        submissionMode={"type": "string", "default": "K8sJobMode"},
        clusterSelector={"type": "object", "additionalProperties": {"type": "string"}},
        rayClusterSpec=raycluster_spec_schema(),
        submitterPodTemplate=_open(),
        submitterConfig={"type": "object", "properties": {"backoffLimit": _int()}},
        runtimeEnvYAML={"type": "string"}, entrypointNumCpus={"type": "number"},
        entrypointNumGpus={"type": "number"},
        entrypointResources={"type": "string"})
    status = _open(
        jobId={"type": "string"}, rayClusterName={"type": "string"},
        dashboardURL={"type": "string"}, jobStatus={"type": "string"},
        jobDeploymentStatus={"type": "string"}, reason={"type": "string"},
        message={"type": "string"},
        startTime={"type": "string", "format": "date-time"},
        endTime={"type": "string", "format": "date-time"},
        succeeded=_int(), failed=_int(), observedGeneration=_int(fmt="int64"),
        rayClusterStatus=raycluster_status_schema(), rayJobInfo=_open())
    return _crd("ray.io", "RayJob", "rayjobs", [{
        "name": "v1", "served": True, "storage": True, "additionalPrinterColumns": columns,
        "schema": {"openAPIV3Schema": _schema("RayJob is the Schema for the rayjobs API",
                                              spec, status)},
        "subresources": {"status": {}}}], categories=["all"])


def jobset_crd():
    """``jobsets.jobset.x-k8s.io`` v1alpha2: JobSet's names, printer columns and defaults."""
    columns = [
        {"description": "Final state of JobSet", "jsonPath": ".status.terminalState",
         "name": "TerminalState", "type": "string"},
        {"description": "Number of restarts", "jsonPath": ".status.restarts",
         "name": "Restarts", "type": "string"},
        {"jsonPath": '.status.conditions[?(@.type=="Completed")].status', "name": "Completed",
         "type": "string"},
        {"description": "JobSet suspended", "jsonPath": ".spec.suspend", "name": "Suspended",
         "type": "string"},
        {"description": "Time this JobSet was created", "jsonPath": ".metadata.creationTimestamp",
         "name": "Age", "type": "date"},
    ]
    pod_template = _open(spec=_open(restartPolicy={"type": "string", "default": "OnFailure"}))
    job_template = _open(spec=_open(
        completionMode={"type": "string", "default": "Indexed"}, template=pod_template))
    replicated = _open(name={"type": "string"}, replicas=_int(1), template=job_template)
    replicated["required"] = ["name", "template"]
    spec = _open(
        replicatedJobs={"type": "array", "items": replicated},
        suspend={"type": "boolean"}, managedBy={"type": "string"},
        successPolicy=_open(operator={"type": "string"},
                            targetReplicatedJobs={"type": "array", "items": {"type": "string"}}),
        failurePolicy=_open(maxRestarts=_int()),
        startupPolicy=_open(startupPolicyOrder={"type": "string"}),
        network=_open(), ttlSecondsAfterFinished=_int())
    spec["properties"]["successPolicy"]["default"] = {"operator": "All"}
    spec["properties"]["startupPolicy"]["default"] = {"startupPolicyOrder": "AnyOrder"}
    status = _open(conditions=_CONDITIONS, restarts=_int(), restartsCountTowardsMax=_int(),
                   terminalState={"type": "string"},
                   replicatedJobsStatus={"type": "array", "items": _open()})
    return _crd("jobset.x-k8s.io", "JobSet", "jobsets", [{
        "name": "v1alpha2", "served": True, "storage": True,
        "additionalPrinterColumns": columns,
        "schema": {"openAPIV3Schema": _schema("JobSet is the Schema for the jobsets API",
                                              spec, status)},
        "subresources": {"status": {}}}])


def pytorchjob_crd():
    """``pytorchjobs.kubeflow.org`` v1: the training operator's names, printer columns and
    defaults."""
    columns = [
        {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
    ]
    replica = _open(replicas=_int(1), restartPolicy={"type": "string", "default": "OnFailure"},
                    template=_open())
    spec = _open(
        pytorchReplicaSpecs={"type": "object", "additionalProperties": replica},
        runPolicy=_open(suspend={"type": "boolean", "default": False},
                        managedBy={"type": "string"},
                        cleanPodPolicy={"type": "string", "default": "None"},
                        backoffLimit=_int(), activeDeadlineSeconds=_int(fmt="int64"),
                        ttlSecondsAfterFinished=_int(), schedulingPolicy=_open()),
        elasticPolicy=_open(), nprocPerNode={"type": "string"})
    spec["properties"]["runPolicy"]["default"] = {}
    spec["required"] = ["pytorchReplicaSpecs"]
    status = _open(conditions=_CONDITIONS, replicaStatuses=_open(),
                   startTime={"type": "string", "format": "date-time"},
                   completionTime={"type": "string", "format": "date-time"},
                   lastReconcileTime={"type": "string", "format": "date-time"})
    return _crd("kubeflow.org", "PyTorchJob", "pytorchjobs", [{
        "name": "v1", "served": True, "storage": True, "additionalPrinterColumns": columns,
        "schema": {"openAPIV3Schema": _schema("PyTorchJob Represents a PyTorchJob resource.",
                                              spec, status)},
        "subresources": {"status": {}}}])


def workload_crd():
    """``workloads.kueue.x-k8s.io`` v1beta2: Kueue's names, printer columns and spec defaults."""
    columns = [
        {"description": "Name of the queue this workload was submitted to",
         "jsonPath": ".spec.queueName", "name": "Queue", "type": "string"},
        {"description": "Name of the ClusterQueue where the workload is reserving quota",
         "jsonPath": ".status.admission.clusterQueue", "name": "Reserved in", "type": "string"},
        {"description": "Admission status",
         "jsonPath": ".status.conditions[?(@.type=='Admitted')].status", "name": "Admitted",
         "type": "string"},
        {"description": "Workload finished",
         "jsonPath": ".status.conditions[?(@.type=='Finished')].status", "name": "Finished",
         "type": "string"},
        {"description": "Time this workload was created",
         "jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
    ]
    podset = _open(name={"type": "string", "default": "main"}, count=_int(1),
                   minCount=_int(), template=_open())
    podset["required"] = ["count", "template"]
    spec = _open(active={"type": "boolean", "default": True}, queueName={"type": "string"},
                 podSets={"type": "array", "items": podset},
                 priority=_int(), maximumExecutionTimeSeconds=_int())
    schema = {"type": "object", "description": "Workload is the Schema for the workloads API",
              "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                             "metadata": {"type": "object"}, "spec": spec,
                             "status": _open(conditions={"type": "array", "items": _open()},
                                             admission=_open())}}
    return _crd("kueue.x-k8s.io", "Workload", "workloads", [{
        "name": "v1beta2", "served": True, "storage": True, "additionalPrinterColumns": columns,
        "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}],
        short_names=["kwl", "kueueworkload", "kueueworkloads"])


BUILTIN = {"raycluster": raycluster_crd, "rayjob": rayjob_crd, "jobset": jobset_crd,
           "pytorchjob": pytorchjob_crd, "workload": workload_crd}


def main(argv):
    names = [n for a in argv for n in a.split(",") if n] or sorted(BUILTIN)
    unknown = [n for n in names if n not in BUILTIN]
    if unknown:
        sys.stderr.write("unknown definition %s (available: %s)\n"
                         % (", ".join(unknown), ", ".join(sorted(BUILTIN))))
        return 2
    json.dump({"apiVersion": "v1", "kind": "List", "items": [BUILTIN[n]() for n in names]},
              sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
