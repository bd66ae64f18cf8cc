"""TLS (the server verified against a CA, mTLS) and bearer tokens read from a file each time it
changes, against an admitd serving TLS with an authentication configuration."""

import base64
import datetime
import ipaddress
import json
import os
import tempfile
import time

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import admitd
from conftest import QUEUES, Admitd, workload

ISSUER = "https://issuer.test"


def pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def certificate(subject, issuer_name, issuer_key, key, ca=False, server=False):
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder()
         .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
         .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=1))
         .not_valid_after(now + datetime.timedelta(hours=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        b = b.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not ca:
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]),
                            critical=False)
    return b.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(key, subject, kid="k1"):
    header = b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": kid}).encode())
    now = int(time.time())
    claims = b64(json.dumps({"iss": ISSUER, "aud": ["admitd"], "sub": subject, "iat": now,
                             "exp": now + 600}).encode())
    signature = key.sign(("%s.%s" % (header, claims)).encode(), padding.PKCS1v15(),
                         hashes.SHA256())
    return "%s.%s.%s" % (header, claims, b64(signature))


def jwks(key, kid="k1"):
    n = key.public_key().public_numbers()
    as_bytes = lambda i: i.to_bytes((i.bit_length() + 7) // 8, "big")  # noqa: E731
    return json.dumps({"keys": [{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
                                 "n": b64(as_bytes(n.n)), "e": b64(as_bytes(n.e))}]})


@pytest.fixture(scope="module")
def tls_server():
    with tempfile.TemporaryDirectory() as tmp:
        path = lambda name: os.path.join(tmp, name)  # noqa: E731
        ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        server_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        client_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        signer = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        files = {
            "ca.crt": certificate("test-ca", "test-ca", ca_key, ca_key, ca=True),
            "tls.crt": certificate("admitd", "test-ca", ca_key, server_key, server=True),
            "tls.key": pem_key(server_key),
            "client.crt": certificate("platform-team", "test-ca", ca_key, client_key),
            "client.key": pem_key(client_key),
            "jwks.json": jwks(signer).encode(),
            "authn.yaml": ("apiVersion: admitd.io/v1\nkind: AuthenticationConfiguration\njwt:\n"
                           "- issuer: {url: %s, audiences: [admitd]}\n  jwksFile: jwks.json\n"
                           % ISSUER).encode(),
        }
        for name, data in files.items():
            with open(path(name), "wb") as f:
                f.write(data)
        server = Admitd(tmp, ["--tls-cert-file", path("tls.crt"),
                              "--tls-private-key-file", path("tls.key"),
                              "--client-ca-file", path("ca.crt"),
                              "--authentication-config", path("authn.yaml")])
        server.start()
        try:
            yield server, path, signer
        finally:
            server.stop()


def test_a_token_file_is_read_again_when_it_changes(tls_server):
    server, path, signer = tls_server
    token = path("token")
    with open(token, "w") as f:
        f.write(jwt(signer, "alice") + "\n")
    with admitd.Client(server.address, ca_file=path("ca.crt"), token_file=token) as c:
        c.ping()
        c.apply(QUEUES % {"cpu": 4})
        assert c.submit(workload("t1")).metadata.name == "t1"
        # A token signed by a key admitd does not trust: refused, the next call reads it anew.
        stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        with open(token, "w") as f:
            f.write(jwt(stranger, "mallory"))
        with pytest.raises(admitd.AdmitdError) as e:
            c.get("t1", "team")
        assert e.value.code == grpc.StatusCode.UNAUTHENTICATED
        with open(token, "w") as f:
            f.write(jwt(signer, "alice", kid="k1") + "  \n")
        assert c.get("t1", "team").metadata.name == "t1"


def test_mutual_tls_and_what_is_refused(tls_server, monkeypatch):
    server, path, _ = tls_server
    with admitd.Client(server.address, ca_file=path("ca.crt"), cert_file=path("client.crt"),
                       key_file=path("client.key")) as c:
        c.ping()
    # The same, from admitctl's environment variables.
    monkeypatch.setenv("ADMITD_SERVER", server.address)
    monkeypatch.setenv("ADMITD_CA_FILE", path("ca.crt"))
    monkeypatch.setenv("ADMITD_CERT_FILE", path("client.crt"))
    monkeypatch.setenv("ADMITD_KEY_FILE", path("client.key"))
    with admitd.Client() as c:
        assert c.options.secure
        c.ping()
    # Plaintext to a TLS port never connects: a call that is safe to repeat waits for a
    # connection until its timeout; a certificate without its key is refused before any call.
    with admitd.Client(server.address, options=admitd.ConnectionOptions(
            target=server.address), timeout=1) as c:
        with pytest.raises(admitd.AdmitdError) as e:
            c.ping()
        assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        with pytest.raises(admitd.AdmitdError) as e:
            c.release("t1", "team", finished=True)  # not repeated: the failure at once
        assert e.value.code == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(ValueError):
        admitd.Client(server.address, cert_file=path("client.crt"), key_file="")
    with pytest.raises(ValueError):
        admitd.Client(server.address, ca_file=path("missing.crt"))
