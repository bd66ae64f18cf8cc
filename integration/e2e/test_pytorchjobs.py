"""End to end: Kubeflow PyTorchJobs (kubeflow.org/v1) through admitd-shim's PyTorchJob integration
and webhook, admitd and the test cluster with its simulated training operator, as real processes:
the scenarios of kinds.py.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kinds import KindScenarios  # noqa: E402


class PyTorchJobE2E(KindScenarios, unittest.TestCase):
    INTEGRATION = "pytorchjobs"
    API_ARGS = ("--crd", "pytorchjob", "--controllers", "pytorchjob,scheduler,kubelet")
    COLLECTION = "/apis/kubeflow.org/v1/namespaces/%s/pytorchjobs"
    RESOURCE = "pytorchjob"
    DONE = "Succeeded"
    POD_LABEL = "training.kubeflow.org/job-name"
    CONTROLLER = "kubeflow.org/pytorchjob-kueue-controller"
    PREFIX = "cq-pt"

    def make(self, ns, name, pods, runtime=None, priority_class=None):
        """A Master and `pods` - 1 Workers (the webhook suspends it through spec.runPolicy)."""
        labels = {"kueue.x-k8s.io/queue-name": "lq"}
        if priority_class:
            labels["kueue.x-k8s.io/priority-class"] = priority_class
        annotations = {}
        if runtime is not None:
            annotations["fixture.admitd.io/runtime-seconds"] = str(runtime)

        def replica(n):
            return {"replicas": n, "restartPolicy": "Never",
                    "template": {"metadata": {"annotations": annotations},
                                 "spec": {"containers": [{
                                     "name": "pytorch", "image": "pytorch",
                                     "resources": {"requests": {"cpu": "1"}}}]}}}
        return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {"pytorchReplicaSpecs": {"Master": replica(1),
                                                 "Worker": replica(pods - 1)}}}

    def resize_ops(self, pods):
        """A Master and `pods` - 1 Workers."""
        return [{"op": "replace", "path": "/spec/pytorchReplicaSpecs/Worker/replicas",
                 "value": pods - 1}]

    def suspended(self, obj):
        return obj["spec"].get("runPolicy", {}).get("suspend") is True

    def templates(self, obj):
        # Pod sets are named by the replica type in lower case (Kueue's NewPodSetReference).
        return [(t.lower(), r["template"]) for t, r in obj["spec"]["pytorchReplicaSpecs"].items()]


if __name__ == "__main__":
    unittest.main()
