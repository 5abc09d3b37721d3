#!/usr/bin/python3
"""Soak: the real shipper under 64 concurrent clients for N minutes, sampling its RSS, open file
descriptors and threads every 10 s. Passes when, after warm-up, RSS grows at most 5 % and the
fd and thread counts do not grow. Run through `./dev soak [minutes]` (not part of CI).

usage: soak.py --shipper BIN --load BIN [--minutes 10] [--rate 20000] [--clients 64]
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

SAMPLE_S = 10


def sample(pid):
    with open(f"/proc/{pid}/status") as f:
        status = f.read()
    rss_kib = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
    return rss_kib, len(os.listdir(f"/proc/{pid}/fd")), threads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shipper", required=True)
    ap.add_argument("--load", required=True)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--rate", type=int, default=20000, help="events/s over all clients")
    ap.add_argument("--clients", type=int, default=64)
    args = ap.parse_args()
    duration_s = int(args.minutes * 60)
    warmup_s = max(SAMPLE_S, min(60, duration_s // 5))

    tmp = tempfile.mkdtemp(prefix="shipper-soak-")
    log_path = os.path.join(tmp, "shipper.log")
    log = open(log_path, "w")
    # File output with rotation: the real write path, with bounded disk use.
    shipper = subprocess.Popen(
        [args.shipper, "-E", "shipper.server.server=127.0.0.1:0",
         "-E", f"shipper.output.file.path={tmp}/out"], stdout=log, stderr=subprocess.STDOUT)
    address = None
    for _ in range(300):
        with open(log_path) as f:
            m = re.search(r"listening on (\S+) ", f.read())
        if m:
            address = m.group(1)
            break
        if shipper.poll() is not None:
            sys.exit("shipper exited:\n" + open(log_path).read())
        time.sleep(0.1)
    if address is None:
        sys.exit("shipper did not start")
    load = subprocess.Popen(
        [args.load, f"--target={address}", f"--channels={args.clients}", "--inflight=1",
         f"--rate={args.rate}", f"--duration={duration_s}s", "--progress=off"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    print(f"soak: {args.clients} clients, {args.rate} events/s, {args.minutes:g} min, "
          f"warm-up {warmup_s} s, shipper pid {shipper.pid}, logs in {tmp}", flush=True)
    print(f"{'t':>6} {'rss MiB':>8} {'fds':>5} {'threads':>7}", flush=True)
    start = time.monotonic()
    samples = []
    while load.poll() is None:
        time.sleep(SAMPLE_S - (time.monotonic() - start) % SAMPLE_S)
        if load.poll() is not None:
            break  # clients gone: what follows is no longer under load
        if shipper.poll() is not None:
            sys.exit("shipper died during the soak:\n" + open(log_path).read()[-4000:])
        t = time.monotonic() - start
        rss, fds, threads = sample(shipper.pid)
        samples.append((t, rss, fds, threads))
        print(f"{t:6.0f} {rss / 1024:8.1f} {fds:5d} {threads:7d}", flush=True)
    load_out = load.stdout.read()
    shipper.send_signal(signal.SIGTERM)
    code = shipper.wait(timeout=60)
    log.close()

    print("load generator:\n" + load_out.strip())
    after = [s for s in samples if s[0] >= warmup_s]
    if len(after) < 2:
        sys.exit("soak too short to judge: run at least two samples past warm-up")
    base_t, base_rss, base_fds, base_threads = after[0]
    last_t, last_rss, last_fds, last_threads = after[-1]
    rss_growth = (last_rss - base_rss) / base_rss * 100
    max_fds = max(s[2] for s in after)
    max_threads = max(s[3] for s in after)
    print(f"after warm-up ({base_t:.0f} s -> {last_t:.0f} s): RSS {base_rss / 1024:.1f} -> "
          f"{last_rss / 1024:.1f} MiB ({rss_growth:+.1f} %), fds {base_fds} -> {last_fds} "
          f"(max {max_fds}), threads {base_threads} -> {last_threads} (max {max_threads}); "
          f"shipper exit {code}")
    problems = []
    if rss_growth > 5:
        problems.append(f"RSS grew {rss_growth:.1f} % (limit 5 %)")
    if last_fds > base_fds:
        problems.append(f"open fds grew {base_fds} -> {last_fds}")
    if last_threads > base_threads:
        problems.append(f"threads grew {base_threads} -> {last_threads}")
    if code != 0:
        problems.append(f"shipper exited {code}")
    if load.returncode != 0:
        problems.append(f"load generator exited {load.returncode}")
    print("soak: " + ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
