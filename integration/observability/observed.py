"""What the observability tests share: admitd as a real process with its metrics port, the
workloads that make its histograms and eviction counters appear, the metric names a PromQL
expression reads, and the expressions of the dashboards and the alerting rules.

The binaries come from the environment (set by CTest): ADMITD_BIN, ADMITCTL_BIN.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
ADMITD = os.environ.get("ADMITD_BIN", os.path.join(ROOT, "build/server/admitd"))
ADMITCTL = os.environ.get("ADMITCTL_BIN", os.path.join(ROOT, "build/clients/admitctl"))

DASHBOARDS = os.path.join(ROOT, "helm/admitd/dashboards")
RULES = os.path.join(ROOT, "helm/admitd/prometheus/admitd-rules.yaml")
RULES_TEST = os.path.join(ROOT, "helm/admitd/prometheus/admitd-rules.test.yaml")
COMPOSE = os.path.join(ROOT, "docker-compose.yaml")
COMPOSE_DIR = os.path.join(ROOT, "compose")
DEMO_QUEUES = os.path.join(COMPOSE_DIR, "demo-queues.yaml")
DEMO_LOAD = os.path.join(COMPOSE_DIR, "demo-load.sh")


def wait_until(fn, timeout, what, interval=0.1):
    """Polls fn() until it returns something truthy, and returns that; AssertionError after
    timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5, context=None):
    """The body of a GET, or None when the server does not answer 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as r:
            return r.read().decode() if r.status == 200 else None
    except OSError:
        return None


class Admitd:
    """admitd on loopback ports with a temporary data directory; ``tls`` is a directory holding
    tls.crt, tls.key and ca.crt (admitd then serves TLS on both ports and asks for client
    certificates, and admitctl presents admin.crt)."""

    def __init__(self, tmp, tls=None, extra=()):
        self.tmp = tmp
        self.address = "127.0.0.1:%d" % free_port()
        self.metrics_address = "127.0.0.1:%d" % free_port()
        args = [ADMITD, "--listen", self.address, "--data-dir", os.path.join(tmp, "data"),
                "--metrics-listen", self.metrics_address] + list(extra)
        self.client_tls = []
        if tls:
            args += ["--tls-cert-file", os.path.join(tls, "tls.crt"),
                     "--tls-private-key-file", os.path.join(tls, "tls.key"),
                     "--client-ca-file", os.path.join(tls, "ca.crt")]
            self.client_tls = ["--ca-file", os.path.join(tls, "ca.crt"),
                               "--cert-file", os.path.join(tls, "admin.crt"),
                               "--key-file", os.path.join(tls, "admin.key")]
        self.log_path = os.path.join(tmp, "admitd.log")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        wait_until(lambda: self.proc.poll() is not None or self.admitctl(
                       "get", "cq", check=False).returncode == 0,
                   timeout=20, what="admitd to serve")
        if self.proc.poll() is not None:
            raise AssertionError("admitd exited: %s" % self.log())

    def log(self):
        with open(self.log_path) as f:
            return f.read()[-4000:]

    def admitctl(self, *args, stdin=None, check=True):
        r = subprocess.run([ADMITCTL, "--server", self.address] + self.client_tls + list(args),
                           input=stdin, capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError("admitctl %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r

    def states(self, ns):
        """Workload name -> STATE column of `admitctl get workloads`."""
        out = self.admitctl("get", "workloads", "-n", ns).stdout
        return {f[1]: f[4] for f in (line.split() for line in out.splitlines()[1:]) if len(f) > 4}

    def scrape(self):
        text = http_get("http://%s/metrics" % self.metrics_address)
        if text is None:
            raise AssertionError("GET /metrics failed")
        return text

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def workload(name, queue, priority_class, pods, ns="demo"):
    """A Workload manifest of ``pods`` pods asking for 1 CPU and 1Gi each, the shape
    compose/demo-load.sh submits."""
    return """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: %s, name: %s}
