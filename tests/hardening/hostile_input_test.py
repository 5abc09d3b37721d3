#!/usr/bin/python3
"""Hostile and oversized requests against the real shipper, sent by Python's grpcio as raw bytes
to the method path: each gets the right status with a message naming the limit, while a
bystander client on another connection keeps publishing without a single error, and the server
stays healthy."""
import os
import tempfile
import threading
import unittest

import grpc

from harness import (PERSISTED, PUBLISH, SERVING, Bystander, Shipper, health, messages,
                     raw_unary, small_request)

MIB = 1 << 20


def deep_request(depth):
    """A PublishRequest whose one event nests `depth` Structs, built bytes-first from the
    inside out (reversed), as Python's protobuf would refuse to serialize it."""
    out = bytearray()

    def wrap(tag):
        n, varint = len(out), bytearray()
        while True:
            varint.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                break
        out.extend(reversed(varint))
        out.append(tag)

    for level in range(depth, 0, -1):
        wrap(0x12)  # map entry value
        out.extend(b"a\x01\x0a")  # map entry key "a", reversed
        wrap(0x0a)  # Struct.data
        if level > 1:
            wrap(0x52)  # Value.struct_value
    wrap(0x2a)  # Event.fields
    wrap(0x12)  # PublishRequest.events
    return bytes(reversed(out))


