#!/usr/bin/python3
"""Real-cgroup test: the binary follows a CPU quota set by the kernel's cgroup, and its change.

Creates a child cgroup below our own (cgroup v1 `cpu` controller, or v2 with `cpu` enabled),
limits it to 0.5 CPU, starts the binary inside it, checks the logged `effective_cpus=1` and that
the "output" pool runs 1 thread, raises the quota to 2 CPUs and checks the re-tune to 2 (log line
and threads), checks that --cpus overrides and turns re-tuning off, then removes the cgroup.
Where no writable cpu controller exists or we are not root, it prints why and passes (skipped).

Usage: quota_retune_test.py BINARY [ARG ...]   (ARGs are passed to the binary)
"""

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

QUOTA_LINE = re.compile(
    r"cpu quota: source=(?P<source>\S+) quota=(?P<quota>\S+) period=(?P<period>\S+) "
    r"cpuset=(?P<cpuset>\d+) effective_cpus=(?P<cpus>\d+)")
CHANGE_LINE = re.compile(r"effective_cpus (?P<old>\d+) → (?P<new>\d+)")
PERIOD_US = 100000


def skip(reason):
    print(f"SKIPPED: {reason}")
    # Bazel shows test.log; a skip is a pass with the reason in it.
    sys.exit(0)


def find_cpu_cgroup():
    """Returns (version, our cgroup dir) for a writable cpu controller, or skips."""
    if os.geteuid() != 0:
        skip("needs root to create cgroups")
    memberships = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            hierarchy, controllers, path = line.rstrip("\n").split(":", 2)
            memberships[(hierarchy, controllers)] = path
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            mounts.append((fields[3], fields[4], fields[dash + 1], fields[dash + 3].split(",")))
    # v1 cpu controller first, as the code under test does.
    for (hierarchy, controllers), path in memberships.items():
        if "cpu" in controllers.split(","):
            for root, point, fstype, opts in mounts:
                if fstype == "cgroup" and "cpu" in opts and (root == "/" or path.startswith(root)):
                    rel = path[len(root):] if root != "/" else path
                    return 1, os.path.normpath(point + "/" + rel)
    path = memberships.get(("0", ""))
    if path is not None:
        for root, point, fstype, opts in mounts:
            if fstype == "cgroup2" and (root == "/" or path.startswith(root)):
                rel = path[len(root):] if root != "/" else path
                base = os.path.normpath(point + "/" + rel)
                try:
                    with open(os.path.join(base, "cgroup.controllers")) as f:
                        if "cpu" not in f.read().split():
                            skip(f"cgroup v2 at {base} has no cpu controller")
                except OSError as e:
                    skip(f"cannot read {base}/cgroup.controllers: {e}")
                return 2, base
    skip("no cgroup v1 cpu or cgroup v2 mount found in /proc/self/mountinfo")


