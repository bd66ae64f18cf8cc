"""End to end: plain pods (KEP-976) through admitd-shim's pod webhook and pod integration, admitd
and the test cluster, as real processes.
"""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, condition, is_true, queues  # noqa: E402
from stack import wait_until as _wait_until  # noqa: E402
from stack import wait_with_logs  # noqa: E402

T = 30


def pod(ns, name, cpu="1", runtime=None, queue="lq", group=None, total=None, exit_code=None,
        labels=None, annotations=None, grace=None, priority=None):
    """A pod as a user writes it: the shim's webhook adds the gate, label and finalizer.
    ``runtime`` None runs until deleted; ``grace`` is terminationGracePeriodSeconds;
    ``priority`` (PriorityClass name, value) is what the API server's Priority admission stores
    (the test API server has no PriorityClasses: the value is given as resolved)."""
    meta_labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    meta_annotations = {}
    if runtime is not None:
        meta_annotations["fixture.admitd.io/runtime-seconds"] = str(runtime)
    if exit_code is not None:
        meta_annotations["fixture.admitd.io/exit-code"] = str(exit_code)
    if group:
        meta_labels["kueue.x-k8s.io/pod-group-name"] = group
    if total is not None:
        meta_annotations["kueue.x-k8s.io/pod-group-total-count"] = str(total)
    meta_labels.update(labels or {})
    meta_annotations.update(annotations or {})
    spec = {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": {"cpu": cpu}}}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if priority is not None:
        spec["priorityClassName"], spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": meta_labels,
                         "annotations": meta_annotations},
            "spec": spec}


