"""End to end: Kueue's kubectl habits with admitd-shim --mirror-workloads. The test cluster serves
Kueue's Workload CRD; the shim keeps read-only Workload objects mirroring admitd's, which the
machine's kubectl lists and describes as it would under Kueue.
"""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, is_true, job, queues  # noqa: E402
from stack import undocumented_metrics, wait_with_logs  # noqa: E402

T = 30
KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")


class MirrorE2E(unittest.TestCase):
    def setUp(self):
        self.s = Stack(nodes=("n1:pool=a:cpu=64",), api_args=("--crd", "workload"))
        self.addCleanup(self.s.stop)
        self.shim = self.s.start_shim(extra=["--mirror-workloads"])
        self.wait(lambda: self.shim.metric("admitd_shim_leader") == 1, "the shim to lead")

    def wait(self, fn, what, timeout=T):
        return wait_with_logs(self.s, fn, what, timeout)

    def kubectl(self, *args):
        r = subprocess.run([KUBECTL, "--kubeconfig", self.s.api.kubeconfig] + list(args),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def mirrored(self, ns):
        code, body = self.s.kube("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/%s/workloads" % ns)
        self.assertEqual(code, 200, body)
        return body["items"]

    @unittest.skipUnless(os.path.exists(KUBECTL), "no kubectl")
    def test_kubectl_lists_and_describes_the_mirrored_workloads(self):
        s, ns = self.s, "mirror"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-m", 4))
        s.create_job(job(ns, "seen", parallelism=1, completions=1))  # runs until deleted
        name = self.wait(lambda: [w["metadata"]["name"] for w in s.workloads(ns)],
                         "the Workload in admitd")[0]
        self.wait(lambda: [w for w in self.mirrored(ns) if is_true(w, "Admitted")],
                  "the mirror to show the admission")
        out = self.kubectl("get", "workloads", "-n", ns)
        header, row = out.splitlines()[0].split(), out.splitlines()[1].split()
        self.assertEqual(header[:5], ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED"])
        self.assertEqual(row[:4], [name, "lq", "cq-m", "True"])
        described = self.wait(lambda: (lambda d: d if "QuotaReserved" in d else None)(
            self.kubectl("describe", "workload", name, "-n", ns)),
            "the Workload's events in kubectl describe")
        self.assertIn("Admitted", described)
        self.assertIn("kueue.x-k8s.io/job-uid", described)
        # Deleting the Job deletes the Workload in admitd, and so its mirror.
        code, _ = s.kube("DELETE", "/apis/batch/v1/namespaces/%s/jobs/seen" % ns)
        self.assertEqual(code, 200)
        self.wait(lambda: self.mirrored(ns) == [], "the mirror to go")

    @unittest.skipUnless(os.path.exists(KUBECTL), "no kubectl")
    def test_an_elastic_jobs_slices_name_their_chain(self):
        # Kueue's annotations on an elastic Job's slices: the first names the chain after
        # itself, a scale-up slice carries the same chain name and the slice it replaces.
        s, ns = self.s, "elastic"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-e", 8))
        s.create_job(job(ns, "grow", parallelism=2, elastic=True))
        first = self.wait(lambda: [w["metadata"]["name"] for w in s.workloads(ns)
                                   if is_true(w, "Admitted")], "the first slice admitted")[0]
        slice_name = "kueue.x-k8s.io/workload-slice-name"
        replaces = "kueue.x-k8s.io/workload-slice-replacement-for"

        def annotations(name):
            # As kubectl shows the mirror, and as admitctl shows admitd's own.
            mirrored = json.loads(self.kubectl("get", "workload", name, "-n", ns, "-o", "json"))
            own = json.loads(s.admitctl("get", "workload", name, "-n", ns, "-o", "json"))
            self.assertEqual(mirrored["metadata"].get("annotations", {}).get(slice_name),
                             own["metadata"].get("annotations", {}).get(slice_name))
            return own["metadata"].get("annotations", {})

        self.wait(lambda: [w for w in self.mirrored(ns) if w["metadata"]["name"] == first],
                  "the first slice mirrored")
        self.assertEqual(annotations(first)[slice_name], first)
        self.assertNotIn(replaces, annotations(first))
        # The mirror's own metric is documented.
        _, text = self.shim.get("/metrics")
        self.assertIn("admitd_shim_workload_mirror_writes_total", text)
        self.assertEqual(undocumented_metrics(text), [], "the shim's metrics without docs")
        s.patch_job(ns, "grow", {"spec": {"parallelism": 3}})
        second = self.wait(lambda: [w["metadata"]["name"] for w in s.workloads(ns)
                                    if w["metadata"]["name"] != first], "the scale-up slice")[0]
        self.wait(lambda: [w for w in self.mirrored(ns) if w["metadata"]["name"] == second],
                  "the scale-up slice mirrored")
        got = annotations(second)
        self.assertEqual(got[slice_name], first)
        self.assertEqual(got[replaces], "%s/%s" % (ns, first))

    def test_a_pod_groups_workload_is_mirrored_too(self):
        s, ns = self.s, "pods"
        self.shim.kill()
        shim = s.start_shim_with_webhook("shim-1", pods=True, extra=["--mirror-workloads"])
        self.wait(lambda: shim.metric("admitd_shim_leader") == 1, "the new shim to lead",
                  timeout=2 * T)
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-p", 4))
        for name in ("g-1", "g-2"):
            code, body = s.kube("POST", "/api/v1/namespaces/%s/pods" % ns, {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns,
                             "labels": {"kueue.x-k8s.io/queue-name": "lq",
                                        "kueue.x-k8s.io/pod-group-name": "g"},
                             "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                         "resources": {"requests": {"cpu": "1"}}}]}})
            self.assertEqual(code, 201, body)
        mirrored = self.wait(lambda: [w for w in self.mirrored(ns) if is_true(w, "Admitted")],
                             "the group's Workload mirrored as admitted")
        self.assertEqual(mirrored[0]["metadata"]["name"], "g")
        self.assertEqual(mirrored[0]["metadata"]["labels"]["admitd.io/pod-cluster"], "c1")

    def test_a_mirror_admitd_does_not_have_is_removed_when_the_shim_starts(self):
        s, ns = self.s, "stale"
        s.create_namespace(ns)
        stale = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                 "metadata": {"name": "left-over", "namespace": ns,
                              "labels": {"admitd.io/mirror": "true"}},
                 "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
                                                         "template": {"spec": {}}}]}}
        code, body = s.kube("POST", "/apis/kueue.x-k8s.io/v1beta2/namespaces/%s/workloads" % ns,
                            stale)
        self.assertEqual(code, 201, body)
        self.shim.kill()
        shim = s.start_shim("shim-1", ["--mirror-workloads"])
        self.wait(lambda: shim.metric("admitd_shim_leader") == 1, "the new shim to lead",
                  timeout=2 * T)
        self.wait(lambda: self.mirrored(ns) == [], "the stale mirror to go")


if __name__ == "__main__":
    unittest.main()
