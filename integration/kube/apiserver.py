#!/usr/bin/env python3
"""A test Kubernetes API server, Python 3 standard library only.

It serves, over plain HTTP on 127.0.0.1, the part of the Kubernetes API that
admitd's shim agents use: namespaces, nodes, pods, events (core/v1),
deployments, replicasets and statefulsets (apps/v1), jobs (batch/v1), leases
(coordination.k8s.io/v1), events (events.k8s.io/v1) and
CustomResourceDefinitions (apiextensions.k8s.io/v1) with the custom resources
they define (crds.py; ``--crd raycluster,rayjob,jobset,pytorchjob,workload``
installs KubeRay's, JobSet's, the training operator's and Kueue's, from
crddefs.py), with discovery (legacy and aggregated), the minimal OpenAPI v3
documents kubectl consults, get/list/watch/create/update/patch/delete/
deletecollection, the status subresource, the scale subresource (autoscaling/v1
Scale) of deployments, replicasets and statefulsets, the pod binding
subresource, label and field selectors, finalizers, resourceVersion
preconditions and Kubernetes-shaped Status errors. ``--controllers job,scheduler,kubelet,
deployment,statefulset,raycluster,rayjob,jobset,pytorchjob`` adds simulated
controllers (jobcontroller.py, scheduler.py, kubelet.py,
deploymentcontroller.py, statefulsetcontroller.py, rayclustercontroller.py,
rayjobcontroller.py, jobsetcontroller.py, pytorchjobcontroller.py) and
``--node`` fake nodes; webhooks.py
calls the registered admission webhooks (admissionregistration.k8s.io/v1) over
HTTPS.

Run:  /usr/bin/python3 apiserver.py --port 0 --kubeconfig-out /tmp/k.yaml
The first stdout line is ``listening 127.0.0.1:PORT``.

This module is the entry point and the HTTP layer: request routing, the
fixture-only endpoints, the command line and main(); it also lists the
controllers ``--controllers`` can start (``CONTROLLERS``) and hands them to
controllers.py, the controller runtime. The rest lives in listwatch.py (lists
with pagination, the Table form, watch streaming: a mixin of the request
handler), resources.py (resource table, discovery, OpenAPI), store.py
(objects, resourceVersions, watch history, admission hooks and listeners),
scale.py (the scale subresource's Scale), objects.py (per-kind defaulting and
validation), updaterules.py (what pod and Job updates may change, and the
feature gates), crds.py (CustomResourceDefinitions and custom resources;
crdfinalizer.py deletes them with their CRD), webhookconfig.py (webhook
configurations), kselectors.py (label and field selectors), tables.py
(kubectl's Table form), errors.py (Status errors), kpatch.py (patch
algorithms) and kcommon.py (small helpers every module may use). README.md
describes the layering.
"""

import argparse
import json
import re
import signal
import sys
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import controllers
import crdfinalizer
import crds
import deploymentcontroller
import jobcontroller
import jobsetcontroller
import kubelet
import pytorchjobcontroller
import rayclustercontroller
import rayjobcontroller
import scale
import scheduler
import statefulsetcontroller
import updaterules
import webhooks
from errors import (ApiError, bad_request, method_not_allowed, status_details,
                    unsupported_media_type)
from kselectors import FieldSelector, LabelSelector
from listwatch import ListWatchMixin
from resources import (AGGREGATED_CONTENT_TYPE, RES_BY_KEY, aggregated_discovery, api_group,
                       api_resource_list, openapi_v3_doc, openapi_v3_index, wants_aggregated)
from store import Store

DEFAULT_VERSION = "v1.33.0"

# The simulated controllers ``--controllers`` may start, each by its NAME.
CONTROLLERS = [deploymentcontroller.DeploymentController, jobcontroller.JobController,
               jobsetcontroller.JobSetController, kubelet.Kubelet,
               pytorchjobcontroller.PyTorchJobController,
               rayclustercontroller.RayClusterController, rayjobcontroller.RayJobController,
               scheduler.Scheduler, statefulsetcontroller.StatefulSetController]


