#!/usr/bin/python3
"""Local pod simulation: the sidecar's CPU limit from a manifest, enforced by a real cgroup.

Reads the Shipper container's resources.limits.cpu (e.g. 500m) from a workload manifest, creates
a child cgroup with the CFS quota the kubelet would set (cgroup v1 `cpu`, or v2 with `cpu`
enabled), and runs Shipper inside it with the workload's ConfigMap config (listening on a unix
socket in a temp dir, as in the pod's emptyDir; a forwarding output goes to a second Shipper
outside the cgroup standing in for the aggregator). shipper_load drives it from outside the
cgroup, like the agent container. Prints what Shipper detected, the throughput, and the
throttling the kernel recorded in the cgroup's cpu.stat; then drains Shipper with SIGTERM,
as the kubelet would, and removes the cgroup. The last line is the same as JSON.

Needs root and a writable cpu controller; elsewhere prints "SKIPPED: <why>" and exits 0.

  deploy/local-pod.sh [--manifest deploy/k8s/daemonset.yaml] [--duration 10]
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cgroup"))
import quota_bench  # noqa: E402  (cpu.stat reading)
import quota_retune_test as cg  # noqa: E402  (cgroup discovery and handling)

LISTENING = re.compile(r"listening on (\S+) \(uuid")
HEALTH = re.compile(r"gRPC health service \(only\) on (\S+)")
STOPPED = re.compile(r"stopped: .*")
PERIOD_US = cg.PERIOD_US


def say(*parts):
    print("local-pod:", *parts, flush=True)


def milli_cpus(quantity):
    """Kubernetes' CPU quantity ("500m", "2", "1.5") in millicores."""
    text = str(quantity)
    if text.endswith("m"):
        return int(text[:-1])
    return round(float(text) * 1000)


def read_pod(manifest, container_name):
    """(workload name, the container's limits.cpu, the ConfigMap's shipper.yml text)."""
    k8s_dir = os.path.dirname(manifest)
    configmaps = {}
    for name in os.listdir(k8s_dir):
        if name.endswith(".yaml") and name != "kustomization.yaml":
            with open(os.path.join(k8s_dir, name)) as f:
                for doc in yaml.safe_load_all(f):
                    if doc and doc["kind"] == "ConfigMap":
                        configmaps[doc["metadata"]["name"]] = doc["data"]
    with open(manifest) as f:
        workloads = [d for d in yaml.safe_load_all(f) if d and d["kind"] in ("DaemonSet", "Deployment")]
    for w in workloads:
        spec = w["spec"]["template"]["spec"]
        for c in spec.get("initContainers", []) + spec.get("containers", []):
            if c["name"] != container_name:
                continue
            limit = c.get("resources", {}).get("limits", {}).get("cpu")
            if limit is None:
                sys.exit(f"local-pod: {manifest}: container {container_name} has no resources.limits.cpu")
            config = None
            for m in c.get("volumeMounts", []):
                if m["mountPath"] == "/etc/shipper":
                    (volume,) = [v for v in spec["volumes"] if v["name"] == m["name"]]
                    config = configmaps[volume["configMap"]["name"]]["shipper.yml"]
            if config is None:
                sys.exit(f"local-pod: {manifest}: no ConfigMap mounted at /etc/shipper in {container_name}")
            return f"{w['kind']}/{w['metadata']['name']}", limit, config
    sys.exit(f"local-pod: {manifest}: no workload with a container named {container_name}")


def flatten(tree, prefix=""):
    flat = {}
    for key, value in (tree or {}).items():
        name = f"{prefix}.{key}" if prefix else str(key)
        flat.update(flatten(value, name) if isinstance(value, dict) else {name: value})
    return flat


