#!/usr/bin/python3
"""Smoke test of ./dev bench peers: a tiny run of tests/bench/peers.py against the real Shipper,
otlp_load and the Collector ./dev built (SHIPPER_OTELCOL), checking that every row is there with
sane numbers and every Shipper row its ratios to the Collector. Figures are not judged (this is a
test, not a benchmark).

  peers_smoke_test.py SHIPPER OTLP_LOAD OTLP_NULL_SERVER
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, "tests/peers")
import peers as bench  # noqa: E402  (tests/bench/peers.py: its targets)
from peer_harness import peer  # noqa: E402

# The log shapes, and a trace and a metric shape (the gauge's pipeline is the histogram's).
SHAPES = ("filebeat", "tiny", "large", "span", "histogram")


class PeersSmokeTest(unittest.TestCase):
    def test_every_row_with_its_ratios(self):
        otelcol = peer("SHIPPER_OTELCOL", "the Collector")
        p = subprocess.run(
            [sys.executable, os.path.join(HERE, "peers.py"), "--shipper=" + SHIPPER,
             "--otlp_load=" + OTLP_LOAD, "--otelcol=" + otelcol,
             "--otlp_null_server=" + OTLP_NULL_SERVER, "--reps=1", "--shapes=" + ",".join(SHAPES),
             "--events=filebeat=20000,tiny=50000,large=2000,span=10000,histogram=10000"],
            capture_output=True, text=True, timeout=360)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        rows = {r["name"]: r for r in map(json.loads, p.stdout.splitlines())}
        for shape in SHAPES:
            for target, (server, _, _) in bench.TARGETS.items():
                row = rows.get("peers/%s/%s" % (target, shape))
                self.assertIsNotNone(row, "peers/%s/%s missing: %s" % (target, shape, p.stderr))
                for key in ("records_per_sec", "rss_mb", "p50_ms", "p99_ms") + (
                        ("ratio_to_collector",) if server == "shipper" else ()):
                    self.assertGreater(row.get(key) or 0, 0, "%s: %s" % (row["name"], key))
                # A tiny run may take less CPU than the clock's tick counts: 0 is possible.
                self.assertGreaterEqual(row["cpu_sec_per_million"], 0, row)
                if server == "shipper":
                    self.assertIn("cpu_ratio_to_collector", row)


if __name__ == "__main__":
    SHIPPER, OTLP_LOAD, OTLP_NULL_SERVER = (os.path.abspath(a) for a in sys.argv[1:4])
    del sys.argv[1:4]
    unittest.main(verbosity=2)