class Cgroup:
    def __init__(self, version, parent, name="test"):
        self.version = version
        self.path = os.path.join(parent, f"shipper-quota-{name}-{os.getpid()}")
        try:
            os.mkdir(self.path)
        except OSError as e:
            skip(f"cannot create a cgroup in {parent}: {e}")
        if version == 2:
            # Our own cgroup must delegate cpu to its children; a cgroup with processes cannot
            # (no internal processes), so skip rather than move ourselves around.
            try:
                with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+cpu")
            except OSError as e:
                self.remove()
                skip(f"cannot enable cpu in {parent}/cgroup.subtree_control: {e}")

    def set_cpus(self, cpus):
        quota = int(cpus * PERIOD_US)
        if self.version == 1:
            self._write("cpu.cfs_period_us", PERIOD_US)
            self._write("cpu.cfs_quota_us", quota)
        else:
            self._write("cpu.max", f"{quota} {PERIOD_US}")

    def set_weight(self, shares):
        """CPU weight against sibling cgroups, in v1 cpu.shares units (1024 = one default task)."""
        if self.version == 1:
            self._write("cpu.shares", shares)
        else:
            self._write("cpu.weight", max(1, min(10000, shares * 100 // 1024)))

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(f"{value}\n")

    def enter(self):
        """For preexec_fn: moves the calling (child) process into the cgroup before exec."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def nr_throttled(self):
        with open(os.path.join(self.path, "cpu.stat")) as f:
            for line in f:
                key, value = line.split()
                if key == "nr_throttled":
                    return int(value)
        return 0

    def remove(self):
        for attempt in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)  # processes still exiting
        print(f"WARNING: could not remove {self.path}", file=sys.stderr)


class Process:
    """The binary under test, with its stderr read line by line on a thread."""

    def __init__(self, argv, cgroup):
        self.lines = queue.Queue()
        self.log = []
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, preexec_fn=cgroup.enter)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.log.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def expect(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.fail(f"no line matching {pattern.pattern!r} within {timeout} s")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self.fail(f"exited ({self.proc.wait()}) before a line matching {pattern.pattern!r}")
            match = pattern.search(line)
            if match:
                return match

    def output_threads(self):
        count = 0
        for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                with open(f"/proc/{self.proc.pid}/task/{tid}/comm") as f:
                    if f.read().startswith("output-"):
                        count += 1
            except OSError:
                pass
        return count

    def wait_output_threads(self, n, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.output_threads() == n:
                return
            time.sleep(0.05)
        self.fail(f"expected {n} output-* threads, found {self.output_threads()}")

    def fail(self, message):
        self.stop()
        print("---- binary's log ----\n" + "\n".join(self.log[-40:]), file=sys.stderr)
        raise AssertionError(message)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def check(condition, message, process):
    if not condition:
        process.fail(message)
    print(f"ok: {message}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    extra = sys.argv[2:]
    version, parent = find_cpu_cgroup()
    print(f"cgroup v{version}, parent {parent}")
    cgroup = Cgroup(version, parent)
    try:
        cgroup.set_cpus(0.5)
        process = Process([binary, "-E", "shipper.cpu.retune_interval=1s",
                           "-E", "shipper.server.server=127.0.0.1:0",
                           "-E", "http.port=0"] + extra, cgroup)
        try:
            m = process.expect(QUOTA_LINE, timeout=30)
            print(f"start: {m.group(0)}")
            check(m["source"] == f"cgroup{version}", f"source=cgroup{version}", process)
            check(m["quota"] == "50000" and m["period"] == "100000",
                  "quota=50000 period=100000", process)
            check(m["cpus"] == "1", "effective_cpus=1 under a 0.5-CPU quota", process)
            process.wait_output_threads(1, timeout=10)
            print("ok: 1 output thread")

            cgroup.set_cpus(2)
            m = process.expect(CHANGE_LINE, timeout=15)
            print(f"re-tune: {m.group(0)}")
            check(m["old"] == "1" and m["new"] == "2", "effective_cpus 1 → 2 after raising to 2",
                  process)
            process.wait_output_threads(2, timeout=10)
            print("ok: 2 output threads")
        finally:
            process.stop()
        check(process.proc.returncode == 0, f"clean exit on SIGTERM (rc {process.proc.returncode})",
              process)

        # --cpus wins over the quota and turns re-tuning off.
        cgroup.set_cpus(0.5)
        process = Process([binary, "--cpus=3", "-E", "shipper.cpu.retune_interval=1s",
                           "-E", "shipper.server.server=127.0.0.1:0",
                           "-E", "http.port=0"] + extra, cgroup)
        try:
            m = process.expect(QUOTA_LINE, timeout=30)
            print(f"override: {m.group(0)}")
            check(m["source"] == "override" and m["cpus"] == "3", "--cpus=3 wins", process)
            cgroup.set_cpus(2)
            time.sleep(2.5)
            check(not any(CHANGE_LINE.search(line) for line in process.log),
                  "no re-tune with --cpus", process)
            process.wait_output_threads(3, timeout=10)
            print("ok: 3 output threads")
        finally:
            process.stop()
    finally:
        cgroup.remove()
    print("PASSED")


if __name__ == "__main__":
    main()
