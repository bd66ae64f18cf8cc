"""End to end: fair sharing between two teams' Jobs in one cohort, as real processes.

admitd runs with Kueue's fairSharing section in its config file. ClusterQueues team-a (weight 1)
and team-b (weight 2) have no quota of their own and borrow everything from lender's 12 CPUs in
cohort org; both keep more Jobs pending than fit, and both reclaim within the cohort. Fair
sharing's preemption takes CPUs from the team above its weighted share for the one below it, so
team-b comes to hold about twice team-a's CPUs. The test samples both teams' usage and prints
the ratio.
"""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, job  # noqa: E402
from stack import wait_with_logs  # noqa: E402

T = 60  # seconds: generous for a loaded 2-core machine
JOBS = {"team-a": 30, "team-b": 60}  # 12 run at once, 3 s each


def team_queue(name, quota, weight=None):
    # The teams reclaim across the cohort: fair sharing's preemption is what moves quota from
    # the team above its share to the one below it (admission order alone only decides who
    # gets the last free CPUs).
    fair = "" if weight is None else (
        "  fairSharing:\n    weight: \"%s\"\n"
        "  preemption:\n    reclaimWithinCohort: Any\n    withinClusterQueue: LowerPriority\n"
        % weight)
    return """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: %(name)s
spec:
  cohortName: org
  namespaceSelector: {}
%(fair)s  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: pool-a
      resources:
      - name: cpu
        nominalQuota: %(quota)s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: %(name)s
  name: lq
spec:
  clusterQueue: %(name)s
""" % dict(name=name, quota=quota, fair=fair)


class FairSharingE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Kueue's v1beta2 spelling, pasted as it is.
        cls.s = Stack(nodes=("n1:pool=a:cpu=64",), metrics=True,
                      config="fairSharing:\n"
                             "  preemptionStrategies: [LessThanOrEqualToFinalShare, "
                             "LessThanInitialShare]\n")
        cls.shim = cls.s.start_shim()
        wait_with_logs(cls.s, lambda: cls.shim.metric("admitd_shim_leader") == 1,
                       "the shim to lead", T)

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def cpus(self, cq):
        doc = json.loads(self.s.admitctl("get", "cq", cq, "-o", "json"))["clusterQueue"]
        for f in doc.get("status", {}).get("flavorsUsage", []):
            for r in f["resources"]:
                if r["name"] == "cpu":
                    return float(r.get("total", "0"))
        return 0.0

    def test_two_teams_converge_to_shares_in_the_ratio_of_their_weights(self):
        s = self.s
        s.apply("""apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: pool-a
spec:
  nodeLabels:
    pool: a
""" + team_queue("team-a", 0, "1") + team_queue("team-b", 0, "2")
            + team_queue("lender", 12))
        for team in ("team-a", "team-b"):
            s.create_namespace(team)
        for i in range(max(JOBS.values())):
            for team in ("team-a", "team-b"):
                if i < JOBS[team]:
                    s.create_job(job(team, "j%02d" % i, cpu="1", runtime=3))
        # Wait for the cohort to fill, then sample while both teams still have Jobs pending.
        wait_with_logs(s, lambda: self.cpus("team-a") + self.cpus("team-b") >= 12,
                       "the cohort's 12 CPUs to be in use", T)
        time.sleep(4)  # a couple of rounds of Jobs finishing
        samples = []
        end = time.monotonic() + 10
        while time.monotonic() < end:
            samples.append((self.cpus("team-a"), self.cpus("team-b")))
            time.sleep(0.25)
        a = sum(x for x, _ in samples) / len(samples)
        b = sum(y for _, y in samples) / len(samples)
        shares = {}
        for cq in ("team-a", "team-b"):
            doc = json.loads(s.admitctl("get", "cq", cq, "-o", "json"))["clusterQueue"]
            shares[cq] = doc["status"]["fairSharing"].get("weightedShare", "0")
        print("\nfair sharing, weights 1:2, %d samples: team-a %.2f CPUs, team-b %.2f CPUs, "
              "ratio %.2f; weightedShare at the end: team-a %s, team-b %s"
              % (len(samples), a, b, b / a if a else float("inf"), shares["team-a"],
                 shares["team-b"]), flush=True)
        # Both still had Jobs waiting through the window: the split is the tournament's.
        pending = [w for team in ("team-a", "team-b") for w in s.workloads(team)
                   if not w.get("status", {}).get("admission")]
        self.assertTrue(any(w["metadata"]["namespace"] == "team-a" for w in pending))
        self.assertTrue(any(w["metadata"]["namespace"] == "team-b" for w in pending))
        self.assertGreater(a, 0)
        self.assertTrue(1.5 <= b / a <= 2.7, "ratio %.2f" % (b / a))
        text = s.admitctl("get", "cq")
        self.assertIn("WEIGHTED SHARE", text)
        # The gauges, under Kueue's names.
        import urllib.request
        metrics = urllib.request.urlopen("http://%s/metrics" % s.admitd_metrics,
                                         timeout=10).read().decode()
        self.assertIn('kueue_cluster_queue_weighted_share{cluster_queue="team-b",cohort="org"}',
                      metrics)
        self.assertIn('kueue_cohort_weighted_share{cohort="org"} 0', metrics)


if __name__ == "__main__":
    unittest.main()
