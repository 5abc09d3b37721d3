#!/usr/bin/python3
"""Wire compatibility with a second gRPC implementation (Python's grpcio).

Stubs are generated from proto/ at test time, as any client of the wire API would do. The test
starts the real shipper on an ephemeral port, publishes 20,000 events carrying every value kind,
follows the PersistedIndex stream until they are persisted, stops the shipper with SIGTERM and
finds every event intact in the file output.
"""
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
from grpc_tools import protoc

EVENTS = 20000
BATCH = 1000


def length_delimited(tag, payload):
    """A length-delimited field as protobuf's wire format writes it (a one-byte tag): for tests
    that write hostile messages directly, faster than the protobuf library builds them."""
    n, length = len(payload), bytearray()
    while n >= 0x80:
        length.append(n & 0x7F | 0x80)
        n >>= 7
    length.append(n)
    return bytes([tag]) + bytes(length) + payload


def generate_stubs(out_dir):
    rc = protoc.main(["protoc", "-I.", "-I/usr/include", f"--python_out={out_dir}",
                      f"--grpc_python_out={out_dir}", "proto/messages.proto", "proto/producer.proto"])
    if rc != 0:
        raise RuntimeError("protoc failed to generate the Python stubs")
    sys.path.insert(0, out_dir)


class Shipper:
    """The real binary, listening on 127.0.0.1 with a port the kernel picks."""

    def __init__(self, tmp, *args):
        self.log_path = os.path.join(tmp, "shipper.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["shipper/shipper", "-E", "shipper.server.server=127.0.0.1:0",
             "-E", "http.port=0", *args],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            m = re.search(r"listening on (\S+) \(uuid ([0-9a-f-]+)\)", self.text())
            if m:
                self.address, self.uuid = m.group(1), m.group(2)
                return
            if self.proc.poll() is not None:
                raise RuntimeError("shipper exited:\n" + self.text())
            time.sleep(0.02)
        raise RuntimeError("shipper did not start:\n" + self.text())

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def peak_rss(self):
        """The most resident memory the process has had, in bytes (VmHWM)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            kib = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
        return int(kib) * 1024

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        self.log.close()
        return code


def make_event(msg, seq):
    """An event with every Value kind, extremes included; returns it and the JSON we expect."""
    e = msg.Event()
    e.timestamp.seconds = 1700000000 + seq
    e.timestamp.nanos = 123456789
    e.source.input_id = "python-input"
    e.source.stream_id = f"stream-{seq % 3}"
    e.data_stream.type = "logs"
    e.data_stream.dataset = "python.test"
    e.data_stream.namespace = "default"
    e.metadata.data["beat"].string_value = "pytest"
    f = e.fields.data
    f["seq"].uint64_value = seq
    f["null"].null_value = msg.NULL_VALUE
    f["f64"].float64_value = seq + 0.25
    f["f32"].float32_value = 1.5
    f["i32"].int32_value = -2147483648
    f["i64"].int64_value = -9223372036854775808 + seq
    f["u32"].uint32_value = 4294967295
    f["u64"].uint64_value = 18446744073709551615 - seq
    f["str"].string_value = f"línea {seq} \"quoted\" \\ \n\t 日本 \U0001F600"
    f["bool"].bool_value = seq % 2 == 0
    f["nan"].float64_value = math.nan
    f["obj"].struct_value.data["deep"].struct_value.data["x"].int32_value = seq
    f["list"].list_value.values.add().string_value = "a"
    f["list"].list_value.values.add().int64_value = 1 << 62
    f["list"].list_value.values.add().null_value = msg.NULL_VALUE
    f["ts"].timestamp_value.seconds = 0
    f["ts"].timestamp_value.nanos = 1
    expected = {
        "seq": seq, "null": None, "f64": seq + 0.25, "f32": 1.5, "i32": -2147483648,
        "i64": -9223372036854775808 + seq, "u32": 4294967295, "u64": 18446744073709551615 - seq,
        "str": f"línea {seq} \"quoted\" \\ \n\t 日本 \U0001F600", "bool": seq % 2 == 0,
        "nan": None, "obj": {"deep": {"x": seq}}, "list": ["a", 1 << 62, None],
        "ts": "1970-01-01T00:00:00.000000001Z",
        "@timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1700000000 + seq))
                      + ".123456789Z",
        "data_stream": {"type": "logs", "dataset": "python.test", "namespace": "default"},
        "@metadata": {"beat": "pytest", "input_id": "python-input",
                      "stream_id": f"stream-{seq % 3}"},
    }
    return e, expected


class WireCompatTest(unittest.TestCase):
    def test_publish_every_value_kind_and_read_back(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        generate_stubs(tmp)
        from proto import messages_pb2 as msg  # noqa: generated above
        from proto import producer_pb2_grpc  # noqa

        out = os.path.join(tmp, "out")
        # One file to read back: 20,000 events pass the default 10 MiB rotation size.
        shipper = Shipper(tmp, "-E", f"shipper.output.file.path={out}",
                          "-E", "shipper.output.file.rotate_every_kb=1048576")
        try:
            stub = producer_pb2_grpc.ProducerStub(grpc.insecure_channel(shipper.address))
            expected = {}
            last_index = 0
            seq = 0
            while seq < EVENTS:
                req = msg.PublishRequest(uuid=shipper.uuid)
                for s in range(seq, min(seq + BATCH, EVENTS)):
                    event, expected[s] = make_event(msg, s)
                    req.events.append(event)
                reply = stub.PublishEvents(req, timeout=30)
                self.assertEqual(reply.uuid, shipper.uuid)
                seq += reply.accepted_count
                if reply.accepted_count:
                    last_index = reply.accepted_index
            self.assertEqual(last_index, EVENTS)

            stream = stub.PersistedIndex(
                msg.PersistedIndexRequest(polling_interval={"nanos": 20_000_000}), timeout=60)
            for reply in stream:
                self.assertEqual(reply.uuid, shipper.uuid)
                if reply.persisted_index >= last_index:
                    stream.cancel()
                    break

            # The standard health service, called with raw bytes as any health prober does:
            # an empty HealthCheckRequest; the reply 08 01 is status SERVING.
            check = grpc.insecure_channel(shipper.address).unary_unary(
                "/grpc.health.v1.Health/Check")
            self.assertEqual(check(b"", timeout=10), b"\x08\x01")

            # The standard health service, called with raw bytes as any health prober does:
            # an empty HealthCheckRequest; the reply 08 01 is status SERVING.
            check = grpc.insecure_channel(shipper.address).unary_unary(
                "/grpc.health.v1.Health/Check")
            self.assertEqual(check(b"", timeout=10), b"\x08\x01")

            with self.assertRaises(grpc.RpcError) as wrong_uuid:
                stub.PublishEvents(msg.PublishRequest(uuid="stale", events=[msg.Event()]))
            self.assertEqual(wrong_uuid.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            with self.assertRaises(grpc.RpcError) as empty:
                stub.PublishEvents(msg.PublishRequest())
            self.assertEqual(empty.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text())

        seen = {}
        with open(os.path.join(out, "shipper.ndjson")) as f:
            for line in f:
                doc = json.loads(line)
                index = doc["@metadata"].pop("index")
                seq = doc["seq"]
                self.assertNotIn(seq, seen, "delivered twice")
                seen[seq] = index
                self.assertEqual(doc, expected[seq])
        self.assertEqual(len(seen), EVENTS)
        self.assertEqual(sorted(seen.values()), list(range(1, EVENTS + 1)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
