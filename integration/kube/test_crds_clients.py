"""CustomResourceDefinitions and custom resources through real clients.

kubectl (apply, get with the CRDs' printer columns and short names, patch,
explain, wait, api-resources, a CRD applied and deleted) and
python3-kubernetes (CustomObjectsApi: create, list, status, patch, 409,
delete, watch; ApiextensionsV1Api). Run with /usr/bin/python3.
"""

import json
import queue
import threading
import time
import unittest

from clientfixtures import (ApiException, KubectlServerTest, PythonClientServerTest,
                            needs_kubectl, needs_python_client, watch)
from crdfixtures import (MERGE, WL_PATH, admitted_status, ray_cluster_spec_yaml, raycluster,
                         widget_crd, workload)
from harness import wait_until


# ---------------------------------------------------------------------- kubectl

RAYCLUSTER_YAML = """apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-kuberay
spec:
""" + ray_cluster_spec_yaml("workergroup", "%d", "minReplicas: 1", "maxReplicas: 5", indent="  ")


@needs_kubectl(29)
class CrdKubectlTest(KubectlServerTest, unittest.TestCase):
    SERVER_ARGS = ("--crd", "raycluster,workload", "--namespace", "ns",
                   "--controllers", "raycluster,scheduler,kubelet",
                   "--node", "n1::cpu=16", "--kubelet-start-delay", "0.05")

    def rows(self, text):
        return [line.split() for line in text.strip().splitlines()]

    def test_apply_get_patch_raycluster(self):
        p = self.kubectl("apply", "-f", "-", stdin=RAYCLUSTER_YAML % 1)
        self.assertEqual(p.stdout.strip(), "raycluster.ray.io/raycluster-kuberay created")
        rc = json.loads(self.kubectl("get", "raycluster", "raycluster-kuberay", "-o",
                                     "json").stdout)
        self.assertIn("kubectl.kubernetes.io/last-applied-configuration",
                      rc["metadata"]["annotations"])
        wait_until(lambda: "ready" in self.kubectl("get", "rayclusters").stdout, 10,
                   what="the cluster ready")
        out = self.kubectl("get", "rayclusters").stdout
        header, row = out.strip().splitlines()
        self.assertEqual(header.split(), ["NAME", "DESIRED", "WORKERS", "AVAILABLE", "WORKERS",
                                          "CPUS", "MEMORY", "GPUS", "STATUS", "AGE"])
        self.assertEqual(row.split()[:7], ["raycluster-kuberay", "1", "1", "2", "3G", "0",
                                           "ready"])
        wide = self.kubectl("get", "raycluster", "-o", "wide").stdout
        self.assertIn("HEAD POD IP", wide.splitlines()[0])
        # A changed manifest goes as a JSON merge patch (CRDs take no strategic merge).
        p = self.kubectl("apply", "-f", "-", stdin=RAYCLUSTER_YAML % 2)
        self.assertEqual(p.stdout.strip(), "raycluster.ray.io/raycluster-kuberay configured")
        wait_until(lambda: len(self.kubectl("get", "pods", "-l",
                                            "ray.io/cluster=raycluster-kuberay,"
                                            "ray.io/node-type=worker", "-o", "name")
                               .stdout.split()) == 2, 10, what="two workers")
        # The autoscaler's way: a JSON patch of one group's replicas.
        p = self.kubectl("patch", "raycluster", "raycluster-kuberay", "--type", "json", "-p",
                         '[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas",'
                         '"value":1}]')
        self.assertEqual(p.stdout.strip(), "raycluster.ray.io/raycluster-kuberay patched")
        p = self.kubectl("patch", "raycluster", "raycluster-kuberay", "-p",
                         '{"spec":{"suspend":true}}', check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("application/strategic-merge-patch+json is not supported by ray.io/v1, "
                      "Kind=RayCluster", p.stderr)
        p = self.kubectl("patch", "raycluster", "raycluster-kuberay", "--type", "merge", "-p",
                         '{"spec":{"suspend":true}}')
        wait_until(lambda: "suspended" in self.kubectl("get", "rayclusters").stdout, 10,
                   what="the cluster suspended")
        self.assertEqual(self.kubectl("get", "pods", "-l", "ray.io/cluster=raycluster-kuberay",
                                      "-o", "name").stdout.strip(), "")

    def test_get_workloads_with_kueue_columns(self):
        code, _ = self.s.request("POST", WL_PATH % "ns", workload("job-a"))
        self.assertEqual(code, 201)
        self.s.request("PATCH", WL_PATH % "ns" + "/job-a/status", admitted_status(), MERGE)
        self.s.request("POST", WL_PATH % "ns", workload("job-b", "other-queue"))
        out = self.kubectl("get", "workloads", "-n", "ns").stdout
        lines = out.strip().splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED",
                                            "FINISHED", "AGE"])
        self.assertEqual(lines[0].index("RESERVED IN"), lines[0].index("RESERVED"))
        job_a, job_b = self.rows(out)[1:]
        self.assertEqual(job_a[:4], ["job-a", "user-queue", "cluster-queue", "True"])
        self.assertRegex(job_a[4], r"^\d+s$")  # FINISHED is empty
        self.assertEqual(len(job_a), 5)
        self.assertEqual(job_b[:2], ["job-b", "other-queue"])
        # Kueue's short names: kwl (wl was dropped from Kueue's CRD by kueue#8472).
        by_short = self.kubectl("get", "kwl", "-n", "ns").stdout
        self.assertEqual([r[:-1] for r in self.rows(by_short)],
                         [r[:-1] for r in self.rows(out)])  # all but the age
        self.assertEqual(self.kubectl("get", "kueueworkloads", "-n", "ns", "-o", "name")
                         .stdout.split(), ["workload.kueue.x-k8s.io/job-a",
                                           "workload.kueue.x-k8s.io/job-b"])
        p = self.kubectl("get", "wl", "-n", "ns", check=False)
        self.assertIn('the server doesn\'t have a resource type "wl"', p.stderr)
        jp = self.kubectl("get", "workload", "job-a", "-n", "ns", "-o",
                          "jsonpath={.status.admission.clusterQueue}").stdout
        self.assertEqual(jp, "cluster-queue")

    def test_crds_resources_and_explain(self):
        out = self.kubectl("get", "crds").stdout
        self.assertEqual([r[0] for r in self.rows(out)],
                         ["NAME", "rayclusters.ray.io", "workloads.kueue.x-k8s.io"])
        out = self.kubectl("api-resources", "--api-group=kueue.x-k8s.io", "--no-headers").stdout
        self.assertEqual(out.split(), ["workloads", "kwl,kueueworkload,kueueworkloads",
                                       "kueue.x-k8s.io/v1beta2", "true", "Workload"])
        out = self.kubectl("explain", "rayclusters.spec.workerGroupSpecs").stdout
        self.assertIn("numOfHosts\t<integer>", out)
        self.kubectl("wait", "--for=condition=Established", "crd/rayclusters.ray.io",
                     "--timeout=10s")

    def test_apply_and_delete_a_crd(self):
        crd = widget_crd(name="doodads.example.com", plural="doodads", kind="Doodad",
                         shortNames=["dd"])
        p = self.kubectl("apply", "-f", "-", stdin=json.dumps(crd))
        self.assertEqual(p.stdout.strip(),
                         "customresourcedefinition.apiextensions.k8s.io/doodads.example.com "
                         "created")
        p = self.kubectl("apply", "-n", "ns", "-f", "-", stdin=json.dumps({
            "apiVersion": "example.com/v1", "kind": "Doodad", "metadata": {"name": "d1"},
            "spec": {"size": 3}, "status": {"phase": "Up"}}))
        self.assertEqual(p.stdout.strip(), "doodad.example.com/d1 created")
        out = self.kubectl("get", "dd", "-n", "ns").stdout
        self.assertEqual(self.rows(out)[0], ["NAME", "SIZE", "PHASE"])
        self.assertEqual(self.rows(out)[1], ["d1", "3", "Up"])
        self.kubectl("delete", "crd", "doodads.example.com", "--wait=true", "--timeout=20s")
        p = self.kubectl("get", "doodads", "-n", "ns", check=False)
        self.assertNotEqual(p.returncode, 0)


