#!/usr/bin/python3
"""The disk queue in the real shipper: what is reported persisted survives SIGKILL and an output
that is down, and is delivered after the restart; the queue's files shrink back once it is.
Publishes with Python's grpcio, following the wire protocol (resend what was not accepted)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import grpc

sys.path.insert(0, "tests/python")
from wire_compat_test import Shipper, generate_stubs  # noqa: E402

DEAD_REDIS = "127.0.0.1:1"  # nothing listens: the output is down


class DiskQueueRestartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        generate_stubs(cls.tmp)
        from proto import messages_pb2, producer_pb2_grpc  # noqa: generated above
        cls.msg, cls.stubs = messages_pb2, producer_pb2_grpc

    def start(self, queue_dir, *args):
        return Shipper(self.tmp, "-E", "shipper.queue.disk.enabled=true",
                       "-E", f"shipper.queue.disk.path={queue_dir}",
                       "-E", "shipper.queue.disk.max_size=64MiB",
                       "-E", "shipper.output.backoff.init=50ms",
                       "-E", "shipper.output.backoff.max=200ms",
                       "-E", "shipper.shutdown_timeout=2s", *args)

    def publish(self, shipper, first, n):
        """Publishes events seq first..first+n-1, resending what a reply did not accept; returns
        the last accepted index."""
        with grpc.insecure_channel(shipper.address) as channel:
            stub = self.stubs.ProducerStub(channel)
            seq, last = first, 0
            while seq < first + n:
                req = self.msg.PublishRequest(uuid=shipper.uuid)
                for s in range(seq, min(seq + 500, first + n)):
                    req.events.add().fields.data["seq"].int64_value = s
                reply = stub.PublishEvents(req, timeout=30)
                seq += reply.accepted_count
                if reply.accepted_count:
                    last = reply.accepted_index
                else:
                    time.sleep(0.01)
            return last

    def persisted(self, shipper, index, timeout=30):
        """Waits until the persisted index reaches `index`; returns it."""
        with grpc.insecure_channel(shipper.address) as channel:
            stub = self.stubs.ProducerStub(channel)
            request = self.msg.PersistedIndexRequest()
            request.polling_interval.nanos = 10_000_000
            for reply in stub.PersistedIndex(request, timeout=timeout):
                if reply.persisted_index >= index:
                    return reply.persisted_index
        return 0

    def metric(self, shipper, name):
        port = int(re.search(r"metrics on http://\S+:(\d+)/metrics", shipper.text()).group(1))
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
        for line in page.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"{name} not on the page")

    def test_persisted_events_survive_sigkill_with_the_output_down(self):
        queue_dir = os.path.join(self.tmp, "queue")
        out_dir = os.path.join(self.tmp, "out")
        n = 20000
        # The output is down: with the disk queue, events count as persisted once synced.
        down = self.start(queue_dir, "-E", "shipper.output.redis.enabled=true",
                          "-E", f"shipper.output.redis.hosts={DEAD_REDIS}")
        try:
            last = self.publish(down, 1, n)
            self.assertEqual(last, n)
            self.assertGreaterEqual(self.persisted(down, n), n)
            self.assertGreater(self.metric(down, "shipper_queue_disk_bytes"), 0)
            self.assertGreaterEqual(self.metric(down, "shipper_queue_disk_segments"), 1)
        finally:
            down.proc.send_signal(signal.SIGKILL)
            down.proc.wait(timeout=30)
            down.log.close()
        # Restarted with an output that works: everything reported persisted is delivered.
        up = self.start(queue_dir, "-E", f"shipper.output.file.path={out_dir}",
                        "-E", "shipper.output.file.rotate_every_kb=1048576")
        try:
            deadline = time.time() + 60
            seen = set()
            path = os.path.join(out_dir, "shipper.ndjson")
            while time.time() < deadline and len(seen) < n:
                time.sleep(0.1)
                if os.path.exists(path):
                    with open(path) as f:
                        seen = {json.loads(line)["seq"] for line in f if line.endswith("\n")}
            self.assertEqual(seen, set(range(1, n + 1)))
            # Delivered segments are deleted: the files shrink back.
            deadline = time.time() + 30
            while time.time() < deadline and self.metric(up, "shipper_queue_disk_bytes") > 64 << 10:
                time.sleep(0.1)
            self.assertLessEqual(self.metric(up, "shipper_queue_disk_bytes"), 64 << 10)
        finally:
            self.assertEqual(up.stop(), 0, up.text())

    def test_an_outage_longer_than_the_queue_fills_it_then_everything_is_delivered(self):
        queue_dir = os.path.join(self.tmp, "full-queue")
        out_dir = os.path.join(self.tmp, "full-out")
        small = ("-E", "shipper.queue.disk.max_size=2MiB", "-E", "shipper.queue.disk.segment_size=256KiB")
        down = ("-E", "shipper.output.redis.enabled=true", "-E", f"shipper.output.redis.hosts={DEAD_REDIS}")
        accepted = 0
        for attempt in range(2):  # the output stays down across one restart
            shipper = self.start(queue_dir, *small, *down)
            try:
                with grpc.insecure_channel(shipper.address) as channel:
                    stub = self.stubs.ProducerStub(channel)
                    # Until the files are near max_size and a reply accepts only part of a
                    # request (a full write buffer also does that, earlier).
                    full = False
                    deadline = time.time() + 60
                    while not full and time.time() < deadline:
                        req = self.msg.PublishRequest(uuid=shipper.uuid)
                        for s in range(accepted + 1, accepted + 501):
                            e = req.events.add()
                            e.fields.data["seq"].int64_value = s
                            e.fields.data["pad"].string_value = "y" * 500
                        reply = stub.PublishEvents(req, timeout=30)
                        accepted += reply.accepted_count  # the rest is resent next time
                        if reply.accepted_count < 500:
                            full = self.metric(shipper, "shipper_queue_disk_bytes") > 1536 << 10
                            time.sleep(0.01)
                    self.assertTrue(full, "the queue never filled")
                    self.assertGreaterEqual(self.persisted(shipper, reply.accepted_index),
                                            reply.accepted_index)
            finally:
                self.assertEqual(shipper.stop(), 0, shipper.text())
        up = self.start(queue_dir, *small, "-E", f"shipper.output.file.path={out_dir}",
                        "-E", "shipper.output.file.rotate_every_kb=1048576")
        try:
            path = os.path.join(out_dir, "shipper.ndjson")
            seen = set()
            deadline = time.time() + 60
            while time.time() < deadline and len(seen) < accepted:
                time.sleep(0.1)
                if os.path.exists(path):
                    with open(path) as f:
                        seen = {json.loads(line)["seq"] for line in f if line.endswith("\n")}
            self.assertEqual(seen, set(range(1, accepted + 1)))
            deadline = time.time() + 30
            while time.time() < deadline and self.metric(up, "shipper_queue_disk_bytes") > 256 << 10:
                time.sleep(0.1)
            self.assertLessEqual(self.metric(up, "shipper_queue_disk_bytes"), 256 << 10)
        finally:
            self.assertEqual(up.stop(), 0, up.text())

    def test_check_config_refuses_a_queue_path_that_cannot_be(self):
        blocker = os.path.join(self.tmp, "a-file")
        with open(blocker, "w") as f:
            f.write("x")
        out = subprocess.run(["shipper/shipper", "--check_config",
                              "-E", "shipper.queue.disk.enabled=true",
                              "-E", f"shipper.queue.disk.path={blocker}/queue"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
        self.assertIn("shipper.queue.disk.path", out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
