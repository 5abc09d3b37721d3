#!/usr/bin/python3
"""OTLP/HTTP's edges with a real HTTP client (Python's http.client) against the real binary:
every status the README lists, in the request's encoding, on kept-alive connections, and
Shipper unharmed after each (a gzip bomb included)."""
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, "tests/otlp")
from otlp_harness import OtlpShipper, otlp, post, wait_for  # noqa: E402

MAX_MESSAGE = 1 << 20


def request_of(n, first=0):
    logs, _ = otlp()
    request = logs.ExportLogsServiceRequest()
    records = request.resource_logs.add().scope_logs.add().log_records
    for i in range(first, first + n):
        record = records.add()
        record.body.string_value = f"edge {i}"
        record.attributes.add(key="seq").value.int_value = i
    return request.SerializeToString()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpEdgesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.shipper = OtlpShipper(tmp, os.path.join(tmp, "out"),
                                  "-E", f"shipper.otlp.max_message_size={MAX_MESSAGE}",
                                  grpc_on=False)

    @classmethod
    def tearDownClass(cls):
        code = cls.shipper.stop()
        assert code == 0, cls.shipper.text()[-3000:]

    def assert_status_body(self, body, code, words, json_body=False):
        """A google.rpc.Status with `code` whose message holds `words`."""
        if json_body:
            status = json.loads(body)
            self.assertEqual(status["code"], code, body)
            self.assertIn(words, status["message"])
            return
        _, status_pb2 = otlp()
        status = status_pb2.Status.FromString(body)
        self.assertEqual(status.code, code, status)
        self.assertIn(words, status.message)

    def test_other_paths_are_404_and_name_the_three(self):
        for path in ("/v1/profiles", "/v1/logs/", "/v2/logs"):
            status, _, body = post(self.shipper.http(), request_of(1), path=path)
            self.assertEqual(status, 404, path)
            self.assertIn(b"/v1/logs, /v1/traces or /v1/metrics", body)
        status, _, _ = post(self.shipper.http(), b"", path="/", method="GET")
        self.assertEqual(status, 404)

    def test_traces_and_metrics_paths_take_their_requests(self):
        for path in ("/v1/traces", "/v1/metrics"):
            status, _, body = post(self.shipper.http(), b"", path=path)
            self.assertEqual(status, 200, body)
            status, _, body = post(self.shipper.http(), b"\xff\xff", path=path)
            self.assertEqual(status, 400, body)

    def test_other_methods_are_405(self):
        for method in ("GET", "PUT", "DELETE"):
            status, headers, _ = post(self.shipper.http(), b"x", method=method)
            self.assertEqual(status, 405, method)
            self.assertEqual(headers["allow"], "POST")

    def test_other_content_types_are_415(self):
        status, _, body = post(self.shipper.http(), b"hello", content_type="text/plain")
        self.assertEqual(status, 415)
        self.assertIn(b"application/x-protobuf or application/json", body)

    def test_undecodable_bodies_are_400_with_the_error_in_the_request_encoding(self):
        status, headers, body = post(self.shipper.http(), b"\x0a\xff\xff\xff")
        self.assertEqual(status, 400)
        self.assertEqual(headers["content-type"], "application/x-protobuf")
        self.assert_status_body(body, 3, "")
        status, headers, body = post(self.shipper.http(), b'{"resourceLogs": [',
                                     content_type="application/json")
        self.assertEqual(status, 400)
        self.assertEqual(headers["content-type"], "application/json")
        self.assert_status_body(body, 3, "not JSON", json_body=True)
        status, _, body = post(
            self.shipper.http(),
            json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "AAEC"}]}]}]}),
            content_type="application/json; charset=utf-8")
        self.assertEqual(status, 400)
        self.assert_status_body(body, 3, "resourceLogs[0].scopeLogs[0].logRecords[0].traceId",
                                json_body=True)

    def test_too_large_is_413_also_once_inflated(self):
        logs, _ = otlp()
        request = logs.ExportLogsServiceRequest()
        request.resource_logs.add().scope_logs.add().log_records.add().body.string_value = (
            "x" * (2 * MAX_MESSAGE))
        big = request.SerializeToString()
        status, _, body = post(self.shipper.http(), big)
        self.assertEqual(status, 413)
        self.assert_status_body(body, 8, "max_message_size")
        # A gzip bomb: 200 KB that inflate to 200 MiB of JSON whitespace.
        bomb = gzip.compress(b'{"resourceLogs": [' + b" " * (200 << 20) + b"]}", 9)
        self.assertLess(len(bomb), MAX_MESSAGE)
        status, _, body = post(self.shipper.http(), bomb, content_type="application/json",
                               headers={"Content-Encoding": "gzip"})
        self.assertEqual(status, 413)
        self.assert_status_body(body, 8, "max_message_size", json_body=True)
        self.assertIsNone(self.shipper.proc.poll(), "shipper died")

    def test_kept_alive_gzip_and_json_requests_are_taken_and_written(self):
        connection = self.shipper.http()
        status, _, body = post(connection, request_of(3, first=1000))
        self.assertEqual((status, body), (200, b""))
        first_socket = connection.sock
        status, _, body = post(connection, gzip.compress(request_of(3, first=2000)),
                               headers={"Content-Encoding": "gzip"})
        self.assertEqual((status, body), (200, b""))
        document = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
            {"body": {"stringValue": "edge json"},
             "attributes": [{"key": "seq", "value": {"intValue": "3000"}}]}]}]}]}
        status, headers, body = post(connection, gzip.compress(json.dumps(document).encode()),
                                     content_type="application/json",
                                     headers={"Content-Encoding": "gzip"})
        self.assertEqual((status, json.loads(body)), (200, {}))
        self.assertIs(connection.sock, first_socket, "the connection was not kept alive")
        # A refusal that leaves its body unread closes the connection; a new one works.
        status, headers, _ = post(connection, b"x" * 100000, content_type="text/plain")
        self.assertEqual((status, headers.get("connection")), (415, "close"))
        connection.close()
        status, _, _ = post(connection, request_of(1, first=4000))
        self.assertEqual(status, 200)

        def written():
            seqs = {d["attributes"]["seq"] for d in self.shipper.documents()}
            return {1000, 1001, 1002, 2000, 2001, 2002, 3000, 4000} <= seqs
        wait_for(written, 30, "the kept-alive requests' records in the output")