# ------------------------------------------------------------- python3-kubernetes

@needs_python_client
class CustomObjectsApiTest(PythonClientServerTest, unittest.TestCase):
    SERVER_ARGS = ("--crd", "raycluster,workload", "--namespace", "team")
    APIS = {"api": "CustomObjectsApi", "ext": "ApiextensionsV1Api"}

    def test_crud_list_and_status(self):
        api = self.api
        created = api.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team",
                                                      "workloads", workload("wl-1"))
        self.assertEqual(created["metadata"]["generation"], 1)
        api.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "default",
                                            "workloads", workload("wl-2"))
        lst = api.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team", "workloads")
        self.assertEqual((lst["kind"], [i["metadata"]["name"] for i in lst["items"]]),
                         ("WorkloadList", ["wl-1"]))
        everywhere = api.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "workloads")
        self.assertEqual(sorted(i["metadata"]["name"] for i in everywhere["items"]),
                         ["wl-1", "wl-2"])
        out = api.patch_namespaced_custom_object_status("kueue.x-k8s.io", "v1beta2", "team",
                                                        "workloads", "wl-1", admitted_status())
        self.assertEqual(out["status"]["admission"]["clusterQueue"], "cluster-queue")
        self.assertEqual(out["metadata"]["generation"], 1)
        got = api.get_namespaced_custom_object_status("kueue.x-k8s.io", "v1beta2", "team",
                                                      "workloads", "wl-1")
        self.assertEqual([c["type"] for c in got["status"]["conditions"]],
                         ["QuotaReserved", "Admitted"])
        out = api.patch_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team",
                                                 "workloads", "wl-1",
                                                 {"spec": {"active": False}})
        self.assertEqual((out["spec"]["active"], out["metadata"]["generation"]), (False, 2))
        # A stale resourceVersion is a 409, as for built-in kinds.
        stale = dict(created)
        with self.assertRaises(ApiException) as cm:
            api.replace_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team",
                                                 "workloads", "wl-1", stale)
        self.assertEqual(cm.exception.status, 409)
        api.delete_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team", "workloads",
                                            "wl-1")
        with self.assertRaises(ApiException) as cm:
            api.get_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team", "workloads",
                                             "wl-1")
        self.assertEqual(cm.exception.status, 404)

    def test_watch(self):
        api = self.api
        rv = api.list_namespaced_custom_object("ray.io", "v1", "team",
                                               "rayclusters")["metadata"]["resourceVersion"]
        events = queue.Queue()
        w = watch.Watch()

        def run():
            try:
                for ev in w.stream(api.list_namespaced_custom_object, "ray.io", "v1", "team",
                                   "rayclusters", resource_version=rv, timeout_seconds=10):
                    events.put(ev)
            except Exception as e:  # surfaced through the queue
                events.put(e)

        threading.Thread(target=run, daemon=True).start()
        time.sleep(0.2)
        api.create_namespaced_custom_object("ray.io", "v1", "team", "rayclusters",
                                            raycluster("watched"))
        api.patch_namespaced_custom_object_status("ray.io", "v1", "team", "rayclusters",
                                                  "watched", {"status": {"state": "ready"}})
        api.delete_namespaced_custom_object("ray.io", "v1", "team", "rayclusters", "watched")
        got = []
        for _ in range(3):
            ev = events.get(timeout=10)
            if isinstance(ev, Exception):
                raise ev
            got.append(ev)
        w.stop()
        self.assertEqual([e["type"] for e in got], ["ADDED", "MODIFIED", "DELETED"])
        self.assertEqual(got[1]["object"]["status"], {"state": "ready"})
        self.assertEqual(got[0]["object"]["kind"], "RayCluster")

    def test_crd_through_apiextensions_api(self):
        crd = self.ext.read_custom_resource_definition("rayclusters.ray.io")
        self.assertEqual((crd.spec.group, crd.spec.names.kind, crd.spec.scope),
                         ("ray.io", "RayCluster", "Namespaced"))
        self.assertEqual([c.type for c in crd.status.conditions],
                         ["NamesAccepted", "Established"])
        cols = crd.spec.versions[0].additional_printer_columns
        self.assertEqual(cols[6].name, "status")

if __name__ == "__main__":
    unittest.main()
