"""admitd, the test Kubernetes API server and admitd-shim as real processes, for end-to-end tests.

``Stack`` starts the API server (integration/kube/apiserver.py, with its Job controller,
scheduler and kubelet), admitd on a fixed free port with a data directory (so it can be killed
and restarted), and any number of shim replicas. The binaries come from the environment (set by
CTest): ADMITD_BIN, ADMITCTL_BIN, ADMITD_SHIM_BIN.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "kube"))
import harness  # noqa: E402  (integration/kube)
sys.path.insert(0, os.path.join(HERE, "..", "observability"))
from observed import undocumented_metrics  # noqa: E402,F401  (for the tests)

wait_until = harness.wait_until


def wait_with_logs(stack, fn, what, timeout, interval=0.1):
    """wait_until; on a timeout the message carries the tail of every process's log."""
    try:
        return wait_until(fn, timeout=timeout, interval=interval, what=what)
    except AssertionError as e:
        raise AssertionError("%s\n%s" % (e, stack.dump_logs())) from None

ADMITD = os.environ.get("ADMITD_BIN", "build/server/admitd")
ADMITCTL = os.environ.get("ADMITCTL_BIN", "build/clients/admitctl")
SHIM = os.environ.get("ADMITD_SHIM_BIN", "build/clients/shim/admitd-shim")

