#!/usr/bin/python3
"""Smoke test of the e2e benchmark harness: a tiny run of every line it prints, against the real
binaries, checking that each line is there, has no error and has sane numbers. Figures are not
judged (this is a test, not a benchmark).

  e2e_smoke_test.py SHIPPER NULL_SERVER SHIPPER_LOAD KAFKA_BENCH ES_BENCH OTLP_LOAD OTLP_NULL_SERVER
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    (shipper, null_server, shipper_load, kafka_bench, es_bench, otlp_load,
     otlp_null) = sys.argv[1:8]
    p = subprocess.run(
        [sys.executable, os.path.join(HERE, "e2e.py"), "--shipper=" + shipper,
         "--null_server=" + null_server, "--shipper_load=" + shipper_load,
         "--es_bench=" + es_bench, "--otlp_load=" + otlp_load,
         "--otlp_null_server=" + otlp_null, "--events=filebeat=20000,tiny=50000,large=2000",
         "--reps=filebeat=1,tiny=1,large=1",
         "--latency_seconds=1", "--idle_seconds=1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240)
    sys.stderr.write(p.stderr.decode())
    lines = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    by_name = {l["name"]: l for l in lines}
    expected = ["e2e/%s/%s" % (t, s) for s in ("filebeat", "tiny", "large")
                for t in ("null", "transport", "protobuf", "discard", "discard-4mib",
                          "discard-disk", "file", "file-nosync", "elasticsearch-direct",
                          "elasticsearch", "elasticsearch-gzip0", "otlp-direct", "otlp",
                          "otlp-gzip")]
    expected += ["e2e/latency_at_half_load/null", "e2e/latency_at_half_load",
                 "e2e/latency_at_half_load/direct", "e2e/latency_at_half_load/file",
                 "idle_cpu"]
    failures = []
    for name in expected:
        line = by_name.get(name)
        if line is None:
            failures.append("missing line " + name)
        elif "error" in line:
            failures.append("%s: %s" % (name, line["error"]))
        elif name == "idle_cpu":
            if not 0 <= line["cpu_percent"] < 100:
                failures.append("idle_cpu: cpu_percent %r" % line["cpu_percent"])
        else:
            # A -direct baseline sends without a client of its own: no latencies.
            keys = ("events_per_sec",) if "-direct/" in name else (
                "events_per_sec", "p50_ms", "p99_ms")
            for key in keys:
                if not line.get(key, 0) > 0:
                    failures.append("%s: %s is %r" % (name, key, line.get(key)))
            if name.startswith("e2e/discard-disk/") and not line.get("disk_events_per_sync"):
                failures.append("%s: no disk_events_per_sync" % name)
            if name.startswith("e2e/discard/") and not line.get("ratio_to_4mib"):
                failures.append("%s: no ratio_to_4mib" % name)
            if name.split("/")[1] in ("elasticsearch", "elasticsearch-gzip0") and not (
                    line.get("ratio_to_file") and line.get("bulk_bytes_on_the_wire")):
                failures.append("%s: no ratio_to_file or bulk_bytes_on_the_wire" % name)
            if name.split("/")[1].startswith("otlp") and not (
                    line.get("sink_records", 0) >= line["events"] > 0 and
                    line.get("otlp_direct_events_per_sec")):
                failures.append("%s: the sink counted %r of %r events, or no otlp-direct figure"
                                % (name, line.get("sink_records"), line["events"]))
            if name.startswith("e2e/") and "/latency" not in name:
                if line["events"] <= 0 or line["ratio"] is None:
                    failures.append("%s: events %r ratio %r" % (name, line["events"],
                                                                 line["ratio"]))
    if p.returncode != 0:
        failures.append("e2e.py exited %d" % p.returncode)
    failures += kafka(shipper, null_server, shipper_load, kafka_bench)
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("PASS: %d lines" % len(lines))
    return 1 if failures else 0


def kafka(shipper, null_server, shipper_load, kafka_bench):
    """The kafka targets (./dev bench kafka), filebeat only: their failures."""
    p = subprocess.run(
        [sys.executable, os.path.join(HERE, "e2e.py"), "--shipper=" + shipper,
         "--null_server=" + null_server, "--shipper_load=" + shipper_load,
         "--kafka_bench=" + kafka_bench, "--targets=kafka-direct,kafka", "--shapes=filebeat",
         "--events=filebeat=5000", "--reps=filebeat=1", "--latency_seconds=0",
         "--idle_seconds=0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    sys.stderr.write(p.stderr.decode())
    by_name = {l["name"]: l for l in map(json.loads, p.stdout.decode().splitlines())}
    failures = [] if p.returncode == 0 else ["e2e.py (kafka) exited %d" % p.returncode]
    for name in ("e2e/kafka-direct/filebeat", "e2e/kafka/filebeat"):
        line = by_name.get(name, {"error": "missing line"})
        if "error" in line:
            failures.append("%s: %s" % (name, line["error"]))
            continue
        for key in ("events_per_sec", "ratio", "kafka_sent_bytes", "kafka_message_bytes"):
            if not (line.get(key) or 0) > 0:
                failures.append("%s: %s is %r" % (name, key, line.get(key)))
    return failures


if __name__ == "__main__":
    sys.exit(main())
