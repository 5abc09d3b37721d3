#!/usr/bin/python3
"""The real OpenTelemetry Collector (tests/peers/otelcol, SHIPPER_OTELCOL) as the OTLP output's
receiver: its otlp receiver, then its file exporter.

1. Producer API events through Shipper's OTLP output, over OTLP/gRPC and OTLP/HTTP (protobuf and JSON): every one is
   in the Collector's file once Shipper reports it persisted (give or take the file exporter's
   flush), with the documented mapping.
2. A round trip: the OTel JS SDK exports the same records once straight into the Collector and
   once into Shipper's OTLP input, whose OTLP output sends them on to the Collector. The two
   files, as the Collector writes what it received, compare equal record for record (with their
   resource and scope), but for what the OTLP input does not keep: each record's flags."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path[:0] = ["tests/elasticsearch", "tests/otlp", "tests/peers"]
from es_testing import Publisher, tmpdir  # noqa: E402
from harness import Shipper  # noqa: E402
from otlp_harness import OtlpShipper, wait_for  # noqa: E402
from peer_harness import free_port, peer  # noqa: E402

SCRIPT = "tests/otlp/js/export_logs.js"
SDK_RECORDS = 3000


class Collector:
    """The Collector with one otlp receiver and one file exporter per name in `pipelines`."""

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
            config["service"]["pipelines"][f"logs/{name}"] = {
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
        """(resource, scope, record) of every record in the file, as the Collector wrote them."""
        out = []
        if not os.path.exists(self.files[name]):
            return out
        with open(self.files[name]) as f:
            for line in f:
                if not line.endswith("\n"):
                    break
                for rl in json.loads(line).get("resourceLogs", []):
                    for sl in rl.get("scopeLogs", []):
                        for record in sl.get("logRecords", []):
                            out.append((rl.get("resource", {}), sl.get("scope", {}), record))
        return out

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.log.close()


def attribute(record, key):
    for kv in record.get("attributes", []):
        if kv["key"] == key:
            return kv["value"]
    return None


def producer_events(collector, protocol):
    grpc_port, http_port = collector.ports["producer"]
    endpoint = f"127.0.0.1:{grpc_port}" if protocol == "grpc" else f"http://127.0.0.1:{http_port}"
    shipper = Shipper(tmpdir(), "-E", "shipper.output.otlp.enabled=true",
                      "-E", f"shipper.output.otlp.endpoint={endpoint}",
                      "-E", f"shipper.output.otlp.protocol={protocol}")
    publisher = Publisher(shipper)
    first = 10_000 * ("grpc", "http/protobuf", "http/json").index(protocol)
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
    wait_for(lambda: wanted <= arrived(), 30, f"{protocol}: every event in the Collector's file")
    resource, _, record = next((res, sc, r) for res, sc, r in collector.records("producer")
                               if attribute(r, "seq")["intValue"] == str(first))
    assert record["body"] == {"stringValue": f"event {first}"}, record
    assert record["timeUnixNano"] == str(1700000000 * 10**9 + first), record
    assert attribute(record, "http") == {"kvlistValue": {"values": [
        {"key": "status", "value": {"intValue": "200"}}]}}, record
    assert {"key": "data_stream.dataset", "value": {"stringValue": "app.logs"}} in \
        resource["attributes"], resource
    assert shipper.stop() == 0
    print(f"{protocol}: 5000 Producer events in the Collector's file", flush=True)


def sdk_round_trip(collector):
    node_modules = os.environ.get("SHIPPER_NODE_MODULES", "")
    assert os.path.isdir(node_modules), f"SHIPPER_NODE_MODULES={node_modules!r}: use ./dev test"
    grpc_port, _ = collector.ports["relayed"]
    d = tmpdir()
    relay = OtlpShipper(d, os.path.join(d, "unused"), "-E", "shipper.output.file.enabled=false",
                        "-E", "shipper.output.otlp.enabled=true",
                        "-E", f"shipper.output.otlp.endpoint=127.0.0.1:{grpc_port}")
    direct_port, _ = collector.ports["direct"]
    for endpoint in (f"http://127.0.0.1:{direct_port}", f"http://{relay.grpc_address}"):
        p = subprocess.run(["/usr/bin/node", SCRIPT, "--exporter=grpc", f"--endpoint={endpoint}",
                            f"--records={SDK_RECORDS}", "--run=round-trip"],
                           env=dict(os.environ, NODE_PATH=node_modules), capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, f"{endpoint}: {p.stdout} {p.stderr}\n{relay.text()[-3000:]}"

    def by_seq(name):
        return {int(attribute(r, "seq")["intValue"]): (res, sc, r)
                for res, sc, r in collector.records(name)}
    for name in ("direct", "relayed"):
        wait_for(lambda: len(by_seq(name)) == SDK_RECORDS, 30, f"{name}: every SDK record")
    direct, relayed = by_seq("direct"), by_seq("relayed")
    flags = 0
    for seq in range(SDK_RECORDS):
        (d_res, d_scope, d_rec), (r_res, r_scope, r_rec) = direct[seq], relayed[seq]
        # What the OTLP input does not keep: the record's flags (W3C trace flags).
        if d_rec.pop("flags", 0) != r_rec.pop("flags", 0):
            flags += 1
        assert d_res == r_res, (seq, d_res, r_res)
        assert d_scope == r_scope, (seq, d_scope, r_scope)
        assert d_rec == r_rec, (seq, d_rec, r_rec)
    assert relay.stop() == 0
    print(f"round trip: {SDK_RECORDS} SDK records equal through Shipper but for flags "
          f"({flags} records had flags the OTLP input does not keep)", flush=True)


def main():
    collector = Collector(tmpdir(), ("producer", "direct", "relayed"))
    try:
        for protocol in ("grpc", "http/protobuf", "http/json"):
            producer_events(collector, protocol)
        sdk_round_trip(collector)
    finally:
        collector.stop()


if __name__ == "__main__":
    main()
