"""The real clients the tests run against the server: kubectl and python3-kubernetes.

kubectl: ``KUBECTL``, the binary ($KUBECTL, else /usr/bin/kubectl);
``kubectl_minor()``, its minor version (None without one); ``needs_kubectl``,
a skip decorator for older ones; ``KubectlServerTest``, a ServerTest whose
``self.kubectl(...)`` runs it against the class's server.

python3-kubernetes (Debian's, which /usr/bin/python3 has), imported when it
is there: ``client``, ``config``, ``watch`` and ``ApiException`` (all None
without it); ``needs_python_client``, a skip decorator for when it is not;
``PythonClientServerTest``, a ServerTest with an ApiClient for the class's server
and the APIs it names.

Used by the test_*.py files that run these clients.
"""

import functools
import json
import os
import subprocess
import unittest

from harness import ServerTest

try:
    from kubernetes import client, config, watch
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover
    client = config = watch = ApiException = None

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")

needs_python_client = unittest.skipIf(
    client is None, "python3-kubernetes is not installed (use /usr/bin/python3)")


@functools.lru_cache(maxsize=None)
def kubectl_minor():
    """The minor version of the kubectl client, or None when there is none."""
    try:
        out = subprocess.run([KUBECTL, "version", "--client", "-o", "json"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
        return int(json.loads(out)["clientVersion"]["minor"].rstrip("+"))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        return None


def needs_kubectl(minor):
    """Skips a test (class) unless kubectl is 1.<minor> or later."""
    found = kubectl_minor()
    return unittest.skipIf((found or 0) < minor, "needs kubectl 1.%d or later at %s (found "
                                                 "minor version %s)" % (minor, KUBECTL, found))


class KubectlServerTest(ServerTest):
    """A ServerTest that runs kubectl against its server.

    ``cls.env`` has the server's temporary directory as HOME and its kubeconfig
    as KUBECONFIG; ``cls.cache`` is kubectl's cache directory, in it too.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.env = dict(os.environ, HOME=cls.s.tmp, KUBECONFIG=cls.s.kubeconfig)
        cls.cache = os.path.join(cls.s.tmp, "cache")

    def kubectl(self, *args, check=True, code=0, stdin=None, timeout=60, binary=KUBECTL):
        """Runs ``binary args`` and returns the CompletedProcess (text).

        With ``check``, the test fails (with the output and the server log's
        tail) unless it exits with ``code``.
        """
        cmd = [binary, "--kubeconfig", self.s.kubeconfig, "--cache-dir", self.cache] + list(args)
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, input=stdin,
                           timeout=timeout)
        if check and p.returncode != code:
            self.fail("%s exited %d:\nstdout: %s\nstderr: %s\nserver log tail:\n%s" % (
                " ".join(cmd), p.returncode, p.stdout, p.stderr, self.s.log()[-3000:]))
        return p


class PythonClientServerTest(ServerTest):
    """A ServerTest with python3-kubernetes: ``cls.api_client``, an ApiClient for its server.

    ``APIS`` maps attribute names to API classes of ``kubernetes.client``
    (``{"core": "CoreV1Api"}`` gives ``cls.core``). The client is closed after
    the class. Decorate the test class with ``needs_python_client``.
    """

    APIS = {}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.api_client = config.new_client_from_config(config_file=cls.s.kubeconfig)
        for attr, api in cls.APIS.items():
            setattr(cls, attr, getattr(client, api)(cls.api_client))

    @classmethod
    def tearDownClass(cls):
        cls.api_client.rest_client.pool_manager.clear()
        cls.api_client.close()
        super().tearDownClass()
