"""Debian's real Prometheus scraping a real admitd under load, the way the compose stack does:
certificates from docker-compose.yaml's certs script, admitd serving TLS and asking for client
certificates, the scrape job of compose/prometheus.yml (HTTPS, the CA, Prometheus' client
certificate, server name admitd) pointed at loopback, admitd's alerting rules loaded, and
compose/demo-load.sh submitting, preempting and finishing workloads. Prometheus' HTTP API must
then answer the dashboards' queries with numbers.

Run by CTest (integration/CMakeLists.txt), which sets ADMITD_BIN and ADMITCTL_BIN.
"""

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import observed  # noqa: E402
from observed import http_get, wait_until  # noqa: E402

PROMETHEUS = "/usr/bin/prometheus"
T = 40  # seconds for each condition; the whole test takes about 20 on a loaded 2-core machine


def admitd_job_config(metrics_address, certs):
    """compose/prometheus.yml with a 1 s interval, its admitd job aimed at ``metrics_address``
    and the certificates and rule file at their places on this machine."""
    import yaml
    with open(os.path.join(observed.COMPOSE_DIR, "prometheus.yml")) as f:
        config = yaml.safe_load(f)
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [observed.RULES]
    jobs = [j for j in config["scrape_configs"] if j["job_name"] == "admitd"]
    assert len(jobs) == 1, "compose/prometheus.yml has no admitd job"
    job = jobs[0]
    job["static_configs"] = [{"targets": [metrics_address]}]
    for key in ("ca_file", "cert_file", "key_file"):
        job["tls_config"][key] = os.path.join(certs, os.path.basename(job["tls_config"][key]))
    config["scrape_configs"] = [job]
    return config


@unittest.skipUnless(os.access(PROMETHEUS, os.X_OK), "Debian's prometheus is not installed")
class RealPrometheus(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="admitd-prometheus-")
        self.procs = []
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        certs = observed.make_compose_certificates(self.tmp)
        self.admitd = observed.Admitd(self.tmp, tls=certs)
        self.addCleanup(self.admitd.stop)

        import yaml
        config_path = os.path.join(self.tmp, "prometheus.yml")
        with open(config_path, "w") as f:
            yaml.safe_dump(admitd_job_config(self.admitd.metrics_address, certs), f)
        self.api = "http://127.0.0.1:%d" % observed.free_port()
        self.prometheus_log = os.path.join(self.tmp, "prometheus.log")
        self.start([PROMETHEUS, "--config.file=" + config_path,
                    "--storage.tsdb.path=" + os.path.join(self.tmp, "tsdb"),
                    "--web.listen-address=" + self.api[len("http://"):]],
                   self.prometheus_log)
        wait_until(lambda: http_get(self.api + "/-/ready") is not None, T,
                   "Prometheus to be ready\n" + self.tail(self.prometheus_log))

        # The compose stack's load, quicker: admitctl from the build, the admin's certificate.
        bin_dir = os.path.dirname(os.path.abspath(observed.ADMITCTL))
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"],
                   ADMITD_SERVER=self.admitd.address,
                   ADMITD_CA_FILE=os.path.join(certs, "ca.crt"),
                   ADMITD_CERT_FILE=os.path.join(certs, "admin.crt"),
                   ADMITD_KEY_FILE=os.path.join(certs, "admin.key"),
                   DEMO_LOAD_PAUSE="0.3")
        self.load_log = os.path.join(self.tmp, "demo-load.log")
        self.start(["sh", observed.DEMO_LOAD], self.load_log, env=env)

    def start(self, args, log_path, env=None):
        log = open(log_path, "w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.procs.append(proc)

        def stop():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()
        self.addCleanup(stop)
        return proc

    @staticmethod
    def tail(path):
        with open(path) as f:
            return f.read()[-3000:]

    def logs(self):
        return "\n--- prometheus\n%s\n--- demo-load\n%s\n--- admitd\n%s" % (
            self.tail(self.prometheus_log), self.tail(self.load_log), self.admitd.log())

    def api_get(self, path, **params):
        body = http_get("%s%s?%s" % (self.api, path, urllib.parse.urlencode(params)))
        if body is None:
            return None
        doc = json.loads(body)
        return doc["data"] if doc.get("status") == "success" else None

    def query(self, expr):
        """The values of an instant query's vector, or None when it has none."""
        data = self.api_get("/api/v1/query", query=expr)
        if not data or data["resultType"] != "vector" or not data["result"]:
            return None
        return [float(r["value"][1]) for r in data["result"]]

    def wait(self, fn, what):
        try:
            return wait_until(fn, T, what, interval=0.5)
        except AssertionError as e:
            raise AssertionError("%s%s" % (e, self.logs())) from None

    def test_prometheus_scrapes_admitd_over_tls_and_answers_the_dashboards_queries(self):
        for proc in self.procs:
            self.assertIsNone(proc.poll(), "a process exited early" + self.logs())
        self.wait(lambda: self.query('up{job="admitd"} == 1'),
                  "Prometheus to scrape admitd over HTTPS")
        pending = self.wait(
            lambda: self.query('kueue_pending_workloads{cluster_queue="team-a",status="active"}'),
            "kueue_pending_workloads of team-a")
        self.assertEqual(len(pending), 1)
        self.assertGreaterEqual(pending[0], 0)

        def quantile():
            values = self.query("histogram_quantile(0.9, sum by (le) "
                                "(rate(kueue_admission_wait_time_seconds_bucket[30s])))")
            return values if values and not math.isnan(values[0]) else None
        p90 = self.wait(quantile, "a p90 admission wait time (admissions in the last 30 s)")
        self.assertGreaterEqual(p90[0], 0)
        self.wait(lambda: self.query("sum(increase(kueue_preempted_workloads_total[1m])) > 0"),
                  "preemptions under load")

        # Every rule of admitd-rules.yaml loaded and evaluates without error.
        def rules():
            data = self.api_get("/api/v1/rules")
            rules = [r for g in (data or {}).get("groups", []) for r in g["rules"]]
            # Prometheus' zero time (0001-01-01...) until a rule was first evaluated.
            evaluated = [r for r in rules
                         if not r.get("lastEvaluation", "0001").startswith("0001")]
            return rules if rules and len(evaluated) == len(rules) else None
        rules = self.wait(rules, "the alerting rules to be evaluated")
        self.assertEqual(len(rules), 5)
        for rule in rules:
            self.assertEqual(rule["health"], "ok", rule)
        # admitd is up, its store commits: neither AdmitdDown nor AdmitdCommitsFailing.
        firing = {r["name"] for r in rules if r["state"] != "inactive"}
        self.assertFalse(firing & {"AdmitdDown", "AdmitdCommitsFailing"}, firing)


if __name__ == "__main__":
    unittest.main()
