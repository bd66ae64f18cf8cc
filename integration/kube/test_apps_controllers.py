"""The apps/v1 controllers over the raw API: Deployment -> ReplicaSet -> pods, StatefulSets.

``--controllers deployment,statefulset,scheduler,kubelet``: ReplicaSets and
pods with their names, labels, owners and statuses, rollouts, scaling,
replacement, validation, strategic merge patches and garbage collection;
StatefulSet ordinals in order (a gated pod blocks the next one) or in
parallel, re-creation, scale-down, rolling update. The admission webhooks,
python3-kubernetes and kubectl are in test_apps_clients.py. Run with
/usr/bin/python3.
"""

import threading
import time
import unittest
import urllib.parse

from harness import ServerTest, wait_until

APPS = "/apis/apps/v1/namespaces/%s/"
PODS = "/api/v1/namespaces/%s/pods"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
GATE = "kueue.x-k8s.io/admission"
FAST = ("--kubelet-start-delay", "0.05", "--kubelet-grace-cap", "0.2")


def pod_template(app, gates=None, annotations=None, image="nginx:1.27", extra=None):
    spec = {"containers": [{"name": "main", "image": image,
                            "resources": {"requests": {"cpu": "100m"}}}]}
    if extra:
        spec["containers"].append(extra)
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    meta = {"labels": {"app": app}}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": spec}


def deployment(name, replicas=2, **kw):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": pod_template(name, **kw)}}


def statefulset(name, replicas=3, parallel=False, **kw):
    spec = {"replicas": replicas, "serviceName": name,
            "selector": {"matchLabels": {"app": name}}, "template": pod_template(name, **kw)}
    if parallel:
        spec["podManagementPolicy"] = "Parallel"
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": spec}


def cond(obj, ctype):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


class AppsApi:
    """Raw-API helpers; ``self.s`` is the server, ``NS`` the namespace."""

    NS = "default"

    def create(self, plural, body, code=201):
        got, out = self.s.request("POST", APPS % self.NS + plural, body)
        self.assertEqual(got, code, out)
        return out

    def obj(self, plural, name):
        code, out = self.s.request("GET", APPS % self.NS + plural + "/" + name)
        return out if code == 200 else None

    def patch(self, plural, name, body, ctype=MERGE):
        code, out = self.s.request("PATCH", APPS % self.NS + plural + "/" + name, body, ctype)
        self.assertEqual(code, 200, out)
        return out

    def pods(self, app, live=False):
        sel = urllib.parse.quote("app=" + app)
        items = self.s.request("GET", PODS % self.NS + "?labelSelector=" + sel)[1]["items"]
        if live:
            items = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        return sorted(items, key=lambda p: p["metadata"]["name"])

    def wait_status(self, plural, name, timeout=10, **want):
        def check():
            o = self.obj(plural, name) or {}
            st = o.get("status") or {}
            return all(st.get(k, 0) == v for k, v in want.items()) and o
        return wait_until(check, timeout, what="%s %s status %s" % (plural, name, want))

    def ungate(self, pod_name):
        code, out = self.s.request("PATCH", PODS % self.NS + "/" + pod_name,
                                   {"spec": {"schedulingGates": None}}, MERGE)
        self.assertEqual(code, 200, out)


# ------------------------------------------------------------------ Deployments

