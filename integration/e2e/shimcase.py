"""What an end-to-end test class of the shim starts with, written once: admitd, the test cluster
(two nodes, pool=a and pool=b, with the controllers the class names) and a leading admitd-shim
serving its webhooks for the kinds the class enables; a namespace per test, named after it.

    class DeploymentE2E(ShimCase, unittest.TestCase):
        API_ARGS = ("--controllers", "deployment,scheduler,kubelet")
        KINDS = {"deployments": True}     # start_shim_with_webhook's switches
"""

from stack import Stack, condition, queues, wait_with_logs

T = 30  # seconds: generous for a loaded 2-core machine


class ShimCase:
    NODES = ("n1:pool=a:cpu=64", "n2:pool=b:cpu=64")
    API_ARGS = ()  # the test cluster's --crd and --controllers
    KINDS = {}     # the integrations the shim enables besides batch/v1 Jobs
    STACK = {}     # more of Stack's keywords (admitd's config, metrics, ...)
    WEBHOOK = True  # the shim serves Kueue's webhooks
    TIMEOUT = T

    @classmethod
    def shim_kinds(cls):
        return cls.KINDS

    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=cls.NODES, api_args=cls.API_ARGS, **cls.STACK)
        cls.shim = (cls.s.start_shim_with_webhook(**cls.shim_kinds()) if cls.WEBHOOK
                    else cls.s.start_shim())
        wait_with_logs(cls.s, lambda: cls.shim.metric("admitd_shim_leader") == 1,
                       "the shim to lead", T)

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def setUp(self):
        self.ns = self._testMethodName.replace("test_", "").replace("_", "-")[:30].strip("-")
        self.s.create_namespace(self.ns)

    def wait(self, fn, what, timeout=None):
        return wait_with_logs(self.s, fn, what, timeout or self.TIMEOUT)


def elastic_gated(pods):
    """The pods still held by the elastic-job scheduling gate."""
    return [p for p in pods if any(g["name"] == "kueue.x-k8s.io/elastic-job"
                                   for g in p["spec"].get("schedulingGates") or [])]


def grow_and_shrink(case, cq, start, grown, shrunk, running, gated, resize):
    """The elastic scenario, for an elastic object of `start` pods just created in case.ns under
    ClusterQueue `cq` (its quota at least `start`, below `grown`): its pods are ungated and run; grown to
    `grown` pods past the quota, the new ones stay gated while the scale-up slice waits and the
    usage stays the running slice's; with quota enough they run (no running pod restarted) and
    the usage is the new slice's, counted once; shrunk to `shrunk` in place, the others run on.
    `running()` gives the uids of its running pods, `gated()` its gated pods, `resize(n)` sets
    its size to n pods."""
    s, ns = case.s, case.ns
    case.wait(lambda: len(running()) == start, "its pods to be ungated and run")
    first = running()
    case.assertEqual(s.cq_usage(cq, "pool-a"), str(start))
    resize(grown)
    case.wait(lambda: len(gated()) == grown - start, "the new pods, gated")
    case.wait(lambda: [w for w in s.workloads(ns) if condition(w, "QuotaReserved") and
                       condition(w, "QuotaReserved")["status"] == "False"],
              "the scale-up slice to wait for quota")
    case.assertEqual(s.cq_usage(cq, "pool-a"), str(start))
    case.assertEqual(running(), first)
    s.apply(queues(ns, cq, grown))
    case.wait(lambda: len(running()) == grown, "all its pods to run")
    case.assertTrue(first <= running(), "a running pod was restarted")
    case.wait(lambda: s.cq_usage(cq, "pool-a") == str(grown), "usage to be the new slice's")
    before = running()
    resize(shrunk)
    case.wait(lambda: len(running()) == shrunk, "the surplus pods to go")
    case.assertTrue(running() <= before, "a pod was restarted or replaced")
    case.wait(lambda: s.cq_usage(cq, "pool-a") == str(shrunk), "usage to shrink in place")
