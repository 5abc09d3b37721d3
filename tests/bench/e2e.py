#!/usr/bin/python3
"""End-to-end benchmark: Shipper against the transport-and-decoding limit, in one run.

For each event shape, shipper_load sends the same number of events to
  (a) null_server              -- decodes as Shipper does (the scan of the wire bytes,
                                  shipper/input/producer/request_validation.h) and replies at
                                  once, persisted at once: the limit,
  (b) Shipper, discard output  -- the whole pipeline, output counts and drops (discard-disk:
                                  the same through the disk queue; discard-4mib: with
                                  shipper.server.max_message_size 4MiB, 32 requests read at once
                                  rather than the defaults' 2, and discard's line adds
                                  ratio_to_4mib: what the memory bound costs at the defaults),
  (c) Shipper, file output     -- the whole pipeline, output writes files (file-nosync: with
                                  fsync: never, so the kernel decides when data reaches the disk:
                                  what file would do without waiting for the device),
  (d) Shipper, elasticsearch   -- the whole pipeline into tests/elasticsearch/es_bench --serve (a
                                  C++ bulk sink: counts each request's items, answers every one
                                  created, stores nothing), at compression_level 1 and, as
                                  elasticsearch-gzip0, 0; their lines add bulk_bytes_on_the_wire,
                                  sink_cpu_sec_per_million and, beside their ratio to
                                  elasticsearch-direct (es_bench --produce: the same documents,
                                  action lines and gzip level straight into a fresh sink with
                                  libcurl, one request in flight as the output's worker: 1),
                                  file_events_per_sec and ratio_to_file from the file run of the
                                  same shape,
  (e) Shipper, kafka           -- the whole pipeline into a 3-broker librdkafka mock cluster
                                  (tests/kafka/kafka_bench --serve, its own process), at the Kafka
                                  output's defaults; kafka-none, kafka-gzip4, kafka-gzip6,
                                  kafka-lz4, kafka-zstd at other codecs and levels;
                                  their lines add kafka_sent_bytes (requests on the wire, from
                                  librdkafka's statistics) and kafka_message_bytes (before
                                  compression), and their ratio is to
  (f) kafka-direct             -- kafka_bench --produce: the same documents straight into a fresh
                                  mock cluster with librdkafka at the same settings (no gRPC, no
                                  Shipper); its shipper_cpu_sec_per_million is the producer's,
  (g) kafka-real, kafka-direct-real -- (e) and (f) into one real Apache Kafka node
                                  (kafka_bench --serve --real: tests/kafka/real_kafka.h, the
                                  broker ./dev installs), kafka-real's ratio to kafka-direct-real;
  (h) Shipper, otlp            -- the whole pipeline into tests/load/otlp_null_server (a C++
                                  OTLP/gRPC sink: decodes each request as Shipper's OTLP input
                                  does, counts its records, answers OK, stores nothing) through the
                                  OTLP output over gRPC, uncompressed as otlp-direct sends
                                  (otlp-gzip: at the output's default, gzip), max_in_flight 4;
                                  their ratio is to
  (i) otlp-direct              -- otlp_load: the same shape's records as OTLP log records
                                  (tests/load/otlp_shapes.h), in exports of the run's batch size,
                                  uncompressed, 4 in flight as the output's worker, straight into
                                  a fresh sink (no gRPC into Shipper, no Shipper); its
                                  shipper_cpu_sec_per_million is otlp_load's. Both lines add
                                  sink_records and sink_exports (what the sink counted: every
                                  event must be there) and sink_cpu_sec_per_million;
and, for context, null_server --decode=envelope ("transport": events counted, not decoded) and
null_server --decode=full ("protobuf": every event parsed into protobuf messages, as Shipper did
before it kept events as wire bytes),
each a fresh process, and prints one JSON line per run:

  {"name": "e2e/<target>/<shape>", "events_per_sec": ..., "null_server_events_per_sec": ...,
   "ratio": ..., "p50_ms": ..., "p99_ms": ..., "shipper_cpu_sec_per_million": ..., "rss_mb": ...}

events_per_sec counts events persisted (PersistedIndex), from the first call to the last persisted
event; with --reps > 1 the targets' runs are interleaved and each reports its best run. shipper_cpu_sec_per_million is the server process's user+system CPU over the run (for the
null target, the null server's), rss_mb its peak RSS (VmHWM).

Then:
  {"name": "e2e/latency_at_half_load", ...}         Shipper (discard, buffered loop) at half of its
                                                    discard/filebeat maximum at the latency runs'
                                                    batch size (measured first); publish -> persisted
  {"name": "e2e/latency_at_half_load/direct", ...}  the same with the direct loop
  {"name": "idle_cpu", "cpu_percent": ...}          Shipper with clients attached, no traffic, 10 s

JSON lines go to stdout, progress and diagnostics to stderr. Binaries come from flags or the
environment (SHIPPER_BIN, NULL_SERVER_BIN, SHIPPER_LOAD_BIN). Without a Shipper binary only the
null-server lines are produced. Exit status 1 if any run failed.

  tests/bench/e2e.py --shipper=bazel-bin/shipper/shipper \\
      --null_server=bazel-bin/tests/load/null_server --shipper_load=bazel-bin/tests/load/shipper_load
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
import time

LISTENING = re.compile(r"listening on (\S+:\d+)")
# The Elasticsearch targets, by the gzip level they send at (the output's default is 1).
ES_LEVELS = {"elasticsearch": 1, "elasticsearch-gzip0": 0}
CLK_TCK = os.sysconf("SC_CLK_TCK")
# The Kafka targets: the output's settings beside its defaults (shipper.output.kafka.*;
# librdkafka: extra librdkafka properties), each compared to kafka-direct.
KAFKA_DEFAULT_COMPRESSION = ("gzip", 1)  # the Kafka output's defaults (kafka_output.h)
KAFKA_TARGETS = {
    "kafka": {},
    "kafka-none": {"compression": "none", "compression_level": -1},
    "kafka-gzip4": {"compression": "gzip", "compression_level": 4},
    "kafka-gzip6": {"compression": "gzip", "compression_level": 6},
    "kafka-lz4": {"compression": "lz4", "compression_level": -1},
    "kafka-zstd": {"compression": "zstd", "compression_level": -1},
    # Into one real Kafka node (kafka_bench --serve --real), against kafka-direct-real.
    "kafka-real": {},
}
KAFKA_METRICS = {"shipper_kafka_sent_bytes_total": "kafka_sent_bytes",
                 "shipper_kafka_sent_message_bytes_total": "kafka_message_bytes"}
# The disk queue's group commits: how many, and how long the writer waited in fdatasync.
DISK_METRICS = {"shipper_queue_disk_syncs_total": "disk_syncs",
                "shipper_queue_disk_sync_seconds_total": "disk_sync_seconds"}
METRICS = re.compile(r"metrics on http://(\S+)/metrics")
# The OTLP targets: the output's compression (otlp-direct's otlp_load sends uncompressed).
OTLP_COMPRESSION = {"otlp": "none", "otlp-gzip": "gzip"}
# What otlp_null_server logs when it stops.
OTLP_SINK_TOTALS = re.compile(r"otlp_null_server: (\d+) records in (\d+) exports, (\d+) refused")


def baseline_of(target):
    """The target whose events/s a target's ratio divides by."""
    for output in ("kafka", "elasticsearch", "otlp"):
        if target.startswith(output):
            return output + "-direct" + ("-real" if target.endswith("-real") else "")
    return "null"


