#!/usr/bin/python3
"""Requests shaped to make a receiver's work grow faster than their size, end to end: a million
empty attributes on the resource (or on the scope) over 60,000 empty records, about 2 MB as
protobuf and 3 MB as OTLP/JSON, within every limit. Each record belongs to that resource and
scope; if what belongs to them were resolved per record, each would cost 10^11 attribute reads,
minutes of a serving thread. Each is sent over OTLP/gRPC, OTLP/HTTP protobuf and OTLP/JSON and
must be taken, all 60,000 records, in well under a second; the bound asserted (20 s) is one a
slow or sanitized machine cannot miss, the time measured is printed."""
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, "tests/otlp")
from otlp_harness import OtlpShipper, otlp, post, wait_for  # noqa: E402
from wire_compat_test import length_delimited  # noqa: E402  (on the path otlp_harness set)

ATTRIBUTES = 1_000_000
RECORDS = 60_000
BOUND_S = 20


def protobuf_request(on_scope):
    """The ExportLogsServiceRequest's wire bytes, written directly (a million KeyValues through
    the Python protobuf library would take longer than the test)."""
    attributes = b"\x0a\x00" * ATTRIBUTES  # empty KeyValues: Resource.attributes is field 1
    scope = length_delimited(0x0A, b"\x1a\x00" * ATTRIBUTES) if on_scope else b""  # scope.attributes: 3
    records = b"\x12\x00" * RECORDS  # ScopeLogs.log_records: empty LogRecords
    resource = b"" if on_scope else length_delimited(0x0A, attributes)
    resource_logs = resource + length_delimited(0x12, scope + records)
    return length_delimited(0x0A, resource_logs)


def json_request(on_scope):
    attributes = '{"attributes":[' + ",".join(["{}"] * ATTRIBUTES) + "]}"
    records = '"logRecords":[' + ",".join(["{}"] * RECORDS) + "]"
    if on_scope:
        return f'{{"resourceLogs":[{{"scopeLogs":[{{"scope":{attributes},{records}}}]}}]}}'
    return f'{{"resourceLogs":[{{"resource":{attributes},"scopeLogs":[{{{records}}}]}}]}}'


class HostileShapesTest(unittest.TestCase):
    def test_attributes_times_records_are_answered_at_once(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        shipper = OtlpShipper(tmp, os.path.join(tmp, "out"),
                              "-E", "shipper.otlp.ack=queued",
                              "-E", "shipper.queue.mem.events=1000000",
                              "-E", "shipper.queue.mem.bytes=2GiB")
        logs_service, _ = otlp()
        taken = 0
        figures = []
        for on_scope in (False, True):
            shape = "scope" if on_scope else "resource"
            protobuf = protobuf_request(on_scope)
            parsed = logs_service.ExportLogsServiceRequest.FromString(protobuf)
            self.assertEqual(len(parsed.resource_logs[0].scope_logs[0].log_records), RECORDS)
            sends = {
                "gRPC": lambda: shipper.export_grpc(protobuf, timeout=300),
                "HTTP protobuf": lambda: post(shipper.http(), protobuf),
                "HTTP JSON": lambda: post(shipper.http(), json_request(on_scope),
                                          content_type="application/json"),
            }
            for transport, send in sends.items():
                started = time.monotonic()
                answer = send()
                elapsed = time.monotonic() - started
                figures.append(f"{shape} attributes over {transport}: {elapsed:.3f} s")
                if transport != "gRPC":
                    self.assertEqual(answer[0], 200, (transport, shape, answer[2][:300]))
                    answer = answer[2]
                if transport == "HTTP JSON":
                    self.assertEqual(answer, b"{}")
                else:
                    reply = logs_service.ExportLogsServiceResponse.FromString(answer)
                    self.assertFalse(reply.HasField("partial_success"), reply)
                self.assertLess(elapsed, BOUND_S, f"{shape} attributes over {transport}")
                taken += RECORDS
        print("\n".join(figures))
        wait_for(lambda: len(shipper.documents()) >= taken, 120, f"{taken} records written")
        self.assertEqual(len(shipper.documents()), taken)
        self.assertEqual(shipper.stop(), 0, shipper.text()[-3000:])


if __name__ == "__main__":
    unittest.main(verbosity=2)
