"""Start and stop the test API server as a child process, and poll helpers (for the tests).

``ServerTest`` is the test case mixin that gives each test class its own server.
"""

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import apiserver

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "apiserver.py")


class ApiServerProcess:
    """``with ApiServerProcess() as s:`` gives ``s.url``, ``s.kubeconfig``, ``s.tmp``."""

    def __init__(self, *extra_args, python=None):
        self.extra_args = list(extra_args)
        self.python = python or sys.executable
        self.proc = None

    def start(self):
        self.tmp = tempfile.mkdtemp(prefix="kube-apiserver-test-")
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        self.log_path = os.path.join(self.tmp, "apiserver.log")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [self.python, SERVER, "--port", "0", "--kubeconfig-out", self.kubeconfig,
             "--verbose"] + self.extra_args,
            stdout=subprocess.PIPE, stderr=self._log, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], 10)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("listening "):
            try:
                self.proc.wait(5)  # let it finish writing why
            except subprocess.TimeoutExpired:
                pass
            self._log.flush()
            log = self.log()
            self.stop()
            raise RuntimeError("apiserver did not start: %r (log: %s)" % (line, log))
        self.address = line.split()[1]
        self.url = "http://" + self.address
        return self

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout:
            self.proc.stdout.close()
        self._log.close()
        if os.environ.get("KEEP_KUBE_TMP"):
            sys.stderr.write("kept %s\n" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # Raw HTTP helper: returns (status, decoded JSON body or text).
    def request(self, method, path, body=None, content_type="application/json", headers=None):
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                code, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            code, raw = e.code, e.read()
        try:
            return code, json.loads(raw)
        except ValueError:
            return code, raw.decode()


class InProcessApiServer:
    """The server in this process, on a thread: also gives ``s.app`` and ``s.store``.

    For tests that hook into the store (admission hooks, listeners) or read it
    directly. ``args`` are command-line options, e.g. ``"--controllers", "job"``.
    """

    def __init__(self, *args):
        self.args = list(args)

    def start(self):
        self.tmp = tempfile.mkdtemp(prefix="kube-apiserver-test-")
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        self.httpd = apiserver.make_server(apiserver.parse_args(["--port", "0"] + self.args))
        self.app = self.httpd.app
        self.store = self.app.store
        self.address = self.app.address
        self.url = "http://" + self.address
        apiserver.write_kubeconfig(self.kubeconfig, self.url)
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        for c in self.app.controllers:
            c.stop()
        self.httpd.shutdown()
        self.httpd.server_close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    request = ApiServerProcess.request


class ServerTest:
    """A test case mixin: one ApiServerProcess per test class, ``cls.s``.

    It is started in setUpClass with ``server_args()``, by default ``SERVER_ARGS``
    (command-line options, e.g. ``("--controllers", "job")``), and stopped in
    tearDownClass. Put it before ``unittest.TestCase`` in the bases; a class that
    extends setUpClass or tearDownClass calls ``super()``.
    """

    SERVER_ARGS = ()

    @classmethod
    def server_args(cls):
        return tuple(cls.SERVER_ARGS)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s = ApiServerProcess(*cls.server_args()).start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()
        super().tearDownClass()


def wait_until(fn, timeout=10.0, interval=0.05, what="condition"):
    """Poll ``fn()`` until it returns a truthy value, and return it.

    An AssertionError raised by ``fn`` counts as falsy; after ``timeout`` seconds
    this raises AssertionError.
    """
    deadline = time.time() + timeout
    last = None
    while True:
        try:
            last = fn()
        except AssertionError:
            last = None
        if last:
            return last
        if time.time() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)
