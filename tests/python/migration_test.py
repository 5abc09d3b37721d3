#!/usr/bin/python3
"""Drop-in for the archived Go shipper (elastic-agent-shipper): its sample config file starts
Shipper unchanged, the previous release's spellings still work with a WARNING, keys that mean
nothing here are taken and said so, and shipper.strict_mode refuses what the archived shipper
refused, in its words. Publishes with Python's grpcio, a second gRPC implementation."""
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

sys.path.insert(0, "tests/python")
from wire_compat_test import Shipper, generate_stubs  # noqa: E402

# The sample config that ships in the archived shipper's repository, verbatim.
SAMPLE = "tests/config/elastic-agent-shipper.yml"


class MigrationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        generate_stubs(cls.tmp)
        from proto import messages_pb2, producer_pb2_grpc  # noqa: generated above
        cls.msg, cls.grpc_stubs = messages_pb2, producer_pb2_grpc
        cls.sample = SAMPLE

    def full_event(self):
        e = self.msg.Event()
        e.timestamp.GetCurrentTime()
        e.source.input_id = "filestream-1"
        e.data_stream.type, e.data_stream.dataset, e.data_stream.namespace = "logs", "app", "prod"
        e.fields.data["message"].string_value = "hello from the archived shipper's client"
        return e

    def test_sample_config_passes_check_config(self):
        out = subprocess.run(["shipper/shipper", "--check_config", "-c", self.sample],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("output console (stdout)", out.stdout)
        self.assertIn("listen on unix:///tmp/grpc.socket", out.stdout)

    def test_sample_config_starts_and_serves_on_its_socket_into_the_console(self):
        # The file as it is; only the metrics port is made free for the test (8282 may be taken).
        log_path = os.path.join(self.tmp, "sample.log")
        with open(log_path, "w") as log:
            proc = subprocess.Popen(["shipper/shipper", "-c", self.sample, "-E", "http.port=0"],
                                    stdout=log, stderr=subprocess.STDOUT)
        try:
            text = ""
            deadline = time.time() + 30
            while time.time() < deadline and "listening on" not in text:
                time.sleep(0.05)
                with open(log_path) as f:
                    text = f.read()
                self.assertIsNone(proc.poll(), text)
            m = re.search(r"listening on (\S+) \(uuid ([0-9a-f-]+)\)", text)
            self.assertIsNotNone(m, text)
            self.assertEqual(m.group(1), "unix:///tmp/grpc.socket")
            self.assertIn("http.expvar.enabled: Go's expvar has no equivalent", text)
            req = self.msg.PublishRequest(uuid=m.group(2))
            req.events.append(self.full_event())
            with grpc.insecure_channel(m.group(1)) as channel:
                reply = self.grpc_stubs.ProducerStub(channel).PublishEvents(req, timeout=10)
            self.assertEqual(reply.accepted_count, 1)
            deadline = time.time() + 10
            while time.time() < deadline and "hello from the archived" not in text:
                time.sleep(0.05)
                with open(log_path) as f:
                    text = f.read()
            self.assertIn('"message":"hello from the archived shipper\'s client"', text)
        finally:
            proc.terminate()
            self.assertEqual(proc.wait(timeout=30), 0)

    def test_previous_spellings_start_with_a_warning_naming_the_new_key(self):
        shipper = Shipper(self.tmp, "-E", "shipper.http.port=0", "-E", "shipper.metrics.period=1m",
                          "-E", "shipper.output.discard.enabled=true", "-E", "monitoring.enabled=true")
        try:
            text = shipper.text()
            self.assertRegex(text, r"W\d+ .*shipper.http.port is deprecated: write http.port")
            self.assertRegex(
                text, r"W\d+ .*shipper.metrics.period is deprecated: write logging.metrics.period")
            self.assertRegex(text, r"I\d+ .*monitoring.enabled is the archived shipper's")
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_type_must_name_the_enabled_output(self):
        out = subprocess.run(["shipper/shipper", "--check_config", "-E", "type=elasticsearch",
                              "-E", "shipper.output.console.enabled=true"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("type is 'elasticsearch' but the enabled output is 'console'", out.stderr)

    def test_strict_mode_refuses_what_the_archived_shipper_refused_in_its_words(self):
        cases = {
            "invalid nil Timestamp": lambda e: e.ClearField("timestamp"),
            "source: cannot be nil": lambda e: e.ClearField("source"),
            "source: input_id is a required field": lambda e: e.source.ClearField("input_id"),
            "datastream: cannot be nil": lambda e: e.ClearField("data_stream"),
            "datastream: dataset is a required field; namespace is a required field; type is a "
            "required field": lambda e: e.data_stream.Clear() or e.data_stream.SetInParent(),
        }
        for strict in (True, False):
            shipper = Shipper(self.tmp, "-E", f"shipper.strict_mode={str(strict).lower()}",
                              "-E", "shipper.output.discard.enabled=true")
            try:
                with grpc.insecure_channel(shipper.address) as channel:
                    stub = self.grpc_stubs.ProducerStub(channel)
                    for words, spoil in cases.items():
                        req = self.msg.PublishRequest(uuid=shipper.uuid)
                        req.events.append(self.full_event())
                        bad = req.events.add()
                        bad.CopyFrom(self.full_event())
                        spoil(bad)
                        if not strict:
                            self.assertEqual(stub.PublishEvents(req, timeout=10).accepted_count, 2)
                            continue
                        with self.assertRaises(grpc.RpcError) as refused:
                            stub.PublishEvents(req, timeout=10)
                        self.assertEqual(refused.exception.code(),
                                         grpc.StatusCode.INVALID_ARGUMENT, words)
                        self.assertEqual(refused.exception.details(),
                                         f"event 1: {words} (shipper.strict_mode is on)")
                    # A full event passes either way.
                    req = self.msg.PublishRequest(uuid=shipper.uuid)
                    req.events.append(self.full_event())
                    self.assertEqual(stub.PublishEvents(req, timeout=10).accepted_count, 1)
            finally:
                self.assertEqual(shipper.stop(), 0, shipper.text())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
