#!/usr/bin/python3
"""OTLP/gRPC end to end: the real shipper binary and a Python grpcio client on our protos.

Records arrive mapped and exact; with ack: persisted a dead output holds the reply; a full queue
answers UNAVAILABLE with google.rpc.RetryInfo and queues nothing of the request, and once the
output returns every record the sender retried is delivered; oversized, undecodable, invalid
UTF-8 and gzip-bomb requests get their codes without harming the process; at SIGTERM a waiting
export is answered OK once its records persist during the drain, or UNAVAILABLE at
shipper.shutdown_timeout. Every wait is for a condition, with a deadline."""
import gzip
import json
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import grpc
from grpc_tools import protoc

sys.path.insert(0, "tests/python")
sys.path.insert(0, "tests/hardening")
from tls_test import Pki  # noqa: E402  (the certificates the TLS tests make)
from wire_compat_test import Shipper  # noqa: E402  (the same process wrapper)

EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
MAX_INT64 = 2**63 - 1
MAX_SAFE_INTEGER = 2**53 - 1

_stubs = None


def stubs():
    """(logs_service_pb2, status_pb2), generated from proto/ once per process."""
    global _stubs
    if _stubs is None:
        out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        protos = ["proto/otlp/common.proto", "proto/otlp/resource.proto", "proto/otlp/logs.proto",
                  "proto/otlp/logs_service.proto", "proto/rpc/status.proto"]
        if protoc.main(["protoc", "-I.", "-I/usr/include", f"--python_out={out}", *protos]) != 0:
            raise RuntimeError("protoc failed to generate the Python stubs")
        sys.path.insert(0, out)
        from proto.otlp import logs_service_pb2  # noqa: generated above
        from proto.rpc import status_pb2  # noqa: generated above
        _stubs = (logs_service_pb2, status_pb2)
    return _stubs


