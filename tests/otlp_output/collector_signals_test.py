#!/usr/bin/python3
"""Spans and data points through Shipper to the real OpenTelemetry Collector (SHIPPER_OTELCOL):
the same ExportTraceServiceRequests and ExportMetricsServiceRequests go once straight into the
Collector and once into Shipper's OTLP input, whose OTLP output (gRPC, then HTTP/JSON) sends them
on to the Collector. What the Collector's file exporter writes of each compares equal, span for
span and point for point, with their resource, scope and metric. The requests carry every span
part (events, links, status, kind, flags) and every kind of point (gauge, sum, histogram,
exponential histogram, summary, exemplars); no bytes values, which the OTLP input keeps for log
records only (docs/otlp-output.md). Then the OTel JS SDK's trace and metric exporters, once
straight into the Collector and once through Shipper: equal but for their random ids and
collection times, which differ from run to run."""
import json
import os
import subprocess
import sys

import grpc

sys.path[:0] = ["tests/otlp_output", "tests/elasticsearch", "tests/otlp", "tests/peers"]
from collector_test import Collector  # noqa: E402
from es_testing import tmpdir  # noqa: E402
from otlp_harness import node_env, otlp, relay_shipper, wait_for  # noqa: E402

START = 1700000000 * 10**9
TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
METRICS = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"


def trace_request(trace_service_pb2, run):
    request = trace_service_pb2.ExportTraceServiceRequest()
    for r in range(2):
        rs = request.resource_spans.add()
        rs.resource.attributes.add(key="service.name").value.string_value = f"svc{r}"
        rs.resource.attributes.add(key="run").value.string_value = run
        if r == 0:
            rs.schema_url = "https://opentelemetry.io/schemas/1.26.0"
        ss = rs.scope_spans.add()
        ss.scope.name = "io.app"
        ss.scope.version = "1.0"
        for k in range(5):
            span = ss.spans.add()
            span.trace_id = bytes([0xa0 + k] * 16)
            span.span_id = bytes([0x10 + k, r] * 4)
            span.name = f"op{k}"
            span.kind = k % 6
            span.start_time_unix_nano = START + k
            span.end_time_unix_nano = START + 1500000 + k
            span.flags = 0x301 if k == 0 else 0
            span.attributes.add(key="n").value.int_value = 2**63 - 1 - k
            span.attributes.add(key="d").value.double_value = 0.5 * k
            if k == 1:
                span.parent_span_id = bytes(range(8))
                span.trace_state = "vendor=1"
                span.dropped_attributes_count = 1
                span.dropped_events_count = 2
                span.dropped_links_count = 3
                event = span.events.add(time_unix_nano=START + 9, name="exception")
                event.attributes.add(key="exception.type").value.string_value = "IOError"
                # Bytes values stay bytes (the Collector writes bytesValue, not stringValue).
                event.attributes.add(key="raw").value.bytes_value = b"\x00\xffevent"
                span.attributes.add(key="raw").value.bytes_value = b"\x00\xffspan"
                event.dropped_attributes_count = 4
                link = span.links.add(trace_id=bytes([7] * 16), span_id=bytes([1] * 8))
                link.trace_state = "k=v"
                link.flags = 0x100
                link.attributes.add(key="link.n").value.int_value = -7
                span.status.code = 2
                span.status.message = "broken pipe"
            elif k == 2:
                span.status.code = 1
    return request.SerializeToString()


