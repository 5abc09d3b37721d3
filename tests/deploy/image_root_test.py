#!/usr/bin/python3
"""The runtime image's file tree, as deploy/collect-runtime.sh builds it for the Dockerfile's
scratch stage, runs Shipper and the health probe on its own: chroot into it as the image's user
(65532), check the default config, serve on the socket, take events into the file output, answer
the probe SERVING, drain on SIGTERM. No shell or package manager may be in it.
Needs root for chroot; elsewhere prints why and passes.

Usage: image_root_test.py SHIPPER HEALTH_PROBE SHIPPER_LOAD
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

USER = "65532:65532"
HEALTH = re.compile(r"gRPC health service \(only\) on (\S+)")
LISTENING = re.compile(r"listening on (\S+) \(uuid")


def chroot(root, *argv):
    return ["chroot", f"--userspec={USER}", root] + list(argv)


def wait_for(pattern, log_path, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path) as f:
            log = f.read()
        m = pattern.search(log)
        if m:
            return m
        assert proc.poll() is None, f"shipper exited {proc.returncode}:\n{log}"
        time.sleep(0.05)
    raise AssertionError(f"no {pattern.pattern!r} in:\n{log}")


def main():
    shipper, probe, shipper_load = (os.path.abspath(p) for p in sys.argv[1:4])
    if os.geteuid() != 0:
        print("SKIPPED: chroot needs root")
        return 0
    if "ASAN_OPTIONS" in os.environ:
        # Under --config=asan the sanitizer runtime needs /proc, which the image root has not.
        print("SKIPPED: an ASan build cannot run in the image root (no /proc)")
        return 0
    with tempfile.TemporaryDirectory(prefix="image_root.") as tmp:
        root = os.path.join(tmp, "rootfs")
        subprocess.run(["deploy/collect-runtime.sh", root, shipper, probe], check=True)
        for absent in ("bin/sh", "usr/bin/apt-get", "bin/bash"):
            assert not os.path.lexists(os.path.join(root, absent)), f"/{absent} is in the image"

        check = subprocess.run(chroot(root, "/usr/local/bin/shipper", "--check_config", "-c",
                                      "/etc/shipper/shipper.yml"), capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        print("ok:", check.stdout.strip())

        log_path = os.path.join(tmp, "shipper.log")
        with open(log_path, "w") as log:
            proc = subprocess.Popen(chroot(root, "/usr/local/bin/shipper", "-c", "/etc/shipper/shipper.yml",
                                           "-E", "shipper.server.health.address=127.0.0.1:0",
                                           "-E", "http.host=127.0.0.1",
                                           "-E", "http.port=0"),
                                    stdout=log, stderr=subprocess.STDOUT)
        try:
            address = wait_for(LISTENING, log_path, proc)[1]
            assert address == "unix:///var/run/shipper/shipper.sock", address
            health = wait_for(HEALTH, log_path, proc)[1]
            answer = subprocess.run(chroot(root, "/usr/local/bin/health_probe", f"--address={health}"),
                                    capture_output=True, text=True)
            assert answer.returncode == 0 and "SERVING" in answer.stdout, answer.stdout + answer.stderr
            print("ok:", answer.stdout.strip())

            socket = f"unix://{root}/var/run/shipper/shipper.sock"
            load = subprocess.run([shipper_load, f"--target={socket}", "--events=1000",
                                   "--progress=off"], capture_output=True, text=True, timeout=60)
            assert load.returncode == 0, load.stderr
            sent = json.loads(load.stdout.strip().splitlines()[-1])
            persisted = sent["events_persisted"]
            assert persisted >= 1000, load.stdout
            print(f"ok: {persisted} events persisted through the socket")
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
        assert code == 0, f"exit {code} after SIGTERM"
        with open(os.path.join(root, "var/lib/shipper/shipper.ndjson")) as f:
            lines = sum(1 for _ in f)
        assert lines >= persisted, f"{lines} lines in the file output, {persisted} persisted"
        print(f"ok: SIGTERM → exit 0, {lines} events in /var/lib/shipper/shipper.ndjson")
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
