#!/usr/bin/python3
"""OTLP benchmark (./dev bench otlp): Shipper's OTLP input against the OTLP limit, in one run.

For each shape (tests/load/otlp_shapes.h: the e2e shapes, filebeat-like, tiny and large, as log
records; span, a span with 10 attributes and 2 events; gauge, a gauge data point; histogram, a
20-bucket histogram data point), otlp_load exports the same records (log records, spans or data
points) to the shape's signal's service or path, with 10 exports in flight (the Collector's
exporter default) to
  null            otlp_null_server: decodes every request as Shipper does (OtlpConversion's scan
                  of the wire bytes, for the request's signal) and replies at once; the limit
                  every ratio divides by,
  grpc-queued     Shipper, OTLP/gRPC, ack: queued, discard output,
  grpc-persisted  Shipper, OTLP/gRPC, ack: persisted (the default), discard output,
  http-persisted  Shipper, OTLP/HTTP protobuf, ack: persisted, discard output,
each a fresh process, and, for the same shape in the same run, the Producer API's e2e/discard
figure (shipper_load into null_server and into Shipper's discard output, as ./dev bench e2e).
The trace and metric shapes have no Producer API figure (it has no such shapes): their rows'
producer_* are null.
One JSON line per Shipper row:

  {"name": "otlp/<target>/<shape>", "events_per_sec": ..., "null_events_per_sec": ...,
   "ratio": ..., "target": ..., "p50_ms": ..., "p99_ms": ..., "retries": ...,
   "shipper_cpu_sec_per_million": ..., "rss_mb": ..., "producer_discard_events_per_sec": ...,
   "producer_discard_ratio": ...}

http-persisted also gives "of_grpc_persisted": its events/s over grpc-persisted's. The OTLP
input's targets: ratio >= 0.8 queued, >= 0.6 persisted, HTTP >= 0.6 of gRPC. With --reps > 1 each
target's best run is kept (runs interleaved).

  tests/bench/otlp.py --shipper=bazel-bin/shipper/shipper --otlp_load=... --otlp_null_server=...
      --null_server=... --shipper_load=...
"""
import argparse
import json
import os
import re
import sys
import tempfile
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402  (its Server process wrapper and the Producer API's runs)

GRPC = re.compile(r"OTLP/gRPC listening on (\S+)")
HTTP = re.compile(r"OTLP/HTTP serving on (\S+)")
LOG_SHAPES = ("filebeat", "tiny", "large")  # the e2e shapes, as OTLP log records
# Records per run and per export, per shape (the log shapes' as the e2e bench's).
EVENTS = ("filebeat=600_000,tiny=2_000_000,large=60_000,span=600_000,gauge=2_000_000,"
          "histogram=600_000")
BATCH = "filebeat=500,tiny=500,large=100,span=500,gauge=500,histogram=500"
TARGETS = {  # name: (transport, ack)
    "grpc-queued": ("grpc", "queued"),
    "grpc-persisted": ("grpc", "persisted"),
    "http-persisted": ("http", "persisted"),
}


def shipper_argv(shipper, transport, ack, output=("shipper.output.discard.enabled=true",)):
    """Shipper with its OTLP input on one transport (grpc or http) and ports the kernel picks,
    answering with `ack`, into `output` (-E overrides; by default the discard output).

    retry_window 0s: otlp_load sends its pool of 16 distinct requests round-robin, so with the
    default window every export after the first 16 would be answered as a retry of one persisted
    a moment before, without being queued. A real sender's exports differ."""
    argv = [shipper, "-E", "shipper.server.server=127.0.0.1:0", "-E", "http.port=0",
            "-E", "shipper.otlp.enabled=true", "-E", "shipper.otlp.ack=" + ack,
            "-E", "shipper.otlp.retry_window=0s",
            "-E", "shipper.otlp.grpc.enabled=%s" % str(transport == "grpc").lower(),
            "-E", "shipper.otlp.grpc.server=127.0.0.1:0",
            "-E", "shipper.otlp.http.enabled=%s" % str(transport == "http").lower(),
            "-E", "shipper.otlp.http.server=127.0.0.1:0"]
    for override in output:
        argv += ["-E", override]
    return argv


def log(*parts):
    print("otlp:", *parts, file=sys.stderr, flush=True)


class OtlpBench:
    def __init__(self, o):
        self.o = o
        self.workdir = tempfile.mkdtemp(prefix="shipper-otlp-bench-")
        # The Producer API's runs, as ./dev bench e2e makes them.
        self.e2e = e2e.Bench(argparse.Namespace(
            shipper=o.shipper, null_server=o.null_server, shipper_load=o.shipper_load,
            config="", common_overrides=["http.port=0"], channels=2, inflight=2,
            events={s: o.events[s] for s in o.events}, batch=o.batch, run_timeout=o.run_timeout))
        self.e2e.workdir = self.workdir

    def otlp_load(self, target, transport, shape):
        argv = [self.o.otlp_load, "--target=" + target, "--transport=" + transport,
                "--shape=" + shape, "--batch=%d" % self.o.batch[shape],
                "--events=%d" % self.o.events[shape], "--inflight=%d" % self.o.inflight]
        p = e2e.subprocess.run(argv, stdout=e2e.subprocess.PIPE, stderr=e2e.subprocess.PIPE,
                               timeout=self.o.run_timeout)
        lines = p.stdout.decode().strip().splitlines()
        if p.returncode != 0 or not lines:
            raise RuntimeError("otlp_load %s failed (exit %d): %s %s" % (
                " ".join(argv[1:]), p.returncode, p.stderr.decode()[-500:],
                lines[-1] if lines else ""))
        return json.loads(lines[-1])

    @staticmethod
    def otlp_address(server, listening):
        """The address `server` logs its OTLP listener on (after the Producer API's line)."""
        deadline = e2e.time.time() + 30
        while e2e.time.time() < deadline:
            with open(server.log_path) as f:
                m = listening.search(f.read())
            if m:
                return m.group(1)
            if not server.alive():
                break
            e2e.time.sleep(0.02)
        server.stop()
        raise RuntimeError("%s: no OTLP listener logged: %s" % (server.name, server.log_tail()))

    def run_target(self, target, shape):
        name = "otlp/%s/%s" % (target, shape)
        if target == "null":
            server = e2e.Server(name, [self.o.otlp_null_server, "--listen=127.0.0.1:0"],
                                self.workdir)
            address, transport = server.address, "grpc"
        else:
            transport, ack = TARGETS[target]
            server = e2e.Server(name, shipper_argv(self.o.shipper, transport, ack), self.workdir)
            address = self.otlp_address(server, GRPC if transport == "grpc" else HTTP)
        return self.measure(server, address, transport, shape)

    def measure(self, server, address, transport, shape, settle=False):
        """otlp_load's run of `shape` into `server`, with the server's CPU seconds and peak RSS;
        stops the server. With `settle`, the CPU counts until the server is idle (at most 10 s
        more): what it answered but had not yet written costs too."""
        try:
            cpu0 = server.cpu_sec()
            r = self.otlp_load(address, transport, shape)
            if settle:
                last, deadline = server.cpu_sec(), e2e.time.time() + 10
                while e2e.time.time() < deadline:
                    e2e.time.sleep(0.2)
                    now = server.cpu_sec()
                    if now - last < 0.01:  # under 5% of a core
                        break
                    last = now
            r["server_cpu_sec"] = server.cpu_sec() - cpu0
            r["rss_mb"] = server.rss_mb()
            if not server.alive():
                raise RuntimeError("%s exited during the run: %s" % (server.name,
                                                                     server.log_tail()))
        finally:
            server.stop()
        log("%s: %.0f records/s" % (server.name, r["events_per_sec"]))
        return r

    def best_runs(self, targets, shape):
        """Each target's fastest of --reps runs of `shape`, the runs interleaved."""
        best = {}
        for _ in range(self.o.reps):
            for target in targets:
                r = self.run_target(target, shape)
                if target not in best or r["events_per_sec"] > best[target]["events_per_sec"]:
                    best[target] = r
        return best

    def run(self):
        failed = False
        for shape in self.o.shapes:
            logs = shape in LOG_SHAPES
            try:
                best = self.best_runs(["null"] + self.o.targets, shape)
                if logs:
                    producer_null = self.e2e.throughput("null", shape)["persisted_per_sec"]
                    producer = self.e2e.throughput("discard", shape)["persisted_per_sec"]
            except Exception as e:  # one shape failing does not hide the others
                log("%s failed: %s" % (shape, e))
                failed = True
                continue
            null = best["null"]["events_per_sec"]
            for target in self.o.targets:
                r = best[target]
                record = {
                    "name": "otlp/%s/%s" % (target, shape),
                    "events_per_sec": round(r["events_per_sec"]),
                    "null_events_per_sec": round(null),
                    "ratio": round(r["events_per_sec"] / null, 3),
                    "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"], "retries": r["retries"],
                    "shipper_cpu_sec_per_million": round(
                        r["server_cpu_sec"] / r["events"] * 1e6, 2) if r["events"] else None,
                    "rss_mb": round(r["rss_mb"], 1),
                    "producer_discard_events_per_sec": round(producer) if logs else None,
                    "producer_discard_ratio": round(producer / producer_null, 3) if logs else None,
                }
                if target == "http-persisted" and "grpc-persisted" in best:
                    grpc = best["grpc-persisted"]["events_per_sec"]
                    record["of_grpc_persisted"] = round(r["events_per_sec"] / grpc, 3)
                e2e.emit(record)
        shutil.rmtree(self.workdir, ignore_errors=True)
        return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    for flag in ("shipper", "otlp_load", "otlp_null_server", "null_server", "shipper_load"):
        ap.add_argument("--" + flag, required=True)
    ap.add_argument("--targets", default=",".join(TARGETS))
    add_load_flags(ap, run_timeout=120)
    o = parse_load_flags(ap)
    for flag in ("shipper", "otlp_load", "otlp_null_server", "null_server", "shipper_load"):
        setattr(o, flag, os.path.abspath(getattr(o, flag)))
    sys.exit(OtlpBench(o).run())


def add_load_flags(ap, run_timeout):
    """The flags of otlp_load's runs (and of the targets' list), this bench's and peers.py's."""
    ap.add_argument("--shapes", default="filebeat,tiny,large,span,gauge,histogram")
    ap.add_argument("--events", default=EVENTS,
                    help="records per run, per shape; a shape not named keeps its default")
    ap.add_argument("--batch", default=BATCH, help="records per export, per shape; likewise")
    ap.add_argument("--inflight", type=int, default=10)
    ap.add_argument("--reps", type=int, default=2, help="runs per target (interleaved; best kept)")
    ap.add_argument("--run_timeout", type=float, default=run_timeout)


def parse_load_flags(ap):
    o = ap.parse_args()
    o.targets = [t for t in o.targets.split(",") if t]
    o.shapes = [s for s in o.shapes.split(",") if s]
    o.events = dict(e2e.per_shape(EVENTS), **e2e.per_shape(o.events))
    o.batch = dict(e2e.per_shape(BATCH), **e2e.per_shape(o.batch))
    return o


if __name__ == "__main__":
    main()
