#!/usr/bin/python3
"""The real OpenTelemetry Python SDK into Shipper, through its gRPC and its HTTP (protobuf) OTLP
log exporters.

tests/peers/python/export_logs.py runs in the venv ./dev installs from
tests/peers/python/requirements.txt (SHIPPER_OTEL_PYTHON) and exports 50,000 numbered records
through each exporter (the SDK's own serialization and retries) into one Shipper with the file
output and ack: persisted. Its records are the JS SDK test's, so the JS SDK test's expectation
(tests/otlp/sdk_test.py) says what each must become: every record in the output once, mapped.

Two more runs configure the exporter with nothing but docs/otlp.md's OTEL_EXPORTER_OTLP_*
variables, read from its "The SDKs" snippets: the three signals' as written (gRPC), and the logs
signal's with its HTTP endpoint line and http/protobuf. Only the address is the test's own.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path[:0] = ["tests/otlp", "tests/peers"]
from otlp_harness import OtlpShipper  # noqa: E402
from peer_harness import peer  # noqa: E402
from sdk_test import expected  # noqa: E402  (the mapping of export_logs.js's records)

RECORDS = 50_000
ENV_RECORDS = 5_000  # the documented variables' runs: configuration, not volume
SCRIPT = "tests/peers/python/export_logs.py"


def documented_environment(shipper, protocol):
    """docs/otlp.md's OTEL_* exports, with Shipper's addresses: over gRPC the snippet for the three
    signals as written; over http/protobuf the logs snippet, whose commented HTTP endpoint
    replaces its gRPC one."""
    with open("docs/otlp.md") as f:
        section = f.read().split("## The SDKs", 1)[1]
    snippets = re.findall(r"```sh\n(.*?)```", section, re.S)
    snippet = snippets[0] if protocol == "grpc" else next(
        s for s in snippets if "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT" in s)
    env = {}
    for commented, key, value in re.findall(r"^(# )?export (OTEL_\w+)=(\S+)", snippet, re.M):
        http_endpoint = commented and key == "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
        if (not commented and key not in env) or (http_endpoint and protocol != "grpc"):
            env[key] = (value.replace("127.0.0.1:4317", shipper.grpc_address)
                        .replace("127.0.0.1:4318", shipper.http_address))
    env["OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"] = protocol
    return env


class PythonSdkTest(unittest.TestCase):
    def test_every_record_of_both_exporters_arrives_mapped(self):
        python = peer("SHIPPER_OTEL_PYTHON", "the OpenTelemetry Python SDK")
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        shipper = OtlpShipper(tmp, os.path.join(tmp, "out"))
        runs = {
            "python-grpc": (["--exporter=grpc", f"--endpoint=http://{shipper.grpc_address}"],
                            {}, RECORDS),
            "python-http": (["--exporter=http",
                             f"--endpoint=http://{shipper.http_address}/v1/logs"], {}, RECORDS),
            "python-env-grpc": (["--exporter=env"], documented_environment(shipper, "grpc"),
                                ENV_RECORDS),
            "python-env-http": (["--exporter=env"],
                                documented_environment(shipper, "http/protobuf"), ENV_RECORDS),
        }
        try:
            for run, (args, env, records) in runs.items():
                p = subprocess.run(
                    [python, SCRIPT, *args, f"--records={records}", f"--run={run}"],
                    env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
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
        for run, (_, _, records) in runs.items():
            self.assertEqual(len(seen[run]), records, f"{run}: records missing")


if __name__ == "__main__":
    unittest.main(verbosity=2)
