#!/usr/bin/python3
"""The archived shipper's own Go client library against Shipper, restarted under it.

tests/peers/producer_go (built by ./dev, SHIPPER_PRODUCER_GO) publishes 100,000 numbered events
through github.com/elastic/elastic-agent-shipper-client as libbeat's shipper output did:
PublishEvents with the server's uuid, the PersistedIndex stream saying which accepted events are
safe. Shipper (disk queue, file output, on a unix socket so that a restart keeps its address) is
SIGKILLed twice mid-stream and restarted; each time the client must see the new uuid, rewind to
its first event not yet persisted and resend from there. Every event must be in the output;
duplicates (events persisted whose index the client had not yet seen) are counted and printed.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path[:0] = ["tests/otlp", "tests/peers", "tests/python"]
from otlp_harness import wait_for  # noqa: E402
from peer_harness import FileTail, peer  # noqa: E402
from wire_compat_test import Shipper  # noqa: E402

EVENTS = 100_000
KILL_AT = (20_000, 55_000)  # documents in the output when Shipper is SIGKILLed
# Events a second: unpaced, the client published all 100,000 in about a second, too fast for the
# test to be sure of killing Shipper twice before it ends.
RATE = 40_000


class ProducerGoTest(unittest.TestCase):
    def test_rewinds_on_each_restart_and_delivers_every_event(self):
        client = peer("SHIPPER_PRODUCER_GO", "the Go client")
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        # A unix socket's path must fit in 108 bytes, which the test's own directory may not.
        sock_dir = tempfile.mkdtemp(prefix="shipper-go-", dir="/tmp")
        self.addCleanup(shutil.rmtree, sock_dir, ignore_errors=True)
        address = f"unix://{sock_dir}/shipper.sock"
        out = os.path.join(tmp, "out")
        args = ("-E", f"shipper.server.server={address}",
                "-E", "shipper.queue.disk.enabled=true",
                "-E", f"shipper.queue.disk.path={os.path.join(tmp, 'queue')}",
                "-E", f"shipper.output.file.path={out}",
                "-E", "shipper.output.file.rotate_every_kb=10485760")
        shipper = Shipper(tmp, *args)
        uuids = [shipper.uuid]
        proc = subprocess.Popen(
            [client, f"--address={address}", f"--events={EVENTS}", f"--rate={RATE}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            written = FileTail(os.path.join(out, "shipper.ndjson"))
            for at in KILL_AT:
                wait_for(lambda: written.count() >= at or proc.poll() is not None, 120,
                         f"{at} documents written")
                self.assertIsNone(proc.poll(), "the client finished before the restart it tests")
                shipper.proc.send_signal(signal.SIGKILL)
                shipper.proc.wait()
                shipper.log.close()
                print(f"SIGKILL at {written.lines} documents written", flush=True)
                shipper = Shipper(tmp, *args)
                uuids.append(shipper.uuid)
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
            self.assertEqual(shipper.stop(), 0, shipper.text()[-3000:])
        self.assertEqual(proc.returncode, 0, stdout + stderr)
        summary = json.loads(stdout.strip().splitlines()[-1])
        print("client:", summary, flush=True)
        self.assertEqual(summary["uuids"], uuids, "the client followed each restart's uuid")
        self.assertGreaterEqual(summary["rewinds"], len(KILL_AT))

        seen = {}
        for path in sorted(os.listdir(out)):
            with open(os.path.join(out, path)) as f:
                for line in f:
                    seq = json.loads(line)["seq"]
                    seen[seq] = seen.get(seq, 0) + 1
        missing = sorted(set(range(EVENTS)) - set(seen))
        self.assertEqual(missing[:20], [], f"{len(missing)} events missing")
        self.assertEqual(len(seen), EVENTS, "only the events published")
        duplicates = sum(seen.values()) - EVENTS
        print(f"{EVENTS} events delivered, {duplicates} duplicates, {summary['resent']} resent",
              flush=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
