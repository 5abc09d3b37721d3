#!/usr/bin/python3
"""The real OpenTelemetry JS SDK's trace and metric exporters into Shipper.

tests/otlp/js/export_signals.js exports numbered spans, and data points of a counter, a gauge, a
histogram and an exponential histogram, through each of the SDK's three OTLP exporters of the
signal (gRPC, protobuf over HTTP, JSON over HTTP; installed by ./dev from
tests/otlp/js/package-lock.json, SHIPPER_NODE_MODULES) into one Shipper with the file output and
ack: persisted. Every span and every data point must be in the output once, mapped as
shipper/input/otlp/otlp_signals.h says.
"""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, "tests/otlp")
from otlp_harness import OtlpShipper, node_env  # noqa: E402

COUNT = 300
SCRIPT = "tests/otlp/js/export_signals.js"
EXPORTERS = ("grpc", "proto", "http")


class SdkSignalsTest(unittest.TestCase):
    def test_every_span_and_data_point_of_every_exporter_arrives_mapped(self):
        env = node_env()
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        shipper = OtlpShipper(tmp, os.path.join(tmp, "out"))
        try:
            for signal in ("traces", "metrics"):
                for exporter in EXPORTERS:
                    endpoint = (f"http://{shipper.grpc_address}" if exporter == "grpc"
                                else f"http://{shipper.http_address}/v1/{signal}")
                    p = subprocess.run(
                        ["/usr/bin/node", SCRIPT, f"--signal={signal}", f"--exporter={exporter}",
                         f"--endpoint={endpoint}", f"--count={COUNT}", f"--run={exporter}"],
                        env=env, capture_output=True,
                        text=True, timeout=300)
                    self.assertEqual(p.returncode, 0, f"{signal} {exporter}: {p.stdout} {p.stderr}"
                                     + shipper.text()[-3000:])
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text()[-3000:])

        spans = {run: {} for run in EXPORTERS}
        points = {run: {} for run in EXPORTERS}
        for doc in shipper.documents():
            doc.pop("@metadata", None)
            self.assertEqual(doc["resource"]["attributes"]["service.name"], "shipper-sdk-test")
            self.assertEqual(doc["scope"], {"name": "shipper.test.scope", "version": "1.2.3"})
            run, i = doc["attributes"]["run"], doc["attributes"]["seq"]
            if doc["data_stream"]["type"] == "traces":
                self.assertNotIn(i, spans[run], f"{run} span {i} written twice")
                spans[run][i] = True
                self.check_span(doc, i)
            else:
                self.assertEqual(doc["data_stream"],
                                 {"type": "metrics", "dataset": "generic.otel",
                                  "namespace": "default"})
                (name, value), = doc["metrics"].items()
                self.assertNotIn((name, i), points[run], f"{run} point {name} {i} twice")
                points[run][(name, i)] = True
                self.check_point(doc, name, value, i)
        for run in EXPORTERS:
            self.assertEqual(len(spans[run]), COUNT, f"{run}: spans missing")
            self.assertEqual(len(points[run]), 4 * COUNT, f"{run}: data points missing")

    def check_span(self, doc, i):
        where = f"span {i}: {doc}"
        self.assertEqual(doc["data_stream"],
                         {"type": "traces", "dataset": "generic.otel", "namespace": "default"})
        self.assertEqual(doc["name"], f"span {i}", where)
        self.assertEqual(doc["kind"], "Server", where)
        self.assertEqual(doc["duration"], 1000, where)
        self.assertEqual(doc["@timestamp"], "2023-11-14T22:13:20.%09dZ" % i, where)
        self.assertEqual(len(doc["trace_id"]), 32, where)
        self.assertEqual(len(doc["span_id"]), 16, where)
        self.assertEqual(doc["events"], [{"timestamp": "2023-11-14T22:13:20.%09dZ" % (i + 10),
                                          "name": "checkpoint", "attributes": {"seq": i}}], where)
        status = {"code": "Error", "message": "odd"} if i % 2 else {"code": "Ok"}
        self.assertEqual(doc["status"], status, where)

    def check_point(self, doc, name, value, i):
        where = f"{name} {i}: {doc}"
        metric = doc["metric"]
        if name == "requests":
            self.assertEqual(value, i + 1, where)
            self.assertEqual(metric, {"type": "sum", "temporality": "cumulative",
                                      "monotonic": True}, where)
        elif name == "temperature":
            self.assertEqual(value, i + 0.5, where)
            self.assertEqual(metric["type"], "gauge", where)
        elif name == "latency":
            self.assertEqual(metric["type"], "histogram", where)
            self.assertEqual(sum(value["counts"]), 1, where)
            self.assertEqual(doc["data_point"]["count"], 1, where)
            self.assertEqual(doc["data_point"]["sum"], i + 1, where)
            self.assertEqual(sum(doc["data_point"]["bucket_counts"]), 1, where)
            self.assertEqual(len(doc["data_point"]["bucket_counts"]),
                             len(doc["data_point"]["explicit_bounds"]) + 1, where)
        else:
            self.assertEqual(name, "latency.exp", where)
            self.assertEqual(metric["type"], "exponential_histogram", where)
            self.assertEqual(value["counts"], [1], where)
            self.assertEqual(doc["data_point"]["sum"], i + 1, where)
            low, high = sorted([value["values"][0], i + 1])
            self.assertLess(high / low, 2, f"the bucket's midpoint is near the value: {where}")


if __name__ == "__main__":
    unittest.main()