def metrics_request(metrics_service_pb2, run):
    request = metrics_service_pb2.ExportMetricsServiceRequest()
    rm = request.resource_metrics.add()
    rm.resource.attributes.add(key="run").value.string_value = run
    sm = rm.scope_metrics.add()
    sm.scope.name = "io.meter"
    sm.schema_url = "https://example.com/scope"
    gauge = sm.metrics.add(name="queue.depth", unit="{item}", description="waiting")
    gauge.metadata.add(key="origin").value.string_value = "sdk"
    for i in range(3):
        p = gauge.gauge.data_points.add(time_unix_nano=START + i)
        if i == 0:
            p.as_int = 42
        if i == 1:
            p.as_double = 2.5
            p.flags = 1
            p.attributes.add(key="shard").value.int_value = 3
            e = p.exemplars.add(time_unix_nano=START + 7, as_int=-3)
            e.trace_id, e.span_id = bytes([3] * 16), bytes([4] * 8)
            e.filtered_attributes.add(key="user").value.string_value = "u1"
            e.filtered_attributes.add(key="raw").value.bytes_value = b"\x00\xffexemplar"
            p.attributes.add(key="raw").value.bytes_value = b"\x00\xffpoint"
    total = sm.metrics.add(name="http.requests")
    total.sum.aggregation_temporality = 2
    total.sum.is_monotonic = True
    for i in range(2):
        p = total.sum.data_points.add(time_unix_nano=START + i, start_time_unix_nano=START - 9)
        p.as_double = 1.5 * i
        p.attributes.add(key="route").value.string_value = f"/{i}"
    histogram = sm.metrics.add(name="http.duration", unit="ms")
    histogram.histogram.aggregation_temporality = 1
    p = histogram.histogram.data_points.add(time_unix_nano=START, count=10, sum=123.5, min=0.5,
                                            max=60)
    p.bucket_counts.extend([1, 0, 6, 3])
    p.explicit_bounds.extend([1.0, 5.0, 50.0])
    p.exemplars.add(time_unix_nano=START + 3, as_double=2.25)
    exponential = sm.metrics.add(name="latency")
    exponential.exponential_histogram.aggregation_temporality = 2
    p = exponential.exponential_histogram.data_points.add(
        time_unix_nano=START, count=9, sum=-4, scale=-2, zero_count=2, zero_threshold=0.001,
        min=-1, max=1000)
    p.positive.offset = -3
    p.positive.bucket_counts.extend([1, 2, 300])
    p.negative.offset = 1
    p.negative.bucket_counts.extend([4])
    summary = sm.metrics.add(name="rpc.size")
    p = summary.summary.data_points.add(time_unix_nano=START, count=4, sum=400)
    for q in (0.0, 0.5, 1.0):
        p.quantile_values.add(quantile=q, value=q * 200)
    return request.SerializeToString()


def flat(collector, name):
    """Every span and every data point in the file, each with its resource, scope and (points)
    metric, as sorted JSON strings: what a receiver sees, whatever the grouping of requests."""
    out = []
    for line in collector.lines(name):
        for rs in line.get("resourceSpans", []):
            resource = dict(rs.get("resource", {}), schemaUrl=rs.get("schemaUrl"))
            for ss in rs.get("scopeSpans", []):
                scope = dict(ss.get("scope", {}), schemaUrl=ss.get("schemaUrl"))
                for span in ss.get("spans", []):
                    out.append(json.dumps([resource, scope, span], sort_keys=True))
        for rm in line.get("resourceMetrics", []):
            resource = dict(rm.get("resource", {}), schemaUrl=rm.get("schemaUrl"))
            for sm in rm.get("scopeMetrics", []):
                scope = dict(sm.get("scope", {}), schemaUrl=sm.get("schemaUrl"))
                for metric in sm.get("metrics", []):
                    for kind in ("gauge", "sum", "histogram", "exponentialHistogram", "summary"):
                        if kind not in metric:
                            continue
                        data = dict(metric[kind])
                        points = data.pop("dataPoints", [])
                        header = dict(metric, **{kind: data})
                        for point in points:
                            out.append(json.dumps([resource, scope, header, point],
                                                  sort_keys=True))
    return sorted(out)


def export(address, method, request):
    with grpc.insecure_channel(address) as channel:
        channel.unary_unary(method, request_serializer=None, response_deserializer=None)(
            request, timeout=30)


# What differs from one SDK run to the next: its random ids, and a metric collection's times.
RUN_BOUND = {"traceId", "spanId", "parentSpanId", "timeUnixNano", "startTimeUnixNano"}