class HostileInputTest(unittest.TestCase):
    """One shipper with the default limits, one with small ones; a bystander on each."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        messages()
        cls.default = Shipper(cls.tmp, "-E", "shipper.output.discard.enabled=true")
        small_tmp = os.path.join(cls.tmp, "small")
        os.mkdir(small_tmp)
        cls.small = Shipper(small_tmp, "-E", "shipper.output.discard.enabled=true",
                            "-E", "shipper.server.max_message_size=1MiB",
                            "-E", "shipper.server.max_events_per_request=10",
                            "-E", "shipper.server.max_nesting_depth=4",
                            "-E", "shipper.server.max_concurrent_streams=2")
        cls.bystanders = [Bystander(s.address, s.uuid) for s in (cls.default, cls.small)]

    @classmethod
    def tearDownClass(cls):
        for b in cls.bystanders:
            b.stop()
        codes = [s.stop() for s in (cls.default, cls.small)]
        for b in cls.bystanders:
            assert b.ok > 0 and not b.errors, f"bystander: {b.ok} ok, errors {b.errors[:5]}"
        assert codes == [0, 0], f"exit codes {codes}:\n{cls.default.text()}\n{cls.small.text()}"

    def setUp(self):
        self.channel = grpc.insecure_channel(self.default.address)
        self.publish = raw_unary(self.channel, PUBLISH)

    def tearDown(self):
        # Healthy afterwards, and still publishing for the attacker's own connection too.
        self.assertEqual(health(self.channel), SERVING)
        self.publish(small_request(self.default.uuid), timeout=10)
        self.channel.close()

    def refused(self, publish, payload, code, *phrases):
        with self.assertRaises(grpc.RpcError) as caught:
            publish(payload, timeout=60)
        e = caught.exception
        self.assertEqual(e.code(), code, e.details())
        for phrase in phrases:
            self.assertIn(phrase, e.details())

    def test_garbage_is_invalid_argument(self):
        valid = small_request("")
        for payload in (b"\xff" * 64, valid[:-3], b"\x12\x7f", os.urandom(4096)):
            self.refused(self.publish, payload, grpc.StatusCode.INVALID_ARGUMENT,
                         "not a valid PublishRequest")

    def test_invalid_utf8_is_invalid_argument_and_does_not_flood_the_log(self):
        payload = small_request("").replace(b"event 0", b"ev\xc3\x28t 0")
        for _ in range(200):
            self.refused(self.publish, payload, grpc.StatusCode.INVALID_ARGUMENT, "not UTF-8")
        self.assertLessEqual(self.default.text().count("invalid UTF-8"), 1)

    def test_100_mib_message_is_resource_exhausted(self):
        payload = b"\x12\x00" * (50 * MIB)
        self.refused(self.publish, payload, grpc.StatusCode.RESOURCE_EXHAUSTED,
                     f"request of {100 * MIB} bytes",
                     f"shipper.server.max_message_size ({64 * MIB} bytes)")

    def test_max_message_size_is_configurable(self):
        with grpc.insecure_channel(self.small.address) as channel:
            publish = raw_unary(channel, PUBLISH)
            publish(small_request(self.small.uuid), timeout=10)
            self.refused(publish, b"\x12\x00" * MIB, grpc.StatusCode.RESOURCE_EXHAUSTED,
                         f"shipper.server.max_message_size ({MIB} bytes)")

    def test_a_message_beyond_max_receive_memory_is_reset_before_it_is_all_read(self):
        """gRPC reads a whole message before anyone can check its size: its memory quota is
        what stops a 256 MiB message, at shipper.server.max_receive_memory (8 MiB here).
        gRPC 1.51 picks the streams it resets to free memory without regard to who holds it,
        so this runs on a shipper of its own, without a bystander: other clients' calls may
        be reset too (they retry; nothing was acknowledged)."""
        tmp = os.path.join(self.tmp, "quota")
        os.mkdir(tmp)
        shipper = Shipper(tmp, "-E", "shipper.output.discard.enabled=true",
                          "-E", "shipper.server.max_message_size=1MiB",
                          "-E", "shipper.server.max_receive_memory=8MiB")
        try:
            with grpc.insecure_channel(shipper.address) as channel:
                self.refused(raw_unary(channel, PUBLISH), b"\x12\x00" * (128 * MIB),
                             grpc.StatusCode.RESOURCE_EXHAUSTED)
                self.assertLess(shipper.peak_rss(), 128 * MIB)
                self.assertEqual(health(channel), SERVING)
                raw_unary(channel, PUBLISH)(small_request(shipper.uuid), timeout=10)
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_compressed_requests_are_refused(self):
        """gRPC 1.51 inflates a compressed message without bound (256 MiB of zeros are 256 KiB
        of gzip), so Shipper takes none; Beats' shipper output never compresses."""
        with grpc.insecure_channel(self.small.address,
                                   compression=grpc.Compression.Gzip) as channel:
            self.refused(raw_unary(channel, PUBLISH), bytes(256 * MIB),
                         grpc.StatusCode.UNIMPLEMENTED, "'gzip' is disabled")
        self.assertLess(self.small.peak_rss(), 128 * MIB)

    def test_ten_thousand_levels_of_nesting(self):
        self.refused(self.publish, deep_request(10000), grpc.StatusCode.INVALID_ARGUMENT,
                     "shipper.server.max_nesting_depth (64)")

    def test_one_level_too_deep_names_the_limit(self):
        self.publish(deep_request(64), timeout=10)
        self.refused(self.publish, deep_request(65), grpc.StatusCode.INVALID_ARGUMENT,
                     "nest Struct/ListValue more than shipper.server.max_nesting_depth (64)")
        with grpc.insecure_channel(self.small.address) as channel:
            publish = raw_unary(channel, PUBLISH)
            publish(deep_request(4), timeout=10)
            self.refused(publish, deep_request(5), grpc.StatusCode.INVALID_ARGUMENT,
                         "shipper.server.max_nesting_depth (4)")

    def test_a_million_tiny_events(self):
        self.refused(self.publish, b"\x12\x00" * 1_000_000, grpc.StatusCode.INVALID_ARGUMENT,
                     "1000000 events", "shipper.server.max_events_per_request (65536)")
        with grpc.insecure_channel(self.small.address) as channel:
            publish = raw_unary(channel, PUBLISH)
            publish(b"\x12\x00" * 10, timeout=10)
            self.refused(publish, b"\x12\x00" * 11, grpc.StatusCode.INVALID_ARGUMENT,
                         "shipper.server.max_events_per_request (10)")

    def test_concurrent_streams_beyond_the_limit_wait(self):
        """HTTP/2 refuses no call for max_concurrent_streams: the client holds the third stream
        until one of the two open ones ends."""
        msg = messages()
        request = msg.PersistedIndexRequest(polling_interval={"seconds": 3600})
        with grpc.insecure_channel(self.small.address) as channel:
            follow = channel.unary_stream(PERSISTED,
                                          request_serializer=msg.PersistedIndexRequest.SerializeToString,
                                          response_deserializer=msg.PersistedIndexReply.FromString)
            streams = [follow(request, timeout=60) for _ in range(2)]
            for s in streams:
                next(s)  # both are open on the server
            third = follow(request, timeout=60)
            got = threading.Event()
            threading.Thread(target=lambda: (next(third), got.set()), daemon=True).start()
            self.assertFalse(got.wait(1.5), "a third stream ran beside two with a limit of 2")
            streams[0].cancel()
            self.assertTrue(got.wait(10), "the third stream did not start when a slot freed")
            third.cancel()
            streams[1].cancel()


if __name__ == "__main__":
    unittest.main(verbosity=2)
