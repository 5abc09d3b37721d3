#!/usr/bin/python3
"""The real OpenTelemetry Python SDK into Shipper, through its gRPC and its HTTP (protobuf) OTLP
log exporters.

tests/peers/python/export_logs.py runs in the venv ./dev installs from
tests/peers/python/requirements.txt (SHIPPER_OTEL_PYTHON) and exports 50,000 numbered records
through each exporter (the SDK's own serialization and retries) into one Shipper with the file
output and ack: persisted. Its records are the JS SDK test's, so the JS SDK test's expectation
(tests/otlp/sdk_test.py) says what each must become: every record in the output once, mapped.
"""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path[:0] = ["tests/otlp", "tests/peers"]
from otlp_harness import OtlpShipper  # noqa: E402
from peer_harness import peer  # noqa: E402
from sdk_test import expected  # noqa: E402  (the mapping of export_logs.js's records)

RECORDS = 50_000
SCRIPT = "tests/peers/python/export_logs.py"


class PythonSdkTest(unittest.TestCase):
    def test_every_record_of_both_exporters_arrives_mapped(self):
        python = peer("SHIPPER_OTEL_PYTHON", "the OpenTelemetry Python SDK")
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        shipper = OtlpShipper(tmp, os.path.join(tmp, "out"))
        runs = {"python-grpc": ("grpc", f"http://{shipper.grpc_address}"),
                "python-http": ("http", f"http://{shipper.http_address}/v1/logs")}
        try:
            for run, (exporter, endpoint) in runs.items():
                p = subprocess.run(
                    [python, SCRIPT, f"--exporter={exporter}", f"--endpoint={endpoint}",
                     f"--records={RECORDS}", f"--run={run}"],
                    capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, f"{run}: {p.stdout} {p.stderr[-3000:]}\n"
                                 + shipper.text()[-3000:])
                print(run, p.stdout.strip(), flush=True)
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text()[-3000:])

        seen = {run: set() for run in runs}
        for doc in shipper.documents():
            doc.pop("@metadata", None)
            run, i = doc["attributes"]["run"], doc["attributes"]["seq"]
            self.assertNotIn(i, seen[run], f"{run} record {i} written twice")
            seen[run].add(i)
            resource = doc.pop("resource")["attributes"]
            self.assertEqual((resource["service.name"], resource["telemetry.sdk.language"]),
                             ("shipper-sdk-test", "python"))
            if doc != expected(run, i):
                self.assertEqual(doc, expected(run, i), f"{run} record {i}")
        for run in runs:
            self.assertEqual(len(seen[run]), RECORDS, f"{run}: records missing")


if __name__ == "__main__":
    unittest.main(verbosity=2)
