#!/usr/bin/python3
"""OTLP/HTTP senders cannot hold Shipper at SIGTERM: with connections trickling their bodies a
byte at a time and others open and silent, the real binary exits 0 within
shipper.shutdown_timeout, and an export sent meanwhile is answered at once."""
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, "tests/otlp")
from otlp_harness import OtlpShipper, otlp, post  # noqa: E402

SHUTDOWN_TIMEOUT = 3.0


def request():
    logs, _ = otlp()
    r = logs.ExportLogsServiceRequest()
    r.resource_logs.add().scope_logs.add().log_records.add().body.string_value = "bounded"
    return r.SerializeToString()


class HttpBoundsTest(unittest.TestCase):
    def test_sigterm_exits_within_shutdown_timeout_whatever_http_senders_do(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        shipper = OtlpShipper(tmp, os.path.join(tmp, "out"),
                              "-E", f"shipper.shutdown_timeout={int(SHUTDOWN_TIMEOUT)}s",
                              grpc_on=False)
        host, port = shipper.http_address.rsplit(":", 1)
        stop = threading.Event()
        sockets = []

        def trickle(s):
            # A byte every 100 ms of a body that claims 1 MB: never done, never idle for long.
            try:
                s.sendall(b"POST /v1/logs HTTP/1.1\r\nHost: shipper\r\n"
                          b"Content-Type: application/x-protobuf\r\nContent-Length: 1000000\r\n\r\n")
                while not stop.wait(0.1):
                    s.sendall(b"\x0a")
            except OSError:
                pass  # closed by Shipper

        threads = []
        for _ in range(20):
            s = socket.create_connection((host, int(port)))
            sockets.append(s)
            threads.append(threading.Thread(target=trickle, args=(s,)))
            threads[-1].start()
        for _ in range(20):
            sockets.append(socket.create_connection((host, int(port))))  # open, silent
        try:
            status, _, _ = post(shipper.http(), request())
            self.assertEqual(status, 200, "an export waited behind the trickling connections")
            start = time.monotonic()
            shipper.proc.send_signal(signal.SIGTERM)
            code = shipper.proc.wait(timeout=30)
            elapsed = time.monotonic() - start
            self.assertEqual(code, 0, shipper.text()[-2000:])
            self.assertLess(elapsed, SHUTDOWN_TIMEOUT,
                            f"exited {elapsed:.1f} s after SIGTERM:\n" + shipper.text()[-2000:])
        finally:
            stop.set()
            for t in threads:
                t.join()
            for s in sockets:
                s.close()
            if shipper.proc.poll() is None:
                shipper.proc.kill()
                shipper.proc.wait()


if __name__ == "__main__":
    unittest.main(verbosity=2)
