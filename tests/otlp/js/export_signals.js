#!/usr/bin/env node
// Exports spans or metric data points to an OTLP endpoint through the OpenTelemetry JS SDK: its
// TracerProvider or MeterProvider and one of its three OTLP exporters of the signal (grpc, proto =
// protobuf over HTTP, http = JSON over HTTP), with the SDK's own serialization.
//
//   node export_signals.js --signal=traces|metrics --exporter=grpc|proto|http \
//     --endpoint=URL [--count=1000] [--batch=200] [--run=NAME]
//
// traces: span i (0-based) is "span <i>" of kind SERVER, starting i ns after
//   2023-11-14T22:13:20Z and lasting 1000 ns, attributes {seq: i, run}, one event "checkpoint"
//   ({seq: i}), status ERROR "odd" when i is odd, else OK.
// metrics: for each seq i < count, one point each of the counter "requests" (i + 1, cumulative,
//   monotonic), the gauge "temperature" (i + 0.5), the histogram "latency" (one value, i + 1;
//   explicit buckets) and the histogram "latency.exp" (one value, i + 1; exponential buckets), all
//   with attributes {seq: i, run}: 4 x count points, in one collection exported in one request.
// The resource carries service.name "shipper-sdk-test"; the scope is "shipper.test.scope" 1.2.3.
// Prints one JSON line {"exported": n, "failed": n} and exits 1 if any export failed, 2 on bad
// arguments.
'use strict';

const { resourceFromAttributes } = require('@opentelemetry/resources');

const EXPORTERS = {
  traces: {
    grpc: ['@opentelemetry/exporter-trace-otlp-grpc', 'OTLPTraceExporter'],
    proto: ['@opentelemetry/exporter-trace-otlp-proto', 'OTLPTraceExporter'],
    http: ['@opentelemetry/exporter-trace-otlp-http', 'OTLPTraceExporter'],
  },
  metrics: {
    grpc: ['@opentelemetry/exporter-metrics-otlp-grpc', 'OTLPMetricExporter'],
    proto: ['@opentelemetry/exporter-metrics-otlp-proto', 'OTLPMetricExporter'],
    http: ['@opentelemetry/exporter-metrics-otlp-http', 'OTLPMetricExporter'],
  },
};
const RESOURCE = resourceFromAttributes({ 'service.name': 'shipper-sdk-test' });

function parseArgs(argv) {
  const args = { count: 1000, batch: 200, run: 'sdk' };
  for (const arg of argv) {
    const m = /^--([a-z_]+)=(.*)$/.exec(arg);
    if (!m) throw new Error(`bad argument ${arg}`);
    args[m[1]] = m[2];
  }
  for (const key of ['count', 'batch']) args[key] = Number(args[key]);
  if (!EXPORTERS[args.signal]) throw new Error('--signal must be traces or metrics');
  if (!EXPORTERS[args.signal][args.exporter]) throw new Error('--exporter must be grpc, proto or http');
  if (!args.endpoint) throw new Error('--endpoint is required');
  return args;
}

function exportOnce(exporter, items) {
  return new Promise((resolve) => exporter.export(items, (result) => resolve(result)));
}

async function spans(args, exporter) {
  const { SpanKind, SpanStatusCode } = require('@opentelemetry/api');
  const { TracerProvider, InMemorySpanExporter, SimpleSpanProcessor } =
      require('@opentelemetry/sdk-trace');
  const memory = new InMemorySpanExporter();
  const processor = new SimpleSpanProcessor({ exporter: memory });
  const provider = new TracerProvider({ resource: RESOURCE, spanProcessors: [processor] });
  const tracer = provider.getTracer('shipper.test.scope', '1.2.3');
  const base = 1700000000n * 1000000000n;
  const at = (nanos) => [Number(nanos / 1000000000n), Number(nanos % 1000000000n)];
  for (let i = 0; i < args.count; i++) {
    const start = base + BigInt(i);
    const span = tracer.startSpan(`span ${i}`, {
      kind: SpanKind.SERVER,
      startTime: at(start),
      attributes: { seq: i, run: args.run },
    });
    span.addEvent('checkpoint', { seq: i }, at(start + 10n));
    span.setStatus(i % 2 ? { code: SpanStatusCode.ERROR, message: 'odd' }
                         : { code: SpanStatusCode.OK });
    span.end(at(start + 1000n));
  }
  await processor.forceFlush();  // it hands each span over asynchronously
  const finished = memory.getFinishedSpans();
  let exported = 0, failed = 0;
  for (let i = 0; i < finished.length; i += args.batch) {
    const batch = finished.slice(i, i + args.batch);
    const result = await exportOnce(exporter, batch);
    if (result.code === 0) exported += batch.length; else failed += batch.length;
    if (result.code !== 0) console.error(String(result.error && result.error.message));
  }
  return { exported, failed };
}

async function points(args, exporter) {
  const { MeterProvider, MetricReader, AggregationType } = require('@opentelemetry/sdk-metrics');
  class Reader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const reader = new Reader();
  const provider = new MeterProvider({
    resource: RESOURCE,
    readers: [reader],
    views: [{ instrumentName: 'latency.exp',
              aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }],
  });
  const meter = provider.getMeter('shipper.test.scope', '1.2.3');
  const requests = meter.createCounter('requests', { unit: '1' });
  const temperature = meter.createGauge('temperature', { unit: 'Cel' });
  const latency = meter.createHistogram('latency', { unit: 'ms' });
  const exponential = meter.createHistogram('latency.exp', { unit: 'ms' });
  for (let i = 0; i < args.count; i++) {
    const attributes = { seq: i, run: args.run };
    requests.add(i + 1, attributes);
    temperature.record(i + 0.5, attributes);
    latency.record(i + 1, attributes);
    exponential.record(i + 1, attributes);
  }
  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length) throw new Error(errors.join('; '));
  const result = await exportOnce(exporter, resourceMetrics);
  if (result.code !== 0) console.error(String(result.error && result.error.message));
  const n = 4 * args.count;
  return result.code === 0 ? { exported: n, failed: 0 } : { exported: 0, failed: n };
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`export_signals: ${e.message}`);
    process.exit(2);
  }
  const [module, name] = EXPORTERS[args.signal][args.exporter];
  const Exporter = require(module)[name];
  const exporter = new Exporter({ url: args.endpoint, timeoutMillis: 30000 });
  const counts = args.signal === 'traces' ? await spans(args, exporter)
                                          : await points(args, exporter);
  await exporter.shutdown();
  console.log(JSON.stringify(counts));
  process.exit(counts.failed === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(`export_signals: ${e.stack || e}`);
  process.exit(1);
});