SHIM_NAMESPACE = "admitd-system"
# The kinds the shim can manage (batch/v1 Jobs always; the others are start_shim_with_webhook's
# switches), with the --integrations name, API group, version, plural and singular (Kueue's webhook names).
KINDS = {
    "jobs": ("batch/job", "batch", "v1", "jobs", "job"),
    "pods": ("pod", "", "v1", "pods", "pod"),
    "rayclusters": ("ray.io/raycluster", "ray.io", "v1", "rayclusters", "raycluster"),
    "rayjobs": ("ray.io/rayjob", "ray.io", "v1", "rayjobs", "rayjob"),
    "jobsets": ("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "v1alpha2", "jobsets", "jobset"),
    "pytorchjobs": ("kubeflow.org/pytorchjob", "kubeflow.org", "v1", "pytorchjobs", "pytorchjob"),
    "deployments": ("deployment", "apps", "v1", "deployments", "deployment"),
    "statefulsets": ("statefulset", "apps", "v1", "statefulsets", "statefulset"),
}
# Kinds whose pods are admitted as pods: enabling one registers the pod webhooks too.
ADMITTED_AS_PODS = ("deployments", "statefulsets")


# The policy of a secure stack: admin may do everything; each shim acts on its cluster.
SECURE_POLICY = """apiVersion: admitd.io/v1
kind: AuthorizationPolicy
bindings:
- {role: admin, subjects: [{kind: User, name: admin}]}
- {role: shim, clusters: [c1], subjects: [{kind: User, name: shim-c1}]}
- {role: shim, clusters: [c2], subjects: [{kind: User, name: shim-c2}]}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Shim:
    """One admitd-shim replica."""

    def __init__(self, stack, identity, extra, cluster="c1", api=None, admitd=None):
        self.identity = identity
        self.log_path = os.path.join(stack.tmp, "shim-%s.log" % identity)
        self._log = open(self.log_path, "w")
        tls = []
        if stack.certs:
            tls = ["--admitd-ca-file", os.path.join(stack.certs, "ca.crt"),
                   "--admitd-cert-file", os.path.join(stack.certs, "shim-%s.crt" % cluster),
                   "--admitd-key-file", os.path.join(stack.certs, "shim-%s.key" % cluster)]
        args = [SHIM, "--admitd", admitd or stack.admitd_address, "--cluster", cluster] + tls + [
                "--kubeconfig", (api or stack.api).kubeconfig,
                "--leader-election-namespace", SHIM_NAMESPACE, "--identity", identity,
                "--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "0.5s",
                "--health-listen", "127.0.0.1:0", "--log-level", "debug"] + list(extra)
        if not any(a.startswith("--webhook-listen") for a in extra):
            args.append("--webhook-listen=")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        m = wait_until(lambda: re.search(r"health=[0-9.]+:(\d+)", self.log()), timeout=10,
                       what="shim %s to start" % identity)
        self.health = "http://127.0.0.1:%s" % m.group(1)

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def get(self, path):
        """(HTTP status, body); (0, reason) when the shim does not answer."""
        try:
            with urllib.request.urlopen(self.health + path, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except (urllib.error.URLError, OSError) as e:
            return 0, str(e)

    def metric(self, name):
        _, text = self.get("/metrics")
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        return float(m.group(1)) if m else None

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)
        self._log.close()


class Stack:
    def __init__(self, nodes=("n1:pool=a:cpu=16", "n2:pool=b:cpu=16"), api_args=(),
                 admitd_args=(), secure=False, metrics=False, config=None):
        """``api_args`` go to the API server after the defaults (a later flag wins);
        ``admitd_args`` to admitd, on every start (e.g. ``("--feature-gates", "Name=true")``).
        ``config``: the text of admitd's config file (YAML), given with --config.
        ``metrics``: admitd serves /metrics on ``admitd_metrics``.
        ``secure``: admitd serves TLS, verifies client certificates and enforces a policy
        (SECURE_POLICY): admitctl presents the admin's certificate, each shim its cluster's."""
        self.tmp = tempfile.mkdtemp(prefix="admitd-e2e-")
        if config is not None:
            path = os.path.join(self.tmp, "admitd.yaml")
            with open(path, "w") as f:
                f.write(config)
            admitd_args = list(admitd_args) + ["--config", path]
        self.certs = self.make_certificates() if secure else None
        self.client_tls = []
        if self.certs:
            c = self.certs
            admitd_args = list(admitd_args) + [
                "--tls-cert-file", os.path.join(c, "tls.crt"),
                "--tls-private-key-file", os.path.join(c, "tls.key"),
                "--client-ca-file", os.path.join(c, "ca.crt"),
                "--authorization-policy", os.path.join(c, "policy.yaml")]
            self.client_tls = ["--ca-file", os.path.join(c, "ca.crt"),
                               "--cert-file", os.path.join(c, "admin.crt"),
                               "--key-file", os.path.join(c, "admin.key")]
        args = ["--controllers", "job,scheduler,kubelet", "--namespace", SHIM_NAMESPACE,
                "--namespace", "kube-system", "--kubelet-start-delay", "0.1",
                "--kubelet-grace-cap", "0.3", "--bookmark-interval", "1"]
        for n in nodes:
            args += ["--node", n]
        self.api_args = args + list(api_args)
        self.api = harness.ApiServerProcess(*self.api_args, python="/usr/bin/python3")
        self.api.start()
        self.more_apis = []  # the API servers of more clusters (start_cluster)
        self.more_logs = []  # (name, path) of more processes' logs, for dump_logs
        self.admitd_port = free_port()
        self.admitd_address = "127.0.0.1:%d" % self.admitd_port
        self.admitd = None
        self.admitd_args = list(admitd_args)
        self.admitd_metrics = None  # HOST:PORT of admitd's /metrics, with metrics=True
        if metrics:
            self.admitd_metrics = "127.0.0.1:%d" % free_port()
            self.admitd_args += ["--metrics-listen", self.admitd_metrics]
        self.admitd_log = open(os.path.join(self.tmp, "admitd.log"), "a")
        self.start_admitd()
        self.shims = []

    # --- admitd ---------------------------------------------------------------------------
    def start_admitd(self):
        self.admitd = subprocess.Popen(
            [ADMITD, "--listen", self.admitd_address, "--data-dir", os.path.join(self.tmp, "data")]
            + self.admitd_args,
            stdout=self.admitd_log, stderr=subprocess.STDOUT)
        wait_until(lambda: subprocess.run([ADMITCTL, "--server", self.admitd_address]
                                          + self.client_tls + ["get", "cq"],
                                          capture_output=True).returncode == 0,
                   timeout=20, interval=0.1, what="admitd to serve")

    def kill_admitd(self):
        self.admitd.send_signal(signal.SIGKILL)
        self.admitd.wait(10)

    def admitctl(self, *args, check=True):
        r = subprocess.run([ADMITCTL, "--server", self.admitd_address] + self.client_tls
                           + list(args),
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError("admitctl %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout

    def apply(self, yaml_text):
        path = os.path.join(self.tmp, "apply-%d.yaml" % time.monotonic_ns())
        with open(path, "w") as f:
            f.write(yaml_text)
        return self.admitctl("apply", "-f", path)

    def workloads(self, ns):
        out = self.admitctl("get", "workloads", "-n", ns, "-o", "json").strip()
        if not out:
            return []
        # One JSON document per workload, one after the other.
        docs, dec, i = [], json.JSONDecoder(), 0
        while i < len(out):
            doc, i = dec.raw_decode(out, i)
            docs.append(doc)
            while i < len(out) and out[i].isspace():
                i += 1
        return docs

    def cq_usage(self, cq, flavor, resource="cpu"):
        cq_doc = json.loads(self.admitctl("get", "cq", cq, "-o", "json"))["clusterQueue"]
        for f in cq_doc.get("status", {}).get("flavorsUsage", []):
            if f["name"] == flavor:
                for r in f["resources"]:
                    if r["name"] == resource:
                        return r.get("total", "0")
        return "0"

    # --- shims ----------------------------------------------------------------------------
    def start_shim(self, identity="shim-0", extra=(), cluster="c1", api=None, admitd=None):
        """A shim replica of ``cluster`` on ``api`` (an API server of start_cluster; the
        stack's first one by default), talking to ``admitd`` (an address; the stack's admitd
        by default)."""
        shim = Shim(self, identity, extra, cluster, api, admitd)
        self.shims.append(shim)
        return shim

    def start_cluster(self):
        """The API server of one more cluster (the same controllers and nodes) sharing admitd;
        ``Stack.kube(..., api=it)`` talks to it."""
        api = harness.ApiServerProcess(*self.api_args, python="/usr/bin/python3")
        api.start()
        self.more_apis.append(api)
        return api

    # --- Kubernetes -----------------------------------------------------------------------
    def kube(self, method, path, body=None, content_type="application/json", api=None):
        return (api or self.api).request(method, path, body, content_type)

    def create_job(self, job):
        ns = job["metadata"].get("namespace", "default")
        code, body = self.kube("POST", "/apis/batch/v1/namespaces/%s/jobs" % ns, job)
        assert code == 201, (code, body)
        return body

    def job(self, ns, name):
        code, body = self.kube("GET", "/apis/batch/v1/namespaces/%s/jobs/%s" % (ns, name))
        assert code == 200, (code, body)
        return body

    def patch_job(self, ns, name, patch):
        code, body = self.kube("PATCH", "/apis/batch/v1/namespaces/%s/jobs/%s" % (ns, name),
                               patch, "application/merge-patch+json")
        assert code == 200, (code, body)
        return body

    def pods(self, ns, job_name):
        code, body = self.kube("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" %
                               (ns, "batch.kubernetes.io/job-name%3D" + job_name))
        assert code == 200, (code, body)
        return body["items"]

    def events(self, ns, name):
        code, body = self.kube("GET", "/api/v1/namespaces/%s/events?fieldSelector=%s" %
                               (ns, "involvedObject.name%3D" + name))
        assert code == 200, (code, body)
        return body["items"]

    def create_namespace(self, ns, labels=None, api=None):
        meta = {"name": ns}
        if labels:
            meta["labels"] = labels
        code, body = self.kube("POST", "/api/v1/namespaces", {"metadata": meta}, api=api)
        assert code in (201, 409), (code, body)

    def make_certificates(self):
        """A CA, admitd's certificate (127.0.0.1), client certificates for admin and for the
        shims of clusters c1 and c2, and SECURE_POLICY, in a new directory."""
        d = tempfile.mkdtemp(prefix="pki-", dir=self.tmp)

        def run(*args):
            subprocess.run(["openssl"] + list(args), check=True, capture_output=True, cwd=d)

        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-days", "1", "-subj", "/CN=e2e-ca", "-keyout", "ca.key", "-out", "ca.crt")
        for name, cn, ext in (("tls", "admitd", "subjectAltName=IP:127.0.0.1\n"
                                               "extendedKeyUsage=serverAuth"),
                              ("admin", "admin", "extendedKeyUsage=clientAuth"),
                              ("shim-c1", "shim-c1", "extendedKeyUsage=clientAuth"),
                              ("shim-c2", "shim-c2", "extendedKeyUsage=clientAuth")):
            run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-subj", "/CN=" + cn, "-keyout", name + ".key", "-out", name + ".csr")
            with open(os.path.join(d, name + ".ext"), "w") as f:
                f.write(ext + "\n")
            run("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "1", "-extfile", name + ".ext", "-out", name + ".crt")
        with open(os.path.join(d, "policy.yaml"), "w") as f:
            f.write(SECURE_POLICY)
        return d

    def webhook_certificate(self):
        """A self-signed certificate for 127.0.0.1 in a new directory: (dir, PEM bytes)."""
        cert_dir = tempfile.mkdtemp(prefix="certs-", dir=self.tmp)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-keyout", os.path.join(cert_dir, "tls.key"),
                        "-out", os.path.join(cert_dir, "tls.crt"), "-subj", "/CN=admitd-shim",
                        "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True)
        with open(os.path.join(cert_dir, "tls.crt"), "rb") as f:
            return cert_dir, f.read()

    def register_webhooks(self, port, ca_pem, kinds=(), failure_policy="Fail"):
        """Kueue's webhook configurations, pointing at https://127.0.0.1:<port>: mjob/vjob, and
        m<singular>/v<singular> for each of ``kinds`` (KINDS' keys: pods, rayclusters, ...)."""
        import base64

        def hook(prefix, kind, operations):
            _, group, version, plural, singular = KINDS[kind]
            path = "/%s-%s-%s-%s" % ("mutate" if prefix == "m" else "validate",
                                     group.replace(".", "-"), version, singular)
            return {"name": "%s%s.kb.io" % (prefix, singular),
                    "clientConfig": {"url": "https://127.0.0.1:%d%s" % (port, path),
                                     "caBundle": base64.b64encode(ca_pem).decode()},
                    "rules": [{"apiGroups": [group], "apiVersions": [version],
                               "operations": operations, "resources": [plural]}],
                    "failurePolicy": failure_policy, "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "namespaceSelector": {"matchExpressions": [{
                        "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                        "values": ["kube-system", SHIM_NAMESPACE]}]}}
        enabled = ["jobs"] + list(kinds)
        if "pods" not in enabled and any(k in ADMITTED_AS_PODS for k in enabled):
            enabled.append("pods")
        # Kueue's Deployment and StatefulSet defaulting runs on updates too.
        mutating = [hook("m", k, ["CREATE", "UPDATE"] if k in ADMITTED_AS_PODS else ["CREATE"])
                    for k in enabled]
        validating = [hook("v", k, ["CREATE", "UPDATE"]) for k in enabled]
        for kind, plural, hooks in (
                ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", mutating),
                ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", validating)):
            code, resp = self.kube("POST", "/apis/admissionregistration.k8s.io/v1/" + plural,
                                   {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                                    "metadata": {"name": "admitd-shim-" + plural[:1]},
                                    "webhooks": hooks})
            assert code == 201, (code, resp)

    def start_shim_with_webhook(self, identity="shim-0", extra=(), **kinds):
        """A shim serving the webhook on a free port, and the configurations registered; each
        of KINDS named true (``pods=True``, ``rayjobs=True``, ...) enabled too."""
        unknown = set(kinds) - set(KINDS)
        assert not unknown, "unknown kinds %s" % sorted(unknown)
        enabled = [k for k in KINDS if k != "jobs" and kinds.get(k)]
        cert_dir, ca = self.webhook_certificate()
        port = free_port()
        args = ["--webhook-listen", "127.0.0.1:%d" % port, "--webhook-cert-dir", cert_dir]
        if enabled:
            args.append("--integrations=" + ",".join(
                ["batch/job"] + [KINDS[k][0] for k in enabled]))
        shim = self.start_shim(identity, args + list(extra))
        shim.webhook_args = args  # a replacement replica serves the same address and certificate
        self.register_webhooks(port, ca, kinds=enabled)
        return shim

    def stop(self):
        for s in self.shims:
            try:
                s.kill(signal.SIGTERM)
            except Exception:  # noqa: BLE001 - best effort on teardown
                pass
        if self.admitd and self.admitd.poll() is None:
            self.admitd.terminate()
            try:
                self.admitd.wait(10)
            except subprocess.TimeoutExpired:  # a hung server must not outlive the test
                sys.stderr.write("admitd did not stop on SIGTERM within 10 s: killed\n")
                self.admitd.kill()
                self.admitd.wait(10)
        self.admitd_log.close()
        for api in [self.api] + self.more_apis:
            api.stop()
        if not os.environ.get("KEEP_E2E_TMP"):
            import shutil
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            sys.stderr.write("kept %s\n" % self.tmp)

    def dump_logs(self):
        """Everything the processes said, for a failing test's message."""
        out = []
        for s in self.shims:
            out.append("--- shim %s ---\n%s" % (s.identity, s.log()[-6000:]))
        with open(os.path.join(self.tmp, "admitd.log")) as f:
            out.append("--- admitd ---\n" + f.read()[-3000:])
        for name, path in self.more_logs:
            with open(path) as f:
                out.append("--- %s ---\n%s" % (name, f.read()[-3000:]))
        return "\n".join(out)


# WorkloadPriorityClasses "high" (1000) and "low" (10), as admitctl manifests.
PRIORITY_CLASSES = """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: low
value: 10
"""


def queues(ns, cq, quota, flavor="pool-a", pool="a", preemption=None, selector="{}",
           more_namespaces=()):
    """ResourceFlavor, ClusterQueue and LocalQueue "lq" in ``ns`` (and in each of
    ``more_namespaces``), as admitctl manifests; ``selector`` is the namespaceSelector (YAML)."""
    pre = ""
    if preemption:
        pre = "  preemption:\n    withinClusterQueue: %s\n" % preemption
    return """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: %(flavor)s
spec:
  nodeLabels:
    pool: %(pool)s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: %(cq)s
spec:
  namespaceSelector: %(selector)s
%(pre)s  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: %(flavor)s
      resources:
      - name: cpu
        nominalQuota: %(quota)s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: %(ns)s
  name: lq
spec:
  clusterQueue: %(cq)s
""" % dict(flavor=flavor, pool=pool, cq=cq, quota=quota, ns=ns, pre=pre, selector=selector) + "".join(
        """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: %s
  name: lq
spec:
  clusterQueue: %s
""" % (other, cq) for other in more_namespaces)


def job(ns, name, parallelism=1, completions=None, cpu="1", runtime=None, queue="lq",
        priority_class=None, elastic=False, suspend=True, labels=None):
    """A batch/v1 Job as a user writes it (suspended, as the shim's webhook would make it)."""
    meta_labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    if priority_class:
        meta_labels["kueue.x-k8s.io/priority-class"] = priority_class
    meta_labels.update(labels or {})
    annotations = {}
    pod_annotations = {}
    if runtime is not None:
        pod_annotations["fixture.admitd.io/runtime-seconds"] = str(runtime)
    spec = {"parallelism": parallelism, "suspend": suspend,
            "template": {"metadata": {"annotations": pod_annotations},
                         "spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "c", "image": "busybox",
                                                  "resources": {"requests": {"cpu": cpu}}}]}}}
    if completions is not None:
        spec["completions"] = completions
    if elastic:
        annotations["kueue.x-k8s.io/elastic-job"] = "true"
        spec["template"]["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/elastic-job"}]
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": meta_labels,
                         "annotations": annotations},
            "spec": spec}


def condition(obj, ctype):
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("type") == ctype:
            return c
    return None


def is_true(obj, ctype):
    c = condition(obj, ctype)
    return c is not None and c.get("status") == "True"
