#!/usr/bin/python3
"""The README's "Publish events in 30 seconds (Python)" runs as written.

The test reads the snippet from README.md, so the two cannot drift, and runs it with bash against
the real shipper. Only what a second Shipper on this machine needs is changed: the address
(127.0.0.1:50051 becomes the ephemeral one Shipper picked), the stubs' folder (a temporary one
instead of /tmp/stubs) and ./data (the file output writes into the test's folder).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, "tests/python")
from wire_compat_test import Shipper  # noqa: E402


def snippet():
    with open("README.md") as f:
        section = f.read()
    section = section.split("## Publish events in 30 seconds (Python)", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


class ReadmeQuickStartTest(unittest.TestCase):
    def test_snippet_publishes_and_sees_it_persisted(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree("proto", os.path.join(tmp, "proto"))
            shipper = Shipper(tmp, "-E", f"shipper.output.file.path={tmp}/data")
            try:
                script = (snippet().replace("127.0.0.1:50051", shipper.address)
                          .replace("/tmp/stubs", os.path.join(tmp, "stubs")))
                run = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp,
                                     capture_output=True, text=True, timeout=60)
            finally:
                self.assertEqual(shipper.stop(), 0, shipper.text())
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertRegex(run.stdout, r"accepted 3 up to index 3 uuid " + shipper.uuid)
            self.assertRegex(run.stdout, r"persisted up to 3")
            docs = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
            self.assertEqual([d["message"] for d in docs], ["hello 0", "hello 1", "hello 2"])
            self.assertTrue(all(d["count"] == 18446744073709551615 for d in docs))


if __name__ == "__main__":
    unittest.main()