class Handler(ListWatchMixin, BaseHTTPRequestHandler):
    """One HTTP request against the ``App`` at ``self.server.app``."""

    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"
    sys_version = ""

    # ------------------------------------------------------------ plumbing
    def log_message(self, fmt, *args):
        if self.server.app.verbose:
            sys.stderr.write("%s %s\n" % (time.strftime("%H:%M:%S"), fmt % args))

    def _send(self, code, body, ctype="application/json", headers=None):
        data = body if isinstance(body, bytes) else (json.dumps(body) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self._send_warnings()
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send_warnings(self):
        for text in getattr(self, "warnings", ()):
            self.send_header("Warning", '299 - %s' % json.dumps(text))

    def _read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _dispatch(self, method):
        self.warnings = []
        raw = self._read_body()
        try:
            self._route(method, raw)
        except ApiError as e:
            self._send(e.code, e.status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # a bug in this server: answer 500 as Kubernetes does
            traceback.print_exc()
            err = ApiError(500, "InternalError", "Internal error occurred: %s" % e,
                           {"causes": [{"message": str(e)}]})
            try:
                self._send(500, err.status())
            except OSError:
                pass

    # ------------------------------------------------------------- routing
    def _route(self, method, raw):
        app = self.server.app
        u = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(u.query, keep_blank_values=True).items()}
        parts = [p for p in u.path.split("/") if p]
        if method == "GET" and u.path in ("/healthz", "/readyz", "/livez"):
            return self._send(200, b"ok", "text/plain; charset=utf-8")
        if method == "GET" and u.path == "/version":
            return self._send(200, app.version_info())
        if parts and parts[0] == "openapi":
            return self._openapi(parts[1:])
        if parts and parts[0] == "_fixture":
            return self._fixture(method, parts[1:], raw)
        if not parts or parts[0] not in ("api", "apis"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        registry = app.store.registry
        gvs = registry.group_versions()
        if len(parts) == 1 and wants_aggregated(self.headers.get("Accept")):
            return self._send(200, aggregated_discovery(registry, parts[0] == "api"),
                              AGGREGATED_CONTENT_TYPE, {"Vary": "Accept"})
        if parts[0] == "api":
            if len(parts) == 1:
                return self._send(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [{
                                            "clientCIDR": "0.0.0.0/0",
                                            "serverAddress": app.address}]})
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                    api_group(g, vs) for g, vs in gvs.items() if g]})
            if len(parts) == 2:
                if parts[1] not in gvs or not parts[1]:
                    raise ApiError(404, "NotFound",
                                   "the server could not find the requested resource", {})
                return self._send(200, dict(kind="APIGroup", apiVersion="v1",
                                            **api_group(parts[1], gvs[parts[1]])))
            group, version, rest = parts[1], parts[2], parts[3:]
        if version not in gvs.get(group, []):
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        if not rest:
            if method != "GET":
                raise method_not_allowed()
            return self._send(200, api_resource_list(registry, group, version))
        ns = None
        if (rest[0] == "namespaces" and len(rest) >= 3
                and registry.find(group, version, rest[2]) is not None
                and registry.find(group, version, rest[2]).namespaced):
            ns, rest = rest[1], rest[2:]
        res = registry.find(group, version, rest[0])
        if res is None or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub and not ((sub == "status" and res.has_status) or (sub == "scale" and res.has_scale)
                        or (sub == "binding" and res.kind == "Pod" and res.crd is None)):
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        if res.namespaced and name is not None and ns is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        self._resource(method, res, ns, name, sub, q, raw)

    def _decode(self, raw):
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if self.command in ("POST", "PUT") and ctype not in ("application/json", ""):
            # Protobuf (kubectl's typed clients, e.g. `kubectl create namespace`), YAML and
            # CBOR bodies are not decoded by this server.
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: application/json", {})
        try:
            return json.loads(raw.decode() or "null")
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request("error decoding request body: %s" % e)

    def _wants_table(self):
        return "as=Table" in (self.headers.get("Accept") or "")

    def _resource(self, method, res, ns, name, sub, q, raw):
        store = self.server.app.store
        dry_run = q.get("dryRun") == "All"
        if res.deprecation:
            self.warnings.append(res.deprecation)
        if sub == "binding":
            if method != "POST":
                raise method_not_allowed()
            store.bind(ns, name, self._decode(raw), dry_run)
            return self._send(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Success", "code": 201})
        if sub == "scale":  # autoscaling/v1 Scale (scale.py)
            if method == "GET":
                obj = store.get_scale(res, ns, name)
                if self._wants_table():
                    return self._send_table(scale.SCALE, [obj],
                                            obj["metadata"]["resourceVersion"], q)
                return self._send(200, obj)
            if method == "PUT":
                return self._send(200, store.update_scale(res, ns, name, self._decode(raw),
                                                          dry_run))
            if method == "PATCH":
                return self._send(200, store.patch_scale(res, ns, name, self._patch_type(res),
                                                         self._decode(raw), dry_run))
            raise method_not_allowed()
        if method == "GET" and name is None:
            lsel = LabelSelector(q.get("labelSelector", ""))
            fsel = FieldSelector(q.get("fieldSelector", ""), res)
            if q.get("watch") in ("1", "true", "True"):
                return self._watch(res, ns, lsel, fsel, q)
            return self._list(res, ns, lsel, fsel, q)
        if method == "GET":
            obj = store.get(res, ns, name)
            if self._wants_table():
                return self._send_table(res, [obj], obj["metadata"]["resourceVersion"], q)
            return self._send(200, obj)
        if method == "POST" and name is None:
            if ns is None and res.namespaced:
                raise method_not_allowed()
            crds.refuse_create_if_terminating(res)
            obj = store.create(res, ns, self._decode(raw), dry_run)
            return self._send(201, obj)
        if method == "PUT" and name is not None:
            return self._send(200, store.update(res, ns, name, self._decode(raw), sub, dry_run))
        if method == "PATCH" and name is not None:
            return self._send(200, store.patch(res, ns, name, self._patch_type(res),
                                               self._decode(raw), sub, dry_run))
        if method == "DELETE" and name is not None and not sub:
            opts = self._delete_options(raw, q)
            obj, gone = store.delete(res, ns, name, opts, dry_run)
            if gone and res.kind not in ("Pod",):
                details = status_details(res, name)
                details["uid"] = obj["metadata"]["uid"]
                return self._send(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                        "status": "Success", "details": details})
            return self._send(200, obj)
        if method == "DELETE" and name is None:
            opts = self._delete_options(raw, q)
            lsel = LabelSelector(q.get("labelSelector", ""))
            fsel = FieldSelector(q.get("fieldSelector", ""), res)
            items, _ = store.list(res, ns, lsel, fsel)
            out = []
            for o in items:
                try:
                    obj, _ = store.delete(res, o["metadata"].get("namespace"),
                                          o["metadata"]["name"], opts, dry_run)
                    out.append(obj)
                except ApiError as e:
                    if e.code != 404:
                        raise
            return self._send(200, self._list_body(res, out, store.rv, None))
        raise method_not_allowed()

    def _patch_type(self, res):
        """The PATCH request's patch type (415 when the resource does not take it)."""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ctype not in ("application/merge-patch+json", "application/json-patch+json",
                         "application/strategic-merge-patch+json") or (
                ctype == "application/strategic-merge-patch+json" and not res.strategic):
            raise unsupported_media_type(ctype, res.strategic)
        return ctype

    def _delete_options(self, raw, q):
        opts = {}
        if raw.strip():
            body = self._decode(raw)
            if isinstance(body, dict):
                opts.update(body)
        if "gracePeriodSeconds" in q:
            try:
                opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            except ValueError:
                raise bad_request("invalid gracePeriodSeconds")
        if "propagationPolicy" in q:
            opts["propagationPolicy"] = q["propagationPolicy"]
        return opts

    # --------------------------------------------------------------- openapi
    def _openapi(self, parts):
        app = self.server.app
        registry = app.store.registry
        if parts == ["v3"]:
            return self._send(200, openapi_v3_index(registry, app.server_version))
        if len(parts) >= 3 and parts[0] == "v3":
            if parts[1] == "api" and parts[2:] == ["v1"]:
                return self._send(200, openapi_v3_doc(registry, "", "v1", app.server_version))
            if parts[1] == "apis" and len(parts) == 4:
                g, v = parts[2], parts[3]
                if v in registry.group_versions().get(g, []) and g:
                    return self._send(200, openapi_v3_doc(registry, g, v, app.server_version))
        raise ApiError(404, "NotFound", "the server could not find the requested resource", {})

    # ------------------------------------------------ fixture-only endpoints
    def _fixture(self, method, parts, raw):
        """Not Kubernetes: test controls under /_fixture/ (e.g. compact the history)."""
        store = self.server.app.store
        if method == "POST" and parts == ["compact"]:
            store.compact()
            return self._send(200, {"compactedResourceVersion": str(store.compacted_rv)})
        if method == "GET" and parts == ["state"]:
            with store.lock:
                return self._send(200, {"resourceVersion": str(store.rv),
                                        "compactedResourceVersion": str(store.compacted_rv)})
        raise ApiError(404, "NotFound", "the server could not find the requested resource", {})


