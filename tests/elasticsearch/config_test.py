#!/usr/bin/python3
"""The Elasticsearch output's keys through `shipper --check_config`: every mistake refused at
once, each naming its key; a good config passes."""
import os
import subprocess
import tempfile
import unittest

KEYS = "shipper.output.elasticsearch."


def check_config(*settings):
    args = ["shipper/shipper", "--check_config", "-E", f"{KEYS}enabled=true"]
    for s in settings:
        args += ["-E", f"{KEYS}{s}"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


class ConfigTest(unittest.TestCase):
    def refused(self, *settings):
        code, out = check_config(*settings)
        self.assertNotEqual(code, 0, out)
        return out

    def test_a_good_config_passes(self):
        code, out = check_config("hosts=[http://es1:9200, 'https://es2/prefix']",
                                 "api_key=id:key", "compression_level=9", "worker=2",
                                 "pipeline='%{[fields.pipeline]:default}'",
                                 "headers=['X-Opaque-Id: shipper']")
        self.assertEqual(code, 0, out)

    def test_api_key_and_username_together(self):
        out = self.refused("api_key=id:key", "username=elastic", "password=x")
        self.assertIn(f"{KEYS}api_key and {KEYS}username/{KEYS}password are both set", out)

    def test_username_without_password(self):
        self.assertIn(f"{KEYS}username and {KEYS}password go together",
                      self.refused("username=elastic"))

    def test_api_key_not_id_colon_key(self):
        self.assertIn(f"{KEYS}api_key: expected id:key", self.refused("api_key=justakey"))

    def test_bad_urls(self):
        out = self.refused("hosts=[localhost:9200, 'ftp://es:21', 'http://u:p@es:9200', "
                           "'http://es:9200/?q=1']")
        self.assertIn(f"{KEYS}hosts: 'localhost:9200' is not a URL", out)
        self.assertIn(f"{KEYS}hosts: 'ftp://es:21' is not http or https", out)
        self.assertIn("holds credentials", out)
        self.assertIn("has a query or fragment", out)

    def test_compression_level_10(self):
        self.assertIn(f"{KEYS}compression_level: 10 is above 9",
                      self.refused("compression_level=10"))

    def test_every_problem_at_once(self):
        out = self.refused("compression_level=10", "username=u", "index=%{[unterminated",
                           "headers=['no colon']", "ssl.certificate=/x.crt", "timeout=0")
        for key in ("compression_level", "username", "index", "headers", "ssl.certificate",
                    "timeout"):
            self.assertIn(KEYS + key, out)

    def test_wrong_types_and_choices(self):
        self.assertIn(f"{KEYS}ssl.verification_mode", self.refused("ssl.verification_mode=some"))
        self.assertIn(f"{KEYS}bulk_max_size", self.refused("bulk_max_size=0"))

    def test_pem_files_must_be_readable(self):
        d = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        not_pem = os.path.join(d, "ca.crt")
        with open(not_pem, "w") as f:
            f.write("not a certificate\n")
        out = self.refused(f"ssl.certificate_authorities={not_pem}",
                           f"ssl.certificate={d}/missing.crt", f"ssl.key={d}/missing.key")
        for key in ("ssl.certificate_authorities", "ssl.certificate", "ssl.key"):
            self.assertIn(KEYS + key, out)


if __name__ == "__main__":
    unittest.main()
