#!/usr/bin/python3
"""Quota benchmark (./dev bench quota): Shipper auto-tuned vs pools at host size, under a real quota.

For each quota (default 0.5 and 1.0 CPU) and each mode it creates a fresh child cgroup with that
CFS quota (cgroup v1 `cpu`, or v2 with `cpu` enabled), starts Shipper inside it (discard output),
drives it from outside the cgroup with shipper_load for --duration at the same offered load, and
reads the kernel's cpu.stat of the cgroup. The load generator runs in a sibling cgroup without a
quota; both get a high cpu.shares (--shares) so that on a busy shared host the quota is what
limits Shipper, not other processes (without it, runs measure contention: with CPU scarce for
everyone, each extra runnable thread gives a cgroup a place on one more runqueue).

  tuned    Shipper as shipped: pools sized from the detected quota (effective_cpus)
  untuned  --cpus=<host CPUs>: pools at host size, the behaviour before runtime/ existed
           (--untuned_cpus=N to size them as on a bigger node)

Modes alternate within each repetition so drift hits both alike; each figure is the median of
--repeat runs. One JSON line per quota on stdout:

  {"name": "quota/0.5cpu", "tuned_events_per_sec": ..., "untuned_events_per_sec": ...,
   "ratio": tuned/untuned, "tuned_p99_ms": ..., "untuned_p99_ms": ...,
   "tuned_nr_throttled": ..., "untuned_nr_throttled": ..., ...}

events_per_sec is shipper_load's persisted_per_sec; p99_ms its publish→persisted p99;
nr_throttled the cgroup's throttled periods during the run (fresh cgroup per run);
runnable_threads the mean number of Shipper's threads in state R, sampled every 10 ms (the
per-name breakdown goes to stderr: it shows which of them are gRPC's own).
Needs root and a writable cpu controller; otherwise prints why and exits 0.

  tests/cgroup/quota_bench.py --shipper=.../shipper/shipper --shipper_load=.../tests/load/shipper_load
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quota_retune_test as cg  # noqa: E402  (cgroup discovery and handling)

LISTENING = re.compile(r"listening on (\S+:\d+)")
QUOTA_LINE = cg.QUOTA_LINE


def log(*parts):
    print("quota:", *parts, file=sys.stderr, flush=True)


def cpu_stat(cgroup):
    stats = {}
    with open(os.path.join(cgroup.path, "cpu.stat")) as f:
        for line in f:
            key, value = line.split()
            stats[key] = int(value)
    return stats


def threads_by_name(pid):
    names = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        names[name] = names.get(name, 0) + 1
    return names


class RunnableSampler:
    """Samples, every 10 ms, how many of a process's threads are runnable (state R), by name."""

    def __init__(self, pid):
        self.pid = pid
        self.samples = 0
        self.total = 0
        self.by_name = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        task_dir = f"/proc/{self.pid}/task"
        while not self._stop.wait(0.01):
            runnable = 0
            try:
                tids = os.listdir(task_dir)
            except OSError:
                return
            for tid in tids:
                try:
                    with open(f"{task_dir}/{tid}/stat") as f:
                        stat = f.read()
                except OSError:
                    continue
                name = stat[stat.index("(") + 1:stat.rindex(")")]
                if stat[stat.rindex(")") + 2] == "R":
                    runnable += 1
                    self.by_name[name] = self.by_name.get(name, 0) + 1
            self.samples += 1
            self.total += runnable

    def stop(self):
        self._stop.set()
        self._thread.join()
        n = max(1, self.samples)
        return self.total / n, {k: round(v / n, 2) for k, v in sorted(self.by_name.items())}