class App:
    """The server's state: the store and the settings from the command line."""

    def __init__(self, args):
        self.store = Store(args.history_size)
        try:
            self.store.features = updaterules.feature_gates(args.server_version,
                                                            args.feature_gates)
        except ValueError as e:
            raise SystemExit("--feature-gates: %s" % e)
        self.verbose = args.verbose
        self.server_version = args.server_version
        self.bookmark_interval = args.bookmark_interval
        self.min_request_timeout = args.min_request_timeout
        self.kubelet_start_delay = args.kubelet_start_delay
        self.kubelet_grace_cap = args.kubelet_grace_cap
        self.address = ""
        with self.store.lock:
            self.store.create(RES_BY_KEY["namespaces"], None, {"metadata": {"name": "default"}})
            for n in args.namespace:
                self.store.create(RES_BY_KEY["namespaces"], None, {"metadata": {"name": n}})
            if args.node:
                scheduler.create_nodes(self.store, args.node)
            crds.install(self.store, [n for spec in args.crd for n in spec.split(",") if n])
        self.store.admission.append(webhooks.WebhookAdmission(
            self.store, parse_service_addresses(args.service_address),
            args.webhook_forbidden_prefix))

    def version_info(self):
        m = re.match(r"v(\d+)\.(\d+)", self.server_version)
        return {"major": m.group(1) if m else "1", "minor": m.group(2) if m else "0",
                "emulationMajor": m.group(1) if m else "1",
                "emulationMinor": m.group(2) if m else "0",
                "gitVersion": self.server_version, "gitCommit": "0" * 40,
                "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z",
                "goVersion": "go1.24.0", "compiler": "gc", "platform": "linux/amd64"}


