"""End to end with TLS, client certificates and an authorization policy: admitd, the test cluster
and admitd-shim as real processes; the shim reaches admitd over mTLS as the shim of its cluster,
admitctl as admin.
"""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import ADMITCTL, Stack, job, queues  # noqa: E402
from stack import wait_with_logs  # noqa: E402

T = 30


def wait_until(fn, timeout, what):
    return wait_with_logs(SecureE2E.s, fn, what, timeout)


class SecureE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=("n1:pool=a:cpu=16",), secure=True)
        cls.shim = cls.s.start_shim()
        wait_until(lambda: cls.shim.metric("admitd_shim_leader") == 1, timeout=T,
                   what="the shim to lead")

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def test_a_job_runs_through_the_shims_mtls_link_under_the_policy(self):
        s = self.s
        s.create_namespace("secure")
        s.apply(queues("secure", "cq-secure", 4))
        s.create_job(job("secure", "j", parallelism=2, completions=2, runtime=1))
        wait_until(lambda: s.job("secure", "j").get("status", {}).get("succeeded") == 2,
                   timeout=T, what="the Job to run and succeed")
        # The shim did it as itself: nothing refused in its log.
        self.assertNotIn("PERMISSION_DENIED", self.shim.log())
        self.assertNotIn("UNAUTHENTICATED", self.shim.log())
        # The admin's changes are in the audit trail under its certificate.
        trail = s.admitctl("audit")
        self.assertIn("certificate admin  Applied  ClusterQueue/cq-secure", trail)
        # Without a certificate admitctl is refused; with the shim's it may not change queues.
        anonymous = subprocess.run(
            [ADMITCTL, "--server", s.admitd_address, "--ca-file",
             os.path.join(s.certs, "ca.crt"), "get", "cq"], capture_output=True, text=True)
        self.assertEqual(anonymous.returncode, 1)
        self.assertIn("UNAUTHENTICATED", anonymous.stderr)
        as_shim = subprocess.run(
            [ADMITCTL, "--server", s.admitd_address, "--ca-file", os.path.join(s.certs, "ca.crt"),
             "--cert-file", os.path.join(s.certs, "shim-c1.crt"),
             "--key-file", os.path.join(s.certs, "shim-c1.key"), "delete", "cq", "cq-secure"],
            capture_output=True, text=True)
        self.assertEqual(as_shim.returncode, 1)
        self.assertIn("certificate shim-c1 may not delete clusterqueues", as_shim.stderr)


if __name__ == "__main__":
    unittest.main()
