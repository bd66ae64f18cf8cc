"""End to end, with admitd as an HA group: three etcd members (Debian's etcd-server) and three
admitd replicas as real processes; admitctl and the shim are given every replica's address and follow the
leader. The leader is killed with SIGKILL while the shim's Jobs are being admitted: every Job
still runs exactly once and completes, and the shim's watch resumes on the new leader without
listing again.
"""

import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import ADMITCTL, ADMITD, Stack, condition, free_port, is_true, job, queues  # noqa: E402
from stack import wait_until, wait_with_logs  # noqa: E402

T = 30
ETCD = "/usr/bin/etcd"


class HaStack(Stack):
    """A Stack whose admitd is a group of three replicas over a 3-member etcd."""

    def start_etcd(self):
        clients = [free_port() for _ in range(3)]
        peers = [free_port() for _ in range(3)]
        cluster = ",".join("m%d=http://127.0.0.1:%d" % (i, p) for i, p in enumerate(peers))
        self.etcd_endpoints = ",".join("127.0.0.1:%d" % p for p in clients)
        self.etcd, self.etcd_logs = [], []
        for i in range(3):
            path = os.path.join(self.tmp, "etcd-%d.log" % i)
            self.etcd_logs.append(open(path, "w"))
            self.more_logs.append(("etcd m%d" % i, path))
            self.etcd.append(subprocess.Popen(
                [ETCD, "--name", "m%d" % i, "--data-dir", os.path.join(self.tmp, "etcd-%d" % i),
                 "--listen-client-urls", "http://127.0.0.1:%d" % clients[i],
                 "--advertise-client-urls", "http://127.0.0.1:%d" % clients[i],
                 "--listen-peer-urls", "http://127.0.0.1:%d" % peers[i],
                 "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peers[i],
                 "--initial-cluster", cluster, "--initial-cluster-state", "new",
                 "--initial-cluster-token", "e2e", "--log-level", "warn"],
                stdout=self.etcd_logs[i], stderr=subprocess.STDOUT))

    def start_admitd(self):
        if not hasattr(self, "replica_ports"):
            self.start_etcd()
            self.replica_ports = [free_port() for _ in range(3)]
            self.replicas = [None] * 3
            self.admitd_address = ",".join("127.0.0.1:%d" % p for p in self.replica_ports)
            for i in range(3):
                self.more_logs.append(("replica r%d" % i, self.replica_log(i)))
        for i in range(3):
            if self.replicas[i] is None or self.replicas[i].poll() is not None:
                self.start_replica(i)
        wait_until(lambda: subprocess.run([ADMITCTL, "--server", self.admitd_address, "get", "cq"],
                                          capture_output=True).returncode == 0,
                   timeout=30, interval=0.1, what="the group to serve")

    def replica_log(self, i):
        return os.path.join(self.tmp, "replica-%d.log" % i)

    def start_replica(self, i):
        with open(self.replica_log(i), "a") as log:  # the child keeps its own descriptor
            self.replicas[i] = subprocess.Popen(
                [ADMITD, "--listen", "127.0.0.1:%d" % self.replica_ports[i],
                 "--data-dir", os.path.join(self.tmp, "r%d" % i),
                 "--ha-etcd-endpoints", self.etcd_endpoints, "--ha-domain", "e2e",
                 "--ha-id", "r%d" % i, "--ha-lease-ttl", "2s"] + self.admitd_args,
                stdout=log, stderr=subprocess.STDOUT)

    def leader(self):
        """The index of the replica that takes calls, or None."""
        for i, port in enumerate(self.replica_ports):
            r = subprocess.run([ADMITCTL, "--server", "127.0.0.1:%d" % port, "get", "cq"],
                               capture_output=True)
            if r.returncode == 0:
                return i
        return None

    def kill_replica(self, i):
        self.replicas[i].send_signal(signal.SIGKILL)
        self.replicas[i].wait(10)

    def stop(self):
        for p in getattr(self, "replicas", []):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        for member in getattr(self, "etcd", []):
            member.terminate()
            member.wait(10)
        for log in getattr(self, "etcd_logs", []):
            log.close()
        super().stop()


@unittest.skipUnless(os.access(ETCD, os.X_OK), "etcd-server is not installed")
class HaE2E(unittest.TestCase):
    def setUp(self):
        self.s = HaStack(nodes=("n1:pool=a:cpu=64",))
        self.addCleanup(self.s.stop)
        self.ns = "ha"
        self.s.create_namespace(self.ns)

    def wait(self, fn, what, timeout=T):
        return wait_with_logs(self.s, fn, what, timeout)

    def test_a_shim_keeps_admitting_jobs_across_a_leader_kill(self):
        s, ns = self.s, self.ns
        shim = s.start_shim()
        s.apply(queues(ns, "cq", 2))
        names = ["j%d" % i for i in range(8)]
        for n in names:
            s.create_job(job(ns, n, parallelism=1, completions=1, runtime=1))
        self.wait(lambda: any(not s.job(ns, n)["spec"]["suspend"] for n in names),
                  "a first Job to start")
        self.wait(lambda: shim.metric("admitd_shim_admitd_lists_total") is not None,
                  "the shim's first list")
        lists = shim.metric("admitd_shim_admitd_lists_total")
        leader = s.leader()
        self.assertIsNotNone(leader)
        s.kill_replica(leader)

        self.wait(lambda: all(is_true(s.job(ns, n), "Complete") for n in names),
                  "every Job to complete across the failover", timeout=3 * T)
        wls = s.workloads(ns)
        self.assertEqual(len(wls), len(names))
        for w in wls:
            self.assertEqual(condition(w, "Finished")["reason"], "Succeeded", w["metadata"]["name"])
        for n in names:  # each ran once, none is left suspended
            self.assertEqual(len(s.pods(ns, n)), 1, n)
            self.assertFalse(s.job(ns, n)["spec"]["suspend"], n)
        self.wait(lambda: s.cq_usage("cq", "pool-a") == "0", "usage 0")
        self.assertNotEqual(s.leader(), leader)
        # The watch resumed on the new leader from its revision: no second list.
        self.assertEqual(shim.metric("admitd_shim_admitd_lists_total"), lists)
        self.assertEqual(shim.metric("admitd_shim_admitd_reachable"), 1)


if __name__ == "__main__":
    unittest.main()
