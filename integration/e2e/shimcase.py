"""What an end-to-end test class of the shim starts with, written once: admitd, the test cluster
(two nodes, pool=a and pool=b, with the controllers the class names) and a leading admitd-shim
serving its webhooks for the kinds the class enables; a namespace per test, named after it.

    class DeploymentE2E(ShimCase, unittest.TestCase):
        API_ARGS = ("--controllers", "deployment,scheduler,kubelet")
        KINDS = {"deployments": True}     # start_shim_with_webhook's switches
"""

from stack import Stack, wait_with_logs

T = 30  # seconds: generous for a loaded 2-core machine


class ShimCase:
    NODES = ("n1:pool=a:cpu=64", "n2:pool=b:cpu=64")
    API_ARGS = ()  # the test cluster's --crd and --controllers
    KINDS = {}     # the integrations the shim enables besides batch/v1 Jobs

    @classmethod
    def shim_kinds(cls):
        return cls.KINDS

    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=cls.NODES, api_args=cls.API_ARGS)
        cls.shim = cls.s.start_shim_with_webhook(**cls.shim_kinds())
        wait_with_logs(cls.s, lambda: cls.shim.metric("admitd_shim_leader") == 1,
                       "the shim to lead", T)

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def setUp(self):
        self.ns = self._testMethodName.replace("test_", "").replace("_", "-")[:30].strip("-")
        self.s.create_namespace(self.ns)

    def wait(self, fn, what, timeout=T):
        return wait_with_logs(self.s, fn, what, timeout)
