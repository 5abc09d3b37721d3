#!/usr/bin/python3
"""Unix domain sockets on the real shipper: permissions (0600 by default, configurable), a stale
socket file left by a crash is replaced, a live one is not, and the socket is gone on exit."""
import os
import socket
import stat
import subprocess
import tempfile
import unittest

import grpc

from harness import PUBLISH, SERVING, Shipper, health, raw_unary, small_request


class UnixSocketTest(unittest.TestCase):
    def setUp(self):
        # Short: a socket path must fit in 108 bytes, which TEST_TMPDIR may not.
        self.dir = tempfile.mkdtemp(prefix="shipper-uds-", dir="/tmp")
        self.sock = os.path.join(self.dir, "shipper.sock")

    def tearDown(self):
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)

    def start(self, *args):
        return Shipper(self.dir, "-E", f"shipper.server.server=unix://{self.sock}",
                       "-E", "shipper.output.discard.enabled=true", *args)

    def publish_over_socket(self, shipper):
        self.assertEqual(shipper.address, f"unix://{self.sock}")
        with grpc.insecure_channel(shipper.address) as channel:
            raw_unary(channel, PUBLISH)(small_request(shipper.uuid), timeout=10)
            self.assertEqual(health(channel), SERVING)

    def start_publish_stop(self):
        shipper = self.start()
        try:
            self.publish_over_socket(shipper)
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text())

    def mode(self):
        return stat.S_IMODE(os.stat(self.sock).st_mode)

    def test_default_mode_and_removed_on_exit(self):
        shipper = self.start()
        try:
            self.assertEqual(oct(self.mode()), oct(0o600))
            self.publish_over_socket(shipper)
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text())
        self.assertFalse(os.path.exists(self.sock), "socket left behind after exit")

    def test_configured_mode(self):
        shipper = self.start("-E", "shipper.server.socket_mode=0660")
        try:
            self.assertEqual(oct(self.mode()), oct(0o660))
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_stale_socket_from_a_crash_is_replaced(self):
        crashed = socket.socket(socket.AF_UNIX)
        crashed.bind(self.sock)
        crashed.close()  # the file stays, nobody listens: what SIGKILL leaves
        self.assertTrue(stat.S_ISSOCK(os.stat(self.sock).st_mode))
        self.start_publish_stop()

    def test_killed_shipper_leaves_a_socket_the_next_one_replaces(self):
        first = self.start()
        first.proc.kill()
        first.proc.wait()
        self.assertTrue(os.path.exists(self.sock))
        self.start_publish_stop()

    def test_live_socket_is_not_taken_over(self):
        shipper = self.start()
        try:
            run = subprocess.run(
                ["shipper/shipper", "-E", f"shipper.server.server=unix://{self.sock}",
                 "-E", "shipper.output.discard.enabled=true"],
                capture_output=True, text=True, timeout=30)
            self.assertEqual(run.returncode, 1, run.stderr)
            self.assertIn("another process listens", run.stderr)
            self.publish_over_socket(shipper)  # the first one is unharmed
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_regular_file_is_never_deleted(self):
        with open(self.sock, "w") as f:
            f.write("not a socket")
        run = subprocess.run(
            ["shipper/shipper", "-E", f"shipper.server.server=unix://{self.sock}"],
            capture_output=True, text=True, timeout=30)
        # Refused by the checks start and --check_config share (config.h: Preflight): exit 2.
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("is not a socket", run.stderr)
        with open(self.sock) as f:
            self.assertEqual(f.read(), "not a socket")


if __name__ == "__main__":
    unittest.main(verbosity=2)
