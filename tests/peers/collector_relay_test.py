#!/usr/bin/python3
"""The OpenTelemetry Collector as a relay of all three signals: the JS SDK -> the Collector ->
Shipper.

One Collector (tests/peers/otelcol, SHIPPER_OTELCOL) takes OTLP/gRPC with its otlp receiver and
sends logs, traces and metrics on with its otlp_grpc exporter to Shipper (ack: persisted, file
output), all three pipelines in one config. The JS SDK (tests/otlp/js, SHIPPER_NODE_MODULES)
exports numbered log records, spans and data points to the Collector. Every one of them must
reach Shipper's output once, as its signal's document.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path[:0] = ["tests/otlp", "tests/peers"]
from otlp_harness import OtlpShipper, node_env, wait_for  # noqa: E402
from peer_harness import free_port, peer  # noqa: E402

COUNT = 200


class CollectorRelayTest(unittest.TestCase):
    def test_logs_traces_and_metrics_through_the_collector(self):
        otelcol = peer("SHIPPER_OTELCOL", "the Collector")
        node = node_env()
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        shipper = OtlpShipper(tmp, os.path.join(tmp, "out"))
        receiver = free_port()
        config = os.path.join(tmp, "collector.yaml")
        pipeline = {"receivers": ["otlp"], "exporters": ["otlp_grpc/shipper"]}
        with open(config, "w") as f:
            json.dump({  # JSON is YAML
                "receivers": {"otlp": {"protocols": {"grpc": {"endpoint":
                                                              f"127.0.0.1:{receiver}"}}}},
                "exporters": {"otlp_grpc/shipper": {"endpoint": shipper.grpc_address,
                                                    "tls": {"insecure": True},
                                                    "timeout": "30s"}},
                "service": {"telemetry": {"metrics": {"level": "none"}},
                            "pipelines": {"logs": pipeline, "traces": pipeline,
                                          "metrics": pipeline}},
            }, f)
        collector_log = open(os.path.join(tmp, "collector.log"), "w")
        collector = subprocess.Popen([otelcol, f"--config={config}"], stdout=collector_log,
                                     stderr=subprocess.STDOUT)

        def collector_text():
            with open(collector_log.name) as f:
                return f.read()[-3000:]
        endpoint = f"http://127.0.0.1:{receiver}"
        runs = [["tests/otlp/js/export_logs.js", f"--records={COUNT}"],
                ["tests/otlp/js/export_signals.js", "--signal=traces", f"--count={COUNT}"],
                ["tests/otlp/js/export_signals.js", "--signal=metrics", f"--count={COUNT}"]]
        expected = {"logs": COUNT, "traces": COUNT, "metrics": 4 * COUNT}

        def counts():
            seen = {"logs": set(), "traces": set(), "metrics": set()}
            for doc in shipper.documents():
                kind, seq = doc["data_stream"]["type"], doc["attributes"]["seq"]
                seen[kind].add((next(iter(doc.get("metrics", {"": 0}))), seq))
            return {kind: len(keys) for kind, keys in seen.items()}
        try:
            for script, *args in runs:
                # The receiver may not listen yet: the SDK's exporter retries until it does.
                p = subprocess.run(["/usr/bin/node", script, "--exporter=grpc",
                                    f"--endpoint={endpoint}", "--run=relay", *args],
                                   env=node, capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, f"{script}: {p.stdout} {p.stderr}\n"
                                 + collector_text())
            wait_for(lambda: counts() == expected or collector.poll() is not None, 120,
                     "every record, span and data point in the output")
            self.assertIsNone(collector.poll(), collector_text())
        finally:
            collector.send_signal(signal.SIGTERM)
            collector.wait(timeout=60)
            collector_log.close()
            self.assertEqual(shipper.stop(), 0, shipper.text()[-3000:])
        self.assertEqual(counts(), expected, collector_text())
        for doc in shipper.documents():
            self.assertEqual(doc["resource"]["attributes"]["service.name"], "shipper-sdk-test")
            if doc["data_stream"]["type"] == "traces":
                self.assertEqual(doc["name"], f"span {doc['attributes']['seq']}", doc)
                self.assertEqual(doc["kind"], "Server", doc)


if __name__ == "__main__":
    unittest.main(verbosity=2)
