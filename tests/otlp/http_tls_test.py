#!/usr/bin/python3
"""OTLP/HTTP over TLS and mTLS (shipper.otlp.ssl, the keys of shipper.server.ssl) on the real
binary, with the certificates tests/hardening/tls_test.py makes: a sender that trusts the CA is
served over HTTPS; with client_authentication: required only one with a certificate from that
CA is, and one without a certificate, with another CA's or in plaintext fails its handshake
while Shipper keeps serving."""
import http.client
import os
import ssl
import sys
import tempfile
import unittest

sys.path.insert(0, "tests/otlp")
sys.path.insert(0, "tests/hardening")
from otlp_harness import OtlpShipper, otlp  # noqa: E402
from tls_test import Pki  # noqa: E402


def request():
    logs, _ = otlp()
    r = logs.ExportLogsServiceRequest()
    r.resource_logs.add().scope_logs.add().log_records.add().body.string_value = "over tls"
    return r.SerializeToString()


class HttpTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.pki = Pki(cls.tmp)

    def start(self, client_authentication):
        d = tempfile.mkdtemp(dir=self.tmp)
        p = self.pki.path
        return OtlpShipper(d, os.path.join(d, "out"),
                           "-E", f"shipper.otlp.ssl.certificate={p('server.crt')}",
                           "-E", f"shipper.otlp.ssl.key={p('server.key')}",
                           "-E", f"shipper.otlp.ssl.certificate_authorities={p('ca.crt')}",
                           "-E", f"shipper.otlp.ssl.client_authentication={client_authentication}",
                           grpc_on=False)

    def post(self, shipper, trust="ca", client=None):
        """The status of one export over HTTPS, or the exception its handshake raised."""
        context = ssl.create_default_context(cafile=self.pki.path(f"{trust}.crt"))
        if client:
            context.load_cert_chain(self.pki.path(f"{client}.crt"), self.pki.path(f"{client}.key"))
        host, port = shipper.http_address.rsplit(":", 1)
        connection = http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
        try:
            connection.request("POST", "/v1/logs", body=request(),
                               headers={"Content-Type": "application/x-protobuf"})
            return connection.getresponse().status
        except (ssl.SSLError, ConnectionError, http.client.HTTPException) as e:
            return e
        finally:
            connection.close()

    def test_tls_serves_a_sender_that_trusts_the_ca(self):
        shipper = self.start("none")
        try:
            self.assertEqual(self.post(shipper), 200)
            self.assertIsInstance(self.post(shipper, trust="other_ca"), ssl.SSLError)
            host, port = shipper.http_address.rsplit(":", 1)
            plain = http.client.HTTPConnection(host, int(port), timeout=10)
            try:
                plain.request("POST", "/v1/logs", body=request(),
                              headers={"Content-Type": "application/x-protobuf"})
                status = plain.getresponse().status
            except (ConnectionError, http.client.HTTPException):
                status = None
            self.assertNotEqual(status, 200, "plaintext served on the TLS listener")
            self.assertEqual(self.post(shipper), 200, "TLS still served after a plaintext try")
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text()[-2000:])

    def test_mtls_required_serves_only_clients_of_the_ca(self):
        shipper = self.start("required")
        try:
            self.assertEqual(self.post(shipper, client="client"), 200)
            self.assertNotEqual(self.post(shipper), 200, "served without a client certificate")
            self.assertNotEqual(self.post(shipper, client="other_client"), 200,
                                "served another CA's client")
            self.assertEqual(self.post(shipper, client="client"), 200)
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text()[-2000:])


if __name__ == "__main__":
    unittest.main(verbosity=2)