def write_kubeconfig(path, server):
    text = """apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: %s
contexts:
- name: fake
  context:
    cluster: fake
    user: fake
    namespace: default
current-context: fake
preferences: {}
users:
- name: fake
  user: {}
""" % server
    with open(path, "w") as f:
        f.write(text)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0: let the OS choose")
    p.add_argument("--kubeconfig-out", help="write a kubeconfig for this server here")
    p.add_argument("--history-size", type=int, default=10000,
                   help="watch events kept; older resourceVersions get 410 Expired")
    p.add_argument("--bookmark-interval", type=float, default=60.0,
                   help="seconds between BOOKMARK events on watches that allow them")
    p.add_argument("--min-request-timeout", type=float, default=1800.0,
                   help="watches without timeoutSeconds end after [x, 2x) seconds")
    p.add_argument("--server-version", default=DEFAULT_VERSION,
                   help="version reported; also picks the feature gates' defaults")
    p.add_argument("--feature-gates", default="",
                   help="Name=true|false,... (MutableSchedulingDirectivesForSuspendedJobs, "
                        "MutablePodResourcesForSuspendedJobs; on by default from v1.36)")
    p.add_argument("--namespace", action="append", default=[],
                   help="extra namespace to create at start (repeatable)")
    p.add_argument("--controllers", default="",
                   help="comma-separated simulated controllers to run: job, scheduler, kubelet, "
                        "deployment, statefulset, raycluster, rayjob, jobset, pytorchjob")
    p.add_argument("--crd", action="append", default=[],
                   help="CustomResourceDefinitions to create at start (repeatable, or "
                        "comma-separated): raycluster (rayclusters.ray.io v1), rayjob "
                        "(rayjobs.ray.io v1), jobset (jobsets.jobset.x-k8s.io v1alpha2), "
                        "pytorchjob (pytorchjobs.kubeflow.org v1), workload "
                        "(workloads.kueue.x-k8s.io v1beta2)")
    p.add_argument("--node", action="append", default=[],
                   help="fake node to create at start (repeatable): "
                        "name:label=v,label2=v:cpu=4[:pods=N][:taint=key=value:NoSchedule]")
    p.add_argument("--kubelet-start-delay", type=float, default=0.2,
                   help="seconds from binding to Running (kubelet controller)")
    p.add_argument("--kubelet-grace-cap", type=float, default=1.0,
                   help="the kubelet waits min(grace period, this) seconds before killing "
                        "a deleted pod's containers")
    p.add_argument("--service-address", action="append", default=[],
                   help="where a webhook's clientConfig.service is reached (no cluster DNS; "
                        "repeatable): NAMESPACE/NAME=HOST:PORT")
    p.add_argument("--webhook-forbidden-prefix", action="store_true",
                   help='prefix webhook denials with <resource> "<name>" is forbidden: as the '
                        "newest kube-apiserver sources do")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    return p.parse_args(argv)


