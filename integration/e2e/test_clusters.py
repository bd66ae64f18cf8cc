"""End to end: two clusters, each with its own API server and shim, sharing one admitd."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, is_true, job, queues  # noqa: E402
from stack import wait_with_logs  # noqa: E402

T = 30  # seconds: generous for a loaded 2-core machine


class ClustersE2E(unittest.TestCase):
    def setUp(self):
        self.s = Stack(nodes=("n1:pool=a:cpu=16",))
        self.c2 = self.s.start_cluster()

    def tearDown(self):
        self.s.stop()

    def wait_until(self, fn, what):
        return wait_with_logs(self.s, fn, what, T)

    def admitd_namespace_labels(self, name):
        out = self.s.admitctl("get", "namespace", name, "-o", "json", check=False)
        if not out.strip():
            return None
        return json.loads(out)["namespace"]["metadata"].get("labels", {})

    def test_a_namespace_deleted_in_one_cluster_stays_for_the_other(self):
        s, c2 = self.s, self.c2
        for api in (None, c2):
            s.create_namespace("shared", {"dep": "sales"}, api=api)
        s.apply(queues("shared", "cq-shared", 4, selector="{matchLabels: {dep: sales}}"))
        shim1 = s.start_shim("shim-c1")
        shim2 = s.start_shim("shim-c2", cluster="c2", api=c2)
        for shim in (shim1, shim2):
            self.wait_until(lambda: shim.metric("admitd_shim_leader") == 1,
                            what="%s to lead" % shim.identity)
        self.wait_until(lambda: (self.admitd_namespace_labels("shared") or {}).get("dep") ==
                        "sales", what="the namespace's labels in admitd")
        applied_by_c1 = shim1.metric("admitd_shim_namespaces_applied_total")

        code, body = s.kube("DELETE", "/api/v1/namespaces/shared", api=c2)
        self.assertEqual(code, 200, body)
        self.wait_until(lambda: shim2.metric("admitd_shim_namespaces_deleted_total") >= 1,
                        what="cluster 2's shim to delete the namespace in admitd")
        # Cluster 1 still has it: its shim applies it again, labels and all.
        self.wait_until(lambda: shim1.metric("admitd_shim_namespaces_applied_total") >
                        applied_by_c1, what="cluster 1's shim to apply the namespace again")
        self.assertEqual(self.admitd_namespace_labels("shared").get("dep"), "sales")
        s.create_job(job("shared", "after", parallelism=1, completions=1, runtime=1))
        self.wait_until(lambda: is_true(s.job("shared", "after"), "Complete"),
                        what="cluster 1's Job in the namespace to run")


if __name__ == "__main__":
    unittest.main()
