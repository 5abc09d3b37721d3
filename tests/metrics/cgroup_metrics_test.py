#!/usr/bin/python3
"""Real-cgroup test of the CPU metrics: the shipper runs in a child cgroup limited to 0.02 CPU while
a client publishes, and /metrics must report the kernel's own cpu.stat figures for that cgroup
(nr_periods, nr_throttled, throttled time, read between two reads of the file), the quota and its
source; raising the quota to 2 CPUs must show as one re-tune and 2 effective CPUs.
Where no writable cpu controller exists or we are not root, it prints why and passes (skipped),
like tests/cgroup.

Usage: cgroup_metrics_test.py SHIPPER
"""

import os
import re
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, "tests/cgroup")
sys.path.insert(0, "tests/python")
from quota_retune_test import CHANGE_LINE, Cgroup, Process, find_cpu_cgroup  # noqa: E402
from wire_compat_test import generate_stubs  # noqa: E402

METRICS_LINE = re.compile(r"metrics on (http://\S+/metrics)")
LISTENING_LINE = re.compile(r"listening on (\S+) \(uuid ([0-9a-f-]+)\)")


def scrape(url):
    """{'name{labels}': value} of a /metrics page."""
    samples = {}
    with urllib.request.urlopen(url, timeout=10) as reply:
        for line in reply.read().decode().splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                samples[key] = float(value)
    return samples


def scrape_until(url, name, value, timeout):
    """The /metrics samples once `name` reads `value`, or the last scrape after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(url)
        if samples.get(name) == value or time.monotonic() >= deadline:
            return samples
        time.sleep(0.05)


def cpu_stat(cgroup):
    with open(os.path.join(cgroup.path, "cpu.stat")) as f:
        stat = dict(line.split() for line in f)
    throttled = (int(stat["throttled_usec"]) / 1e6 if "throttled_usec" in stat
                 else int(stat["throttled_time"]) / 1e9)
    return int(stat["nr_periods"]), int(stat["nr_throttled"]), throttled


def publish_for(address, seconds):
    """Keeps the shipper busy so that its 0.02-CPU quota runs out; returns events accepted."""
    import grpc
    from proto import messages_pb2, producer_pb2_grpc
    stub = producer_pb2_grpc.ProducerStub(grpc.insecure_channel(address))
    request = messages_pb2.PublishRequest()
    for i in range(500):
        request.events.add().fields.data["message"].string_value = f"event {i} " * 20
    accepted, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        accepted += stub.PublishEvents(request, timeout=30).accepted_count
    return accepted


def check(condition, what, process):
    if not condition:
        process.fail(f"expected {what}")
    print(f"ok: {what}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    version, parent = find_cpu_cgroup()
    generate_stubs(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")))
    cgroup = Cgroup(version, parent, name="metrics")
    try:
        cgroup.set_cpus(0.02)
        process = Process([binary, "-E", "shipper.server.server=127.0.0.1:0",
                           "-E", "http.port=0", "-E", "shipper.output.discard.enabled=true",
                           "-E", "shipper.cpu.retune_interval=1s"], cgroup)
        try:
            url = process.expect(METRICS_LINE, timeout=30)[1]
            address = process.expect(LISTENING_LINE, timeout=30)[1]
            print(f"published {publish_for(address, 3)} events under a 0.02-CPU quota")
            before = cpu_stat(cgroup)
            samples = scrape(url)
            after = cpu_stat(cgroup)
            got = (samples.get("shipper_cgroup_cpu_periods_total"),
                   samples.get("shipper_cgroup_cpu_throttled_periods_total"),
                   samples.get("shipper_cgroup_cpu_throttled_seconds_total"))
            print(f"cpu.stat before {before}, /metrics {got}, cpu.stat after {after}")
            check(all(b <= g <= a for b, g, a in zip(before, got, after) if g is not None)
                  and None not in got, "the cgroup counters are cpu.stat's", process)
            check(got[1] >= 5, "the busy shipper was throttled (5 periods or more)", process)
            check(samples.get(f'shipper_cpu_effective{{source="cgroup{version}"}}') == 1,
                  f"1 effective CPU from cgroup{version}", process)
            check(samples.get("shipper_cpu_quota") == 0.02, "quota 0.02 CPU", process)

            retunes = samples.get("shipper_cpu_retunes_total")
            cgroup.set_cpus(2)
            process.expect(CHANGE_LINE, timeout=15)
            # The monitor logs the change before its listeners resize the pools and count it.
            samples = scrape_until(url, "shipper_cpu_retunes_total", retunes + 1, timeout=10)
            check(samples.get("shipper_cpu_retunes_total") == retunes + 1, "one more re-tune",
                  process)
            check(samples.get(f'shipper_cpu_effective{{source="cgroup{version}"}}') == 2,
                  "2 effective CPUs after the raise", process)
        finally:
            process.stop()
        check(process.proc.returncode == 0, f"clean exit (rc {process.proc.returncode})", process)
    finally:
        cgroup.remove()


if __name__ == "__main__":
    main()