def wait_for(condition, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OtlpShipper(Shipper):
    """A shipper with the OTLP/gRPC input on a free port (HTTP off)."""

    def __init__(self, tmp, *args, credentials=None):
        super().__init__(tmp, "-E", "shipper.otlp.enabled=true",
                         "-E", "shipper.otlp.grpc.server=127.0.0.1:0",
                         "-E", "shipper.otlp.http.enabled=false", *args)
        self.otlp = wait_for(lambda: (re.search(r"OTLP/gRPC listening on (\S+)", self.text())
                                      or [None, None])[1], "the OTLP listener")
        self.channel = (grpc.insecure_channel(self.otlp) if credentials is None
                        else grpc.secure_channel(self.otlp, credentials))
        self.export = self.channel.unary_unary(EXPORT, request_serializer=None,
                                               response_deserializer=None)

    def metric(self, name):
        """The value of an unlabelled metric now."""
        url = re.search(r"metrics on (http://\S+/metrics)", self.text()).group(1)
        page = urllib.request.urlopen(url, timeout=10).read().decode()
        m = re.search(rf"^{re.escape(name)} (\S+)$", page, re.M)
        return float(m.group(1)) if m else None

    def labelled_metric(self, name, labels):
        """The value of metric `name` with `labels` (as the page spells them) now, or 0."""
        url = re.search(r"metrics on (http://\S+/metrics)", self.text()).group(1)
        page = urllib.request.urlopen(url, timeout=10).read().decode()
        m = re.search(rf"^{re.escape(name)}{{{re.escape(labels)}}} (\S+)$", page, re.M)
        return float(m.group(1)) if m else 0

    def stop(self):
        self.channel.close()
        return super().stop()

    def exited(self, timeout=30):
        """The exit code once the process ends by itself (after a signal the test sent)."""
        code = self.proc.wait(timeout=timeout)
        self.channel.close()
        self.log.close()
        return code


def request(records, first=0, body=lambda i: f"record {i}", attrs=None):
    """An ExportLogsServiceRequest of `records` numbered records, as bytes."""
    ls, _ = stubs()
    req = ls.ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    kv = rl.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "otlp-test"
    sl = rl.scope_logs.add()
    sl.scope.name = "otlp_grpc_test"
    for i in range(first, first + records):
        r = sl.log_records.add()
        r.time_unix_nano = 1700000000000000000 + i
        r.body.string_value = body(i)
        seq = r.attributes.add()
        seq.key, seq.value.int_value = "seq", i
        for key, value in (attrs or {}).items():
            a = r.attributes.add()
            a.key = key
            if isinstance(value, bytes):
                a.value.bytes_value = value
            elif isinstance(value, int):
                a.value.int_value = value
            else:
                a.value.string_value = value
    return req.SerializeToString()


def kvlist_request(records, entries):
    """An ExportLogsServiceRequest whose records' bodies are kvlists of `entries` small
    entries each: slow to convert for its size."""
    ls, _ = stubs()
    req = ls.ExportLogsServiceRequest()
    sl = req.resource_logs.add().scope_logs.add()
    for _ in range(records):
        body = sl.log_records.add().body.kvlist_value
        for j in range(entries):
            kv = body.values.add()
            kv.key, kv.value.int_value = f"{j:x}", 1
    return req.SerializeToString()


def serving_cpu_seconds(pid, name):
    """The CPU time the threads of `pid` whose name starts with `name` have spent, in seconds."""
    ticks = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                if not f.read().startswith(name):
                    continue
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended
    return ticks / os.sysconf("SC_CLK_TCK")


def retry_delay(error):
    """The RetryInfo delay of a gRPC error's google.rpc.Status details, in seconds, or None."""
    _, status_pb2 = stubs()
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                if detail.type_url == "type.googleapis.com/google.rpc.RetryInfo":
                    info = status_pb2.RetryInfo.FromString(detail.value)
                    return info.retry_delay.seconds + info.retry_delay.nanos / 1e9
    return None


def written(out_dir):
    """Every document the file output wrote, in order."""
    docs = []
    for name in sorted(os.listdir(out_dir)):
        with open(os.path.join(out_dir, name)) as f:
            docs += [json.loads(line) for line in f]
    return docs


class OtlpGrpcTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.out = os.path.join(self.tmp, "out")

    def subdir(self, name):
        path = os.path.join(self.tmp, name)
        os.makedirs(path)
        return path

    def test_records_are_mapped_and_integers_exact(self):
        shipper = OtlpShipper(self.tmp, "-E", f"shipper.output.file.path={self.out}")
        ls, _ = stubs()
        attrs = {"max": MAX_INT64, "safe": MAX_SAFE_INTEGER, "raw": b"\x00\xff"}
        reply = ls.ExportLogsServiceResponse.FromString(
            shipper.export(request(1000, attrs=attrs), timeout=30))
        self.assertFalse(reply.HasField("partial_success"))
        # ack: persisted (the default): the reply came once the file output wrote them all.
        docs = written(self.out)
        self.assertEqual(len(docs), 1000)
        d = docs[7]
        self.assertEqual(d["body"], {"text": "record 7"})
        self.assertEqual(d["attributes"], {"seq": 7, "max": MAX_INT64, "safe": MAX_SAFE_INTEGER,
                                           "raw": "AP8="})
        self.assertEqual(d["resource"], {"attributes": {"service.name": "otlp-test"}})
        self.assertEqual(d["scope"], {"name": "otlp_grpc_test"})
        self.assertEqual(d["@timestamp"], "2023-11-14T22:13:20.000000007Z")
        self.assertEqual(d["data_stream"],
                         {"type": "logs", "dataset": "generic.otel", "namespace": "default"})
        self.assertEqual([doc["attributes"]["seq"] for doc in docs], list(range(1000)))
        # Compressed exports are taken too.
        shipper.export(request(10, first=1000), timeout=30, compression=grpc.Compression.Gzip)
        self.assertEqual(len(written(self.out)), 1010)
        self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_mtls_with_the_otlp_ssl_keys_and_a_unix_socket(self):
        pki = Pki(self.subdir("pki"))
        p = pki.path
        shipper = OtlpShipper(self.subdir("tls"), "-E", f"shipper.output.file.path={self.out}",
                              "-E", f"shipper.otlp.ssl.certificate={p('server.crt')}",
                              "-E", f"shipper.otlp.ssl.key={p('server.key')}",
                              "-E", f"shipper.otlp.ssl.certificate_authorities={p('ca.crt')}",
                              "-E", "shipper.otlp.ssl.client_authentication=required",
                              credentials=pki.credentials(client="client"))
        shipper.export(request(2), timeout=10)
        for name, credentials in (("no client certificate", pki.credentials()),
                                  ("another CA's client", pki.credentials(client="other_client"))):
            with grpc.secure_channel(shipper.otlp, credentials) as channel:
                with self.assertRaises(grpc.RpcError) as refused:
                    channel.unary_unary(EXPORT)(request(1), timeout=10)
                self.assertEqual(refused.exception.code(), grpc.StatusCode.UNAVAILABLE, name)
        with grpc.insecure_channel(shipper.otlp) as plaintext:
            with self.assertRaises(grpc.RpcError):
                plaintext.unary_unary(EXPORT)(request(1), timeout=10)
        self.assertEqual(shipper.stop(), 0, shipper.text())

        # Short: a socket path must fit in 108 bytes, which TEST_TMPDIR may not.
        socket_dir = tempfile.mkdtemp(prefix="shipper-otlp-", dir="/tmp")
        self.addCleanup(os.rmdir, socket_dir)
        socket_path = os.path.join(socket_dir, "otlp.sock")
        shipper = OtlpShipper(self.subdir("unix"), "-E", f"shipper.output.file.path={self.out}",
                              "-E", f"shipper.otlp.grpc.server=unix://{socket_path}")
        self.assertEqual(shipper.otlp, f"unix://{socket_path}")
        shipper.export(request(3, first=2), timeout=10)
        self.assertEqual([d["attributes"]["seq"] for d in written(self.out)], [0, 1, 2, 3, 4])
        self.assertEqual(shipper.stop(), 0, shipper.text())
        self.assertFalse(os.path.exists(socket_path), "the socket file is removed at exit")

    def test_a_record_too_large_is_rejected_in_partial_success(self):
        shipper = OtlpShipper(self.tmp, "-E", f"shipper.output.file.path={self.out}",
                              "-E", "shipper.otlp.max_message_size=64KiB")
        ls, _ = stubs()
        # 40 KiB of bytes: 54 KiB of base64 once converted, with the body more than 64 KiB.
        big = request(1, first=1, body=lambda i: "x" * 20000, attrs={"blob": b"\x01" * 40000})
        req = ls.ExportLogsServiceRequest.FromString(request(3))
        req.resource_logs[0].scope_logs[0].log_records.insert(
            1, ls.ExportLogsServiceRequest.FromString(big).resource_logs[0].scope_logs[0]
            .log_records[0])
        reply = ls.ExportLogsServiceResponse.FromString(
            shipper.export(req.SerializeToString(), timeout=30))
        self.assertEqual(reply.partial_success.rejected_log_records, 1)
        self.assertIn("too large", reply.partial_success.error_message)
        self.assertEqual([d["attributes"]["seq"] for d in written(self.out)], [0, 1, 2])
        self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_a_dead_output_holds_the_reply(self):
        shipper = OtlpShipper(self.tmp, "-E", "shipper.output.shipper.enabled=true",
                              "-E", "shipper.output.shipper.server=127.0.0.1:1",
                              "-E", "shipper.shutdown_timeout=1s")
        started = time.monotonic()
        with self.assertRaises(grpc.RpcError) as held:
            shipper.export(request(10), timeout=3)
        self.assertEqual(held.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertGreaterEqual(time.monotonic() - started, 2.9)
        self.assertEqual(shipper.metric("shipper_queue_events"), 10)
        self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_a_full_queue_asks_to_retry_and_every_retried_record_arrives(self):
        port = free_port()
        shipper = OtlpShipper(self.tmp, "-E", "shipper.otlp.ack=queued",
                              "-E", "shipper.otlp.retry_delay=250ms",
                              "-E", "shipper.queue.mem.events=100",
                              "-E", "shipper.output.shipper.enabled=true",
                              "-E", f"shipper.output.shipper.server=127.0.0.1:{port}",
                              "-E", "shipper.output.backoff.init=50ms",
                              "-E", "shipper.output.backoff.max=200ms")
        shipper.export(request(60), timeout=10)
        with self.assertRaises(grpc.RpcError) as full:
            shipper.export(request(60, first=60), timeout=10)
        self.assertEqual(full.exception.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(retry_delay(full.exception), 0.25)
        self.assertEqual(shipper.metric("shipper_queue_events"), 60,
                         "nothing of the refused export is queued")
        self.assertEqual(shipper.metric("shipper_events_persisted_total"), 0)

        # The sender retries as the OTLP exporters do, after the delay it was given, while the
        # output comes back.
        retried = {}

        def send(first):
            while True:
                try:
                    shipper.export(request(60, first=first), timeout=10)
                    return
                except grpc.RpcError as e:
                    self.assertEqual(e.code(), grpc.StatusCode.UNAVAILABLE, e.details())
                    retried[first] = retried.get(first, 0) + 1
                    time.sleep(retry_delay(e))

        sender = threading.Thread(target=send, args=(60,))
        sender.start()
        wait_for(lambda: retried.get(60), "a retry refused while the output is down")
        aggregator_out = os.path.join(self.tmp, "aggregator")
        aggregator = Shipper(self.subdir("aggregator-run"),
                             "-E", f"shipper.server.server=127.0.0.1:{port}",
                             "-E", f"shipper.output.file.path={aggregator_out}")
        sender.join(timeout=60)
        self.assertFalse(sender.is_alive())
        wait_for(lambda: os.path.isdir(aggregator_out) and len(written(aggregator_out)) >= 120,
                 "every record at the aggregator")
        seqs = sorted({d["attributes"]["seq"] for d in written(aggregator_out)})
        self.assertEqual(seqs, list(range(120)))
        self.assertEqual(shipper.stop(), 0, shipper.text())
        self.assertEqual(aggregator.stop(), 0, aggregator.text())

    def test_hostile_requests_get_their_codes_and_harm_nothing(self):
        shipper = OtlpShipper(self.tmp, "-E", f"shipper.output.file.path={self.out}",
                              "-E", "shipper.otlp.max_message_size=1MiB")
        ls, _ = stubs()
        cases = []
        # Past max_message_size and its compression allowance, gRPC refuses the message as it
        # receives it; within the allowance, our own check names the key.
        with self.assertRaises(grpc.RpcError) as e:
            shipper.export(request(1, body=lambda i: "y" * (2 << 20)), timeout=10)
        cases.append(("oversized", e.exception, grpc.StatusCode.RESOURCE_EXHAUSTED,
                      "larger than max"))
        with self.assertRaises(grpc.RpcError) as e:
            shipper.export(request(1, body=lambda i: "y" * ((1 << 20) + 100)), timeout=10)
        cases.append(("just over", e.exception, grpc.StatusCode.RESOURCE_EXHAUSTED,
                      "shipper.otlp.max_message_size"))
        with self.assertRaises(grpc.RpcError) as e:
            shipper.export(b"\x0a\x10\x12\x05", timeout=10)
        cases.append(("undecodable", e.exception, grpc.StatusCode.INVALID_ARGUMENT,
                      "not an ExportLogsServiceRequest"))
        with self.assertRaises(grpc.RpcError) as e:
            bad = bytearray(request(1, body=lambda i: "caf\u00e9"))
            bad[bad.index("é".encode()) + 1] = 0x28  # a lone lead byte: not UTF-8
            shipper.export(bytes(bad), timeout=10)
        cases.append(("invalid UTF-8", e.exception, grpc.StatusCode.INVALID_ARGUMENT, "UTF-8"))
        with self.assertRaises(grpc.RpcError) as e:
            # 64 MiB in 64 KiB: inflated no further than the 1 MiB limit.
            shipper.export(request(1, body=lambda i: "z" * (64 << 20)), timeout=60,
                           compression=grpc.Compression.Gzip)
        cases.append(("gzip bomb", e.exception, grpc.StatusCode.RESOURCE_EXHAUSTED,
                      "decodes to more than"))
        trace = shipper.channel.unary_unary(TRACE_EXPORT, request_serializer=None,
                                            response_deserializer=None)
        with self.assertRaises(grpc.RpcError) as e:
            trace(b"\xff\xff", timeout=10)
        cases.append(("malformed traces", e.exception, grpc.StatusCode.INVALID_ARGUMENT,
                      "not an ExportTraceServiceRequest"))
        for name, error, code, words in cases:
            self.assertEqual(error.code(), code, f"{name}: {error.details()}")
            self.assertIn(words, error.details(), name)
            if code != grpc.StatusCode.UNAVAILABLE:
                self.assertIsNone(retry_delay(error), f"{name}: no RetryInfo, no retry")
        # Still serving, and nothing of the refused requests was queued.
        shipper.export(request(2), timeout=10)
        self.assertEqual(len(written(self.out)), 2)
        self.assertLess(shipper.peak_rss(), 400 << 20)
        self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_a_flood_stays_within_the_memory_bound(self):
        """16 connections with 8 exports of 3 MiB in flight each, half of them gzip, for 3 s
        into a Shipper whose output is down: peak RSS stays within the budgets plus the fixed
        overhead the process logs (README "Memory"), the senders are told to retry, and the
        process serves on."""
        shipper = OtlpShipper(self.tmp, "-E", "shipper.output.shipper.enabled=true",
                              "-E", "shipper.output.shipper.server=127.0.0.1:1",
                              "-E", "shipper.queue.mem.bytes=48MiB",
                              "-E", "shipper.server.max_receive_memory=48MiB",
                              "-E", "shipper.server.max_message_size=8MiB",
                              "-E", "shipper.otlp.max_message_size=8MiB",
                              "-E", "shipper.shutdown_timeout=1s")
        m = re.search(r"shipper.queue.mem.bytes=(\d+) shipper.server.max_receive_memory=(\d+) "
                      r"\(\+(\d+) fixed\)", shipper.text())
        bound = sum(int(g) for g in m.groups())
        # 3 MiB of 4,000 records.
        payload = request(4000, body=lambda i: f"{i:08d} " + "GET /index.html HTTP/1.1 " * 40)
        codes = {}
        exhausted = set()  # the details of RESOURCE_EXHAUSTED answers
        lock = threading.Lock()
        stop = time.monotonic() + 3

        def sender(n):
            with grpc.insecure_channel(shipper.otlp, options=[("sender", n)]) as channel:
                export = channel.unary_unary(EXPORT)
                compression = grpc.Compression.Gzip if n % 2 else grpc.Compression.NoCompression
                while time.monotonic() < stop:
                    calls = [export.future(payload, timeout=2, compression=compression)
                             for _ in range(8)]
                    for call in calls:
                        try:
                            call.result()
                            code = grpc.StatusCode.OK
                        except grpc.RpcError as e:
                            code = e.code()
                            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                                with lock:
                                    exhausted.add(e.details())
                        with lock:
                            codes[code] = codes.get(code, 0) + 1

        senders = [threading.Thread(target=sender, args=(n,)) for n in range(16)]
        for t in senders:
            t.start()
        for t in senders:
            t.join(timeout=60)
        peak = shipper.peak_rss()
        print(f"flood: {len(payload) >> 20} MiB exports, answers {codes}, peak RSS "
              f"{peak >> 20} MiB, bound {bound >> 20} MiB")
        if not os.environ.get("ASAN_OPTIONS"):  # ASan's shadow memory is no part of the bound
            self.assertLessEqual(peak, bound)
        self.assertIn(grpc.StatusCode.UNAVAILABLE, codes, "the senders were told to retry")
        self.assertNotIn(grpc.StatusCode.OK, codes, "the output is down: nothing persisted")
        # Shipper never says RESOURCE_EXHAUSTED for want of room. gRPC's own resource quota
        # (shipper.server.max_receive_memory) resets streams beyond it, which clients see as
        # RESOURCE_EXHAUSTED (RST_STREAM ENHANCE_YOUR_CALM): README "Backpressure" says so.
        self.assertEqual({d for d in exhausted if "RST_STREAM" not in d}, set(), exhausted)
        self.assertEqual(shipper.stop(), 0, shipper.text())

    def test_a_retry_after_the_deadline_joins_the_waiting_export(self):
        """ack: persisted with the output down: an export times out at its sender, which sends
        the same bytes twice more. The retries join the export waiting to persist (counted as
        joined records) instead of queueing copies; once the output is back the last send is
        answered OK and the records are delivered once."""
        port = free_port()
        shipper = OtlpShipper(self.tmp, "-E", "shipper.output.shipper.enabled=true",
                              "-E", f"shipper.output.shipper.server=127.0.0.1:{port}",
                              "-E", "shipper.output.backoff.init=50ms",
                              "-E", "shipper.output.backoff.max=200ms")
        body = request(5)
        for _ in range(2):
            with self.assertRaises(grpc.RpcError) as e:
                shipper.export(body, timeout=1)
            self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        joined = ("shipper_input_records_total",
                  'input="otlp_grpc",outcome="joined",signal="logs"')
        self.assertEqual(shipper.labelled_metric(*joined), 5)
        self.assertEqual(shipper.metric("shipper_queue_events"), 5, "no copy queued")
        aggregator_out = os.path.join(self.tmp, "aggregator")
        aggregator = Shipper(self.subdir("aggregator-run"),
                             "-E", f"shipper.server.server=127.0.0.1:{port}",
                             "-E", f"shipper.output.file.path={aggregator_out}")
        shipper.export(body, timeout=60)
        # Answered OK once the records persisted at the aggregator: all of them are written.
        self.assertEqual(sorted(d["attributes"]["seq"] for d in written(aggregator_out)),
                         list(range(5)), "delivered once")
        self.assertEqual(shipper.labelled_metric(*joined), 10)
        self.assertEqual(shipper.stop(), 0, shipper.text())
        self.assertEqual(aggregator.stop(), 0, aggregator.text())

    def test_sigterm_during_a_long_conversion_exits_0(self):
        """SIGTERM while an export of about 100 MiB is converted, which takes longer than the
        server's one second of grace: the conversion finishes, its sender gets an answer (or
        its call was cancelled), and the process exits 0 rather than finishing a call on a
        shut-down completion queue."""
        shipper = OtlpShipper(self.tmp, "-E", "shipper.queue.mem.bytes=1GiB",
                              "-E", "shipper.server.max_receive_memory=256MiB",
                              "-E", "shipper.otlp.max_message_size=128MiB",
                              "-E", "shipper.otlp.ack=queued")
        payload = kvlist_request(records=16, entries=600000)
        answers = []

        def export():
            try:
                shipper.export(payload, timeout=300)
                answers.append(grpc.StatusCode.OK)
            except grpc.RpcError as e:
                answers.append(e.code())

        sender = threading.Thread(target=export)
        sender.start()
        # The request's flattened copy is charged just before it is converted (about 4 s of
        # CPU); half a second of CPU later the conversion runs.
        wait_for(lambda: shipper.labelled_metric("shipper_memory_budget_in_use_bytes",
                                                 'part="requests"') >= len(payload),
                 "the request to be copied", timeout=120)
        copied = serving_cpu_seconds(shipper.proc.pid, "otlp-grpc")
        wait_for(lambda: serving_cpu_seconds(shipper.proc.pid, "otlp-grpc") >= copied + 0.5,
                 "the conversion to run", timeout=60)
        shipper.proc.send_signal(signal.SIGTERM)
        sender.join(timeout=300)
        self.assertEqual(len(answers), 1, answers)
        self.assertEqual(shipper.exited(timeout=300), 0, shipper.text()[-3000:])

    def test_sigterm_answers_waiting_exports_as_they_persist_or_at_the_timeout(self):
        port = free_port()
        shipper = OtlpShipper(self.tmp, "-E", "shipper.output.shipper.enabled=true",
                              "-E", f"shipper.output.shipper.server=127.0.0.1:{port}",
                              "-E", "shipper.output.backoff.init=50ms",
                              "-E", "shipper.output.backoff.max=200ms",
                              "-E", "shipper.shutdown_timeout=30s")
        answers = {}

        def export(name, first):
            try:
                shipper.export(request(5, first=first), timeout=60)
                answers[name] = grpc.StatusCode.OK
            except grpc.RpcError as e:
                answers[name] = e.code()

        waiting = threading.Thread(target=export, args=("waiting", 0))
        waiting.start()
        wait_for(lambda: shipper.metric("shipper_queue_events") == 5, "the export queued")
        shipper.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "draining" in shipper.text() or "stopping" in shipper.text().lower(),
                 "the drain to begin", timeout=10)
        self.assertNotIn("waiting", answers, "answered before its records persisted")
        # The output comes back during the drain: the export is answered OK.
        aggregator = Shipper(self.subdir("aggregator-run"),
                             "-E", f"shipper.server.server=127.0.0.1:{port}",
                             "-E", f"shipper.output.file.path={self.out}")
        waiting.join(timeout=30)
        self.assertEqual(answers.get("waiting"), grpc.StatusCode.OK)
        self.assertEqual(shipper.exited(), 0, shipper.text())
        self.assertEqual(aggregator.stop(), 0, aggregator.text())

    def test_sigterm_answers_unavailable_at_the_shutdown_timeout(self):
        shipper = OtlpShipper(self.tmp, "-E", "shipper.output.shipper.enabled=true",
                              "-E", "shipper.output.shipper.server=127.0.0.1:1",
                              "-E", "shipper.shutdown_timeout=2s")
        answers = {}

        def export():
            try:
                shipper.export(request(5), timeout=60)
                answers["code"] = grpc.StatusCode.OK
            except grpc.RpcError as e:
                answers["code"], answers["details"] = e.code(), e.details()

        waiting = threading.Thread(target=export)
        waiting.start()
        wait_for(lambda: shipper.metric("shipper_queue_events") == 5, "the export queued")
        shipper.proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        waiting.join(timeout=30)
        self.assertEqual(answers.get("code"), grpc.StatusCode.UNAVAILABLE, answers)
        self.assertIn("shutting down", answers["details"])
        self.assertGreaterEqual(time.monotonic() - signalled, 1.9)
        self.assertEqual(shipper.exited(), 0, shipper.text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
