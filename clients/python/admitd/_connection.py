"""How the client reaches admitd: the target, TLS files and a bearer token, with the same
``ADMITD_*`` environment variables as admitctl (common/connection.h)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Optional

import grpc

DEFAULT_TARGET = "localhost:50051"


@dataclass
class ConnectionOptions:
    """Where admitd is and how to authenticate to it.

    Attributes:
        target: ``host:port`` or a gRPC target URI.
        tls: use TLS (implied by any of the files or a token).
        ca_file: CA bundle the server's certificate must chain to; empty: the system's.
        cert_file, key_file: client certificate and key (mTLS), both or neither.
        server_name: the name checked in the server's certificate; empty: the target's host.
        token: a literal bearer token.
        token_file: a file holding the bearer token, read again whenever it changes (a rotating
            Kubernetes service-account token is always the current one).
    """

    target: str = DEFAULT_TARGET
    tls: bool = False
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    server_name: str = ""
    token: str = ""
    token_file: str = ""

    @classmethod
    def from_environment(cls, target: Optional[str] = None) -> "ConnectionOptions":
        """Options from ``ADMITD_SERVER``, ``ADMITD_CA_FILE``, ``ADMITD_CERT_FILE``,
        ``ADMITD_KEY_FILE``, ``ADMITD_TOKEN_FILE`` and ``ADMITD_TOKEN`` (the file wins), as
        admitctl reads them; ``target`` overrides ``ADMITD_SERVER``."""
        env = os.environ
        return cls(target=target or env.get("ADMITD_SERVER") or DEFAULT_TARGET,
                   ca_file=env.get("ADMITD_CA_FILE", ""),
                   cert_file=env.get("ADMITD_CERT_FILE", ""),
                   key_file=env.get("ADMITD_KEY_FILE", ""),
                   token_file=env.get("ADMITD_TOKEN_FILE", ""),
                   token="" if env.get("ADMITD_TOKEN_FILE") else env.get("ADMITD_TOKEN", ""))

    @property
    def secure(self) -> bool:
        return bool(self.tls or self.ca_file or self.cert_file or self.key_file or self.token or
                    self.token_file)

    def validate(self) -> None:
        """ValueError for a certificate without its key (or the reverse)."""
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("cert_file and key_file go together: give both or neither")


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError("%s %s cannot be read: %s" % (what, path, e.strerror)) from None


class _TokenFile:
    """The token in a file, read again when the file's size or modification time changes."""

    def __init__(self, path: str):
        self._path = path
        self._lock = threading.Lock()
        self._stamp = None
        self._token = ""

    def get(self) -> str:
        st = os.stat(self._path)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        with self._lock:
            if stamp != self._stamp:
                self._token = _read(self._path, "token file").decode().strip()
                self._stamp = stamp
            return self._token


class _BearerToken(grpc.AuthMetadataPlugin):
    def __init__(self, options: ConnectionOptions):
        self._literal = options.token
        self._file = _TokenFile(options.token_file) if options.token_file else None

    def __call__(self, context, callback):
        try:
            token = self._file.get() if self._file else self._literal
        except (OSError, ValueError) as e:
            callback((), e)
            return
        callback((("authorization", "Bearer " + token),), None)


def channel_parts(options: ConnectionOptions):
    """(credentials or None for plaintext, channel options) for grpc's channel constructors."""
    options.validate()
    # A restarted admitd is reached again within a second or two (gRPC's default backoff grows
    # to two minutes).
    channel_options = [("grpc.max_receive_message_length", 64 << 20),
                       ("grpc.initial_reconnect_backoff_ms", 200),
                       ("grpc.min_reconnect_backoff_ms", 200),
                       ("grpc.max_reconnect_backoff_ms", 2000)]
    if not options.secure:
        return None, channel_options
    creds = grpc.ssl_channel_credentials(
        root_certificates=_read(options.ca_file, "CA file") if options.ca_file else None,
        private_key=_read(options.key_file, "key file") if options.key_file else None,
        certificate_chain=_read(options.cert_file, "certificate file") if options.cert_file
        else None)
    if options.token or options.token_file:
        creds = grpc.composite_channel_credentials(
            creds, grpc.metadata_call_credentials(_BearerToken(options)))
    if options.server_name:
        channel_options.append(("grpc.ssl_target_name_override", options.server_name))
    return creds, channel_options


def connect(options: ConnectionOptions) -> grpc.Channel:
    creds, channel_options = channel_parts(options)
    if creds is None:
        return grpc.insecure_channel(options.target, options=channel_options)
    return grpc.secure_channel(options.target, creds, options=channel_options)


def connect_aio(options: ConnectionOptions):
    creds, channel_options = channel_parts(options)
    if creds is None:
        return grpc.aio.insecure_channel(options.target, options=channel_options)
    return grpc.aio.secure_channel(options.target, creds, options=channel_options)
