#!/usr/bin/python3
"""The real OpenTelemetry JS SDK into Shipper, through each of its three OTLP log exporters.

tests/otlp/js/export_logs.js exports 100,000 numbered records through the gRPC exporter, the
protobuf-over-HTTP one and the JSON-over-HTTP one (the SDK's own serialization, batching and
retries; installed by ./dev from tests/otlp/js/package-lock.json, SHIPPER_NODE_MODULES) into one
Shipper with the file output and ack: persisted. Every record must be in the output once, mapped
as the README says, its trace and span ids and 2^53-1 exact. Then our own client (protobuf
messages from proto/otlp) sends int64 attributes at 2^63-1 and -2^63 over gRPC, HTTP protobuf and
HTTP JSON, which no JavaScript number can hold: they must survive exactly.
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, "tests/otlp")
from otlp_harness import OtlpShipper, node_env, otlp, post  # noqa: E402

RECORDS = 100_000
SCRIPT = "tests/otlp/js/export_logs.js"
BASE_NS = 1_700_000_000 * 10**9


def timestamp(ns):
    seconds, nanos = divmod(ns, 10**9)
    day = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return day.strftime("%Y-%m-%dT%H:%M:%S") + ".%09dZ" % nanos


def expected(run, i):
    """The document Shipper writes for record i of `run` (export_logs.js says what it sends)."""
    return {
        "@timestamp": timestamp(BASE_NS + i),
        "observed_timestamp": timestamp(BASE_NS + i + 1_000_000),
        "body": {"text": f"record {i} of {run}"},
        "severity_text": "info",
        "severity_number": 9,
        "event_name": "shipper.test",
        "trace_id": "%032x" % (i + 1),
        "span_id": "%016x" % (i + 1),
        "attributes": {"seq": i, "run": run, "max.safe.int": 2**53 - 1, "ratio": i + 0.5,
                       "ok": i % 2 == 0, "tags": ["a", i], "nested": {"k": "v"}},
        "scope": {"name": "shipper.test.scope", "version": "1.2.3"},
        "data_stream": {"type": "logs", "dataset": "generic.otel", "namespace": "default"},
    }


class SdkTest(unittest.TestCase):
    def test_every_record_of_every_exporter_arrives_mapped(self):
        env = node_env()
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        shipper = OtlpShipper(tmp, os.path.join(tmp, "out"))
        runs = {"grpc": f"http://{shipper.grpc_address}",
                "proto": f"http://{shipper.http_address}/v1/logs",
                "http": f"http://{shipper.http_address}/v1/logs"}
        try:
            for exporter, endpoint in runs.items():
                p = subprocess.run(
                    ["/usr/bin/node", SCRIPT, f"--exporter={exporter}", f"--endpoint={endpoint}",
                     f"--records={RECORDS}", f"--run={exporter}"],
                    env=env, capture_output=True, text=True,
                    timeout=300)
                self.assertEqual(p.returncode, 0, f"{exporter}: {p.stdout} {p.stderr}\n"
                                 + shipper.text()[-3000:])
                print(exporter, p.stdout.strip(), flush=True)
            self.send_int64_extremes(shipper)
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text()[-3000:])

        seen = {run: {} for run in runs}
        extremes = []
        for doc in shipper.documents():
            doc.pop("@metadata", None)
            attributes = doc.get("attributes", {})
            if "extreme" in attributes:
                extremes.append(doc)
                continue
            run, i = attributes["run"], attributes["seq"]
            self.assertNotIn(i, seen[run], f"{run} record {i} written twice")
            resource = doc.pop("resource")
            self.assertEqual(resource["attributes"]["service.name"], "shipper-sdk-test")
            seen[run][i] = True
            if doc != expected(run, i):
                self.assertEqual(doc, expected(run, i), f"{run} record {i}")
        for run in runs:
            self.assertEqual(len(seen[run]), RECORDS, f"{run}: records missing")
        self.assertEqual(len(extremes), 3, extremes)
        for doc in extremes:
            self.assertEqual(doc["attributes"]["max"], 2**63 - 1, doc)
            self.assertEqual(doc["attributes"]["min"], -2**63, doc)
            self.assertEqual(doc["body"], {"structured": 2**63 - 1}, doc)

    def send_int64_extremes(self, shipper):
        """One record per transport whose ints a JavaScript number cannot hold."""
        logs, _ = otlp()
        for transport in ("grpc", "http-protobuf", "http-json"):
            request = logs.ExportLogsServiceRequest()
            record = request.resource_logs.add().scope_logs.add().log_records.add()
            record.body.int_value = 2**63 - 1
            for key, value in (("max", 2**63 - 1), ("min", -2**63)):
                kv = record.attributes.add(key=key)
                kv.value.int_value = value
            record.attributes.add(key="extreme").value.string_value = transport
            if transport == "grpc":
                reply = logs.ExportLogsServiceResponse.FromString(
                    shipper.export_grpc(request.SerializeToString()))
                self.assertFalse(reply.HasField("partial_success"))
                continue
            connection = shipper.http()
            if transport == "http-protobuf":
                status, _, body = post(connection, request.SerializeToString())
                connection.close()
                self.assertEqual((status, body), (200, b""))
                continue
            # OTLP/JSON: 64-bit integers as decimal strings, as protobuf's JSON mapping writes.
            document = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
                "body": {"intValue": str(2**63 - 1)},
                "attributes": [{"key": "max", "value": {"intValue": str(2**63 - 1)}},
                               {"key": "min", "value": {"intValue": str(-2**63)}},
                               {"key": "extreme", "value": {"stringValue": transport}}]}]}]}]}
            status, headers, body = post(connection, json.dumps(document),
                                         content_type="application/json")
            connection.close()
            self.assertEqual((status, json.loads(body)), (200, {}))
            self.assertEqual(headers["content-type"], "application/json")


if __name__ == "__main__":
    unittest.main(verbosity=2)
