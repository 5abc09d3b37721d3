#!/usr/bin/python3
"""TLS to the fake Elasticsearch with certificates openssl makes here (trusting the CA, and
verification_mode: none), basic and API-key authentication, and wrong credentials: retried with
an ERROR line naming the keys to fix, never dropped."""
import os
import sys
import unittest

from es_testing import Publisher, event, start_shipper, tmpdir, wait_for
from fake_elasticsearch import FakeElasticsearch

sys.path.insert(0, "tests/hardening")
from tls_test import Pki  # noqa: E402  (the CA and certificates the hardening tests use)

KEYS = "shipper.output.elasticsearch."


class TlsAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pki = Pki(tmpdir())

    def deliver(self, fake, url, *args, count=200):
        """Publishes `count` events and waits until they are persisted; the shipper's log."""
        d = tmpdir()
        shipper = start_shipper(d, url, *args)
        publisher = Publisher(shipper)
        try:
            publisher.deliver([event(publisher.msg, seq) for seq in range(count)], timeout=60)
        finally:
            publisher.close()
            self.assertEqual(shipper.stop(), 0, shipper.text())
        self.assertEqual(sum(len(docs) for docs in fake.documents().values()), count)
        return shipper.text()

    def tls_fake(self, **kwargs):
        return FakeElasticsearch(tls=(self.pki.path("server.crt"), self.pki.path("server.key")),
                                 **kwargs)

    def test_tls_trusting_the_ca(self):
        fake = self.tls_fake()
        try:
            self.deliver(fake, fake.url("https"),
                         "-E", f"{KEYS}ssl.certificate_authorities={self.pki.path('ca.crt')}")
        finally:
            fake.stop()

    def test_tls_without_verification(self):
        fake = self.tls_fake()
        try:
            self.deliver(fake, fake.url("https"), "-E", f"{KEYS}ssl.verification_mode=none")
        finally:
            fake.stop()

    def test_tls_with_another_ca_is_refused_and_retried(self):
        fake = self.tls_fake()
        d = tmpdir()
        shipper = start_shipper(d, fake.url("https"), "-E", "shipper.shutdown_timeout=1s", "-E",
                                f"{KEYS}ssl.certificate_authorities={self.pki.path('other_ca.crt')}")
        publisher = Publisher(shipper)
        try:
            publisher.publish([event(publisher.msg, seq) for seq in range(10)])
            wait_for(lambda: shipper.text().count("output failed, retrying") >= 2, "retries")
            self.assertEqual(publisher.persisted(), 0)
            self.assertIn("certificate", shipper.text())
        finally:
            publisher.close()
            shipper.stop()
            fake.stop()
        self.assertEqual(fake.documents(), {})

    def test_basic_and_api_key_authentication(self):
        fake = FakeElasticsearch(basic=("elastic", "s3cret"))
        try:
            self.deliver(fake, fake.url(), "-E", f"{KEYS}username=elastic",
                         "-E", f"{KEYS}password=s3cret")
        finally:
            fake.stop()
        fake = FakeElasticsearch(api_key="key-id:key-secret")
        try:
            self.deliver(fake, fake.url(), "-E", f"{KEYS}api_key=key-id:key-secret",
                         "-E", f"{KEYS}headers=['X-Opaque-Id: shipper-test']")
        finally:
            fake.stop()

    def test_wrong_credentials_are_retried_with_an_error_never_dropped(self):
        fake = FakeElasticsearch(basic=("elastic", "right"))
        d = tmpdir()
        shipper = start_shipper(d, fake.url(), "-E", f"{KEYS}username=elastic",
                                "-E", f"{KEYS}password=wrong")
        publisher = Publisher(shipper)
        try:
            publisher.publish([event(publisher.msg, seq) for seq in range(100)])
            wait_for(lambda: fake.stat("unauthorized") >= 3, "three refused attempts")
            self.assertEqual(publisher.persisted(), 0)
            log = shipper.text()
            self.assertRegex(log, r"E\d+ .*answered 401 \(unauthorized\): check "
                                  r"shipper.output.elasticsearch.username and "
                                  r"shipper.output.elasticsearch.password")
            fake.set(basic=("elastic", "wrong"))  # the cluster's password changed to ours
            publisher.await_all()
        finally:
            publisher.close()
            self.assertEqual(shipper.stop(), 0, shipper.text())
            fake.stop()
        self.assertEqual(sum(len(docs) for docs in fake.documents().values()), 100)
        self.assertFalse(os.path.getsize(os.path.join(d, "dead.ndjson")))


if __name__ == "__main__":
    unittest.main()
