#!/usr/bin/python3
"""The OpenTelemetry Collector as Shipper's sender, configured as docs/otlp.md says, through
Shipper's SIGKILLs.

The Collector (tests/peers/otelcol, built by ./dev, SHIPPER_OTELCOL) tails a file of 200,000
generated lines with its filelog receiver and sends them with the documented exporter: the YAML
of docs/otlp.md's section "The Collector's `otlp_grpc` (or `otlp_http`) exporter", read from
that file and given as the Collector's first config file; a second file adds only what a test
must: the receiver, the ports, the queue's directory, no telemetry port. The exporter is chosen by the
argument: grpc (otlp_grpc), http-proto or http-json (otlp_http, its encoding), or http-zstd
(otlp_http, protobuf compressed with zstd, which Shipper decodes itself).

Shipper (ack: persisted, disk queue, file output) is SIGKILLed three times mid-stream and
restarted on the same ports, queue and output. Every line must be in the output; duplicates
(at-least-once) are counted and printed.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path[:0] = ["tests/otlp", "tests/peers"]
from otlp_harness import OtlpShipper, wait_for  # noqa: E402
from peer_harness import FileTail, free_port, peer  # noqa: E402

VARIANT = sys.argv.pop(1) if len(sys.argv) > 1 else "grpc"
LINES = 200_000
KILL_AT = (30_000, 80_000, 130_000)  # distinct lines in the output when Shipper is SIGKILLed
DOC_HEADING = "## The Collector's `otlp_grpc` (or `otlp_http`) exporter"


def readme_collector_config():
    """The YAML block of docs/otlp.md's Collector section, verbatim."""
    with open("docs/otlp.md") as f:
        text = f.read()
    section = text[text.index(DOC_HEADING):]
    return re.search(r"```yaml\n(.*?)```", section, re.S).group(1)


class Output(FileTail):
    """The distinct lines in Shipper's file output, and the documents written, as it grows."""

    def __init__(self, path):
        super().__init__(path)
        self.seen = set()

    def distinct(self):
        for line in self.read():
            self.seen.add(int(json.loads(line)["body"]["text"].split()[1]))
        return len(self.seen)


class CollectorTest(unittest.TestCase):
    def test_every_line_survives_shipper_sigkills(self):
        otelcol = peer("SHIPPER_OTELCOL", "the Collector")
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        log_file = os.path.join(tmp, "app.log")
        with open(log_file, "w") as f:
            for i in range(LINES):
                f.write(f"line {i} of {LINES} " + "x" * 80 + "\n")

        grpc_port, http_port = free_port(), free_port()
        out = os.path.join(tmp, "out")
        args = ("-E", f"shipper.otlp.grpc.server=127.0.0.1:{grpc_port}",
                "-E", f"shipper.otlp.http.server=127.0.0.1:{http_port}",
                "-E", "shipper.otlp.ack=persisted",
                "-E", "shipper.queue.disk.enabled=true",
                "-E", f"shipper.queue.disk.path={os.path.join(tmp, 'queue')}")
        exporter = "otlp_grpc/shipper" if VARIANT == "grpc" else "otlp_http/shipper"
        queue_dir = os.path.join(tmp, "collector-queue")
        os.mkdir(queue_dir)
        overrides = {
            "extensions": {"file_storage/shipper": {"directory": queue_dir}},
            "receivers": {"file_log": {"include": [log_file], "start_at": "beginning"}},
            "exporters": {
                "otlp_grpc/shipper": {"endpoint": f"127.0.0.1:{grpc_port}"},
                "otlp_http/shipper": {"endpoint": f"http://127.0.0.1:{http_port}",
                                      "encoding": "json" if VARIANT == "http-json" else "proto",
                                      **({"compression": "zstd"} if VARIANT == "http-zstd"
                                         else {})},
            },
            "service": {"telemetry": {"metrics": {"level": "none"}},
                        "pipelines": {"logs": {"receivers": ["file_log"],
                                               "exporters": [exporter]}}},
        }
        readme_config, test_config = (os.path.join(tmp, name)
                                      for name in ("readme.yaml", "test.yaml"))
        with open(readme_config, "w") as f:
            f.write(readme_collector_config())
        with open(test_config, "w") as f:
            json.dump(overrides, f)  # JSON is YAML

        shipper = OtlpShipper(tmp, out, *args)
        collector_log = open(os.path.join(tmp, "collector.log"), "w")
        collector = subprocess.Popen(
            [otelcol, f"--config={readme_config}", f"--config={test_config}"],
            stdout=collector_log, stderr=subprocess.STDOUT)
        output = Output(os.path.join(out, "shipper.ndjson"))

        def collector_text():
            with open(collector_log.name) as f:
                return f.read()[-3000:]
        try:
            for at in KILL_AT:
                wait_for(lambda: output.distinct() >= at or collector.poll() is not None, 120,
                         f"{at} lines in the output")
                self.assertIsNone(collector.poll(), collector_text())
                shipper.proc.send_signal(signal.SIGKILL)
                shipper.proc.wait()
                shipper.log.close()
                print(f"SIGKILL at {output.distinct()} lines in the output", flush=True)
                shipper = OtlpShipper(tmp, out, *args)
            try:
                wait_for(lambda: output.distinct() == LINES or collector.poll() is not None,
                         180, "every line in the output")
            except AssertionError as e:
                self.fail(f"{e}: {LINES - len(output.seen)} lines missing, the first "
                          f"{sorted(set(range(LINES)) - output.seen)[:10]}\n{collector_text()}")
            self.assertIsNone(collector.poll(), collector_text())
        finally:
            collector.send_signal(signal.SIGTERM)
            collector.wait(timeout=60)
            collector_log.close()
            self.assertEqual(shipper.stop(), 0, shipper.text()[-3000:])
        output.distinct()
        self.assertEqual(len(output.seen), LINES,
                         f"{LINES - len(output.seen)} lines missing\n" + collector_text())
        print(f"{VARIANT}: {LINES} lines delivered, {output.lines - LINES} duplicates",
              flush=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
