"""An HTTPS admission webhook server that the tests run on a thread, and its certificate.

``make_cert`` makes a self-signed certificate with openssl and ``ca_bundle``
reads it as a ``caBundle``; ``ReviewHandler`` is the request handler to
subclass (it reads the AdmissionReview and writes back the response its
``review`` returns; ``json_patch`` is a mutation); ``HookServer`` serves one
over TLS on 127.0.0.1; ``WebhookServerTest`` is a ServerTest whose server
reaches a HookServer as the service ``system/hooks`` and registers webhook
configurations that call it. Used by test_webhooks.py, test_apps_clients.py
and test_scale.py.
"""

import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import ServerTest

AR = "/apis/admissionregistration.k8s.io/v1/"


def make_cert(directory, name, sans):
    """A self-signed certificate for ``sans`` (``IP:...,DNS:...``): (crt path, key path)."""
    crt, key = os.path.join(directory, name + ".crt"), os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=" + sans,
                    "-keyout", key, "-out", crt], check=True, capture_output=True)
    return crt, key


def ca_bundle(crt):
    """The certificate file ``crt`` as a webhook's ``clientConfig.caBundle`` (base64 PEM)."""
    with open(crt, "rb") as f:
        return base64.b64encode(f.read()).decode()


def json_patch(ops):
    """The response fields of a mutating webhook that patches with the JSON patch ``ops``."""
    return {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(ops).encode()).decode()}


class ReviewHandler(BaseHTTPRequestHandler):
    """Answers AdmissionReviews; subclasses define ``review(path, request)``.

    ``review`` gets the path without its query (``self.path`` has it) and the
    review's ``request``, and returns the ``response`` (``uid``, ``allowed``,
    ...). ``self.server.seen`` is a list for it to record requests in.
    """

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def review(self, path, req):
        raise NotImplementedError

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["request"]
        resp = self.review(self.path.split("?")[0], req)
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": resp}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the API server gave up (a timeout)
            pass


class HookServer(ThreadingHTTPServer):
    """``handler`` served over HTTPS on a free port of 127.0.0.1, on a daemon thread.

    Its certificate, made in the temporary directory ``tmp``, is for 127.0.0.1,
    localhost and hooks.system.svc; ``ca`` is it as a caBundle, ``address`` is
    ``127.0.0.1:<port>``, ``seen`` the handler's record. ``stop()`` ends it.
    """

    daemon_threads = True

    def __init__(self, handler):
        self.tmp = tempfile.mkdtemp(prefix="kube-webhook-test-")
        crt, key = make_cert(self.tmp, "hook", "IP:127.0.0.1,DNS:localhost,DNS:hooks.system.svc")
        self.ca = ca_bundle(crt)
        super().__init__(("127.0.0.1", 0), handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)
        self.socket = ctx.wrap_socket(self.socket, server_side=True)
        self.seen = []
        self.address = "127.0.0.1:%d" % self.server_address[1]
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.1},
                         daemon=True).start()

    def stop(self):
        self.shutdown()
        self.server_close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class WebhookServerTest(ServerTest):
    """A ServerTest with a HookServer serving ``HOOK`` (a ReviewHandler), ``cls.hooks``.

    The hook server starts first; the API server gets ``SERVER_ARGS`` plus the
    namespace ``system`` and ``--service-address system/hooks=<its address>``.
    """

    HOOK = None

    @classmethod
    def server_args(cls):
        return super().server_args() + (
            "--namespace", "system", "--service-address", "system/hooks=" + cls.hooks.address)

    @classmethod
    def setUpClass(cls):
        cls.hooks = HookServer(cls.HOOK)
        try:
            super().setUpClass()
        except BaseException:
            cls.hooks.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.hooks.stop()

    @classmethod
    def register_hook(cls, kind, name, webhook, path, rules, **fields):
        """Creates the ``kind`` ("Mutating" or "Validating") webhook configuration ``name``.

        It has one webhook, ``webhook``, that calls ``path`` of the service
        system/hooks for ``rules``; ``fields`` are more of its fields
        (``namespaceSelector=...``).
        """
        hook = {"name": webhook, "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"caBundle": cls.hooks.ca, "service": {
                    "namespace": "system", "name": "hooks", "path": path}},
                "rules": rules}
        hook.update(fields)
        code, out = cls.s.request("POST", AR + kind.lower() + "webhookconfigurations", {
            "metadata": {"name": name}, "webhooks": [hook]})
        assert code == 201, out
        return out