class FullQueueTest(unittest.TestCase):
    def test_full_queue_is_503_with_retry_after_and_retried_records_arrive(self):
        """ack: queued, a small queue and a Redis output that is down: exports are taken until the
        queue is full, then refused whole with 503 and Retry-After; once Redis is up, every record
        of every export answered 200 (the refused ones retried) is delivered once."""
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        redis_port = free_port()
        shipper = OtlpShipper(tmp, os.path.join(tmp, "out"),
                              "-E", "shipper.otlp.ack=queued",
                              "-E", "shipper.otlp.retry_delay=2s",
                              "-E", "shipper.queue.mem.events=256",
                              "-E", "shipper.output.redis.enabled=true",
                              "-E", f"shipper.output.redis.hosts=127.0.0.1:{redis_port}",
                              "-E", "shipper.output.redis.key=edges",
                              "-E", "shipper.output.backoff.init=50ms",
                              "-E", "shipper.output.backoff.max=200ms", grpc_on=False)
        redis = None
        try:
            connection = shipper.http()
            taken, refused = [], None
            for n in range(100):
                status, headers, body = post(connection, request_of(50, first=n * 50))
                if status == 503:
                    refused = n
                    self.assertEqual(headers.get("retry-after"), "2")
                    self.assert_unavailable(body)
                    break
                self.assertEqual(status, 200, body)
                taken.append(n)
            self.assertIsNotNone(refused, "the queue never filled")
            self.assertGreater(len(taken), 0)
            redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--save", "",
                                      "--appendonly", "no"], stdout=subprocess.DEVNULL)
            # The sender retries the refused export until it is taken.
            wait_for(lambda: post(connection, request_of(50, first=refused * 50))[0] == 200, 60,
                     "the refused export to be taken once Redis is up")
            expected = {s for n in taken + [refused] for s in range(n * 50, n * 50 + 50)}

            def delivered():
                p = subprocess.run(["redis-cli", "-p", str(redis_port), "LRANGE", "edges", "0",
                                    "-1"], capture_output=True, text=True)
                seqs = [json.loads(line)["attributes"]["seq"] for line in p.stdout.splitlines()]
                return seqs if len(seqs) >= len(expected) else None
            seqs = wait_for(delivered, 60, "every taken record in Redis")
            self.assertEqual(sorted(seqs), sorted(expected))
        finally:
            self.assertEqual(shipper.stop(), 0, shipper.text()[-3000:])
            if redis:
                redis.send_signal(signal.SIGTERM)
                redis.wait()

    def assert_unavailable(self, body):
        _, status_pb2 = otlp()
        status = status_pb2.Status.FromString(body)
        self.assertEqual(status.code, 14, status)


if __name__ == "__main__":
    unittest.main(verbosity=2)
