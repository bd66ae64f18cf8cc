"""End to end: JobSets (jobset.x-k8s.io/v1alpha2) through admitd-shim's JobSet integration and
webhook, admitd and the test cluster with its simulated JobSet controller (child Jobs run by its
Job controller), as real processes: the scenarios of kinds.py.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kinds import KindScenarios  # noqa: E402


class JobSetE2E(KindScenarios, unittest.TestCase):
    INTEGRATION = "jobsets"
    API_ARGS = ("--crd", "jobset", "--controllers", "jobset,job,scheduler,kubelet")
    COLLECTION = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets"
    RESOURCE = "jobset"
    DONE = "Completed"
    POD_LABEL = "jobset.sigs.k8s.io/jobset-name"
    CONTROLLER = "jobset.x-k8s.io/jobset-kueue-controller"
    PREFIX = "cq-js"

    def make(self, ns, name, pods, runtime=None, priority_class=None):
        """One replicated job "workers" of `pods` replicas of one pod each."""
        labels = {"kueue.x-k8s.io/queue-name": "lq"}
        if priority_class:
            labels["kueue.x-k8s.io/priority-class"] = priority_class
        annotations = {}
        if runtime is not None:
            annotations["fixture.admitd.io/runtime-seconds"] = str(runtime)
        pod = {"metadata": {"annotations": annotations},
               "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox",
                                        "resources": {"requests": {"cpu": "1"}}}]}}
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {"replicatedJobs": [{
                    "name": "workers", "replicas": pods,
                    "template": {"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                                          "template": pod}}}]}}

    def resize_ops(self, pods):
        return [{"op": "replace", "path": "/spec/replicatedJobs/0/replicas", "value": pods}]

    def suspended(self, obj):
        return obj["spec"].get("suspend") is True

    def templates(self, obj):
        return [(r["name"], r["template"]["spec"]["template"])
                for r in obj["spec"]["replicatedJobs"]]


if __name__ == "__main__":
    unittest.main()