class PodCase(unittest.TestCase):
    """Helpers over ``self.s``, a Stack whose shim runs the pod webhook and integration."""

    def wait(self, fn, what, timeout=T):
        return wait_with_logs(self.s, fn, what, timeout)

    def get_pod(self, ns, name):
        code, body = self.s.kube("GET", "/api/v1/namespaces/%s/pods/%s" % (ns, name))
        return body if code == 200 else None

    def create_pod(self, p):
        code, body = self.s.kube("POST", "/api/v1/namespaces/%s/pods" % p["metadata"]["namespace"],
                                 p)
        self.assertEqual(code, 201, body)
        # The webhook took it in.
        self.assertEqual(body["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true")
        self.assertIn("kueue.x-k8s.io/managed", body["metadata"]["finalizers"])
        self.assertIn({"name": "kueue.x-k8s.io/admission"}, body["spec"]["schedulingGates"])
        return body

    def patch_pod(self, ns, name, patch):
        code, body = self.s.kube("PATCH", "/api/v1/namespaces/%s/pods/%s" % (ns, name), patch,
                                 "application/merge-patch+json")
        self.assertEqual(code, 200, body)
        return body

    def phase(self, ns, name):
        """The pod's phase; None once it is gone."""
        p = self.get_pod(ns, name)
        return p["status"].get("phase") if p else None

    def gated(self, ns, name):
        p = self.get_pod(ns, name)
        return p is not None and {"name": "kueue.x-k8s.io/admission"} in (
            p["spec"].get("schedulingGates") or [])

    def workload(self, ns, name):
        """admitd's Workload ``name`` (a group's) or, for a single pod, the one it owns."""
        for w in self.s.workloads(ns):
            if w["metadata"]["name"] == name or (
                    w["metadata"]["name"].startswith("pod-%s-" % name) and
                    [o["name"] for o in w["metadata"].get("ownerReferences", [])] == [name]):
                return w
        return None

    def pod_events(self, ns, name, reason):
        return [e for e in self.s.events(ns, name) if e["reason"] == reason]


class PodE2E(PodCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=("n1:pool=a:cpu=64", "n2:pool=b:cpu=64"))
        cls.shim = cls.s.start_shim_with_webhook(pods=True)
        _wait_until(lambda: cls.shim.metric("admitd_shim_leader") == 1, timeout=T,
                    what="the shim to lead")

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def test_single_pods_are_queued_admitted_and_finished(self):
        # KEP-976 story 1.
        s, ns = self.s, "single"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-single", 2))
        for name in ("p1", "p2", "p3"):
            self.create_pod(pod(ns, name, runtime=1))
        # Two fit at once: ungated with the flavor's node selector and Kueue's labels.
        self.wait(lambda: len([n for n in ("p1", "p2", "p3")
                               if not self.get_pod(ns, n)["spec"].get("schedulingGates")]) == 2,
                  "two pods to be ungated")
        ungated = [self.get_pod(ns, n) for n in ("p1", "p2", "p3")
                   if not self.get_pod(ns, n)["spec"].get("schedulingGates")]
        for p in ungated:
            self.assertEqual(p["spec"]["nodeSelector"], {"pool": "a"})
            self.assertEqual(p["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"],
                             "cq-single")
        # All three run and succeed; their finalizers go; quota goes back.
        self.wait(lambda: all(self.get_pod(ns, n)["status"].get("phase") == "Succeeded"
                              for n in ("p1", "p2", "p3")), "every pod to succeed")
        self.wait(lambda: all(not self.get_pod(ns, n)["metadata"].get("finalizers")
                              for n in ("p1", "p2", "p3")), "the finalizers to be removed")
        wls = s.workloads(ns)
        self.assertEqual(len(wls), 3)
        for w in wls:
            self.assertEqual(condition(w, "Finished")["reason"], "Succeeded")
        self.wait(lambda: s.cq_usage("cq-single", "pool-a") == "0", "usage 0")
        started = [e for e in s.events(ns, "p1") if e["reason"] == "Started"]
        self.assertEqual(started[0]["message"], "Admitted by clusterQueue cq-single")
        self.assertEqual(started[0]["source"]["component"], "pod-kueue-controller")

    def test_a_group_is_admitted_only_when_all_its_pods_exist(self):
        # KEP-976 story 2 (the group's first part).
        s, ns = self.s, "group"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-group", 4))
        self.create_pod(pod(ns, "g-1", runtime=1, group="g", total=3))
        self.create_pod(pod(ns, "g-2", runtime=1, group="g", total=3))
        self.wait(lambda: [e for e in s.events(ns, "g-1") if e["reason"] == "ErrWorkloadCompose"]
                  or [e for e in s.events(ns, "g-2") if e["reason"] == "ErrWorkloadCompose"],
                  "the incomplete group's warning")
        self.assertTrue(self.get_pod(ns, "g-1")["spec"].get("schedulingGates"))
        self.create_pod(pod(ns, "g-3", runtime=1, group="g", total=3))
        self.wait(lambda: all(self.get_pod(ns, n)["status"].get("phase") == "Succeeded"
                              for n in ("g-1", "g-2", "g-3")), "the group to run and succeed")
        wls = s.workloads(ns)
        self.assertEqual([w["metadata"]["name"] for w in wls], ["g"])
        self.wait(lambda: is_true(s.workloads(ns)[0], "Finished"), "the group's Workload to finish")
        self.wait(lambda: all(not self.get_pod(ns, n)["metadata"].get("finalizers")
                              for n in ("g-1", "g-2", "g-3")), "the finalizers to be removed")

    def test_excess_pods_of_a_group_are_deleted(self):
        # KEP-976 story 2, a controller creating too many pods: the youngest go, at composition
        # and, once the group runs, per role.
        s, ns = self.s, "excess"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-excess", 4))
        deleted = self.shim.metric("admitd_shim_pods_deleted_total")
        uids = {}
        for name in ("e-1", "e-2", "e-3"):
            uids[name] = self.create_pod(pod(ns, name, group="e", total=2))["metadata"]["uid"]
        self.wait(lambda: self.get_pod(ns, "e-3") is None, "the excess pod e-3 to be deleted")
        self.wait(lambda: all(self.phase(ns, n) == "Running" for n in ("e-1", "e-2")),
                  "the group to run")
        uids["e-4"] = self.create_pod(pod(ns, "e-4", group="e", total=2))["metadata"]["uid"]
        self.wait(lambda: self.get_pod(ns, "e-4") is None, "the excess pod e-4 to be deleted")
        for name in ("e-3", "e-4"):
            ev = self.wait(lambda: self.pod_events(ns, name, "ExcessPodDeleted"),
                           "ExcessPodDeleted on " + name)
            self.assertEqual(ev[0]["message"], "Excess pod deleted")
            self.assertEqual(ev[0]["involvedObject"]["uid"], uids[name])
            self.assertEqual(ev[0]["type"], "Normal")
        for name in ("e-1", "e-2"):  # the members were left alone
            p = self.get_pod(ns, name)
            self.assertEqual((p["metadata"]["uid"], p["status"]["phase"]), (uids[name], "Running"))
            self.assertFalse(p["metadata"].get("deletionTimestamp"))
        wl = self.workload(ns, "e")
        self.assertEqual([ps["count"] for ps in wl["spec"]["podSets"]], [2])
        self.assertEqual(sorted(o["name"] for o in wl["metadata"]["ownerReferences"]),
                         ["e-1", "e-2"])
        self.assertEqual(s.cq_usage("cq-excess", "pool-a"), "2")
        self.assertEqual(self.shim.metric("admitd_shim_pods_deleted_total"), deleted + 2)

    def test_a_failed_pod_of_a_running_group_is_replaced(self):
        # KEP-976 story 2: a pod fails; the group keeps its quota and waits for a replacement,
        # which the user sends under another name; it is ungated into the same admission.
        s, ns = self.s, "replace"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-replace", 2))
        self.create_pod(pod(ns, "r-1", runtime=6, group="r", total=2))
        self.create_pod(pod(ns, "r-2", runtime=1, exit_code=1, group="r", total=2))
        self.wait(lambda: self.phase(ns, "r-2") == "Failed", "r-2 to fail")
        wl = self.wait(lambda: (lambda w: w if w and is_true(w, "WaitingForReplacementPods")
                                else None)(self.workload(ns, "r")),
                       "the group to wait for a replacement")
        c = condition(wl, "WaitingForReplacementPods")
        self.assertEqual((c["reason"], c["message"]),
                         ("PodsFailed", "Some Failed pods need replacement"))
        self.assertTrue(is_true(wl, "Admitted"))
        admitted_at = condition(wl, "Admitted")["lastTransitionTime"]
        # No replacement yet: the failed pod keeps its finalizer.
        self.assertIn("kueue.x-k8s.io/managed", self.get_pod(ns, "r-2")["metadata"]["finalizers"])
        uid = self.create_pod(pod(ns, "r-3", runtime=2, group="r", total=2))["metadata"]["uid"]
        self.wait(lambda: self.phase(ns, "r-3") in ("Running", "Succeeded"),
                  "the replacement to run")
        started = self.wait(lambda: self.pod_events(ns, "r-3", "Started"), "Started on r-3")
        self.assertEqual(started[0]["message"], "Admitted by clusterQueue cq-replace")
        self.wait(lambda: not self.get_pod(ns, "r-2")["metadata"].get("finalizers"),
                  "the replaced pod's finalizer to go")
        wl = self.wait(lambda: (lambda w: w if condition(w, "WaitingForReplacementPods")["status"]
                                == "False" else None)(self.workload(ns, "r")),
                       "the group to stop waiting")
        c = condition(wl, "WaitingForReplacementPods")
        self.assertEqual((c["reason"], c["message"]), ("PodsReady", "No pods need replacement"))
        self.assertIn({"apiVersion": "v1", "kind": "Pod", "name": "r-3", "uid": uid},
                      wl["metadata"]["ownerReferences"])
        # The same admission all along: the replacement used the quota the group held.
        self.assertEqual(condition(wl, "Admitted")["lastTransitionTime"], admitted_at)
        self.assertIsNone(condition(wl, "Evicted"))
        wl = self.wait(lambda: (lambda w: w if is_true(w, "Finished") else None)(
            self.workload(ns, "r")), "the group to finish")
        self.assertEqual((condition(wl, "Finished")["reason"], condition(wl, "Finished")["message"]),
                         ("Succeeded", "Pods succeeded: 2/2."))
        self.wait(lambda: all(not self.get_pod(ns, n)["metadata"].get("finalizers")
                              for n in ("r-1", "r-3")), "the finalizers to be removed")
        self.wait(lambda: s.cq_usage("cq-replace", "pool-a") == "0", "usage 0")

    def test_an_unretriable_group_is_finished_once_no_pod_runs(self):
        # KEP-976 story 2: the user declares the group failed with retriable-in-group: "false"
        # on a failed pod; the group finishes once no pod runs, and every finalizer goes.
        s, ns = self.s, "unretriable"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-unretriable", 2))
        self.create_pod(pod(ns, "u-1", runtime=1, exit_code=1, group="u", total=2))
        self.create_pod(pod(ns, "u-2", runtime=5, group="u", total=2))
        self.wait(lambda: self.phase(ns, "u-1") == "Failed", "u-1 to fail")
        self.wait(lambda: is_true(self.workload(ns, "u"), "WaitingForReplacementPods"),
                  "the group to wait for a replacement")
        self.patch_pod(ns, "u-1",
                       {"metadata": {"annotations": {"kueue.x-k8s.io/retriable-in-group": "false"}}})

        def finished_after_u2():
            wl = self.workload(ns, "u")
            # Read after the Workload: a pod running now ran when the Workload was read.
            if self.phase(ns, "u-2") == "Running":
                self.assertFalse(is_true(wl, "Finished"), "finished while u-2 runs")
                return None
            return wl if is_true(wl, "Finished") else None
        wl = self.wait(finished_after_u2, "the group to finish")
        self.assertEqual(self.phase(ns, "u-2"), "Succeeded")
        self.assertEqual((condition(wl, "Finished")["reason"], condition(wl, "Finished")["message"]),
                         ("Succeeded", "Pods succeeded: 1/2."))
        self.wait(lambda: all(not self.get_pod(ns, n)["metadata"].get("finalizers")
                              for n in ("u-1", "u-2")), "the finalizers to be removed")
        self.wait(lambda: s.cq_usage("cq-unretriable", "pool-a") == "0", "usage 0")
        self.assertEqual(self.pod_events(ns, "u-2", "FinishedWorkload")[0]["message"],
                         "Workload '%s/u' is declared finished" % ns)

    def test_a_driver_starts_only_when_its_declared_workers_fit(self):
        # KEP-976 story 3: the driver declares its workers' pod sets; it stays gated until quota
        # exists for all of them, and the workers it creates are ungated as they come.
        s, ns = self.s, "driver"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-driver", 2))
        worker_spec = {"containers": [{"name": "w", "image": "busybox",
                                       "resources": {"requests": {"cpu": "1"}}}]}
        sets = json.dumps([{"name": "driver", "count": 1},
                           {"name": "workers", "count": 2, "template": {"spec": worker_spec}}])
        self.create_pod(pod(ns, "sp-driver", runtime=6, group="sp",
                            annotations={"kueue.x-k8s.io/pod-group-sets": sets}))
        wl = self.wait(lambda: (lambda w: w if w and (condition(w, "QuotaReserved") or {}).get(
            "status") == "False" else None)(self.workload(ns, "sp")), "the group to be pending")
        self.assertEqual([(p["name"], p["count"]) for p in wl["spec"]["podSets"]],
                         [("driver", 1), ("workers", 2)])
        self.assertIn("insufficient quota", condition(wl, "QuotaReserved")["message"])
        self.assertTrue(self.gated(ns, "sp-driver"))
        s.apply(queues(ns, "cq-driver", 3))
        self.wait(lambda: self.phase(ns, "sp-driver") == "Running", "the driver to run")
        self.assertEqual(s.cq_usage("cq-driver", "pool-a"), "3")  # the workers' quota is held
        self.assertEqual(self.get_pod(ns, "sp-driver")["metadata"]["labels"]
                         ["kueue.x-k8s.io/podset"], "driver")
        role = {"kueue.x-k8s.io/pod-group-role": "workers"}
        for name in ("sp-worker-1", "sp-worker-2"):  # the running driver creates them
            self.create_pod(pod(ns, name, runtime=1, group="sp", labels=role))
            self.wait(lambda: self.phase(ns, name) in ("Running", "Succeeded"), name + " to run")
            self.assertEqual(self.get_pod(ns, name)["metadata"]["labels"]["kueue.x-k8s.io/podset"],
                             "workers")
        # One worker too many is deleted.
        uid = self.create_pod(pod(ns, "sp-worker-3", runtime=1, group="sp", labels=role))[
            "metadata"]["uid"]
        self.wait(lambda: self.get_pod(ns, "sp-worker-3") is None, "the excess worker to go")
        ev = self.wait(lambda: self.pod_events(ns, "sp-worker-3", "ExcessPodDeleted"),
                       "ExcessPodDeleted on the excess worker")
        self.assertEqual(ev[0]["involvedObject"]["uid"], uid)
        wl = self.wait(lambda: (lambda w: w if is_true(w, "Finished") else None)(
            self.workload(ns, "sp")), "the group to finish")
        self.assertEqual(condition(wl, "Finished")["message"], "Pods succeeded: 3/3.")
        self.wait(lambda: all(not self.get_pod(ns, n)["metadata"].get("finalizers")
                              for n in ("sp-driver", "sp-worker-1", "sp-worker-2")),
                  "the finalizers to be removed")
        self.wait(lambda: s.cq_usage("cq-driver", "pool-a") == "0", "usage 0")

    def test_a_pods_workload_priority_class_label_gives_its_workload_priority(self):
        # Kueue's ExtractPriority: the kueue.x-k8s.io/priority-class label wins over the pod's
        # spec.priority (which the API server always sets, 0 without a PriorityClass).
        s, ns = self.s, "wpc"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-wpc", 1) + """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: wpc-high
value: 1000
""")
        self.create_pod(pod(ns, "p", labels={"kueue.x-k8s.io/priority-class": "wpc-high"}))
        wl = self.wait(lambda: self.workload(ns, "p"), "the Workload")
        self.assertEqual(wl["spec"]["priorityClassRef"]["name"], "wpc-high")
        self.assertEqual(int(wl["spec"].get("priority", 0)), 1000)

    def test_a_namespace_selector_on_labels_decides_for_pods(self):
        s = self.s
        s.create_namespace("pods-sales", {"dep": "sales"})
        s.create_namespace("pods-other")
        s.apply(queues("pods-sales", "cq-pods-dep", 4,
                       selector="{matchExpressions: [{key: dep, operator: In, values: [sales]}]}",
                       more_namespaces=["pods-other"]))
        self.create_pod(pod("pods-sales", "in-sales"))
        self.create_pod(pod("pods-other", "in-other"))
        self.wait(lambda: not self.gated("pods-sales", "in-sales"),
                  "the pod of the labelled namespace to be ungated")
        wl = self.wait(lambda: (lambda w: w if w and condition(w, "QuotaReserved") else None)(
            self.workload("pods-other", "in-other")), "the other pod's Workload to be pending")
        qr = condition(wl, "QuotaReserved")
        self.assertEqual((qr["status"], qr["reason"]), ("False", "Misconfigured"))
        self.assertEqual(qr["message"], "workload namespace doesn't match ClusterQueue selector")
        self.assertTrue(self.gated("pods-other", "in-other"))
        # The Workload's events go on its pod: why it waits, and that the other was admitted.
        ev = self.wait(lambda: self.pod_events("pods-other", "in-other", "Misconfigured"),
                       "the pending Warning on the pod")
        self.assertEqual((ev[0]["type"], ev[0]["message"]), ("Warning", qr["message"]))
        self.assertEqual(ev[0]["source"]["component"], "kueue-admission")
        admitted = self.wait(lambda: self.pod_events("pods-sales", "in-sales", "Admitted"),
                             "Admitted on the admitted pod")
        self.assertTrue(admitted[0]["message"].startswith("Admitted by ClusterQueue cq-pods-dep"),
                        admitted[0]["message"])
        # Relabelling the namespace in the cluster changes the decision.
        code, body = s.kube("PATCH", "/api/v1/namespaces/pods-other",
                            {"metadata": {"labels": {"dep": "sales"}}},
                            "application/merge-patch+json")
        self.assertEqual(code, 200, body)
        self.wait(lambda: not self.gated("pods-other", "in-other"),
                  "the pod to be ungated once its namespace is labelled")
        self.assertEqual(self.get_pod("pods-other", "in-other")["spec"]["nodeSelector"],
                         {"pool": "a"})


class PodWithoutWebhookE2E(PodCase):
    """A managed pod that no webhook checked (created with the managed label, gate and finalizer
    by hand): admitd refuses what Kueue's webhook would have refused, and the pod says why."""

    @classmethod
    def setUpClass(cls):
        cls.s = Stack(nodes=("n1:pool=a:cpu=8",))
        cls.shim = cls.s.start_shim(extra=["--integrations=batch/job,pod"])
        _wait_until(lambda: cls.shim.metric("admitd_shim_leader") == 1, timeout=T,
                    what="the shim to lead")

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def test_a_pod_admitd_refuses_stays_gated_with_a_warning(self):
        s, ns = self.s, "refused"
        s.create_namespace(ns)
        s.apply(queues(ns, "cq-refused", 2))
        p = pod(ns, "no-total", group="g")
        p["metadata"]["labels"]["kueue.x-k8s.io/managed"] = "true"
        p["metadata"]["finalizers"] = ["kueue.x-k8s.io/managed"]
        p["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
        code, body = s.kube("POST", "/api/v1/namespaces/%s/pods" % ns, p)
        self.assertEqual(code, 201, body)
        ev = self.wait(lambda: self.pod_events(ns, "no-total", "PodRefused"),
                       "a PodRefused event on the pod")
        self.assertEqual(ev[0]["type"], "Warning")
        self.assertTrue(ev[0]["message"].startswith(
            "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value"),
            ev[0]["message"])
        self.assertEqual(ev[0]["involvedObject"]["uid"], body["metadata"]["uid"])
        self.assertTrue(self.gated(ns, "no-total"))
        self.assertEqual(s.workloads(ns), [])
        # Reported again (a label change), it is refused again but said once.
        reports = self.shim.metric("admitd_shim_pod_reports_total")
        self.patch_pod(ns, "no-total", {"metadata": {"labels": {"touch": "1"}}})
        self.wait(lambda: self.shim.metric("admitd_shim_pod_reports_total") > reports,
                  "the pod to be reported again")
        time.sleep(1)  # what the report's answer would have recorded is written by now
        self.assertEqual(len(self.pod_events(ns, "no-total", "PodRefused")), 1)
        self.assertEqual(self.pod_events(ns, "no-total", "PodRefused")[0].get("count", 1), 1)


if __name__ == "__main__":
    unittest.main()
