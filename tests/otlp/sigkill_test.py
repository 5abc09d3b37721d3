#!/usr/bin/python3
"""OTLP with the disk queue and ack: persisted, SIGKILLed during a stream of exports: every
record whose Export returned OK is in the output after the restart.

Two senders export numbered records, one over gRPC and one over HTTP (protobuf), each export a
range of its own, resending an export until it is answered OK (as an SDK or the Collector
retries). Shipper is SIGKILLed at a random moment, restarted on the same queue and output, three
times; after the last restart the senders stop and every record of every export answered OK must
reach the output (duplicates are allowed: at-least-once)."""
import http.client
import os
import random
import signal
import sys
import tempfile
import threading
import time
import unittest

import grpc

sys.path.insert(0, "tests/otlp")
from otlp_harness import OtlpShipper, otlp, post, wait_for  # noqa: E402

KILLS = 3
RECORDS_PER_EXPORT = 100


class Sender(threading.Thread):
    """Exports ranges [first, first + 100) of its own seqs, one after the other, each until OK."""

    def __init__(self, transport, first_seq):
        super().__init__(daemon=True)
        self.transport, self.next_seq = transport, first_seq
        self.shipper = None
        self.connection, self.connection_of = None, None  # kept alive, to one process
        self.ok = set()  # seqs whose export was answered OK
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def request(self, first):
        logs, _ = otlp()
        request = logs.ExportLogsServiceRequest()
        records = request.resource_logs.add().scope_logs.add().log_records
        for seq in range(first, first + RECORDS_PER_EXPORT):
            record = records.add()
            record.body.string_value = "x" * 200
            record.attributes.add(key="seq").value.int_value = seq
        return request.SerializeToString()

    def export(self, body):
        shipper = self.shipper
        try:
            if self.transport == "grpc":
                shipper.export_grpc(body, timeout=5)
                return True
            if self.connection is None or self.connection_of is not shipper:
                self.connection, self.connection_of = shipper.http(), shipper
            status, _, _ = post(self.connection, body)
            return status == 200
        except (grpc.RpcError, OSError, http.client.HTTPException):
            if self.connection is not None:
                self.connection.close()
                self.connection = None
            return False  # the process died or is restarting: send it again

    def run(self):
        while not self.stopping.is_set():
            body, first = self.request(self.next_seq), self.next_seq
            while not self.stopping.is_set():
                if self.export(body):
                    with self.lock:
                        self.ok.update(range(first, first + RECORDS_PER_EXPORT))
                    self.next_seq += RECORDS_PER_EXPORT
                    break
                time.sleep(0.01)


class SigkillTest(unittest.TestCase):
    def test_every_record_answered_ok_survives_sigkill(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        out, queue = os.path.join(tmp, "out"), os.path.join(tmp, "queue")
        args = ("-E", "shipper.queue.disk.enabled=true", "-E", f"shipper.queue.disk.path={queue}",
                "-E", "shipper.queue.disk.max_size=256MiB")
        senders = [Sender("grpc", 0), Sender("http", 1 << 40)]
        shipper = OtlpShipper(tmp, out, *args)
        for sender in senders:
            sender.shipper = shipper
            sender.start()
        try:
            for kill in range(KILLS):
                before = sum(len(s.ok) for s in senders)
                wait_for(lambda: sum(len(s.ok) for s in senders) > before + 5000, 60,
                         "exports answered OK")
                time.sleep(random.uniform(0, 0.3))  # a random moment during the stream
                shipper.proc.send_signal(signal.SIGKILL)
                shipper.proc.wait()
                print(f"kill {kill + 1}: {sum(len(s.ok) for s in senders)} records answered OK",
                      flush=True)
                shipper = OtlpShipper(tmp, out, *args)
                for sender in senders:
                    sender.shipper = shipper
            for sender in senders:
                sender.stopping.set()
                sender.join(timeout=30)
            ok = set().union(*(s.ok for s in senders))

            def missing():
                seqs = {d["attributes"]["seq"] for d in shipper.documents()}
                return ok - seqs
            wait_for(lambda: not missing(), 60, "every record answered OK in the output")
            docs = shipper.documents()
            print(f"{len(ok)} records answered OK, {len(docs)} documents written "
                  f"({len(docs) - len({d['attributes']['seq'] for d in docs})} duplicates)")
        finally:
            for sender in senders:
                sender.stopping.set()
            self.assertEqual(shipper.stop(), 0, shipper.text()[-3000:])


if __name__ == "__main__":
    unittest.main(verbosity=2)
