"""The observability files: the compose stack, the Prometheus configuration and alerting rules
(with promtool, from Debian's prometheus package), the Grafana dashboards, and that every metric
the dashboards and rules read is one a running admitd exports.

Run by CTest (integration/CMakeLists.txt), which sets ADMITD_BIN and ADMITCTL_BIN.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import observed  # noqa: E402
from observed import wait_until, workload  # noqa: E402

# Series Prometheus makes itself rather than scraping them.
PROMETHEUS_MADE = {"up", "scrape_duration_seconds", "scrape_samples_scraped",
                   "scrape_samples_post_metric_relabeling", "scrape_series_added", "ALERTS",
                   "ALERTS_FOR_STATE"}



def run(*args, cwd=None):
    r = subprocess.run(list(args), capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(args), r.returncode, r.stdout,
                                                         r.stderr))
    return r.stdout


class StaticFiles(unittest.TestCase):
    def test_the_compose_file_is_valid(self):
        if not shutil.which("docker-compose"):
            self.skipTest("docker-compose not installed (scripts/dev.sh installs it)")
        run("docker-compose", "-f", observed.COMPOSE, "config", "-q", cwd=observed.ROOT)

    def test_the_compose_stack_has_its_observability_services(self):
        services = observed.compose()["services"]
        for name in ("prometheus", "grafana", "jaeger", "demo-load"):
            self.assertIn(name, services)
        command = services["admitd"]["command"]
        self.assertEqual(command[command.index("--otlp-endpoint") + 1], "jaeger:4317")
        self.assertEqual(services["jaeger"]["environment"]["COLLECTOR_OTLP_ENABLED"], "true")
        # Every file the stack mounts from the repository exists.
        for service in services.values():
            for volume in service.get("volumes", []):
                source = volume.split(":")[0]
                if source.startswith("./"):
                    self.assertTrue(os.path.exists(os.path.join(observed.ROOT, source)), volume)

    def test_promtool_accepts_the_compose_prometheus_configuration(self):
        # promtool check config also opens the rule files and the certificate files the
        # configuration names, at their paths inside the container (/etc/prometheus/rules,
        # /certs). It checks a copy that points at the repository's rule file and at
        # certificates made by the compose certs service's own script.
        with tempfile.TemporaryDirectory() as tmp:
            certs = observed.make_compose_certificates(tmp)
            with open(os.path.join(observed.COMPOSE_DIR, "prometheus.yml")) as f:
                text = f.read()
            self.assertIn("/etc/prometheus/rules/admitd-rules.yaml", text)
            self.assertIn("/certs/", text)
            text = text.replace("/etc/prometheus/rules/admitd-rules.yaml", observed.RULES)
            text = text.replace("/certs/", certs + "/")
            path = os.path.join(tmp, "prometheus.yml")
            with open(path, "w") as f:
                f.write(text)
            out = run("promtool", "check", "config", path)
            self.assertIn("SUCCESS", out)
            self.assertIn("5 rules found", out)

    def test_promtool_accepts_the_rules(self):
        run("promtool", "check", "rules", observed.RULES)

    def test_promtool_rule_unit_tests_pass(self):
        run("promtool", "test", "rules", os.path.basename(observed.RULES_TEST),
            cwd=os.path.dirname(observed.RULES_TEST))

    def test_every_rule_has_severity_summary_and_description(self):
        import yaml
        with open(observed.RULES) as f:
            doc = yaml.safe_load(f)
        alerts = [r for g in doc["groups"] for r in g["rules"]]
        self.assertEqual({r["alert"] for r in alerts},
                         {"AdmitdDown", "AdmitdCommitsFailing", "AdmitdStoreFsyncSlow",
                          "AdmitdPendingWithoutAdmissions", "AdmitdWatchStreamsCut"})
        for rule in alerts:
            self.assertIn(rule["labels"]["severity"], ("critical", "warning"), rule["alert"])
            self.assertTrue(rule["annotations"]["summary"], rule["alert"])
            self.assertTrue(rule["annotations"]["description"], rule["alert"])

    def test_dashboards_are_well_formed(self):
        boards = observed.dashboards()
        self.assertEqual(sorted(boards), ["admitd-internals.json", "admitd-overview.json"])
        uids = set()
        for name, board in boards.items():
            with self.subTest(dashboard=name):
                self.assertEqual(board["uid"], name[:-len(".json")])  # stable, from the file
                uids.add(board["uid"])
                self.assertGreaterEqual(board["schemaVersion"], 36)
                variables = {v["name"]: v for v in board["templating"]["list"]}
                self.assertEqual(variables["datasource"]["type"], "datasource")
                self.assertEqual(variables["datasource"]["query"], "prometheus")
                ids = [p["id"] for p in observed.all_panels(board)]
                self.assertEqual(len(ids), len(set(ids)), "panel ids repeat: %s" % ids)
                for panel in observed.all_panels(board):
                    self.assertIn("gridPos", panel)
                    if panel["type"] == "row":
                        continue
                    self.assertEqual(panel["datasource"]["uid"], "${datasource}", panel["title"])
                    self.assertTrue(panel["targets"], panel["title"])
                    for target in panel["targets"]:
                        self.assertEqual(target["datasource"]["uid"], "${datasource}")
                        self.assertTrue(target["expr"].strip(), panel["title"])
                for var in board["templating"]["list"]:
                    if var["type"] == "query":
                        self.assertEqual(var["datasource"]["uid"], "${datasource}")
        self.assertEqual(len(uids), len(boards))


class NamesAgainstALiveAdmitd(unittest.TestCase):
    """The dashboards and rules read only metrics a running admitd exports: admitd runs the
    compose demo's queues (two ClusterQueues in a cohort, with borrowing and lending limits)
    through a borrow, a reclaim by preemption, a requeue and finishes, so its histograms and its
    eviction and preemption counters exist, and is scraped."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="admitd-observability-")
        extra = []
        help_text = subprocess.run([observed.ADMITD, "--help"], capture_output=True,
                                   text=True).stdout
        if "--otlp-endpoint" in help_text:
            # Nothing listens there: the span counters still appear (spans dropped).
            extra = ["--otlp-endpoint", "127.0.0.1:%d" % observed.free_port()]
        cls.admitd = observed.Admitd(cls.tmp, extra=extra)
        try:
            cls.text = cls.run_scenario(cls.admitd)
        except BaseException:
            cls.admitd.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.admitd.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @staticmethod
    def run_scenario(a):
        T = 20
        a.admitctl("apply", "-f", observed.DEMO_QUEUES)
        # team-a asks for 6 CPUs (4 nominal): it borrows 2 of team-b's.
        a.admitctl("apply", "-f", "-", stdin="".join(
            workload("low-%d" % i, "team-a", "demo-low", 2) for i in (1, 2, 3)))
        wait_until(lambda: list(a.states("demo").values()).count("Admitted") == 3, T,
                   "team-a's three workloads to be admitted")
        # team-b reclaims its quota: a borrowing workload is preempted, stopped, requeued.
        a.admitctl("apply", "-f", "-", stdin=workload("high", "team-b", "demo-high", 4))
        evicted = wait_until(lambda: [n for n, s in a.states("demo").items() if s == "Evicted"],
                             T, "a team-a workload to be evicted")
        for name in evicted:
            a.admitctl("release", name, "-n", "demo", "--stopped")
        wait_until(lambda: a.states("demo").get("high") == "Admitted", T,
                   "team-b's workload to be admitted")
        a.admitctl("release", "high", "-n", "demo", "--finished")
        wait_until(lambda: list(a.states("demo").values()).count("Admitted") == 3, T,
                   "the preempted workload to be admitted again")
        a.admitctl("release", "low-1", "-n", "demo", "--finished")
        return wait_until(lambda: (lambda t: t if re.search(
            r"^kueue_finished_workloads_total\{[^}]*team-a", t, re.M) else None)(a.scrape()),
            T, "the finished counter in a scrape")

    def assert_exported(self, uses):
        exported = observed.exported_names(self.text)
        missing = []
        for where, name in uses:
            family = re.sub(r"_(bucket|sum|count)$", "", name)
            if name in exported or family in exported or name in PROMETHEUS_MADE:
                continue
            missing.append("%s: %s" % (where, name))
        self.assertEqual(missing, [], "not exported by admitd:\n" + "\n".join(missing))

    def test_the_scenario_made_the_histograms_and_eviction_counters(self):
        exported = observed.exported_names(self.text)
        for name in ("kueue_admission_wait_time_seconds", "kueue_quota_reserved_wait_time_seconds",
                     "kueue_evicted_workloads_total", "kueue_preempted_workloads_total",
                     "kueue_cluster_queue_borrowing_limit", "kueue_cluster_queue_lending_limit"):
            self.assertIn(name, exported)
        self.assertRegex(self.text, r'kueue_preempted_workloads_total\{[^}]*'
                                    r'reason="InCohortReclamation"')

    def test_every_exported_metric_is_documented(self):
        self.assertEqual(observed.undocumented_metrics(self.text), [],
                         "exported by admitd but in neither docs/observability.md nor docs/shim.md")

    def test_every_dashboard_metric_is_exported(self):
        uses = []
        for name, board in observed.dashboards().items():
            for where, expr in observed.dashboard_expressions(board):
                names = observed.metric_names(expr)
                self.assertTrue(names, "%s %s: no metric found in %r" % (name, where, expr))
                uses += [("%s %s" % (name, where), n) for n in names]
        self.assert_exported(uses)

    def test_every_rule_metric_is_exported(self):
        uses = []
        for where, expr in observed.rule_expressions():
            names = observed.metric_names(expr)
            self.assertTrue(names, "%s: no metric found in %r" % (where, expr))
            uses += [(where, n) for n in names]
        self.assert_exported(uses)


class MetricNamesOfExpressions(unittest.TestCase):
    """The extraction the checks above rely on."""

    def test_names(self):
        cases = {
            'histogram_quantile(0.9, sum by (le, x) (rate(a_bucket{l="{x}"}[5m]))) > 1e3': {
                "a_bucket"},
            "b > 0 unless c offset 5m": {"b", "c"},
            "sum(rate(d_sum[$__rate_interval])) / sum(rate(d_count[${x}]))": {"d_sum", "d_count"},
            "label_values(e{instance=~\"$instance\"}, cluster_queue)": {"e"},
            "label_values(instance)": set(),
            'up{job=~"admitd.*"} == 0': {"up"},
        }
        for expr, want in cases.items():
            self.assertEqual(observed.metric_names(expr), want, expr)


if __name__ == "__main__":
    unittest.main()
