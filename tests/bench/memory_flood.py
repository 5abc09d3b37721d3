#!/usr/bin/python3
"""Peak RSS of Shipper under a flood with its output down (BENCHMARKS.md "Memory").

For each shape × batch: a fresh Shipper whose Redis output points at a port where nothing
listens, `shipper_load` with 16 channels × 8 calls in flight for --seconds, then Shipper's VmHWM.
Prints one JSON line per run and a Markdown table at the end.

Usage: memory_flood.py --shipper=BIN --shipper_load=BIN [--seconds=15] [-E key=value ...]
"""

import argparse
import json
import re
import socket
import subprocess
import sys
import threading

RUNS = [tuple(r.split(":")) for r in __import__("os").environ.get("RUNS", "filebeat:500 large:500 large:2000 tiny:20000").split()]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def flood(args, shape, batch):
    dead = free_port()  # nothing listens there: the output is down the whole run
    cmd = [args.shipper, "-E", "shipper.server.server=127.0.0.1:0", "-E", "http.port=0",
           "-E", "shipper.output.redis.enabled=true",
           "-E", f"shipper.output.redis.hosts=127.0.0.1:{dead}"]
    for e in args.E:
        cmd += ["-E", e]
    shipper = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    address = None
    for line in shipper.stderr:
        m = re.search(r"listening on (\S+)", line)
        if m:
            address = m.group(1)
            break
    if address is None:
        sys.exit("shipper did not start")
    # Keep reading its log, or a full pipe would stall it.
    threading.Thread(target=lambda: [None for _ in shipper.stderr], daemon=True).start()
    load = subprocess.run(
        [args.shipper_load, f"--target={address}", "--channels=16", "--inflight=8",
         f"--batch={batch}", f"--shape={shape}", f"--duration={args.seconds}s",
         "--drain_timeout=0s", "--progress=off", "--max_errors=100000000", "--drop_at_end"],
        capture_output=True, text=True)
    hwm = status_kib(shipper.pid, "VmHWM")
    alive = shipper.poll() is None
    shipper.terminate()
    try:
        shipper.wait(timeout=5)
    except subprocess.TimeoutExpired:
        shipper.kill()
    result = {}
    for line in load.stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
    return {"shape": shape, "batch": batch, "peak_rss_mib": round(hwm / 1024), "alive": alive,
            "accepted": result.get("events_accepted"), "partial": result.get("partial_replies"),
            "errors": result.get("errors"),
            "load": result.get("first_error") if result else load.stderr.strip()[-200:]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shipper", required=True)
    p.add_argument("--shipper_load", required=True)
    p.add_argument("--seconds", type=int, default=15)
    p.add_argument("-E", action="append", default=[])
    args = p.parse_args()
    rows = []
    for shape, batch in RUNS:
        row = flood(args, shape, batch)
        print(json.dumps(row), flush=True)
        rows.append(row)
    print("| shape × batch | peak RSS |\n|---|---|")
    for r in rows:
        print(f"| {r['shape']} × {r['batch']} | {r['peak_rss_mib']} MiB |")


if __name__ == "__main__":
    main()
