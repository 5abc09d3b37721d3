#!/usr/bin/python3
"""Peers benchmark (./dev bench peers): Shipper against the OpenTelemetry Collector, in one run.

For each shape (tests/load/otlp_shapes.h: the e2e shapes as log records; span, a span with 10
attributes and 2 events; gauge, a gauge data point; histogram, a 20-bucket histogram data point),
otlp_load exports the same records (log records, spans or data points) over OTLP/gRPC, to the
shape's signal's service, with 10 exports in flight (the Collector's exporter default) into, each a
fresh process:
  collector-queued/nop      the Collector (tests/peers/otelcol, built by ./dev): otlp receiver ->
                            batch processor -> nop exporter, a pipeline for each signal; it
                            answers once the batch processor has the records (queued: a crash
                            loses them),
  collector-queued/file     the same into its file exporter,
  shipper-queued/discard    Shipper, ack: queued (as the Collector answers), discard output,
  shipper-queued/file       the same into its file output,
  shipper-persisted/discard Shipper, ack: persisted (which the Collector cannot do),
  shipper-persisted/file    the same into its file output,
  collector-queued/relay    the Collector as a relay: otlp receiver -> batch -> otlp_grpc
                            exporter (gzip, its default) into a sink,
  shipper-queued/relay      Shipper as a relay: OTLP in, ack: queued -> its OTLP output (gzip,
                            its default) into a sink,
  shipper-persisted/relay   the same, ack: persisted: answered once the sink accepted the records.
The relays' sink is otlp_null_server (tests/load), a fresh one per run, which decodes every
request (logs, traces or metrics) and answers at once; its CPU is not counted.
One JSON line per row, named peers/<collector|shipper>-<queued|persisted>/<output>/<shape>:

  {"name": ..., "records_per_sec": ..., "cpu_sec_per_million": ..., "rss_mb": ...,
   "p50_ms": ..., "p99_ms": ..., "retries": ...}

cpu_sec_per_million is the server process's CPU (user + system) per million records, counted
until it is idle after the last export's answer: with an answer at queueing, writing the
records comes after it. Each
Shipper row also carries its Collector row's figures from the same run (discard against nop, file
against file, relay against relay): collector_records_per_sec, collector_cpu_sec_per_million, and ratio_to_collector
(records/s) and cpu_ratio_to_collector (CPU per record). With --reps > 1 each target's best run
is kept (runs interleaved).

  tests/bench/peers.py --shipper=bazel-bin/shipper/shipper --otlp_load=... --otelcol=... \
      --otlp_null_server=...
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "peers")]
import e2e  # noqa: E402  (its Server process wrapper)
import otlp  # noqa: E402  (otlp_load's runs and Shipper's OTLP command line)
from peer_harness import free_port  # noqa: E402  (the Collector does not log its port)

COLLECTOR_READY = re.compile(r"Everything is ready")
# target: (server, ack, output); a Shipper target's Collector row is the one of its output's
# counterpart.
TARGETS = {
    "collector-queued/nop": ("collector", "queued", "nop"),
    "collector-queued/file": ("collector", "queued", "file"),
    "shipper-queued/discard": ("shipper", "queued", "discard"),
    "shipper-queued/file": ("shipper", "queued", "file"),
    "shipper-persisted/discard": ("shipper", "persisted", "discard"),
    "shipper-persisted/file": ("shipper", "persisted", "file"),
    "collector-queued/relay": ("collector", "queued", "relay"),
    "shipper-queued/relay": ("shipper", "queued", "relay"),
    "shipper-persisted/relay": ("shipper", "persisted", "relay"),
}
COUNTERPART = {"discard": "collector-queued/nop", "file": "collector-queued/file",
               "relay": "collector-queued/relay"}


class PeersBench(otlp.OtlpBench):
    def __init__(self, o):  # noqa: the Producer API's runs of OtlpBench are not wanted here
        self.o = o
        self.workdir = tempfile.mkdtemp(prefix="shipper-peers-bench-")

    def collector(self, name, output, sink):
        port = free_port()
        exporter = {"nop": {"nop": {}},
                    "file": {"file": {"path": os.path.join(self.workdir, "collector.jsonl")}},
                    "relay": {"otlp_grpc": {"endpoint": sink, "tls": {"insecure": True}}}}
        config = {
            "receivers": {"otlp": {"protocols": {"grpc": {
                "endpoint": "127.0.0.1:%d" % port, "max_recv_msg_size_mib": 64}}}},
            "processors": {"batch": {}},
            "exporters": exporter[output],
            "service": {"telemetry": {"metrics": {"level": "none"}},
                        "pipelines": {signal: {"receivers": ["otlp"], "processors": ["batch"],
                                               "exporters": list(exporter[output])}
                                      for signal in ("logs", "traces", "metrics")}},
        }
        path = os.path.join(self.workdir, "collector.yaml")
        with open(path, "w") as f:
            json.dump(config, f)  # JSON is YAML
        server = e2e.Server(name, [self.o.otelcol, "--config=" + path], self.workdir,
                            ready=COLLECTOR_READY)
        return server, "127.0.0.1:%d" % port

    def sink(self, name):
        """The relays' sink, otlp_null_server, and its address."""
        server = e2e.Server(name, [self.o.otlp_null_server, "--listen=127.0.0.1:0"],
                            self.workdir)
        return server, server.address

    def run_target(self, target, shape):
        name = "peers/%s/%s" % (target, shape)
        kind, ack, output = TARGETS[target]
        # Each run writes anew: a file left by the last would only fill the disk.
        shutil.rmtree(os.path.join(self.workdir, "out"), ignore_errors=True)
        if os.path.exists(os.path.join(self.workdir, "collector.jsonl")):
            os.remove(os.path.join(self.workdir, "collector.jsonl"))
        sink, sink_address = self.sink(name + "/sink") if output == "relay" else (None, None)
        try:
            if kind == "collector":
                server, address = self.collector(name, output, sink_address)
            else:
                out = (["shipper.output.discard.enabled=true"] if output == "discard" else
                       ["shipper.output.file.path=" + os.path.join(self.workdir, "out")]
                       if output == "file" else
                       ["shipper.output.otlp.enabled=true",
                        "shipper.output.otlp.endpoint=" + sink_address])
                server = e2e.Server(name, otlp.shipper_argv(self.o.shipper, "grpc", ack, out),
                                    self.workdir)
                address = self.otlp_address(server, otlp.GRPC)
            return self.measure(server, address, "grpc", shape, settle=True)
        finally:
            if sink:
                sink.stop()

    def run(self):
        failed = False
        for shape in self.o.shapes:
            try:
                best = self.best_runs(self.o.targets, shape)
            except Exception as e:  # one shape failing does not hide the others
                otlp.log("%s failed: %s" % (shape, e))
                failed = True
                continue
            rows = {}
            for target in self.o.targets:
                r = best[target]
                rows[target] = row = {
                    "name": "peers/%s/%s" % (target, shape),
                    "records_per_sec": round(r["events_per_sec"]),
                    "cpu_sec_per_million": round(r["server_cpu_sec"] / r["events"] * 1e6, 2),
                    "rss_mb": round(r["rss_mb"], 1),
                    "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"], "retries": r["retries"],
                }
                collector = rows.get(COUNTERPART.get(TARGETS[target][2]))
                if TARGETS[target][0] == "shipper" and collector:
                    row["collector_records_per_sec"] = collector["records_per_sec"]
                    row["collector_cpu_sec_per_million"] = collector["cpu_sec_per_million"]
                    row["ratio_to_collector"] = round(
                        row["records_per_sec"] / collector["records_per_sec"], 3)
                    row["cpu_ratio_to_collector"] = round(
                        row["cpu_sec_per_million"] / collector["cpu_sec_per_million"], 3) if (
                        collector["cpu_sec_per_million"]) else None  # under a clock tick
                e2e.emit(row)
        shutil.rmtree(self.workdir, ignore_errors=True)
        return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    for flag in ("shipper", "otlp_load", "otelcol", "otlp_null_server"):
        ap.add_argument("--" + flag, required=True)
    ap.add_argument("--targets", default=",".join(TARGETS),
                    help="in this order; a Collector target first gives its Shipper rows ratios")
    otlp.add_load_flags(ap, run_timeout=300)
    o = otlp.parse_load_flags(ap)
    unknown = [t for t in o.targets if t not in TARGETS]
    if unknown:
        ap.error("unknown targets %s (known: %s)" % (unknown, ", ".join(TARGETS)))
    for flag in ("shipper", "otlp_load", "otelcol", "otlp_null_server"):
        setattr(o, flag, os.path.abspath(getattr(o, flag)))
    sys.exit(PeersBench(o).run())


if __name__ == "__main__":
    main()
