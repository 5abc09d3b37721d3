#!/usr/bin/python3
"""shipper.server.max_connections on the real shipper, over TCP and a unix socket: connections
up to the limit are served; calls on one more are refused RESOURCE_EXHAUSTED naming the key,
while the others go on unaffected; once one closes, the refused client is served after it
reconnects. Silent connections lose their slots after the 10 s handshake timeout."""
import os
import re
import socket
import tempfile
import time
import unittest
import urllib.request

import grpc

from harness import PUBLISH, SERVING, Shipper, health, raw_unary, small_request

LIMIT = 3
KEY = f"shipper.server.max_connections ({LIMIT})"


def refused_connections(shipper):
    """shipper_connections_refused_total from the shipper's /metrics page."""
    url = re.search(r"metrics on (http://\S+/metrics)", shipper.text()).group(1)
    page = urllib.request.urlopen(url, timeout=10).read().decode()
    return int(re.search(r"^shipper_connections_refused_total (\d+)$", page, re.M).group(1))


def connect(address):
    """A channel with a connection of its own (no subchannel shared with other channels)."""
    return grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])


class ConnectionLimitTest(unittest.TestCase):
    def setUp(self):
        # Short: a socket path must fit in 108 bytes, which TEST_TMPDIR may not.
        self.dir = tempfile.mkdtemp(prefix="shipper-limit-", dir="/tmp")

    def tearDown(self):
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)

    def served_within(self, publish, request, seconds):
        """Publishes until a call is served: the refusing connection closes within about two
        seconds, and the next call connects anew, to a free slot by then."""
        deadline = time.time() + seconds
        while True:
            try:
                publish(request, timeout=10)
                return
            except grpc.RpcError as e:
                self.assertIn(e.code(), (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                         grpc.StatusCode.UNAVAILABLE), e.details())
                self.assertLess(time.time(), deadline, f"never served: {e.details()}")
                time.sleep(0.2)

    def check_limit(self, *args):
        shipper = Shipper(self.dir, "-E", "shipper.output.discard.enabled=true",
                          "-E", f"shipper.server.max_connections={LIMIT}", *args)
        request = small_request(shipper.uuid)
        served = [connect(shipper.address) for _ in range(LIMIT)]
        try:
            for channel in served:
                raw_unary(channel, PUBLISH)(request, timeout=10)
            with connect(shipper.address) as extra:
                for call in (lambda: raw_unary(extra, PUBLISH)(request, timeout=10),
                             lambda: health(extra)):
                    with self.assertRaises(grpc.RpcError) as caught:
                        call()
                    self.assertEqual(caught.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
                    self.assertIn(KEY, caught.exception.details())
                for channel in served:  # unaffected
                    raw_unary(channel, PUBLISH)(request, timeout=10)
                    self.assertEqual(health(channel), SERVING)
                self.assertEqual(refused_connections(shipper), 1)

                served.pop().close()
                self.served_within(raw_unary(extra, PUBLISH), request, seconds=15)
        finally:
            for channel in served:
                channel.close()
            self.assertEqual(shipper.stop(), 0, shipper.text())
        self.assertIn("shipper.server.max_connections", shipper.text())  # logged

    def test_silent_connections_lose_their_slots(self):
        """Connections that never send a byte (no HTTP/2 preface) are closed after the 10 s
        handshake timeout, so they cannot lock clients out for longer."""
        shipper = Shipper(self.dir, "-E", "shipper.output.discard.enabled=true",
                          "-E", f"shipper.server.max_connections={LIMIT}")
        host, port = shipper.address.rsplit(":", 1)
        silent = [socket.create_connection((host, int(port))) for _ in range(LIMIT)]
        try:
            with connect(shipper.address) as channel:
                publish = raw_unary(channel, PUBLISH)
                with self.assertRaises(grpc.RpcError) as caught:
                    publish(small_request(shipper.uuid), timeout=10)
                self.assertIn(KEY, caught.exception.details())
                start = time.time()
                for s in silent:  # the server's SETTINGS, then the end of the connection
                    s.settimeout(20)
                    while s.recv(4096):
                        pass
                print(f"silent connections closed after {time.time() - start:.1f} s")
                self.served_within(publish, small_request(shipper.uuid), seconds=10)
        finally:
            for s in silent:
                s.close()
            self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_tcp(self):
        self.check_limit()

    def test_unix_socket(self):
        self.check_limit("-E", f"shipper.server.server=unix://{self.dir}/shipper.sock")


if __name__ == "__main__":
    unittest.main(verbosity=2)