class Shipper:
    """A shipper process with its log in a file, optionally inside a cgroup."""

    def __init__(self, argv, log_path, cgroup=None):
        self.log_path = log_path
        with open(log_path, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         preexec_fn=cgroup.enter if cgroup else None)

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_for(self, pattern, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = pattern.search(self.log())
            if m:
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        sys.exit(f"local-pod: shipper did not log {pattern.pattern!r}:\n{self.log()[-3000:]}")

    def stop(self, timeout=60):
        """SIGTERM, as the kubelet sends; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manifest", default=os.path.join(HERE, "k8s", "daemonset.yaml"))
    parser.add_argument("--container", default="shipper")
    parser.add_argument("--duration", type=int, default=10, help="seconds of load")
    parser.add_argument("--shipper", default=os.environ.get("SHIPPER_BIN", "bazel-bin/shipper/shipper"))
    parser.add_argument("--shipper_load", default=os.environ.get(
        "SHIPPER_LOAD_BIN", "bazel-bin/tests/load/shipper_load"))
    parser.add_argument("--health_probe", default=os.environ.get(
        "HEALTH_PROBE_BIN", "bazel-bin/shipper/server/health_probe"))
    parser.add_argument("--load_args", default="--channels=2 --inflight=4 --batch=500",
                        help="more shipper_load flags (the agent's behaviour)")
    parser.add_argument("--shipper_args", default="",
                        help="more shipper flags, e.g. \"-E shipper.cpu.rounding=ceil\" or --cpus=2")
    args = parser.parse_args()
    for binary in (args.shipper, args.shipper_load, args.health_probe):
        if not os.access(binary, os.X_OK):
            sys.exit(f"local-pod: no executable {binary}: bazel build //shipper //shipper/server:health_probe "
                     "//tests/load:shipper_load, or pass --shipper/--shipper_load/--health_probe")

    workload, limit, config_text = read_pod(args.manifest, args.container)
    milli = milli_cpus(limit)
    quota_us = max(milli * PERIOD_US // 1000, 1000)  # the kubelet's MilliCPUToQuota
    say(f"{workload} container {args.container}: limits.cpu {limit} → CFS quota {quota_us}/{PERIOD_US} µs")
    version, parent = cg.find_cpu_cgroup()  # exits 0 with "SKIPPED: why" where there is none
    cgroup = cg.Cgroup(version, parent)
    aggregator = shipper = None
    try:
        cgroup.set_cpus(quota_us / PERIOD_US)
        say(f"cgroup v{version} {cgroup.path}")
        with tempfile.TemporaryDirectory(prefix="local-pod.") as pod_dir:
            config_path = os.path.join(pod_dir, "shipper.yml")
            with open(config_path, "w") as f:
                f.write(config_text)
            config = flatten(yaml.safe_load(config_text))
            socket = f"unix://{pod_dir}/shipper.sock"  # the pod's emptyDir
            # Free ports for what the pod exposes on its IP: several may run on one machine.
            argv = [args.shipper, "-c", config_path, "-E", f"shipper.server.server={socket}",
                    "-E", "shipper.server.health.address=127.0.0.1:0",
                    "-E", "http.host=127.0.0.1", "-E", "http.port=0",
                    "-E", "shipper.otlp.grpc.server=127.0.0.1:0",
                    "-E", "shipper.otlp.http.server=127.0.0.1:0"]
            if config.get("shipper.output.shipper.enabled") is True:
                aggregator = Shipper([args.shipper, "-E", "shipper.server.server=127.0.0.1:0",
                                      "-E", "http.port=0",
                                      "-E", "shipper.output.discard.enabled=true"],
                                     os.path.join(pod_dir, "aggregator.log"))
                target = aggregator.wait_for(LISTENING)[1]
                argv += ["-E", f"shipper.output.shipper.server={target}"]
                say(f"forwarding output → stand-in aggregator at {target} (discard), outside the cgroup")
            elif config.get("shipper.output.file.enabled") is True:
                argv += ["-E", f"shipper.output.file.path={pod_dir}/data"]
            else:
                # A remote output (Redis, ...) is not here: count and drop instead.
                for key, value in config.items():
                    m = re.fullmatch(r"shipper\.output\.(\w+)\.enabled", key)
                    if m and value is True:
                        argv += ["-E", f"{key}=false"]
                        say(f"{m[1]} output → discard (nothing to reach from here)")
                argv += ["-E", "shipper.output.discard.enabled=true"]

            shipper = Shipper(argv + args.shipper_args.split(), os.path.join(pod_dir, "shipper.log"),
                              cgroup)
            shipper.wait_for(LISTENING)
            detected = shipper.wait_for(cg.QUOTA_LINE)
            health = shipper.wait_for(HEALTH)[1]
            say(f"shipper detected: {detected[0]}")
            probe = subprocess.run([args.health_probe, f"--address={health}"],
                                   capture_output=True, text=True)
            say(f"health probe (as the kubelet's gRPC probe): {(probe.stdout + probe.stderr).strip()}")

            before = quota_bench.cpu_stat(cgroup)
            load = subprocess.run([args.shipper_load, f"--target={socket}",
                                   f"--duration={args.duration}s", "--progress=off"]
                                  + args.load_args.split(),
                                  capture_output=True, text=True, timeout=args.duration + 120)
            after = quota_bench.cpu_stat(cgroup)
            if load.returncode != 0:
                sys.exit(f"local-pod: shipper_load failed ({load.returncode}): {load.stderr[-2000:]}")
            result = json.loads(load.stdout.strip().splitlines()[-1])
            periods = after["nr_periods"] - before["nr_periods"]
            throttled = after["nr_throttled"] - before["nr_throttled"]
            throttled_ms = (after.get("throttled_time", 0) - before.get("throttled_time", 0)) / 1e6
            say(f"throughput: {result['persisted_per_sec']:.0f} events/s persisted over {args.duration} s "
                f"(publish→persisted p99 {result['p99_ms']:.1f} ms)")
            say(f"throttling (cpu.stat): {throttled} of {periods} periods throttled, "
                f"{throttled_ms:.0f} ms throttled")

            code = shipper.stop()
            stopped = STOPPED.search(shipper.log())
            say(f"SIGTERM: exit {code}; {stopped[0] if stopped else 'no stop report in the log'}")
            print(json.dumps({
                "workload": workload, "limits_cpu": limit, "cgroup_version": version,
                "quota_us": quota_us, "period_us": PERIOD_US,
                "detected_quota_us": int(detected["quota"]) if detected["quota"] != "max" else -1,
                "effective_cpus": int(detected["cpus"]), "source": detected["source"],
                "health": probe.returncode == 0,
                "events_per_sec": result["persisted_per_sec"], "p99_ms": result["p99_ms"],
                "nr_periods": periods, "nr_throttled": throttled, "throttled_ms": round(throttled_ms),
                "exit_code": code, "duration_s": args.duration,
            }), flush=True)
            return 0 if code == 0 else 1
    finally:
        for process in (shipper, aggregator):
            if process is not None:
                process.stop()
        cgroup.remove()


if __name__ == "__main__":
    sys.exit(main())
