#!/usr/bin/python3
"""Chaos on the disk queue: a client that follows the wire protocol publishes under load while
the real shipper is SIGKILLed at random moments, 20 times in a row, and restarted on the same
queue. Every event the client was told is persisted must reach the output; events accepted but
not persisted are the client's to resend (on the new uuid it rewinds to its persisted index).
Duplicates are counted and reported, not forbidden: delivery is at-least-once."""
import collections
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
import unittest

import grpc

sys.path.insert(0, "tests/python")
from wire_compat_test import Shipper, generate_stubs  # noqa: E402

KILLS = 20


class Client:
    """Publishes seq numbers in order to one shipper process until it dies. Tracks which of its
    events that process reported persisted (PersistedIndex maps back to seqs through the
    replies' indexes)."""

    def __init__(self, msg, stubs, shipper, first_seq):
        self.msg, self.stubs, self.shipper = msg, stubs, shipper
        self.next_seq = first_seq
        self.ranges = []  # (first index, first seq, count) of accepted runs, ascending
        self.persisted_seq = first_seq - 1  # every seq up to here is persisted
        self.lock = threading.Lock()
        self.channel = grpc.insecure_channel(shipper.address)
        self.threads = [threading.Thread(target=self.publish_loop, daemon=True),
                        threading.Thread(target=self.follow_loop, daemon=True)]
        for t in self.threads:
            t.start()

    def publish_loop(self):
        stub = self.stubs.ProducerStub(self.channel)
        try:
            while True:
                req = self.msg.PublishRequest(uuid=self.shipper.uuid)
                for s in range(self.next_seq, self.next_seq + 200):
                    e = req.events.add()
                    e.fields.data["seq"].int64_value = s
                    e.fields.data["pad"].string_value = "x" * 200
                reply = stub.PublishEvents(req, timeout=10)
                if reply.accepted_count:
                    with self.lock:
                        first_index = reply.accepted_index - reply.accepted_count + 1
                        self.ranges.append((first_index, self.next_seq, reply.accepted_count))
                        self.next_seq += reply.accepted_count
        except grpc.RpcError:
            return  # the process died: the next one takes over

    def follow_loop(self):
        stub = self.stubs.ProducerStub(self.channel)
        request = self.msg.PersistedIndexRequest()
        request.polling_interval.nanos = 5_000_000
        try:
            for reply in stub.PersistedIndex(request, timeout=120):
                with self.lock:
                    for first_index, first_seq, count in self.ranges:
                        if first_index <= reply.persisted_index:
                            covered = min(count, reply.persisted_index - first_index + 1)
                            self.persisted_seq = max(self.persisted_seq, first_seq + covered - 1)
        except grpc.RpcError:
            return

    def join(self):
        for t in self.threads:
            t.join(timeout=30)
        self.channel.close()


class DiskQueueChaosTest(unittest.TestCase):
    def test_sigkill_at_random_moments_loses_nothing_reported_persisted(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        generate_stubs(tmp)
        from proto import messages_pb2, producer_pb2_grpc  # noqa: generated above
        queue_dir, out_dir = os.path.join(tmp, "queue"), os.path.join(tmp, "out")
        args = ("-E", "shipper.queue.disk.enabled=true", "-E", f"shipper.queue.disk.path={queue_dir}",
                "-E", "shipper.queue.disk.max_size=32MiB", "-E", f"shipper.output.file.path={out_dir}",
                "-E", "shipper.output.file.rotate_every_kb=1048576")
        rng = random.Random(int(os.environ.get("CHAOS_SEED", time.time())))
        persisted_seq = 0  # what the client was told is persisted, over every process
        for kill in range(KILLS):
            shipper = Shipper(tmp, *args)
            # The client rewinds to its persisted index: a new process has a new uuid.
            client = Client(messages_pb2, producer_pb2_grpc, shipper, persisted_seq + 1)
            time.sleep(rng.uniform(0.2, 1.0))
            shipper.proc.send_signal(signal.SIGKILL)
            shipper.proc.wait(timeout=30)
            shipper.log.close()
            client.join()
            persisted_seq = client.persisted_seq
        # One last process, stopped gracefully after the client caught up.
        shipper = Shipper(tmp, *args)
        client = Client(messages_pb2, producer_pb2_grpc, shipper, persisted_seq + 1)
        deadline = time.time() + 60
        while time.time() < deadline and client.persisted_seq < persisted_seq + 1000:
            time.sleep(0.05)
        self.assertEqual(shipper.stop(), 0, shipper.text())
        client.join()
        persisted_seq = client.persisted_seq

        counts = collections.Counter()
        with open(os.path.join(out_dir, "shipper.ndjson")) as f:
            for line in f:
                counts[json.loads(line)["seq"]] += 1
        missing = [s for s in range(1, persisted_seq + 1) if s not in counts]
        duplicates = sum(c - 1 for c in counts.values())
        print(f"chaos: {KILLS} SIGKILLs, {persisted_seq} events reported persisted, "
              f"{len(counts)} distinct delivered, {duplicates} duplicates, {len(missing)} missing")
        self.assertGreater(persisted_seq, 1000, "the client made progress")
        self.assertEqual(missing[:10], [], "reported persisted, never delivered")


if __name__ == "__main__":
    unittest.main(verbosity=2)