spec:
  queueName: %s
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: %s}
  podSets:
  - name: main
    count: %d
    template:
      spec:
        containers:
        - name: main
          resources: {requests: {cpu: "1", memory: 1Gi}}
""" % (ns, name, queue, priority_class, pods)


def exported_names(text):
    """The metric families of a Prometheus text exposition (histogram series under their
    family's name)."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.sub(r"_(bucket|sum|count)$", "", re.split(r"[{ ]", line, 1)[0]))
    return names


def undocumented_metrics(text):
    """The metric families of a Prometheus text exposition that neither docs/observability.md
    nor docs/shim.md names."""
    docs = ""
    for doc in ("observability.md", "shim.md"):
        with open(os.path.join(ROOT, "docs", doc)) as f:
            docs += f.read()
    documented = set(re.findall(r"[a-z][a-z0-9_]*[a-z0-9]", docs))
    families = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    return sorted(n for n in families if n not in documented)


# PromQL words that look like metric names but are not.
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
             "unless", "bool", "offset", "inf", "nan"}


def metric_names(expr):
    """The metric names a PromQL expression (or a Grafana label_values() query) selects. Strings,
    label matchers, ranges, groupings and Grafana variables are cut first, so what is left are
    function names (followed by a parenthesis), keywords, numbers and metric names."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"'(?:[^'\\]|\\.)*'", "''", e)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\boffset\s+\S+", " ", e)
    e = re.sub(r"\$\{[^}]*\}|\$\w+", " ", e)
    m = re.match(r"\s*label_values\s*\((.*)\)\s*$", e, re.S)
    if m:  # label_values(metric, label) or label_values(label)
        parts = m.group(1).split(",")
        e = parts[0] if len(parts) > 1 else ""
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        following = e[m.end():].lstrip()
        if following.startswith("(") or word.lower() in _KEYWORDS:
            continue
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue  # the exponent or unit of a number, e.g. 1e3
        names.add(word)
    return names


def dashboards():
    """File name -> parsed dashboard, for every JSON file of helm/admitd/dashboards."""
    out = {}
    for name in sorted(os.listdir(DASHBOARDS)):
        if name.endswith(".json"):
            with open(os.path.join(DASHBOARDS, name)) as f:
                out[name] = json.load(f)
    return out


def all_panels(dashboard):
    """Every panel, including those nested in collapsed rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        for inner in panel.get("panels", []):
            yield inner


def dashboard_expressions(dashboard):
    """(where, expression) for every query of a dashboard: panel targets and query variables."""
    for panel in all_panels(dashboard):
        for target in panel.get("targets", []):
            if target.get("expr"):
                yield "panel %s (%s)" % (panel["id"], panel.get("title")), target["expr"]
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            yield "variable %s" % var["name"], query


def rule_expressions(path=RULES):
    import yaml  # Debian's python3-yaml
    with open(path) as f:
        doc = yaml.safe_load(f)
    for group in doc["groups"]:
        for rule in group["rules"]:
            yield "rule %s" % (rule.get("alert") or rule.get("record")), rule["expr"]


def compose():
    import yaml
    with open(COMPOSE) as f:
        return yaml.safe_load(f)


def make_compose_certificates(directory):
    """Runs the script of docker-compose.yaml's certs service in ``directory`` instead of
    /certs, so the tests use the certificates the compose stack uses. Compose's $$ is a $; chown
    is made a no-op (the tests need not run as root)."""
    script = compose()["services"]["certs"]["command"][0].replace("$$", "$")
    script = script.replace("cd /certs", 'cd "$CERTS_DIR"')
    fake_bin = tempfile.mkdtemp(prefix="bin-", dir=directory)
    with open(os.path.join(fake_bin, "chown"), "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(os.path.join(fake_bin, "chown"), 0o755)
    certs = os.path.join(directory, "certs")
    os.makedirs(certs)
    env = dict(os.environ, CERTS_DIR=certs, PATH=fake_bin + os.pathsep + os.environ["PATH"])
    subprocess.run(["sh", "-ec", script], env=env, check=True, capture_output=True)
    shutil.rmtree(fake_bin)
    return certs
