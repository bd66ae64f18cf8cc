"""The real kubectl (/usr/bin/kubectl) against the test API server.

/usr/bin/kubectl is the Cloud SDK dispatcher: it runs the kubectl.1.NN binary
closest to the server's reported version (1.33 for the default --server-version).
``test_apply_with_kubectl_1_32`` also runs kubectl 1.32 explicitly.
"""

import json
import os
import queue
import subprocess
import threading
import time
import unittest

from clientfixtures import KUBECTL, KubectlServerTest, needs_kubectl

KUBECTL_132 = "/usr/lib/google-cloud-sdk/bin/kubectl.1.32"

JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  labels:
    kueue.x-k8s.io/queue-name: user-queue{extra_label}
spec:
  suspend: true
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: ["pause"]
        resources:
          requests:
            cpu: 100m
"""

POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels:
    app: "{app}"
spec:
  containers:
  - name: c
    image: busybox:1.36
"""


class LineReader:
    """Collects a child's stdout lines on a thread so tests can wait with a timeout."""

    def __init__(self, stream):
        self.lines = queue.Queue()
        self.thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self.thread.start()

    def _run(self, stream):
        for line in stream:
            self.lines.put(line.rstrip("\n"))

    def next(self, timeout=10):
        return self.lines.get(timeout=timeout)


