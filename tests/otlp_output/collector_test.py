#!/usr/bin/python3
"""The real OpenTelemetry Collector (tests/peers/otelcol, SHIPPER_OTELCOL) as the OTLP output's
receiver: its otlp receiver, then its file exporter.

1. Producer API events through Shipper's OTLP output, over OTLP/gRPC and OTLP/HTTP (protobuf and
   JSON; gzip, and zstd over HTTP): every one is in the Collector's file once Shipper reports it
   persisted (give or take the file exporter's flush), with the documented mapping.
2. A round trip: the OTel JS SDK exports the same records once straight into the Collector and
   once into Shipper's OTLP input, whose OTLP output sends them on to the Collector. The two
   files, as the Collector writes what it received, compare equal record for record (with their
   resource and scope). Beside the SDK's records, requests made here carry what the SDK does not
   send: bytes values at every level, schema URLs, the resource's and scope's dropped counts,
   records without a time_unix_nano, flags other than the SDK's."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import grpc

sys.path[:0] = ["tests/elasticsearch", "tests/otlp", "tests/peers"]
from es_testing import Publisher, tmpdir  # noqa: E402
from harness import Shipper  # noqa: E402
from otlp_harness import EXPORT, node_env, otlp, relay_shipper, wait_for  # noqa: E402
from peer_harness import free_port, peer  # noqa: E402

SCRIPT = "tests/otlp/js/export_logs.js"
SDK_RECORDS = 3000
MADE_RECORDS = 40


class Collector:
    """The Collector with one otlp receiver and one file exporter per name in `pipelines`, which
    takes logs, traces and metrics."""

    def __init__(self, d, pipelines):
        self.ports, self.files = {}, {}
        config = {"receivers": {}, "exporters": {},
                  "service": {"telemetry": {"metrics": {"level": "none"}}, "pipelines": {}}}
        for name in pipelines:
            grpc_port, http_port = free_port(), free_port()
            self.ports[name] = (grpc_port, http_port)
            self.files[name] = os.path.join(d, f"{name}.json")
            config["receivers"][f"otlp/{name}"] = {"protocols": {
                "grpc": {"endpoint": f"127.0.0.1:{grpc_port}"},
                "http": {"endpoint": f"127.0.0.1:{http_port}"}}}
            config["exporters"][f"file/{name}"] = {"path": self.files[name],
                                                   "flush_interval": "100ms"}
            for signal in ("logs", "traces", "metrics"):
                config["service"]["pipelines"][f"{signal}/{name}"] = {
                    "receivers": [f"otlp/{name}"], "exporters": [f"file/{name}"]}
        path = os.path.join(d, "collector.yaml")
        with open(path, "w") as f:
            json.dump(config, f)  # JSON is YAML
        self.log_path = os.path.join(d, "collector.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([peer("SHIPPER_OTELCOL", "the Collector"), f"--config={path}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        for grpc_port, http_port in self.ports.values():
            for port in (grpc_port, http_port):
                wait_for(lambda: self.listening(port), 60, f"the Collector on port {port}")

    def listening(self, port):
        assert self.proc.poll() is None, self.text()
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    def text(self):
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def records(self, name):
        """(resource, scope, record) of every record in the file, as the Collector wrote them;
        the resource and the scope with their ResourceLogs' and ScopeLogs' schemaUrl."""
        out = []
        if not os.path.exists(self.files[name]):
            return out
        with open(self.files[name]) as f:
            for line in f:
                if not line.endswith("\n"):
                    break
                for rl in json.loads(line).get("resourceLogs", []):
                    resource = dict(rl.get("resource", {}), schemaUrl=rl.get("schemaUrl"))
                    for sl in rl.get("scopeLogs", []):
                        scope = dict(sl.get("scope", {}), schemaUrl=sl.get("schemaUrl"))
                        for record in sl.get("logRecords", []):
                            out.append((resource, scope, record))
        return out

    def lines(self, name):
        """Every complete line of the file, parsed."""
        if not os.path.exists(self.files[name]):
            return []
        with open(self.files[name]) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.log.close()


def attribute(record, key):
    for kv in record.get("attributes", []):
        if kv["key"] == key:
            return kv["value"]
    return None


def producer_events(collector, protocol, compression="gzip"):
    grpc_port, http_port = collector.ports["producer"]
    endpoint = f"127.0.0.1:{grpc_port}" if protocol == "grpc" else f"http://127.0.0.1:{http_port}"
    shipper = Shipper(tmpdir(), "-E", "shipper.output.otlp.enabled=true",
                      "-E", f"shipper.output.otlp.endpoint={endpoint}",
                      "-E", f"shipper.output.otlp.protocol={protocol}",
                      "-E", f"shipper.output.otlp.compression={compression}")
    publisher = Publisher(shipper)
    first = 10_000 * (3 if compression == "zstd" else
                      ("grpc", "http/protobuf", "http/json").index(protocol))
    events = []
    for seq in range(first, first + 5000):
        e = publisher.msg.Event()
        e.timestamp.seconds = 1700000000
        e.timestamp.nanos = seq
        e.data_stream.dataset = "app.logs"
        e.fields.data["seq"].int64_value = seq
        e.fields.data["message"].string_value = f"event {seq}"
        e.fields.data["http"].struct_value.data["status"].int64_value = 200
        events.append(e)
    publisher.deliver(events, timeout=120)
    wanted = set(range(first, first + 5000))

    def arrived():
        return {int(attribute(r, "seq")["intValue"]) for _, _, r in collector.records("producer")}
    what = f"{protocol} ({compression})"
    wait_for(lambda: wanted <= arrived(), 30, f"{what}: every event in the Collector's file")
    resource, _, record = next((res, sc, r) for res, sc, r in collector.records("producer")
                               if attribute(r, "seq")["intValue"] == str(first))
    assert record["body"] == {"stringValue": f"event {first}"}, record
    assert record["timeUnixNano"] == str(1700000000 * 10**9 + first), record
    assert attribute(record, "http") == {"kvlistValue": {"values": [
        {"key": "status", "value": {"intValue": "200"}}]}}, record
    assert {"key": "data_stream.dataset", "value": {"stringValue": "app.logs"}} in \
        resource["attributes"], resource
    assert shipper.stop() == 0
    print(f"{what}: 5000 Producer events in the Collector's file", flush=True)


def made_requests():
    """Serialized ExportLogsServiceRequests with what a receiver sees that the SDK does not send;
    their records are numbered by their attribute seq from 0, with run "made"."""
    logs_service_pb2, _ = otlp()
    requests = []
    seq = 0
    for r in range(2):
        request = logs_service_pb2.ExportLogsServiceRequest()
        rl = request.resource_logs.add()
        if r == 0:
            rl.schema_url = "https://opentelemetry.io/schemas/1.26.0"
            rl.resource.dropped_attributes_count = 5
        kv = rl.resource.attributes.add(key="host.id")
        kv.value.bytes_value = bytes([r, 0, 255])
        for s in range(2):
            sl = rl.scope_logs.add()
            sl.scope.name = f"made.{s}"
            if s == 1:
                sl.schema_url = "https://example.com/scope"
                sl.scope.dropped_attributes_count = 1
                sl.scope.attributes.add(key="scope.raw").value.bytes_value = b"\x00"
            for i in range(MADE_RECORDS // 4):
                record = sl.log_records.add()
                if i % 2 == 0:
                    record.time_unix_nano = 1700000000 * 10**9 + seq
                if i % 3 != 0:
                    record.observed_time_unix_nano = 1700000001 * 10**9 + seq
                record.flags = seq * 0x01010101 % 2**32
                record.dropped_attributes_count = seq % 3
                if i % 2:
                    record.body.bytes_value = bytes(range(seq % 7))
                else:
                    record.body.kvlist_value.values.add(key="raw").value.bytes_value = b"\x01"
                record.attributes.add(key="seq").value.int_value = seq
                record.attributes.add(key="run").value.string_value = "made"
                array = record.attributes.add(key="mixed").value.array_value
                array.values.add().string_value = "AQI="  # valid base64, but a string
                array.values.add().bytes_value = b"\x01\x02"
                seq += 1
        requests.append(request.SerializeToString())
    assert seq == MADE_RECORDS
    return requests


def export_grpc(address, request):
    with grpc.insecure_channel(address) as channel:
        channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)(
            request, timeout=30)


def sdk_round_trip(collector):
    env = node_env()
    grpc_port, _ = collector.ports["relayed"]
    relay = relay_shipper(f"127.0.0.1:{grpc_port}")
    direct_port, _ = collector.ports["direct"]
    for endpoint in (f"http://127.0.0.1:{direct_port}", f"http://{relay.grpc_address}"):
        p = subprocess.run(["/usr/bin/node", SCRIPT, "--exporter=grpc", f"--endpoint={endpoint}",
                            f"--records={SDK_RECORDS}", "--run=round-trip"],
                           env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, f"{endpoint}: {p.stdout} {p.stderr}\n{relay.text()[-3000:]}"
    for request in made_requests():
        export_grpc(f"127.0.0.1:{direct_port}", request)
        export_grpc(relay.grpc_address, request)

    def by_seq(name):
        return {(attribute(r, "run")["stringValue"], int(attribute(r, "seq")["intValue"])):
                (res, sc, r) for res, sc, r in collector.records(name)}
    for name in ("direct", "relayed"):
        wait_for(lambda: len(by_seq(name)) == SDK_RECORDS + MADE_RECORDS, 30,
                 f"{name}: every record")
    direct, relayed = by_seq("direct"), by_seq("relayed")
    assert direct.keys() == relayed.keys()
    for key in direct:
        assert direct[key] == relayed[key], (key, direct[key], relayed[key])
    made = [r for (run, _), (_, _, r) in direct.items() if run == "made"]
    assert any("timeUnixNano" not in r for r in made) and any("flags" in r for r in made), made
    assert relay.stop() == 0
    print(f"round trip: {SDK_RECORDS} SDK records and {MADE_RECORDS} made here equal through "
          "Shipper, record for record, with their resource and scope", flush=True)


def main():
    collector = Collector(tmpdir(), ("producer", "direct", "relayed"))
    try:
        for protocol in ("grpc", "http/protobuf", "http/json"):
            producer_events(collector, protocol)
        producer_events(collector, "http/protobuf", compression="zstd")
        sdk_round_trip(collector)
    finally:
        collector.stop()


if __name__ == "__main__":
    main()
