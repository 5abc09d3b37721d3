#!/usr/bin/python3
"""TLS and mTLS on the real shipper with certificates that openssl makes for the test: a CA,
the server's certificate, a client certificate from that CA and one from another CA. Every
client that does not belong fails its call cleanly; the server keeps serving those that do."""
import os
import subprocess
import tempfile
import unittest

import grpc

from harness import PUBLISH, SERVING, Bystander, Shipper, health, raw_unary, small_request


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


class Pki:
    """Certificates in `d`: ca, server (localhost, 127.0.0.1), client; other_ca, other_client."""

    def __init__(self, d):
        self.d = d
        ext = self.path("san.ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        for ca in ("ca", "other_ca"):
            openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", self.path(f"{ca}.key"), "-out", self.path(f"{ca}.crt"),
                    "-days", "1", "-subj", f"/CN={ca}")
        for name, ca in (("server", "ca"), ("client", "ca"), ("other_client", "other_ca")):
            openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", self.path(f"{name}.key"), "-out", self.path(f"{name}.csr"),
                    "-subj", f"/CN={name}")
            openssl("x509", "-req", "-in", self.path(f"{name}.csr"), "-CA", self.path(f"{ca}.crt"),
                    "-CAkey", self.path(f"{ca}.key"), "-CAcreateserial", "-days", "1",
                    "-extfile", ext, "-out", self.path(f"{name}.crt"))

    def path(self, name):
        return os.path.join(self.d, name)

    def read(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    def credentials(self, trust="ca", client=None):
        if client is None:
            return grpc.ssl_channel_credentials(self.read(f"{trust}.crt"))
        return grpc.ssl_channel_credentials(self.read(f"{trust}.crt"), self.read(f"{client}.key"),
                                            self.read(f"{client}.crt"))


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.pki = Pki(cls.tmp)

    def start(self, client_authentication, *args):
        d = tempfile.mkdtemp(dir=self.tmp)
        p = self.pki.path
        return Shipper(d, "-E", "shipper.output.discard.enabled=true",
                       "-E", f"shipper.server.ssl.certificate={p('server.crt')}",
                       "-E", f"shipper.server.ssl.key={p('server.key')}",
                       "-E", f"shipper.server.ssl.certificate_authorities={p('ca.crt')}",
                       "-E", f"shipper.server.ssl.client_authentication={client_authentication}",
                       *args)

    def check(self, shipper, credentials, allowed):
        """Publishes once with `credentials` (None: plaintext); expects success or a clean
        UNAVAILABLE."""
        if credentials is None:
            channel = grpc.insecure_channel(shipper.address)
        else:
            channel = grpc.secure_channel(shipper.address, credentials)
        with channel:
            publish = raw_unary(channel, PUBLISH)
            if allowed:
                publish(small_request(shipper.uuid), timeout=10)
                self.assertEqual(health(channel), SERVING)
                return
            with self.assertRaises(grpc.RpcError) as caught:
                publish(small_request(shipper.uuid), timeout=10)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.UNAVAILABLE,
                             caught.exception.details())

    def run_cases(self, client_authentication, cases):
        shipper = self.start(client_authentication)
        pki = self.pki
        bystander = Bystander(shipper.address, shipper.uuid,
                              lambda address, options: grpc.secure_channel(
                                  address, pki.credentials(client="client"), options))
        try:
            for name, credentials, allowed in cases:
                with self.subTest(name):
                    self.check(shipper, credentials, allowed)
        finally:
            bystander.stop()
            self.assertEqual(shipper.stop(), 0, shipper.text())
        self.assertGreater(bystander.ok, 0)
        self.assertEqual(bystander.errors, [])

    def test_tls(self):
        self.run_cases("none", [
            ("client trusting the CA", self.pki.credentials(), True),
            ("plaintext client", None, False),
            ("client trusting another CA", self.pki.credentials(trust="other_ca"), False),
        ])

    def test_mtls_required(self):
        self.run_cases("required", [
            ("client certificate from the CA", self.pki.credentials(client="client"), True),
            ("no client certificate", self.pki.credentials(), False),
            ("client certificate from another CA",
             self.pki.credentials(client="other_client"), False),
            ("plaintext client", None, False),
        ])

    def test_connections_beyond_the_limit_are_refused_over_mtls_too(self):
        """Connections over shipper.server.max_connections meet the same TLS: a client with a
        certificate learns the limit, one without is refused by the handshake."""
        shipper = self.start("required", "-E", "shipper.server.max_connections=1")
        own = [("grpc.use_local_subchannel_pool", 1)]
        credentials = self.pki.credentials(client="client")
        first = grpc.secure_channel(shipper.address, credentials, own)
        second = grpc.secure_channel(shipper.address, credentials, own)
        try:
            raw_unary(first, PUBLISH)(small_request(shipper.uuid), timeout=10)
            with self.assertRaises(grpc.RpcError) as caught:
                raw_unary(second, PUBLISH)(small_request(shipper.uuid), timeout=10)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("shipper.server.max_connections (1)", caught.exception.details())
            self.check(shipper, self.pki.credentials(), False)
            raw_unary(first, PUBLISH)(small_request(shipper.uuid), timeout=10)
        finally:
            first.close()
            second.close()
            self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_mtls_optional(self):
        self.run_cases("optional", [
            ("no client certificate", self.pki.credentials(), True),
            ("client certificate from the CA", self.pki.credentials(client="client"), True),
            ("client certificate from another CA",
             self.pki.credentials(client="other_client"), False),
        ])

    def test_unusable_certificate_stops_the_start_naming_the_key(self):
        run = subprocess.run(
            ["shipper/shipper", "-E", "shipper.server.server=127.0.0.1:0", "-E", "http.port=0",
             "-E", f"shipper.server.ssl.certificate={self.pki.path('server.crt')}",
             "-E", f"shipper.server.ssl.key={self.pki.path('missing.key')}"],
            capture_output=True, text=True, timeout=30)
        # Refused by the checks start and --check_config share (config.h: Preflight): exit 2.
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("'shipper.server.ssl.key': cannot read", run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