def without_run_bound(value):
    if isinstance(value, dict):
        return {k: without_run_bound(v) for k, v in value.items() if k not in RUN_BOUND}
    if isinstance(value, list):
        return [without_run_bound(v) for v in value]
    return value


def sdk_round_trip(collector):
    """The OTel JS SDK's trace and metric exporters (gRPC) once straight into the Collector and
    once into Shipper, which sends on over gRPC: equal but for what differs between two runs."""
    env = node_env()
    grpc_port, _ = collector.ports["sdk_relayed"]
    relay = relay_shipper(f"127.0.0.1:{grpc_port}")
    direct_port, _ = collector.ports["sdk_direct"]
    for endpoint in (f"http://127.0.0.1:{direct_port}", f"http://{relay.grpc_address}"):
        for signal in ("traces", "metrics"):
            p = subprocess.run(["/usr/bin/node", "tests/otlp/js/export_signals.js",
                                f"--signal={signal}", "--exporter=grpc", f"--endpoint={endpoint}",
                                "--count=200", "--run=sdk"],
                               env=env, capture_output=True,
                               text=True, timeout=300)
            assert p.returncode == 0, f"{endpoint}: {p.stdout} {p.stderr}\n{relay.text()[-3000:]}"

    def masked(name):
        return sorted(json.dumps(without_run_bound(json.loads(item)), sort_keys=True)
                      for item in flat(collector, name))
    # 200 spans, and 4 points (counter, gauge, histogram, exponential histogram) per seq.
    for name in ("sdk_direct", "sdk_relayed"):
        wait_for(lambda: len(flat(collector, name)) == 1000, 30, f"{name}: every span and point")
    direct, relayed = masked("sdk_direct"), masked("sdk_relayed")
    assert direct == relayed, "\n".join(
        ["direct only:"] + sorted(set(direct) - set(relayed))[:5] +
        ["relayed only:"] + sorted(set(relayed) - set(direct))[:5])
    assert relay.stop() == 0
    print("SDK round trip: 200 spans and 800 data points equal through Shipper, but for their "
          "random ids and collection times", flush=True)


def main():
    otlp()  # generates the stubs
    from proto.otlp import metrics_service_pb2, trace_service_pb2  # noqa: generated by otlp()
    relays = {"grpc": "relayed_grpc", "http/json": "relayed_json"}
    collector = Collector(tmpdir(),
                          ("direct", "sdk_direct", "sdk_relayed") + tuple(relays.values()))
    try:
        direct_port, _ = collector.ports["direct"]
        for protocol, name in relays.items():
            grpc_port, http_port = collector.ports[name]
            endpoint = (f"127.0.0.1:{grpc_port}" if protocol == "grpc"
                        else f"http://127.0.0.1:{http_port}")
            relay = relay_shipper(endpoint, protocol=protocol)
            for method, request in ((TRACES, trace_request(trace_service_pb2, "signals")),
                                    (METRICS, metrics_request(metrics_service_pb2, "signals"))):
                export(relay.grpc_address, method, request)
                if protocol == "grpc":
                    export(f"127.0.0.1:{direct_port}", method, request)
            wait_for(lambda: len(flat(collector, "direct")) == 18 and
                     len(flat(collector, name)) == 18, 30,
                     f"{protocol}: 10 spans and 8 data points, direct and through Shipper")
            direct, relayed = flat(collector, "direct"), flat(collector, name)
            assert direct == relayed, "\n".join(
                ["direct only:"] + sorted(set(direct) - set(relayed)) +
                ["relayed only:"] + sorted(set(relayed) - set(direct)))
            assert relay.stop() == 0
            print(f"{protocol}: 10 spans and 8 data points equal through Shipper, span for span "
                  "and point for point", flush=True)
        sdk_round_trip(collector)
    finally:
        collector.stop()


if __name__ == "__main__":
    main()
