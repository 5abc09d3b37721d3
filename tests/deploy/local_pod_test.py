#!/usr/bin/python3
"""Runs deploy/local-pod.sh briefly: the DaemonSet's 500m limit in a real cgroup must reach
Shipper as a 50000/100000 µs quota and effective_cpus=1, events must flow through it, the kernel
must account CFS periods, SIGTERM must drain to exit 0, and the cgroup must be gone afterwards.
Where cgroups are not writable the script prints "SKIPPED: <why>" and this passes with it.

Usage: local_pod_test.py SHIPPER SHIPPER_LOAD HEALTH_PROBE
"""

import json
import os
import re
import subprocess
import sys


def main():
    shipper, shipper_load, health_probe = (os.path.abspath(p) for p in sys.argv[1:4])
    out = subprocess.run(
        ["deploy/local-pod.sh", "--manifest", "deploy/k8s/daemonset.yaml", "--duration", "2",
         f"--shipper={shipper}", f"--shipper_load={shipper_load}", f"--health_probe={health_probe}"],
        capture_output=True, text=True, timeout=120)
    print(out.stdout)
    print(out.stderr, file=sys.stderr)
    if "SKIPPED:" in out.stdout:
        return 0
    assert out.returncode == 0, f"local-pod.sh exited {out.returncode}"
    result = json.loads(out.stdout.strip().splitlines()[-1])
    expect = {"limits_cpu": "500m", "quota_us": 50000, "period_us": 100000,
              "detected_quota_us": 50000, "effective_cpus": 1, "health": True, "exit_code": 0}
    for key, value in expect.items():
        assert result[key] == value, f"{key}: expected {value!r}, got {result[key]!r}"
    assert result["source"] == f"cgroup{result['cgroup_version']}", result["source"]
    assert result["events_per_sec"] > 0, "no events persisted through the pod"
    assert result["nr_periods"] > 0, "the kernel accounted no CFS periods: quota not applied?"
    cgroup = re.search(r"^local-pod: cgroup v\d (\S+)$", out.stdout, re.M)[1]
    assert not os.path.exists(cgroup), f"{cgroup} was not removed"
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