# The record's key for a target's baseline figure.
BASELINE_KEYS = {"null": "null_server_events_per_sec",
                 "kafka-direct": "kafka_direct_events_per_sec",
                 "kafka-direct-real": "kafka_direct_real_events_per_sec",
                 "elasticsearch-direct": "elasticsearch_direct_events_per_sec",
                 "otlp-direct": "otlp_direct_events_per_sec"}
# Targets that run without a Shipper binary.
BASELINES = ("null", "transport", "protobuf", "kafka-direct", "kafka-direct-real",
             "elasticsearch-direct", "otlp-direct")


def log(*parts):
    print("e2e:", *parts, file=sys.stderr, flush=True)


def emit(record):
    print(json.dumps(record), flush=True)


class Server:
    """A server process started on port 0; the address comes from its 'listening on' log line
    (or, with `ready`, a pattern of another server's line saying it is ready, address None)."""

    def __init__(self, name, argv, workdir, start_timeout=30.0, ready=LISTENING):
        self.name = name
        self.log_path = os.path.join(workdir, name.replace("/", "_") + ".log")
        self._log = open(self.log_path, "wb")
        # In workdir, so that relative default paths (the file output's ./data) land there.
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=workdir)
        self.address = None
        deadline = time.time() + start_timeout
        while time.time() < deadline:
            with open(self.log_path, "rb") as f:
                m = ready.search(f.read().decode(errors="replace"))
            if m:
                self.address = m.group(1) if ready.groups else None
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("%s did not start (%s): %s" % (name, " ".join(argv), self.log_tail()))

    def cpu_sec(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime

    def rss_mb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
        return 0.0

    def alive(self):
        return self.proc.poll() is None

    def log_tail(self, n=15):
        try:
            with open(self.log_path, "rb") as f:
                return "\n".join(f.read().decode(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log(self.name, "ignored SIGTERM for 10 s; killing it")
                self.proc.kill()
                self.proc.wait()
        self._log.close()


class Bench:
    def __init__(self, opts):
        self.o = opts
        self.workdir = tempfile.mkdtemp(prefix="shipper-e2e-")
        self.failed = False

    # --- processes -------------------------------------------------------------------------

    def start_null(self, name, decode="scan"):
        return Server(name, [self.o.null_server, "--listen=127.0.0.1:0", "--decode=" + decode],
                      self.workdir)

    def start_shipper(self, name, output, overrides=()):
        argv = [self.o.shipper]
        if self.o.config:
            argv += ["-c", self.o.config]
        argv += ["-E", "shipper.server.server=127.0.0.1:0"]
        for kv in self.o.common_overrides:
            argv += ["-E", kv]
        outdir = None
        if output in ("discard", "discard-disk", "discard-4mib"):
            argv += ["-E", "shipper.output.discard.enabled=true"]
        if output == "discard-4mib":  # max_receive_memory / max_message_size calls read at once
            argv += ["-E", "shipper.server.max_message_size=4MiB"]
        if output == "discard-disk":  # the same, through the disk queue
            argv += ["-E", "shipper.queue.disk.enabled=true",
                     "-E", "shipper.queue.disk.path=" +
                     os.path.join(self.workdir, name.replace("/", "_") + ".queue")]
        elif output in ("file", "file-nosync"):
            outdir = os.path.join(self.workdir, name.replace("/", "_") + ".out")
            os.makedirs(outdir)
            argv += ["-E", "shipper.output.file.enabled=true",
                     "-E", "shipper.output.file.path=" + outdir]
            if output == "file-nosync":
                argv += ["-E", "shipper.output.file.fsync=never"]
        fake = None
        if output in ES_LEVELS:
            fake = self.start_bulk_sink(name)
            argv += ["-E", "shipper.output.elasticsearch.enabled=true",
                     "-E", "shipper.output.elasticsearch.hosts=http://" + fake.address,
                     "-E", "shipper.output.elasticsearch.compression_level=%d"
                     % ES_LEVELS[output]]
        if output in KAFKA_TARGETS:
            fake = self.start_mock_cluster(name, real=output.endswith("-real"))
            settings = dict(KAFKA_TARGETS[output])
            # Statistics often enough that the last requests are counted at the end.
            librdkafka = ["statistics.interval.ms=200"] + settings.pop("librdkafka", [])
            argv += ["-E", "shipper.output.kafka.enabled=true",
                     "-E", "shipper.output.kafka.hosts=" + fake.address,
                     "-E", "shipper.output.kafka.topic=bench",
                     "-E", "shipper.output.kafka.librdkafka=[%s]" % ", ".join(librdkafka)]
            for key, value in settings.items():
                argv += ["-E", "shipper.output.kafka.%s=%s" % (key, value)]
        if output in OTLP_COMPRESSION:
            fake = self.start_otlp_sink(name)
            argv += ["-E", "shipper.output.otlp.enabled=true",
                     "-E", "shipper.output.otlp.endpoint=" + fake.address,
                     "-E", "shipper.output.otlp.compression=" + OTLP_COMPRESSION[output]]
        for kv in overrides:
            argv += ["-E", kv]
        try:
            server = Server(name, argv, self.workdir)
        except Exception:
            if fake:
                fake.stop()
            raise
        server.outdir = outdir
        server.fake = fake  # the bulk sink or the mock cluster, if any
        return server

    def start_bulk_sink(self, name):
        return Server(name + "/sink", [self.o.es_bench, "--serve"], self.workdir)

    def elasticsearch_direct(self, name, shape, events):
        """The baseline: es_bench --produce into a fresh bulk sink."""
        sink = self.start_bulk_sink(name)
        try:
            p = subprocess.run([self.o.es_bench, "--produce", "--url=http://" + sink.address,
                                "--shape=" + shape, "--events=%d" % events,
                                "--compression_level=%d" % ES_LEVELS["elasticsearch"]],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=self.o.run_timeout)
            sink_cpu = sink.cpu_sec()
        finally:
            sink.stop()
        lines = p.stdout.decode().strip().splitlines()
        if p.returncode != 0 or not lines:
            raise RuntimeError("es_bench --produce failed (exit %d): %s" % (
                p.returncode, p.stderr.decode().strip()[-500:]))
        d = json.loads(lines[-1])
        return {"persisted_per_sec": d["events_per_sec"], "events_persisted": d["events"],
                "server_cpu_sec": d["cpu_sec"], "fake_cpu_sec": sink_cpu, "rss_mb": 0.0,
                "p50_ms": None, "p99_ms": None, "event_bytes": None, "batch": None,
                "channels": None, "inflight": None, "client_cpu_sec": 0.0}

    def start_otlp_sink(self, name):
        return Server(name + "/sink", [self.o.otlp_null_server, "--listen=127.0.0.1:0"],
                      self.workdir)

    @staticmethod
    def otlp_sink_totals(sink):
        """What the stopped sink counted: records, exports (refused ones are an error)."""
        with open(sink.log_path, "rb") as f:
            m = OTLP_SINK_TOTALS.search(f.read().decode(errors="replace"))
        if not m:
            raise RuntimeError("%s logged no totals: %s" % (sink.name, sink.log_tail()))
        if int(m.group(3)):
            raise RuntimeError("%s refused %s exports: %s" % (sink.name, m.group(3),
                                                              sink.log_tail()))
        return {"sink_records": int(m.group(1)), "sink_exports": int(m.group(2))}

    def otlp_direct(self, name, shape, events):
        """The baseline: otlp_load into a fresh sink, exports of the run's batch size."""
        sink = self.start_otlp_sink(name)
        try:
            cpu0 = sink.cpu_sec()
            argv = [self.o.otlp_load, "--target=" + sink.address, "--transport=grpc",
                    "--shape=" + shape, "--events=%d" % events,
                    "--batch=%d" % self.o.batch[shape], "--inflight=4"]
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=self.o.run_timeout)
            sink_cpu = sink.cpu_sec() - cpu0
        finally:
            sink.stop()
        lines = p.stdout.decode().strip().splitlines()
        if p.returncode != 0 or not lines:
            raise RuntimeError("otlp_load %s failed (exit %d): %s" % (
                " ".join(argv[1:]), p.returncode, p.stderr.decode().strip()[-500:]))
        d = json.loads(lines[-1])
        r = {"persisted_per_sec": d["events_per_sec"], "events_persisted": d["events"],
             "server_cpu_sec": d["client_cpu_sec"], "fake_cpu_sec": sink_cpu, "rss_mb": 0.0,
             "p50_ms": None, "p99_ms": None, "event_bytes": None, "batch": d["batch"],
             "channels": None, "inflight": d["inflight"], "client_cpu_sec": 0.0}
        r.update(self.otlp_sink_totals(sink))
        return r

    def start_mock_cluster(self, name, real=False):
        """kafka_bench --serve: the mock cluster, or with `real` one real Kafka node (a JVM, its
        CPU not in fake_cpu_sec: kafka_bench's child)."""
        argv = [self.o.kafka_bench, "--serve", "--topic=bench"]
        if real:
            argv += ["--real", "--dir=" + os.path.join(self.workdir,
                                                       name.replace("/", "_") + ".kafka")]
        return Server(name + ("/kafka" if real else "/mock"), argv, self.workdir,
                      start_timeout=180.0 if real else 30.0)

    def kafka_direct(self, name, shape, events, real=False):
        """The baseline: kafka_bench --produce into a fresh mock cluster (or real Kafka node)."""
        mock = self.start_mock_cluster(name, real)
        try:
            codec, level = KAFKA_DEFAULT_COMPRESSION
            p = subprocess.run([self.o.kafka_bench, "--produce", "--bootstrap=" + mock.address,
                                "--topic=bench", "--shape=" + shape, "--events=%d" % events,
                                "--compression=" + codec, "--compression_level=%d" % level],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=self.o.run_timeout)
            mock_cpu = mock.cpu_sec()
        finally:
            mock.stop()
        lines = p.stdout.decode().strip().splitlines()
        if p.returncode != 0 or not lines:
            raise RuntimeError("kafka_bench --produce failed (exit %d): %s" % (
                p.returncode, p.stderr.decode().strip()[-500:]))
        d = json.loads(lines[-1])
        return {"persisted_per_sec": d["events_per_sec"], "events_persisted": d["events"],
                "server_cpu_sec": d["cpu_sec"], "fake_cpu_sec": mock_cpu, "rss_mb": 0.0,
                "p50_ms": None, "p99_ms": None, "event_bytes": None, "batch": None,
                "channels": None, "inflight": None, "client_cpu_sec": 0.0,
                "kafka_sent_bytes": d["tx_bytes"], "kafka_message_bytes": d["txmsg_bytes"]}

    @staticmethod
    def metrics(server, names):
        """The values of `names` (metric -> key) on the shipper's metrics page, by key."""
        with open(server.log_path, "rb") as f:
            m = METRICS.search(f.read().decode(errors="replace"))
        with urllib.request.urlopen("http://%s/metrics" % m.group(1)) as page:
            text = page.read().decode()
        out = {}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name in names:
                out[names[name]] = float(value)
        return out

    def load(self, target, shape, batch, events=None, rate=None, duration=None, idle=False,
             background=False):
        argv = [self.o.shipper_load, "--target=" + target, "--shape=" + shape,
                "--batch=%d" % batch, "--channels=%d" % self.o.channels,
                "--inflight=%d" % self.o.inflight, "--progress=off"]
        if events:
            argv.append("--events=%d" % events)
        if rate:
            argv.append("--rate=%.0f" % rate)
        if duration:
            argv.append("--duration=%gs" % duration)
        if idle:
            argv.append("--idle")
        if background:
            return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=self.o.run_timeout)
        lines = p.stdout.decode().strip().splitlines()
        if p.returncode != 0 or not lines:
            raise RuntimeError("shipper_load %s failed (exit %d): %s %s" % (
                " ".join(argv[1:]), p.returncode, p.stderr.decode().strip(),
                lines[-1] if lines else ""))
        return json.loads(lines[-1])

    # --- benchmarks ------------------------------------------------------------------------

    def throughput(self, target, shape, batch=None):
        """One run of `shape` against a fresh `target`; returns the load result plus server figures."""
        name = "e2e/%s/%s" % (target, shape)
        events, batch = self.o.events[shape], batch or self.o.batch[shape]
        if target == "null":
            server = self.start_null(name)
        elif target == "transport":
            server = self.start_null(name, decode="envelope")
        elif target == "protobuf":
            server = self.start_null(name, decode="full")
        elif target in ("kafka-direct", "kafka-direct-real"):
            return self.kafka_direct(name, shape, events, real=target.endswith("-real"))
        elif target == "elasticsearch-direct":
            return self.elasticsearch_direct(name, shape, events)
        elif target == "otlp-direct":
            return self.otlp_direct(name, shape, events)
        else:
            server = self.start_shipper(name, output=target)
        try:
            fake = getattr(server, "fake", None)
            cpu0, fake_cpu0 = server.cpu_sec(), fake.cpu_sec() if fake else 0
            r = self.load(server.address, shape, batch, events=events)
            r["server_cpu_sec"] = server.cpu_sec() - cpu0
            if fake:
                r["fake_cpu_sec"] = fake.cpu_sec() - fake_cpu0
            r["rss_mb"] = server.rss_mb()
            if target in KAFKA_TARGETS:
                time.sleep(0.5)  # one more statistics interval (200 ms) after the last event
                r.update(self.metrics(server, KAFKA_METRICS))
            if target == "discard-disk":
                r.update(self.metrics(server, DISK_METRICS))
            if not server.alive():
                raise RuntimeError("%s exited during the run: %s" % (name, server.log_tail()))
        except Exception:
            log(name, "server log:\n" + server.log_tail())
            raise
        finally:
            server.stop()
            fake = getattr(server, "fake", None)
            if fake:  # the bulk sink or the mock cluster: no process outlives its run
                if target in ES_LEVELS:
                    with urllib.request.urlopen("http://%s/_fake/stats" % fake.address) as page:
                        server.wire_bytes = json.load(page)["bytes"]
                fake.stop()
                if target in OTLP_COMPRESSION:
                    server.sink_totals = self.otlp_sink_totals(fake)
            if getattr(server, "outdir", None):
                r_bytes = sum(os.path.getsize(os.path.join(d, f))
                              for d, _, fs in os.walk(server.outdir) for f in fs)
                shutil.rmtree(server.outdir, ignore_errors=True)
                server.output_bytes = r_bytes
        if getattr(server, "output_bytes", None) is not None:
            r["output_bytes"] = server.output_bytes
        if getattr(server, "wire_bytes", None) is not None:
            r["wire_bytes"] = server.wire_bytes
        r.update(getattr(server, "sink_totals", {}))
        return r

    def run_throughput(self):
        for shape in self.o.shapes:
            targets = [t for t in self.o.targets if t in BASELINES or self.o.shipper]
            # Repetitions interleave the targets, so that a burst of load from other processes
            # hurts all of them alike; each target reports its best run.
            runs = {t: [] for t in targets}
            for rep in range(self.o.reps.get(shape, 1)):
                for target in targets:
                    name = "e2e/%s/%s" % (target, shape)
                    try:
                        r = self.throughput(target, shape)
                    except Exception as e:  # one failed run must not hide the others
                        self.failed = True
                        log(name, "FAILED:", e)
                        runs[target].append({"error": str(e)})
                        continue
                    r["loadavg"] = os.getloadavg()[0]
                    log(name, "run %d: %.0f events/s" % (rep + 1, r["persisted_per_sec"]))
                    runs[target].append(r)
            best = {t: max((r for r in runs[t] if "error" not in r),
                           key=lambda x: x["persisted_per_sec"], default=None) for t in targets}

            def cpu_per_million_of(r):
                return r["server_cpu_sec"] / max(r["events_persisted"], 1) * 1e6

            for target in targets:
                name = "e2e/%s/%s" % (target, shape)
                good = [r for r in runs[target] if "error" not in r]
                if not good:
                    emit({"name": name, "error": runs[target][0]["error"]})
                    continue
                r = best[target]
                eps = r["persisted_per_sec"]
                n = max(r["events_persisted"], 1)
                cpu_per_million = cpu_per_million_of(r)
                base = best.get(baseline_of(target))
                null_eps = base["persisted_per_sec"] if base else None
                null_cpu = cpu_per_million_of(base) if null_eps else None
                record = {
                    "name": name,
                    "events_per_sec": round(eps),
                    BASELINE_KEYS[baseline_of(target)]: round(null_eps) if null_eps else None,
                    "ratio": round(eps / null_eps, 3) if null_eps else None,
                    "p50_ms": r["p50_ms"],
                    "p99_ms": r["p99_ms"],
                    "shipper_cpu_sec_per_million": round(cpu_per_million, 3),
                    # Null server CPU per event / this server's: steadier than the throughput
                    # ratio when other processes compete for the cores.
                    "cpu_ratio": (round(null_cpu / cpu_per_million, 3)
                                  if null_cpu and cpu_per_million else None),
                    "rss_mb": round(r["rss_mb"], 1),
                    "events": r["events_persisted"],
                    "event_bytes": r["event_bytes"],
                    "batch": r["batch"],
                    "channels": r["channels"],
                    "inflight": r["inflight"],
                    "client_cpu_sec_per_million": round(r["client_cpu_sec"] / n * 1e6, 3),
                    "runs_events_per_sec": [round(x["persisted_per_sec"]) for x in good],
                    "loadavg": round(r["loadavg"], 2),
                }
                if r.get("partial_replies"):
                    record["partial_replies"] = r["partial_replies"]
                if "output_bytes" in r:
                    record["output_bytes_on_disk"] = r["output_bytes"]
                if "kafka_sent_bytes" in r:
                    record["kafka_sent_bytes"] = round(r["kafka_sent_bytes"])
                    record["kafka_message_bytes"] = round(r["kafka_message_bytes"])
                    record["mock_cluster_cpu_sec_per_million"] = round(
                        r["fake_cpu_sec"] / n * 1e6, 3)
                if r.get("disk_syncs"):
                    # Events per group commit, and the share of the run the writer spent syncing.
                    record["disk_events_per_sync"] = round(n / r["disk_syncs"])
                    record["disk_sync_ms"] = round(r["disk_sync_seconds"] / r["disk_syncs"] * 1e3, 2)
                    record["disk_sync_busy"] = round(r["disk_sync_seconds"] * eps / n, 3)
                if target.startswith("elasticsearch") or target.startswith("otlp"):
                    # The sink's CPU, to tell its limit from Shipper's.
                    record["sink_cpu_sec_per_million"] = round(r["fake_cpu_sec"] / n * 1e6, 3)
                if "sink_records" in r:
                    record["sink_records"] = r["sink_records"]
                    record["sink_exports"] = r["sink_exports"]
                if "wire_bytes" in r:
                    record["bulk_bytes_on_the_wire"] = r["wire_bytes"]
                if target == "discard" and best.get("discard-4mib"):
                    small_eps = best["discard-4mib"]["persisted_per_sec"]
                    record["discard_4mib_events_per_sec"] = round(small_eps)
                    record["ratio_to_4mib"] = round(eps / small_eps, 3)
                if target in ES_LEVELS and best.get("file"):
                    file_eps = best["file"]["persisted_per_sec"]
                    record["file_events_per_sec"] = round(file_eps)
                    record["ratio_to_file"] = round(eps / file_eps, 3)
                emit(record)

    def run_latency(self):
        shape = "filebeat"
        batch = self.o.latency_batch
        # Half of the maximum at the batch size the latency runs use: with smaller batches than
        # the throughput runs', half of their maximum can be more than the server sustains.
        target = "discard" if self.o.shipper else "null"
        try:
            base = self.throughput(target, shape, batch=batch)
        except Exception as e:
            self.failed = True
            log("latency_at_half_load: no maximum measured:", e)
            return
        maximum = base["persisted_per_sec"]
        log("latency_at_half_load: %s maximum at batch %d: %.0f events/s" % (target, batch, maximum))
        rate = maximum / 2.0
        # The same rate against the null server: the floor the transport itself imposes.
        reference = None
        try:
            reference = self.paced(self.start_null("latency/null"), shape, batch, rate)
        except Exception as e:
            self.failed = True
            log("latency reference on null_server failed:", e)
        if reference is not None:
            emit(self.latency_record("e2e/latency_at_half_load/null", "none", (), "none", shape,
                                     batch, rate, reference, None))
        if not self.o.shipper:
            return
        for name, overrides in (("e2e/latency_at_half_load", self.o.buffered_overrides),
                                ("e2e/latency_at_half_load/direct", self.o.direct_overrides)):
            try:
                r = self.paced(self.start_shipper(name, "discard", overrides), shape, batch, rate)
            except Exception as e:
                self.failed = True
                log(name, "FAILED:", e)
                emit({"name": name, "error": str(e)})
                continue
            emit(self.latency_record(name, "direct" if name.endswith("direct") else "buffered",
                                     overrides, "discard", shape, batch, rate, r, reference))
        # The file output at half of its own maximum, buffered: what writing and fdatasync add.
        name = "e2e/latency_at_half_load/file"
        try:
            file_rate = self.throughput("file", shape, batch=batch)["persisted_per_sec"] / 2.0
            r = self.paced(self.start_shipper(name, "file", self.o.buffered_overrides), shape,
                           batch, file_rate)
        except Exception as e:
            self.failed = True
            log(name, "FAILED:", e)
            emit({"name": name, "error": str(e)})
            return
        emit(self.latency_record(name, "buffered", self.o.buffered_overrides, "file", shape, batch,
                                 file_rate, r, reference))

    def paced(self, server, shape, batch, rate):
        """A latency run of latency_seconds at `rate` against `server`, stopped afterwards."""
        try:
            return self.load(server.address, shape, batch, rate=rate,
                             duration=self.o.latency_seconds)
        finally:
            server.stop()

    @staticmethod
    def latency_record(name, loop, overrides, output, shape, batch, rate, r, reference):
        record = {
            "name": name,
            "loop": loop,
            "overrides": list(overrides),
            "output": output,
            "shape": shape,
            "batch": batch,
            "rate": round(rate),  # half of max_events_per_sec
            "max_events_per_sec": round(2 * rate),
            "events_per_sec": round(r["persisted_per_sec"]),
            "p50_ms": r["p50_ms"],
            "p90_ms": r["p90_ms"],
            "p99_ms": r["p99_ms"],
            "max_ms": r["max_ms"],
            "reply_p50_ms": r.get("reply_p50_ms"),
            "reply_p99_ms": r.get("reply_p99_ms"),
            "loadavg": round(os.getloadavg()[0], 2),
        }
        if reference is not None:
            record["null_server_p50_ms"] = reference["p50_ms"]
            record["null_server_p99_ms"] = reference["p99_ms"]
        return record

    def run_idle(self):
        if not self.o.shipper:
            return
        name = "idle_cpu"
        try:
            server = self.start_shipper(name, "discard" if self.o.idle_discard else None)
        except Exception as e:
            self.failed = True
            emit({"name": name, "error": str(e)})
            return
        client = None
        try:
            secs = self.o.idle_seconds
            client = self.load(server.address, "filebeat", 1, duration=secs + 3, idle=True,
                               background=True)
            time.sleep(2.0)  # connections up, PersistedIndex streams open, start-up work done
            method, cpu_sec = "proc_stat_ticks", None
            if shutil.which("perf"):
                p = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "-p",
                                    str(server.proc.pid), "--", "sleep", str(secs)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for line in p.stderr.decode().splitlines():
                    parts = line.split(",")
                    if len(parts) > 2 and parts[2].startswith("task-clock"):
                        try:
                            cpu_sec = float(parts[0]) / 1000.0
                            method = "perf_task_clock"
                        except ValueError:  # "<not counted>": no CPU at all
                            cpu_sec, method = 0.0, "perf_task_clock"
            if cpu_sec is None:
                cpu0 = server.cpu_sec()
                time.sleep(secs)
                cpu_sec = server.cpu_sec() - cpu0
            alive = server.alive()
            emit({"name": name, "cpu_percent": round(cpu_sec / secs * 100.0, 4),
                  "seconds": secs, "clients": self.o.channels, "method": method,
                  "alive": alive, "loadavg": round(os.getloadavg()[0], 2)})
        finally:
            if client is not None:
                client.wait(timeout=secs + 30)
            server.stop()

    def run(self):
        t0 = time.time()
        try:
            self.run_throughput()
            if self.o.latency_seconds > 0:
                self.run_latency()
            if self.o.idle_seconds > 0:
                self.run_idle()
        finally:
            if not self.o.keep:
                shutil.rmtree(self.workdir, ignore_errors=True)
            else:
                log("logs kept in", self.workdir)
        log("done in %.0f s" % (time.time() - t0))
        return 1 if self.failed else 0


def per_shape(text, cast=int):
    out = {}
    for item in text.split(","):
        k, v = item.split("=")
        out[k.strip()] = cast(v.replace("_", ""))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--shipper", default=os.environ.get("SHIPPER_BIN", ""))
    ap.add_argument("--null_server", default=os.environ.get("NULL_SERVER_BIN", ""))
    ap.add_argument("--shipper_load", default=os.environ.get("SHIPPER_LOAD_BIN", ""))
    ap.add_argument("--kafka_bench", default=os.environ.get("KAFKA_BENCH_BIN", ""),
                    help="tests/kafka/kafka_bench, for the kafka targets")
    ap.add_argument("--es_bench", default=os.environ.get("ES_BENCH_BIN", ""),
                    help="tests/elasticsearch/es_bench, for the elasticsearch targets")
    ap.add_argument("--otlp_load", default=os.environ.get("OTLP_LOAD_BIN", ""),
                    help="tests/load/otlp_load, for the otlp-direct target")
    ap.add_argument("--otlp_null_server", default=os.environ.get("OTLP_NULL_SERVER_BIN", ""),
                    help="tests/load/otlp_null_server, the otlp targets' sink")
    ap.add_argument("--config", default=os.environ.get("SHIPPER_CONFIG", ""),
                    help="YAML config passed with -c (default: none, only -E overrides)")
    ap.add_argument("--targets",
                    default="null,transport,protobuf,discard,discard-4mib,discard-disk,file,"
                            "file-nosync,elasticsearch-direct,elasticsearch,elasticsearch-gzip0,"
                            "otlp-direct,otlp,otlp-gzip",
                    help="null: null_server (Shipper's scan, the baseline); transport: "
                         "null_server --decode=envelope (no event decoding); protobuf: "
                         "null_server --decode=full (protobuf messages); discard, file, "
                         "elasticsearch (gzip level 1), elasticsearch-gzip0: Shipper outputs; "
                         "elasticsearch-direct: their baseline (es_bench --produce); "
                         "discard-disk: discard through the disk queue; discard-4mib: discard "
                         "with shipper.server.max_message_size=4MiB; file-nosync: file "
                         "with fsync: never; otlp, otlp-gzip: the OTLP output (uncompressed, gzip) "
                         "into otlp_null_server; otlp-direct: their baseline (otlp_load into "
                         "the same sink)")
    ap.add_argument("--shapes", default="filebeat,tiny,large")
    ap.add_argument("--events", default="filebeat=600_000,tiny=2_000_000,large=60_000",
                    help="events per run, per shape")
    ap.add_argument("--batch", default="filebeat=500,tiny=500,large=100",
                    help="events per call, per shape")
    ap.add_argument("--reps", default="filebeat=2,tiny=1,large=1",
                    help="runs per target, per shape (interleaved; the best is reported)")
    ap.add_argument("--channels", type=int, default=2)
    ap.add_argument("--inflight", type=int, default=2)
    ap.add_argument("--latency_seconds", type=float, default=8)
    ap.add_argument("--latency_batch", type=int, default=100)
    ap.add_argument("--buffered_overrides",
                    default="shipper.queue.mem.flush.min_events=2048,"
                            "shipper.queue.mem.flush.timeout=5ms")
    ap.add_argument("--direct_overrides", default="shipper.queue.mem.flush.min_events=1")
    ap.add_argument("--common_overrides", default="http.port=0",
                    help="-E overrides for every Shipper run (default: the metrics endpoint on a "
                         "free port, so that runs never collide on 8282)")
    ap.add_argument("--idle_seconds", type=float, default=10)
    ap.add_argument("--idle_discard", action="store_true",
                    help="enable the discard output for idle_cpu (if the default config has none)")
    ap.add_argument("--run_timeout", type=float, default=120, help="seconds per load run")
    ap.add_argument("--keep", action="store_true", help="keep server logs")
    o = ap.parse_args()
    o.targets = [t for t in o.targets.split(",") if t]
    o.shapes = [s for s in o.shapes.split(",") if s]
    o.events = per_shape(o.events)
    o.batch = per_shape(o.batch)
    o.reps = per_shape(o.reps)
    o.buffered_overrides = [kv for kv in o.buffered_overrides.split(",") if kv]
    o.direct_overrides = [kv for kv in o.direct_overrides.split(",") if kv]
    o.common_overrides = [kv for kv in o.common_overrides.split(",") if kv]
    # Servers run in a temporary directory: make the paths independent of the caller's.
    for flag in ("shipper", "null_server", "shipper_load", "config", "kafka_bench", "es_bench",
                 "otlp_load", "otlp_null_server"):
        if getattr(o, flag):
            setattr(o, flag, os.path.abspath(getattr(o, flag)))
    for flag in ("null_server", "shipper_load"):
        path = getattr(o, flag)
        if not path or not os.access(path, os.X_OK):
            ap.error("--%s: no executable at %r" % (flag, path))
    if any(t.startswith("kafka") for t in o.targets) and not os.access(o.kafka_bench, os.X_OK):
        ap.error("--kafka_bench: no executable at %r" % o.kafka_bench)
    if any(t.startswith("elasticsearch") for t in o.targets) and not os.access(o.es_bench, os.X_OK):
        ap.error("--es_bench: no executable at %r" % o.es_bench)
    if any(t.startswith("otlp") for t in o.targets):
        for flag in ("otlp_load", "otlp_null_server"):
            if not os.access(getattr(o, flag), os.X_OK):
                ap.error("--%s: no executable at %r" % (flag, getattr(o, flag)))
    if o.shipper and not os.access(o.shipper, os.X_OK):
        ap.error("--shipper: no executable at %r" % o.shipper)
    if not o.shipper:
        log("no Shipper binary: null-server figures only")
    sys.exit(Bench(o).run())


if __name__ == "__main__":
    main()