def parse_service_addresses(specs):
    out = {}
    for spec in specs:
        key, sep, addr = spec.partition("=")
        if not sep or key.count("/") != 1 or ":" not in addr:
            raise SystemExit("--service-address: expected NAMESPACE/NAME=HOST:PORT, got %r"
                             % spec)
        out[key] = addr
    return out


def make_server(args):
    app = App(args)
    # A real API server accepts far more pending connections than http.server's default 5: a
    # client creating many objects at once must not see connections dropped.
    ThreadingHTTPServer.request_queue_size = 1024
    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    httpd.daemon_threads = True
    httpd.app = app
    host, port = httpd.server_address[:2]
    app.address = "%s:%d" % (host, port)
    app.controllers = [crdfinalizer.CRDFinalizer(app)]  # part of the API server, always running
    if args.controllers:
        app.controllers += controllers.start(app, [c for c in args.controllers.split(",") if c],
                                             CONTROLLERS)
    return httpd


def main(argv=None):
    args = parse_args(argv)
    httpd = make_server(args)
    host, port = httpd.server_address[:2]
    if args.kubeconfig_out:
        write_kubeconfig(args.kubeconfig_out, "http://%s:%d" % (host, port))
    def on_term(*_):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, on_term)
    sys.stdout.write("listening %s:%d\n" % (host, port))
    sys.stdout.flush()
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


if __name__ == "__main__":
    main()