class DeploymentTest(AppsApi, ServerTest, unittest.TestCase):
    SERVER_ARGS = ("--controllers", "deployment,scheduler,kubelet",
                   "--node", "n1::cpu=32", *FAST)

    def replicasets(self, deploy_uid):
        items = self.s.request("GET", APPS % self.NS + "replicasets")[1]["items"]
        return [rs for rs in items if any(r["uid"] == deploy_uid
                                          for r in rs["metadata"].get("ownerReferences") or [])]

    def test_replicaset_pods_and_status(self):
        d = self.create("deployments", deployment("web", 3))
        self.assertEqual(d["status"], {})
        self.assertEqual(d["spec"]["strategy"], {"type": "RollingUpdate", "rollingUpdate": {
            "maxUnavailable": "25%", "maxSurge": "25%"}})
        self.assertEqual((d["spec"]["revisionHistoryLimit"], d["spec"]["progressDeadlineSeconds"]),
                         (10, 600))
        d = self.wait_status("deployments", "web", replicas=3, readyReplicas=3,
                             availableReplicas=3, updatedReplicas=3)
        self.assertEqual(d["status"]["observedGeneration"], 1)
        self.assertNotIn("unavailableReplicas", d["status"])
        self.assertEqual(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1")
        avail, prog = cond(d, "Available"), cond(d, "Progressing")
        self.assertEqual((avail["status"], avail["reason"], avail["message"]),
                         ("True", "MinimumReplicasAvailable",
                          "Deployment has minimum availability."))
        [rs] = self.replicasets(d["metadata"]["uid"])
        h = rs["metadata"]["labels"]["pod-template-hash"]
        self.assertEqual(rs["metadata"]["name"], "web-" + h)
        self.assertEqual((prog["status"], prog["reason"], prog["message"]),
                         ("True", "NewReplicaSetAvailable",
                          'ReplicaSet "web-%s" has successfully progressed.' % h))
        self.assertEqual(rs["metadata"]["ownerReferences"], [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
            "uid": d["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}])
        self.assertEqual(rs["spec"]["selector"], {"matchLabels": {"app": "web",
                                                                  "pod-template-hash": h}})
        self.assertEqual(rs["metadata"]["annotations"], {
            "deployment.kubernetes.io/revision": "1",
            "deployment.kubernetes.io/desired-replicas": "3",
            "deployment.kubernetes.io/max-replicas": "4"})
        self.assertEqual(rs["status"], {"replicas": 3, "fullyLabeledReplicas": 3,
                                        "readyReplicas": 3, "availableReplicas": 3,
                                        "observedGeneration": rs["metadata"]["generation"]})
        pods = self.pods("web")
        self.assertEqual(len(pods), 3)
        for p in pods:
            self.assertRegex(p["metadata"]["name"], r"^web-%s-[a-z0-9]{5}$" % h)
            self.assertEqual(p["metadata"]["labels"], {"app": "web", "pod-template-hash": h})
            self.assertEqual(p["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet")
            self.assertEqual(p["metadata"]["ownerReferences"][0]["uid"], rs["metadata"]["uid"])
            self.assertEqual(p["status"]["phase"], "Running")

    def test_rollout_of_a_new_template(self):
        self.create("deployments", deployment("roll", 2))
        d = self.wait_status("deployments", "roll", availableReplicas=2, updatedReplicas=2)
        old = {p["metadata"]["name"] for p in self.pods("roll")}
        out = self.patch("deployments", "roll", {"spec": {"template": {"spec": {"containers": [
            {"name": "main", "image": "nginx:1.28"}]}}}}, STRATEGIC)
        self.assertEqual(out["metadata"]["generation"], 2)
        self.assertEqual(out["spec"]["template"]["spec"]["containers"][0]["resources"],
                         {"requests": {"cpu": "100m"}})  # merged by name, not replaced
        d = wait_until(lambda: (lambda o: o["status"].get("observedGeneration") == 2
                                and o["status"].get("updatedReplicas") == 2
                                and o["status"].get("replicas") == 2
                                and o["status"].get("availableReplicas") == 2 and o)(
            self.obj("deployments", "roll")), 10, what="rolled out")
        self.assertEqual(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2")
        sets = {rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: rs
                for rs in self.replicasets(d["metadata"]["uid"])}
        self.assertEqual(sets["1"]["spec"]["replicas"], 0)
        self.assertEqual(sets["2"]["spec"]["replicas"], 2)
        pods = wait_until(lambda: (lambda ps: len(ps) == 2 and ps)(self.pods("roll")), 10,
                          what="the old pods gone")
        self.assertFalse(old & {p["metadata"]["name"] for p in pods})
        self.assertEqual({p["spec"]["containers"][0]["image"] for p in pods}, {"nginx:1.28"})

    def test_scale_and_replace_pods(self):
        self.create("deployments", deployment("scaled", 3))
        self.wait_status("deployments", "scaled", availableReplicas=3)
        victim = self.pods("scaled")[0]["metadata"]["name"]
        self.s.request("DELETE", PODS % self.NS + "/" + victim)
        wait_until(lambda: len(self.pods("scaled", live=True)) == 3 and victim not in [
            p["metadata"]["name"] for p in self.pods("scaled", live=True)], 10,
            what="a replacement pod")
        self.patch("deployments", "scaled", {"spec": {"replicas": 1}})
        wait_until(lambda: len(self.pods("scaled")) == 1, 10, what="scaled down to 1 pod")
        d = self.wait_status("deployments", "scaled", replicas=1, availableReplicas=1)
        self.assertEqual(d["status"]["observedGeneration"], 2)
        self.patch("deployments", "scaled", {"spec": {"replicas": 0}})
        wait_until(lambda: not self.pods("scaled"), 10, what="no pods")
        d = self.wait_status("deployments", "scaled", replicas=0, availableReplicas=0)
        self.assertEqual(cond(d, "Available")["status"], "True")

    def test_unready_pods_are_not_available(self):
        self.create("deployments", deployment("unready", 2, annotations={
            "fixture.admitd.io/unready": "true"}))
        wait_until(lambda: len([p for p in self.pods("unready")
                                if p["status"]["phase"] == "Running"]) == 2, 10, what="running")
        d = self.wait_status("deployments", "unready", replicas=2, readyReplicas=0)
        self.assertEqual(d["status"]["unavailableReplicas"], 2)
        c = cond(d, "Available")
        self.assertEqual((c["status"], c["reason"], c["message"]),
                         ("False", "MinimumReplicasUnavailable",
                          "Deployment does not have minimum availability."))

    def test_deletion_cascades_or_orphans(self):
        d = self.create("deployments", deployment("gone", 2))
        self.wait_status("deployments", "gone", availableReplicas=2)
        self.s.request("DELETE", APPS % self.NS + "deployments/gone")
        wait_until(lambda: not self.pods("gone") and not self.replicasets(d["metadata"]["uid"]),
                   10, what="replica sets and pods deleted")
        d = self.create("deployments", deployment("orphans", 1))
        self.wait_status("deployments", "orphans", availableReplicas=1)
        [rs] = self.replicasets(d["metadata"]["uid"])
        self.s.request("DELETE", APPS % self.NS + "deployments/orphans",
                       {"propagationPolicy": "Orphan"})
        rs = wait_until(lambda: (lambda o: not o["metadata"].get("ownerReferences") and o)(
            self.obj("replicasets", rs["metadata"]["name"])), 10, what="orphaned ReplicaSet")
        self.assertEqual(len(self.pods("orphans")), 1)
        # A standalone ReplicaSet keeps its pods too, and takes them along when deleted.
        self.patch("replicasets", rs["metadata"]["name"], {"spec": {"replicas": 2}})
        wait_until(lambda: len(self.pods("orphans", live=True)) == 2, 10, what="2 pods")
        self.s.request("DELETE", APPS % self.NS + "replicasets/" + rs["metadata"]["name"])
        wait_until(lambda: not self.pods("orphans"), 10, what="pods of the ReplicaSet deleted")

    def test_validation(self):
        body = deployment("invalid")
        del body["spec"]["selector"]
        out = self.create("deployments", body, 422)
        self.assertEqual(out["message"], 'Deployment.apps "invalid" is invalid: '
                                         'spec.selector: Required value')
        body = deployment("invalid")
        body["spec"]["selector"] = {"matchLabels": {"app": "other"}}
        out = self.create("deployments", body, 422)
        self.assertEqual(out["message"], 'Deployment.apps "invalid" is invalid: '
                                         'spec.template.metadata.labels: Invalid value: '
                                         'map[string]string{"app":"invalid"}: `selector` does '
                                         'not match template `labels`')
        self.assertEqual(out["details"]["causes"][0]["field"], "spec.template.metadata.labels")
        self.create("deployments", deployment("valid", 0))
        code, out = self.s.request("PATCH", APPS % self.NS + "deployments/valid", {
            "spec": {"selector": {"matchLabels": {"app": "valid", "x": "y"}},
                     "template": {"metadata": {"labels": {"x": "y"}}}}}, MERGE)
        self.assertEqual(code, 422, out)
        self.assertIn("spec.selector: Invalid value: ", out["message"])
        self.assertIn("field is immutable", out["message"])


# ---------------------------------------------------------------- StatefulSets

class StatefulSetTest(AppsApi, ServerTest, unittest.TestCase):
    SERVER_ARGS = ("--controllers", "statefulset,scheduler,kubelet",
                   "--node", "n1::cpu=32", *FAST)

    def names(self, app):
        return [p["metadata"]["name"] for p in self.pods(app)]

    def test_pods_labels_and_status(self):
        sts = self.create("statefulsets", statefulset("db", 3))
        self.assertEqual(sts["status"], {"replicas": 0, "availableReplicas": 0})
        self.assertEqual((sts["spec"]["podManagementPolicy"], sts["spec"]["updateStrategy"]),
                         ("OrderedReady", {"type": "RollingUpdate",
                                           "rollingUpdate": {"partition": 0}}))
        sts = self.wait_status("statefulsets", "db", replicas=3, readyReplicas=3)
        st = sts["status"]
        rev = st["updateRevision"]
        self.assertRegex(rev, r"^db-[a-z0-9]{10}$")
        self.assertEqual(st, {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3,
                              "availableReplicas": 3, "currentReplicas": 3,
                              "updatedReplicas": 3, "currentRevision": rev,
                              "updateRevision": rev, "collisionCount": 0})
        pods = self.pods("db")
        self.assertEqual([p["metadata"]["name"] for p in pods], ["db-0", "db-1", "db-2"])
        for i, p in enumerate(pods):
            self.assertEqual(p["metadata"]["labels"], {
                "app": "db", "controller-revision-hash": rev,
                "statefulset.kubernetes.io/pod-name": "db-%d" % i,
                "apps.kubernetes.io/pod-index": str(i)})
            self.assertEqual((p["spec"]["hostname"], p["spec"]["subdomain"]), ("db-%d" % i, "db"))
            self.assertEqual(p["metadata"]["ownerReferences"], [{
                "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
                "uid": sts["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}])
        # Each ordinal was created once the previous one ran.
        started = [p["status"]["startTime"] for p in pods]
        self.assertEqual(started, sorted(started))

    def test_ordered_ready_waits_for_each_gated_pod(self):
        self.create("statefulsets", statefulset("ordered", 3, gates=[GATE]))
        wait_until(lambda: self.names("ordered") == ["ordered-0"], 5, what="ordinal 0")
        time.sleep(0.3)
        self.assertEqual(self.names("ordered"), ["ordered-0"])  # gated: not Ready, no ordinal 1
        p = self.pods("ordered")[0]
        self.assertEqual(p["status"]["phase"], "Pending")
        self.assertEqual(cond(p, "PodScheduled")["reason"], "SchedulingGated")
        self.ungate("ordered-0")
        wait_until(lambda: self.names("ordered") == ["ordered-0", "ordered-1"], 5,
                   what="ordinal 1 after ordinal 0 is ready")
        self.ungate("ordered-1")
        wait_until(lambda: len(self.names("ordered")) == 3, 5, what="ordinal 2")
        sts = self.wait_status("statefulsets", "ordered", replicas=3, readyReplicas=2)
        self.assertEqual(sts["status"]["availableReplicas"], 2)

    def test_parallel_creates_all_at_once(self):
        self.create("statefulsets", statefulset("par", 3, parallel=True, gates=[GATE]))
        wait_until(lambda: self.names("par") == ["par-0", "par-1", "par-2"], 5,
                   what="all ordinals")
        sts = self.wait_status("statefulsets", "par", replicas=3)
        self.assertNotIn("readyReplicas", sts["status"])
        self.patch("statefulsets", "par", {"spec": {"replicas": 0}})
        wait_until(lambda: not self.pods("par"), 5, what="all pods deleted")

    def test_deleted_ordinal_comes_back_with_its_name(self):
        self.create("statefulsets", statefulset("again", 2))
        self.wait_status("statefulsets", "again", readyReplicas=2)
        before = self.pods("again")[1]
        self.s.request("DELETE", PODS % self.NS + "/again-1")
        after = wait_until(lambda: (lambda ps: len(ps) == 2 and ps[1]["metadata"]["uid"]
                                    != before["metadata"]["uid"] and ps[1])(
            self.pods("again", live=True)), 10, what="again-1 made again")
        self.assertEqual(after["metadata"]["name"], "again-1")

    def test_scale_down_deletes_the_highest_ordinals_first(self):
        self.create("statefulsets", statefulset("shrink", 3))
        self.wait_status("statefulsets", "shrink", readyReplicas=3)
        seen = []
        lock = threading.Event()

        def watch_names():
            while not lock.is_set():
                names = tuple(p["metadata"]["name"] for p in self.pods("shrink", live=True))
                if not seen or seen[-1] != names:
                    seen.append(names)
                time.sleep(0.02)

        t = threading.Thread(target=watch_names, daemon=True)
        t.start()
        self.patch("statefulsets", "shrink", {"spec": {"replicas": 1}})
        wait_until(lambda: self.names("shrink") == ["shrink-0"], 10, what="one pod left")
        lock.set()
        t.join()
        self.assertEqual(seen[-1], ("shrink-0",))
        self.assertNotIn(("shrink-0", "shrink-2"), seen)  # shrink-2 went before shrink-1
        self.wait_status("statefulsets", "shrink", replicas=1, readyReplicas=1)

    def test_rolling_update(self):
        self.create("statefulsets", statefulset("rolling", 2))
        old = self.wait_status("statefulsets", "rolling", readyReplicas=2)["status"]
        self.patch("statefulsets", "rolling", {"spec": {"template": {"spec": {"containers": [
            {"name": "main", "image": "nginx:1.28"}]}}}}, STRATEGIC)

        def rolled():
            # The old status satisfies the rest until the controller has seen the new template.
            st = (self.obj("statefulsets", "rolling") or {}).get("status") or {}
            return (st.get("updateRevision") != old["updateRevision"]
                    and st.get("updatedReplicas") == 2 and st.get("readyReplicas") == 2
                    and st.get("currentRevision") == st.get("updateRevision") and st)
        st = wait_until(rolled, 10, what="rolled out")
        self.assertNotEqual(st["updateRevision"], old["updateRevision"])
        pods = self.pods("rolling")
        self.assertEqual({p["metadata"]["labels"]["controller-revision-hash"] for p in pods},
                         {st["updateRevision"]})
        self.assertEqual({p["spec"]["containers"][0]["image"] for p in pods}, {"nginx:1.28"})

    def test_deletion_deletes_the_pods(self):
        self.create("statefulsets", statefulset("bye", 2, parallel=True))
        wait_until(lambda: len(self.pods("bye")) == 2, 5, what="2 pods")
        self.s.request("DELETE", APPS % self.NS + "statefulsets/bye")
        wait_until(lambda: not self.pods("bye"), 10, what="pods deleted")


if __name__ == "__main__":
    unittest.main()