def run_once(args, version, parent, quota, mode, workdir):
    cgroup = cg.Cgroup(version, parent, "bench")
    load_cgroup = cg.Cgroup(version, parent, "load")
    log_path = os.path.join(workdir, f"shipper_{quota}_{mode}.log")
    proc = None
    try:
        cgroup.set_cpus(quota)
        if args.shares:
            cgroup.set_weight(args.shares)
            load_cgroup.set_weight(args.shares)
        argv = [args.shipper, "-E", "shipper.server.server=127.0.0.1:0",
                "-E", "shipper.output.discard.enabled=true",
                "-E", "shipper.cpu.retune_interval=0"] + args.shipper_arg
        if mode == "untuned":
            argv.append(f"--cpus={args.untuned_cpus}")
        with open(log_path, "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, preexec_fn=cgroup.enter)
        address, quota_line = None, None
        deadline = time.time() + 30
        while time.time() < deadline and address is None:
            with open(log_path, "rb") as f:
                text = f.read().decode(errors="replace")
            m = LISTENING.search(text)
            q = QUOTA_LINE.search(text)
            if m:
                address, quota_line = m.group(1), q.group(0) if q else "?"
            elif proc.poll() is not None:
                break
            time.sleep(0.02)
        if address is None:
            raise RuntimeError(f"shipper did not start: {open(log_path).read()[-2000:]}")
        before = cpu_stat(cgroup)
        sampler = RunnableSampler(proc.pid)
        load = subprocess.run(
            [args.shipper_load, f"--target={address}", f"--duration={args.duration}s",
             f"--channels={args.channels}", f"--inflight={args.inflight}",
             f"--batch={args.batch}", "--progress=off", f"--shape={args.shape}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=args.duration + 120,
            preexec_fn=load_cgroup.enter)
        after = cpu_stat(cgroup)
        runnable, runnable_by_name = sampler.stop()
        threads = threads_by_name(proc.pid)
        if load.returncode != 0:
            raise RuntimeError(f"shipper_load failed ({load.returncode}): {load.stderr.decode()[-2000:]}")
        result = json.loads(load.stdout.decode().strip().splitlines()[-1])
        record = {
            "events_per_sec": result["persisted_per_sec"],
            "p99_ms": result["p99_ms"],
            "errors": result.get("errors", 0),
            "nr_throttled": after["nr_throttled"] - before["nr_throttled"],
            "nr_periods": after["nr_periods"] - before["nr_periods"],
            "throttled_ms": (after.get("throttled_time", 0) - before.get("throttled_time", 0)) / 1e6,
            "runnable": runnable,
            "runnable_by_name": runnable_by_name,
            "quota_line": quota_line,
            "threads": threads,
        }
        log(f"{quota} CPU {mode}: {record['events_per_sec']:.0f} ev/s p99 {record['p99_ms']:.1f} ms "
            f"throttled {record['nr_throttled']}/{record['nr_periods']} periods; runnable "
            f"{runnable:.2f} {runnable_by_name}; {quota_line}; threads {threads}")
        return record
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        cgroup.remove()
        load_cgroup.remove()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shipper", default=os.environ.get("SHIPPER_BIN", "bazel-bin/shipper/shipper"))
    parser.add_argument("--shipper_load", default=os.environ.get(
        "SHIPPER_LOAD_BIN", "bazel-bin/tests/load/shipper_load"))
    parser.add_argument("--quotas", default="0.5,1.0", help="CPU quotas to run, comma-separated")
    parser.add_argument("--duration", type=int, default=8, help="seconds of load per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per quota and mode (median)")
    parser.add_argument("--channels", type=int, default=4)
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--shape", default="filebeat")
    parser.add_argument("--shipper_arg", action="append", default=None,
                        help="extra shipper argument, repeatable (default: -E http.port=0)")
    parser.add_argument("--shares", type=int, default=8192,
                        help="cpu.shares (v1 units; v2 cpu.weight scaled) of Shipper's and the load "
                        "generator's cgroups, so that on a busy host the quota, not other "
                        "processes, is what limits Shipper, as on a node whose CPU requests are "
                        "not oversubscribed (0: leave the default 1024)")
    parser.add_argument("--untuned_cpus", type=int, default=os.cpu_count(),
                        help="pool size of the untuned runs (default: host CPUs); a larger value "
                        "shows what pools sized on a bigger node would do under the same quota")
    args = parser.parse_args()
    if args.shipper_arg is None:
        args.shipper_arg = ["-E", "http.port=0"]
    args.shipper, args.shipper_load = os.path.abspath(args.shipper), os.path.abspath(args.shipper_load)
    for binary in (args.shipper, args.shipper_load):
        if not os.access(binary, os.X_OK):
            sys.exit(f"quota: no executable {binary} (build it, or pass --shipper/--shipper_load)")

    version, parent = cg.find_cpu_cgroup()  # exits 0 with the reason when there is none
    log(f"cgroup v{version} below {parent}; host CPUs {os.cpu_count()}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="quota_bench.") as workdir:
        for quota in [float(q) for q in args.quotas.split(",")]:
            runs = {"tuned": [], "untuned": []}
            for i in range(args.repeat):
                order = ("tuned", "untuned") if i % 2 == 0 else ("untuned", "tuned")
                for mode in order:
                    try:
                        runs[mode].append(run_once(args, version, parent, quota, mode, workdir))
                    except Exception as e:  # keep going: one bad run must not hide the others
                        log(f"{quota} CPU {mode} run {i} failed: {e}")
                        failed = True
            if not runs["tuned"] or not runs["untuned"]:
                continue

            def median(mode, key):
                return statistics.median(r[key] for r in runs[mode])

            tuned, untuned = median("tuned", "events_per_sec"), median("untuned", "events_per_sec")
            print(json.dumps({
                "name": f"quota/{quota:g}cpu",
                "tuned_events_per_sec": round(tuned),
                "untuned_events_per_sec": round(untuned),
                "ratio": round(tuned / untuned, 3) if untuned else None,
                "tuned_p99_ms": round(median("tuned", "p99_ms"), 1),
                "untuned_p99_ms": round(median("untuned", "p99_ms"), 1),
                "tuned_nr_throttled": round(median("tuned", "nr_throttled")),
                "untuned_nr_throttled": round(median("untuned", "nr_throttled")),
                "tuned_throttled_ms": round(median("tuned", "throttled_ms")),
                "untuned_throttled_ms": round(median("untuned", "throttled_ms")),
                "nr_periods": round(median("tuned", "nr_periods")),
                "tuned_runnable_threads": round(median("tuned", "runnable"), 2),
                "untuned_runnable_threads": round(median("untuned", "runnable"), 2),
                "tuned_events_per_sec_runs": [round(r["events_per_sec"]) for r in runs["tuned"]],
                "untuned_events_per_sec_runs": [round(r["events_per_sec"]) for r in runs["untuned"]],
                "load_average_1m": round(os.getloadavg()[0], 2),
                "shares": args.shares,
                "runs": args.repeat,
                "duration_s": args.duration,
                "host_cpus": os.cpu_count(),
                "untuned_cpus": args.untuned_cpus,
                "tuned_quota_line": runs["tuned"][0]["quota_line"],
                "untuned_quota_line": runs["untuned"][0]["quota_line"],
            }), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