# The fixture publishes OpenAPI v3 only, which `kubectl apply` reads from 1.29 on (1.27 and 1.28 want
# v2 as protobuf).
@needs_kubectl(29)
class KubectlTest(KubectlServerTest, unittest.TestCase):
    def write(self, name, text):
        path = os.path.join(self.s.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def get_json(self, *args):
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    # ------------------------------------------------------------------ tests
    def test_discovery(self):
        out = self.kubectl("api-resources", "--no-headers").stdout
        rows = {tuple(line.split()) for line in out.splitlines()}
        self.assertIn(("jobs", "batch/v1", "true", "Job"), rows)
        self.assertIn(("pods", "po", "v1", "true", "Pod"), rows)
        self.assertIn(("namespaces", "ns", "v1", "false", "Namespace"), rows)
        self.assertIn(("leases", "coordination.k8s.io/v1", "true", "Lease"), rows)
        version = json.loads(self.kubectl("version", "-o", "json").stdout)
        self.assertEqual(version["serverVersion"]["gitVersion"], "v1.33.0")

    def test_apply_twice_then_configured(self):
        path = self.write("apply.yaml", JOB.format(name="apply-job", extra_label=""))
        p = self.kubectl("apply", "-f", path)
        self.assertEqual(p.stdout.strip(), "job.batch/apply-job created")
        job = self.get_json("job", "apply-job")
        self.assertIn("kubectl.kubernetes.io/last-applied-configuration",
                      job["metadata"]["annotations"])
        rv = job["metadata"]["resourceVersion"]
        p = self.kubectl("apply", "-f", path)
        self.assertEqual(p.stdout.strip(), "job.batch/apply-job unchanged")
        self.assertEqual(self.get_json("job", "apply-job")["metadata"]["resourceVersion"], rv)
        # A changed manifest is sent as a strategic merge patch: "configured".
        path = self.write("apply.yaml", JOB.format(name="apply-job",
                                                   extra_label="\n    team: blue"))
        p = self.kubectl("apply", "-f", path)
        self.assertEqual(p.stdout.strip(), "job.batch/apply-job configured")
        job = self.get_json("job", "apply-job")
        self.assertEqual(job["metadata"]["labels"]["team"], "blue")
        self.assertGreater(int(job["metadata"]["resourceVersion"]), int(rv))
        self.assertIn('"team":"blue"', job["metadata"]["annotations"][
            "kubectl.kubernetes.io/last-applied-configuration"])
        self.assertIn("PATCH /apis/batch/v1/namespaces/default/jobs/apply-job",
                      self.s.log())

    def test_apply_with_kubectl_1_32(self):
        if not os.path.exists(KUBECTL_132):
            self.skipTest("no kubectl 1.32")
        path = self.write("apply132.yaml", JOB.format(name="apply-132", extra_label=""))
        p = self.kubectl("apply", "-f", path, binary=KUBECTL_132)
        self.assertEqual(p.stdout.strip(), "job.batch/apply-132 created")
        p = self.kubectl("apply", "-f", path, binary=KUBECTL_132)
        self.assertEqual(p.stdout.strip(), "job.batch/apply-132 unchanged")
        self.assertIn("Client Version: v1.32", self.kubectl("version", binary=KUBECTL_132).stdout)

    def test_get_json_and_jsonpath(self):
        path = self.write("get.yaml", JOB.format(name="get-job", extra_label=""))
        self.kubectl("apply", "-f", path)
        lst = self.get_json("jobs")
        self.assertEqual(lst["kind"], "List")
        job = next(i for i in lst["items"] if i["metadata"]["name"] == "get-job")
        self.assertEqual(job["kind"], "Job")
        self.assertEqual(job["apiVersion"], "batch/v1")
        self.assertEqual(job["metadata"]["namespace"], "default")
        self.assertEqual(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "user-queue")
        self.assertEqual(job["metadata"]["generation"], 1)
        self.assertTrue(job["metadata"]["resourceVersion"].isdigit())
        self.assertEqual(len(job["metadata"]["uid"]), 36)
        self.assertTrue(job["spec"]["suspend"])
        # The server-defaulted selector matches the template's controller-uid label.
        uid = job["metadata"]["uid"]
        self.assertEqual(job["spec"]["selector"]["matchLabels"],
                         {"batch.kubernetes.io/controller-uid": uid})
        self.assertEqual(job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"],
                         "get-job")
        out = self.kubectl("get", "job", "get-job", "-o",
                           "jsonpath={.spec.suspend} {.metadata.labels.kueue\\.x-k8s\\.io/queue-name}"
                           " {.spec.parallelism}").stdout
        self.assertEqual(out, "true user-queue 2")
        table = self.kubectl("get", "jobs").stdout.splitlines()
        self.assertEqual(table[0].split(), ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"])
        row = next(line.split() for line in table if line.startswith("get-job "))
        self.assertEqual(row[:3], ["get-job", "Suspended", "0/2"])
        p = self.kubectl("get", "job", "nope", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('Error from server (NotFound): jobs.batch "nope" not found', p.stderr)

    def test_patch_and_label(self):
        path = self.write("patch.yaml", JOB.format(name="patch-job", extra_label=""))
        self.kubectl("apply", "-f", path)
        p = self.kubectl("patch", "job", "patch-job", "--type=merge", "-p",
                         '{"spec":{"suspend":false},"status":{"active":5}}')
        self.assertEqual(p.stdout.strip(), "job.batch/patch-job patched")
        job = self.get_json("job", "patch-job")
        self.assertFalse(job["spec"]["suspend"])
        self.assertEqual(job["metadata"]["generation"], 2)
        self.assertNotIn("active", job["status"])  # status is ignored on the main resource
        p = self.kubectl("patch", "job", "patch-job", "--type=merge", "-p",
                         '{"spec":{"suspend":false}}')
        self.assertEqual(p.stdout.strip(), "job.batch/patch-job patched (no change)")
        p = self.kubectl("patch", "job", "patch-job", "--type=json", "-p",
                         '[{"op":"add","path":"/metadata/labels/kueue.x-k8s.io~1managed",'
                         '"value":"true"}]')
        self.assertEqual(p.stdout.strip(), "job.batch/patch-job patched")
        self.assertEqual(self.get_json("job", "patch-job")["metadata"]["labels"][
            "kueue.x-k8s.io/managed"], "true")
        p = self.kubectl("patch", "job", "patch-job", "--subresource=status", "--type=merge",
                         "-p", '{"status":{"active":2}}')
        self.assertEqual(p.stdout.strip(), "job.batch/patch-job patched")
        self.assertEqual(self.get_json("job", "patch-job")["status"]["active"], 2)

        p = self.kubectl("label", "job", "patch-job", "team=a")
        self.assertEqual(p.stdout.strip(), "job.batch/patch-job labeled")
        p = self.kubectl("label", "job", "patch-job", "team=b", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("'team' already has a value (a), and --overwrite is false", p.stderr)
        self.kubectl("label", "job", "patch-job", "team=b", "--overwrite")
        out = self.kubectl("get", "jobs", "-l", "team=b", "-o", "name").stdout.split()
        self.assertEqual(out, ["job.batch/patch-job"])
        p = self.kubectl("label", "job", "patch-job", "team-")
        self.assertEqual(p.stdout.strip(), "job.batch/patch-job unlabeled")
        self.assertNotIn("team", self.get_json("job", "patch-job")["metadata"]["labels"])

    def test_label_selectors_on_pods(self):
        # `kubectl create namespace` sends protobuf, which this server answers with 415.
        p = self.kubectl("create", "namespace", "sel", check=False)
        self.assertIn("Error from server (UnsupportedMediaType)", p.stderr)
        p = self.kubectl("apply", "-f", "-", stdin="apiVersion: v1\nkind: Namespace\n"
                         "metadata:\n  name: sel\n")
        self.assertEqual(p.stdout.strip(), "namespace/sel created")
        ns = self.get_json("namespace", "sel")
        self.assertEqual(ns["metadata"]["labels"], {"kubernetes.io/metadata.name": "sel"})
        self.assertEqual(ns["status"]["phase"], "Active")
        manifests = "---\n".join(POD.format(name=n, app=a) for n, a in
                                 (("px1", "x"), ("px2", "x"), ("py", "y")))
        manifests += "---\n" + POD.format(name="pz", app="z").replace("  labels:\n    app: \"z\"\n",
                                                                      "")
        p = self.kubectl("-n", "sel", "apply", "-f", "-", stdin=manifests)
        self.assertEqual(p.stdout.split("\n")[0], "pod/px1 created")

        def names(*sel):
            return self.kubectl("-n", "sel", "get", "pods", "-o", "name", *sel).stdout.split()

        self.assertEqual(names("-l", "app=x"), ["pod/px1", "pod/px2"])
        self.assertEqual(names("-l", "app==y"), ["pod/py"])
        self.assertEqual(names("-l", "app!=x"), ["pod/py", "pod/pz"])
        self.assertEqual(names("-l", "app in (x,y)"), ["pod/px1", "pod/px2", "pod/py"])
        self.assertEqual(names("-l", "app notin (x)"), ["pod/py", "pod/pz"])
        self.assertEqual(names("-l", "app"), ["pod/px1", "pod/px2", "pod/py"])
        self.assertEqual(names("-l", "!app"), ["pod/pz"])
        self.assertEqual(names("--field-selector", "metadata.name=py"), ["pod/py"])
        self.assertEqual(names("-A", "-l", "app=y"), ["pod/py"])
        p = self.kubectl("-n", "sel", "get", "pods", "-l", "app=nothing")
        self.assertEqual(p.stdout, "")
        self.assertIn("No resources found in sel namespace.", p.stderr)
        table = self.kubectl("-n", "sel", "get", "pods", "-l", "app=y").stdout.splitlines()
        self.assertEqual(table[0].split(), ["NAME", "READY", "STATUS", "RESTARTS", "AGE"])
        self.assertEqual(table[1].split()[:4], ["py", "0/1", "Pending", "0"])
        p = self.kubectl("-n", "sel", "get", "pods", "--field-selector", "spec.bogus=1",
                         check=False)
        self.assertIn("field label not supported: spec.bogus", p.stderr)

    def test_delete_and_wait_for_delete(self):
        path = self.write("del.yaml", JOB.format(name="del-job", extra_label=""))
        self.kubectl("apply", "-f", path)
        p = self.kubectl("delete", "job", "del-job")
        self.assertEqual(p.stdout.strip(), 'job.batch "del-job" deleted')
        p = self.kubectl("get", "job", "del-job", check=False)
        self.assertIn('jobs.batch "del-job" not found', p.stderr)

        # A finalizer keeps the object (with deletionTimestamp) until it is removed.
        text = JOB.format(name="fin-job", extra_label="").replace(
            "  labels:", "  finalizers: [example.com/block]\n  labels:")
        self.kubectl("apply", "-f", self.write("fin.yaml", text))
        p = self.kubectl("delete", "job", "fin-job", "--wait=false")
        self.assertEqual(p.stdout.strip(), 'job.batch "fin-job" deleted')
        job = self.get_json("job", "fin-job")
        self.assertIn("deletionTimestamp", job["metadata"])
        self.assertEqual(job["metadata"]["deletionGracePeriodSeconds"], 0)
        cmd = [KUBECTL, "--kubeconfig", self.s.kubeconfig, "--cache-dir", self.cache,
               "wait", "--for=delete", "job/fin-job", "--timeout=20s"]
        waiter = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.0)
            self.assertIsNone(waiter.poll(), "wait returned while the finalizer was present")
            p = self.kubectl("patch", "job", "fin-job", "--type=json", "-p",
                             '[{"op":"remove","path":"/metadata/finalizers"}]')
            out, err = waiter.communicate(timeout=15)
        finally:
            if waiter.poll() is None:
                waiter.kill()
                waiter.wait()
        self.assertEqual(waiter.returncode, 0, err)
        self.assertEqual(out.strip(), "job.batch/fin-job condition met")
        p = self.kubectl("get", "job", "fin-job", check=False)
        self.assertIn('jobs.batch "fin-job" not found', p.stderr)

    def test_get_watch(self):
        path = self.write("watch.yaml", JOB.format(name="watch-job", extra_label=""))
        self.kubectl("apply", "-f", path)
        cmd = [KUBECTL, "--kubeconfig", self.s.kubeconfig, "--cache-dir", self.cache,
               "get", "jobs", "-w", "--field-selector", "metadata.name=watch-job"]
        proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            reader = LineReader(proc.stdout)
            self.assertEqual(reader.next().split(),
                             ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"])
            self.assertEqual(reader.next().split()[:3], ["watch-job", "Suspended", "0/2"])
            self.kubectl("patch", "job", "watch-job", "--type=merge", "-p",
                         '{"spec":{"suspend":false}}')
            self.assertEqual(reader.next().split()[:3], ["watch-job", "Running", "0/2"])
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        self.assertIn("watch=true", self.s.log())


if __name__ == "__main__":
    unittest.main()
