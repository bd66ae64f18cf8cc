"""End to end: traces of a Job's life from admitd-shim and admitd, received over OTLP/gRPC.

The stack's admitd and shim export to a collector in this process (Debian's python3-grpcio,
OTLP decoded with Python classes protoc makes from protos/otlp). A Job created in the test
cluster must leave one trace in the shim, rooted at a span whose ids derive from the Job's UID,
with a span per reconcile; admitd's server spans of the shim's calls must be children of those
reconcile spans (the shim sends their traceparent).
"""

import concurrent.futures
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stack import Stack, job, queues  # noqa: E402
from stack import undocumented_metrics, wait_with_logs  # noqa: E402

import grpc  # noqa: E402

T = 30
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS = "traced"


def otlp_classes():
    """The OTLP request class, generated from the project's protos into a temporary dir."""
    out = tempfile.mkdtemp(prefix="otlp-py-")
    protos = os.path.join(ROOT, "protos")
    subprocess.run(["protoc", "-I", protos, "--python_out", out]
                   + [os.path.join(protos, "otlp", f) for f in
                      ("common.proto", "resource.proto", "trace.proto", "trace_service.proto")],
                   check=True)
    sys.path.insert(0, out)
    from otlp import trace_service_pb2  # noqa: E402
    return trace_service_pb2


class Collector:
    """An OTLP/gRPC trace collector keeping every span with its resource's service.name."""

    def __init__(self):
        self.pb = otlp_classes()
        self.lock = threading.Lock()
        self.spans = []  # (service name, span)
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        handler = grpc.unary_unary_rpc_method_handler(
            self.export,
            request_deserializer=self.pb.ExportTraceServiceRequest.FromString,
            response_serializer=self.pb.ExportTraceServiceResponse.SerializeToString)
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService", {"Export": handler}),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def export(self, request, context):
        with self.lock:
            for rs in request.resource_spans:
                service = next((kv.value.string_value for kv in rs.resource.attributes
                                if kv.key == "service.name"), "")
                for ss in rs.scope_spans:
                    self.spans.extend((service, s) for s in ss.spans)
        return self.pb.ExportTraceServiceResponse()

    def of(self, service):
        with self.lock:
            return [s for svc, s in self.spans if svc == service]


def ids(key):
    digest = hashlib.sha256(key.encode()).digest()
    return digest[:16], digest[:8]


class TracingE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.collector = Collector()
        endpoint = "127.0.0.1:%d" % cls.collector.port
        trace = ("--otlp-endpoint", endpoint, "--trace-sample-ratio", "1")
        cls.s = Stack(admitd_args=trace, metrics=True)
        cls.shim = cls.s.start_shim(extra=trace)
        wait_with_logs(cls.s, lambda: cls.shim.metric("admitd_shim_leader") == 1, "the shim to lead",
                       T)
        cls.s.create_namespace(NS)

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()
        cls.collector.server.stop(0)

    def wait_until(self, fn, what):
        return wait_with_logs(self.s, fn, what, T)

    def test_a_jobs_reconciles_and_admitds_answers_are_one_trace(self):
        s = self.s
        s.apply(queues(NS, "cq-traced", 4))
        created = s.create_job(job(NS, "traced", parallelism=1, completions=1, runtime=1))
        trace_id, root_id = ids("job/" + created["metadata"]["uid"])

        def shim_spans():
            return [x for x in self.collector.of("admitd-shim") if x.trace_id == trace_id]

        # The Job's root span, and reconciles under it until the Job was started.
        self.wait_until(lambda: any(x.name == "job %s/traced" % NS for x in shim_spans()),
                        "the Job's root span from the shim")
        root = next(x for x in shim_spans() if x.name == "job %s/traced" % NS)
        self.assertEqual(root.span_id, root_id)
        self.assertEqual(root.parent_span_id, b"")
        self.wait_until(lambda: not s.job(NS, "traced")["spec"].get("suspend", True),
                        "the Job to be started")
        reconciles = self.wait_until(
            lambda: [x for x in shim_spans() if x.name == "reconcile job"] or None,
            "the shim's reconcile spans")
        for r in reconciles:
            self.assertEqual(r.parent_span_id, root_id)
            attrs = {kv.key: kv.value.string_value for kv in r.attributes}
            self.assertEqual(attrs.get("k8s.object"), "%s/traced" % NS)

        # admitd's span of the shim's Submit is the child of one of those reconciles.
        def submit():
            spans = [x for x in self.collector.of("admitd")
                     if x.trace_id == trace_id and x.name == "AdmissionService/Submit"]
            return spans[0] if spans else None
        span = self.wait_until(submit, "admitd's Submit span in the Job's trace")
        reconcile_ids = {x.span_id for x in shim_spans() if x.name == "reconcile job"}
        self.assertIn(span.parent_span_id, reconcile_ids)
        self.assertEqual(span.kind, 2)  # SPAN_KIND_SERVER

        # And the shim says it exported spans, and counts its Kubernetes API requests.
        self.wait_until(lambda: (self.shim.metric("admitd_shim_tracing_spans_exported_total") or 0) > 0,
                        "the shim's exported-spans counter")
        _, text = self.shim.get("/metrics")
        self.assertRegex(text, r'admitd_shim_kube_requests_total\{verb="GET",code="2xx"\} [1-9]')
        self.assertRegex(text, r'admitd_shim_kube_requests_total\{verb="PATCH",code="2xx"\} [1-9]')
        self.assertRegex(text, r'admitd_shim_reconcile_seconds_count\{kind="job"\} [1-9]')
        # Every metric the shim and admitd export is documented.
        self.assertEqual(undocumented_metrics(text), [], "the shim's metrics without docs")
        with urllib.request.urlopen("http://%s/metrics" % self.s.admitd_metrics, timeout=5) as r:
            self.assertEqual(undocumented_metrics(r.read().decode()), [],
                             "admitd's metrics without docs")


if __name__ == "__main__":
    unittest.main()
