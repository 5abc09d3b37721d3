#!/usr/bin/python3
"""Smoke test of ./dev bench otlp: a tiny run of tests/bench/otlp.py against the real Shipper,
otlp_load, otlp_null_server and the Producer API's load, with a log shape, a trace shape and a
metric shape, checking that every row is there with sane numbers: each with its ratio to the null
server, the log shape's also to the Producer API (which has no spans or data points). Figures are not judged (this is a test, not a benchmark).

  otlp_smoke_test.py SHIPPER OTLP_LOAD OTLP_NULL_SERVER NULL_SERVER SHIPPER_LOAD
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import otlp as bench  # noqa: E402  (tests/bench/otlp.py: its targets and log shapes)

SHAPES = ("tiny", "span", "gauge")


class OtlpSmokeTest(unittest.TestCase):
    def test_every_row(self):
        p = subprocess.run(
            [sys.executable, os.path.join(HERE, "otlp.py"), "--shipper=" + SHIPPER,
             "--otlp_load=" + OTLP_LOAD, "--otlp_null_server=" + OTLP_NULL_SERVER,
             "--null_server=" + NULL_SERVER, "--shipper_load=" + SHIPPER_LOAD, "--reps=1",
             "--shapes=" + ",".join(SHAPES), "--events=tiny=50000,span=10000,gauge=20000"],
            capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        rows = {r["name"]: r for r in map(json.loads, p.stdout.splitlines())}
        for shape in SHAPES:
            for target in bench.TARGETS:
                name = "otlp/%s/%s" % (target, shape)
                row = rows.get(name)
                self.assertIsNotNone(row, "%s missing: %s" % (name, p.stderr[-3000:]))
                for key in ("events_per_sec", "rss_mb", "p50_ms", "p99_ms"):
                    self.assertGreater(row[key] or 0, 0, "%s: %s" % (name, key))
                for key in ("null_events_per_sec", "ratio"):
                    self.assertGreater(row[key] or 0, 0, "%s: %s" % (name, key))
                for key in ("producer_discard_events_per_sec", "producer_discard_ratio"):
                    if shape in bench.LOG_SHAPES:
                        self.assertGreater(row[key] or 0, 0, "%s: %s" % (name, key))
                    else:
                        self.assertIsNone(row[key], "%s: %s" % (name, key))
                if target == "http-persisted":
                    self.assertGreater(row["of_grpc_persisted"], 0, name)


if __name__ == "__main__":
    SHIPPER, OTLP_LOAD, OTLP_NULL_SERVER, NULL_SERVER, SHIPPER_LOAD = (
        os.path.abspath(a) for a in sys.argv[1:6])
    del sys.argv[1:6]
    unittest.main(verbosity=2)
