#!/usr/bin/python3
"""Shipper -> Shipper over OTLP, and a round trip through Shipper.

1. A sidecar's OTLP output forwards to an aggregator's OTLP input (ack: persisted, the file
   output behind it), over OTLP/gRPC and OTLP/HTTP: once the sidecar reports an event persisted,
   the aggregator has written it.
2. OTLP records sent to a Shipper's OTLP input come out of its OTLP output (into the fake
   receiver) as they were sent, resource and scope groups included."""
import os
import sys

sys.path.insert(0, "tests/elasticsearch")
sys.path.insert(0, "tests/otlp_output")
from es_testing import Publisher, tmpdir  # noqa: E402
from fake_otlp_receiver import FakeOtlpReceiver  # noqa: E402
from harness import Shipper  # noqa: E402
from otlp_harness import OtlpShipper, otlp, relay_shipper, wait_for  # noqa: E402


def forwarding(protocol):
    aggregator = OtlpShipper(tmpdir(), os.path.join(tmpdir(), "out"), "-E", "shipper.otlp.ack=persisted")
    endpoint = aggregator.grpc_address if protocol == "grpc" else f"http://{aggregator.http_address}"
    sidecar = Shipper(tmpdir(), "-E", "shipper.output.otlp.enabled=true",
                      "-E", f"shipper.output.otlp.endpoint={endpoint}",
                      "-E", f"shipper.output.otlp.protocol={protocol}",
                      "-E", "shipper.output.backoff.init=20ms",
                      "-E", "shipper.output.backoff.max=200ms")
    publisher = Publisher(sidecar)
    for round_ in range(5):
        batch = []
        for seq in range(round_ * 200, (round_ + 1) * 200):
            e = publisher.msg.Event()
            e.timestamp.seconds = 1700000000 + seq
            e.source.input_id = "sidecar-input"
            e.fields.data["seq"].int64_value = seq
            e.fields.data["message"].string_value = f"event {seq}"
            batch.append(e)
        publisher.deliver(batch, timeout=60)
        # Persisted at the sidecar: written at the aggregator, now, without waiting.
        seqs = {int(doc["attributes"]["seq"]) for doc in aggregator.documents()}
        assert set(range((round_ + 1) * 200)) <= seqs, (round_, len(seqs))
    doc = aggregator.documents()[0]
    assert doc["body"]["text"] == "event 0", doc
    assert doc["resource"]["attributes"]["source.input_id"] == "sidecar-input", doc
    assert sidecar.stop() == 0
    assert aggregator.stop() == 0
    print(f"{protocol}: the sidecar's persisted index holds at the aggregator")


def round_trip():
    logs, _ = otlp()
    fake = FakeOtlpReceiver("grpc")
    relay = relay_shipper(fake.address)
    request = logs.ExportLogsServiceRequest()
    for r in range(2):
        rl = request.resource_logs.add()
        kv = rl.resource.attributes.add(key="service.name")
        kv.value.string_value = f"service-{r}"
        for s in range(2):
            sl = rl.scope_logs.add()
            sl.scope.name = f"scope-{s}"
            sl.scope.version = "2.0"
            for i in range(3):
                record = sl.log_records.add(time_unix_nano=1700000000000000000 + i,
                                            observed_time_unix_nano=1700000000500000000,
                                            severity_number=13, severity_text="WARN",
                                            trace_id=bytes(range(16)), span_id=bytes(range(8)),
                                            event_name="e", dropped_attributes_count=1)
                record.body.kvlist_value.values.add(key="n").value.int_value = -(2 ** 63)
                record.attributes.add(key="seq").value.int_value = (r * 2 + s) * 3 + i
                record.attributes.add(key="pi").value.double_value = 3.14159
    relay.export_grpc(request.SerializeToString())
    wait_for(lambda: len(fake.records) == 12, 30, "the relayed records")
    sent = [(rl.resource, sl.scope, rec) for rl in request.resource_logs
            for sl in rl.scope_logs for rec in sl.log_records]
    assert sorted(map(str, fake.records)) == sorted(map(str, sent)), (fake.records, sent)
    # Regrouped: one ResourceLogs per resource, one ScopeLogs per scope within it.
    raw = fake.requests[0]
    assert raw["records"] == 12 and raw["groups"] == (2, 4), raw
    assert relay.stop() == 0
    fake.stop()
    print("round trip: the records came out as they went in")


def main():
    for protocol in ("grpc", "http/protobuf"):
        forwarding(protocol)
    round_trip()


if __name__ == "__main__":
    main()
