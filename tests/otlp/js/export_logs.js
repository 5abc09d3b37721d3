#!/usr/bin/env node
// Exports log records to an OTLP endpoint through the OpenTelemetry JS SDK, as an application
// instrumented with it would: LoggerProvider -> Logger.emit -> one of the SDK's three OTLP log
// exporters (grpc, proto = protobuf over HTTP, http = JSON over HTTP), with the SDK's own
// serialization, compression and retries.
//
//   node export_logs.js --exporter=grpc|proto|http --endpoint=http://127.0.0.1:4317 \
//     [--records=100000] [--batch=512] [--in_flight=4] [--compression=none|gzip] [--run=NAME]
//
// Record i (0-based) carries:
//   body "record <i> of <run>", severity INFO (9) "info", event name "shipper.test",
//   time i ns after 2023-11-14T22:13:20Z, observed time 1 ms later,
//   attributes {seq: i, run, "max.safe.int": 2^53-1, "ratio": i + 0.5, "ok": i even,
//               "tags": ["a", i], "nested": {"k": "v"}},
//   trace id sprintf("%032x", i + 1), span id sprintf("%016x", i + 1).
// The resource carries service.name "shipper-sdk-test"; the scope is "shipper.test.scope" 1.2.3.
//
// The SDK's BatchLogRecordProcessor drops records and logs errors when exports fail; this script
// instead hands each batch of --batch records to the exporter itself (a LogRecordProcessor of its
// own, at most --in_flight exports at once) so that it knows the result of every export. It
// prints one JSON line {"exported": n, "failed": n, "seconds": s} and exits 1 if any export
// failed, 2 on bad arguments.
'use strict';

const { ROOT_CONTEXT, trace, TraceFlags } = require('@opentelemetry/api');
const { SeverityNumber } = require('@opentelemetry/api-logs');
const { LoggerProvider } = require('@opentelemetry/sdk-logs');
const { resourceFromAttributes } = require('@opentelemetry/resources');

const EXPORTERS = {
  grpc: '@opentelemetry/exporter-logs-otlp-grpc',
  proto: '@opentelemetry/exporter-logs-otlp-proto',
  http: '@opentelemetry/exporter-logs-otlp-http',
};

function parseArgs(argv) {
  const args = { records: 100000, batch: 512, in_flight: 4, compression: 'none', run: 'sdk' };
  for (const arg of argv) {
    const m = /^--([a-z_]+)=(.*)$/.exec(arg);
    if (!m) throw new Error(`bad argument ${arg}`);
    args[m[1]] = m[2];
  }
  for (const key of ['records', 'batch', 'in_flight']) args[key] = Number(args[key]);
  if (!EXPORTERS[args.exporter]) throw new Error('--exporter must be grpc, proto or http');
  if (!args.endpoint) throw new Error('--endpoint is required');
  return args;
}

// Hands every `batch` records to the exporter, keeps at most `inFlight` exports outstanding and
// counts the records whose export failed.
class CountingProcessor {
  constructor(exporter, batch, inFlight) {
    this.exporter = exporter;
    this.batch = batch;
    this.inFlight = inFlight;
    this.pending = [];
    this.running = 0;
    this.waiting = [];  // export thunks waiting for a slot
    this.idle = [];     // resolvers of forceFlush, called when nothing is running or waiting
    this.exported = 0;
    this.failed = 0;
    this.errors = new Set();
  }

  onEmit(record) {
    this.pending.push(record);
    if (this.pending.length >= this.batch) this.flushPending();
  }

  flushPending() {
    if (this.pending.length === 0) return;
    const records = this.pending;
    this.pending = [];
    this.waiting.push(() => this.exportNow(records));
    this.startWaiting();
  }

  startWaiting() {
    while (this.running < this.inFlight && this.waiting.length) {
      this.running++;
      this.waiting.shift()();
    }
    if (this.running === 0 && this.waiting.length === 0) {
      for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  exportNow(records) {
    this.exporter.export(records, (result) => {
      if (result.code === 0) {
        this.exported += records.length;
      } else {
        this.failed += records.length;
        this.errors.add(String(result.error && result.error.message));
      }
      this.running--;
      this.startWaiting();
    });
  }

  // Resolves once every record emitted so far has been exported (or failed).
  forceFlush() {
    this.flushPending();
    if (this.running === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  // True when the caller may emit more without growing the backlog past a few batches.
  hasRoom() {
    return this.waiting.length < this.inFlight;
  }

  shutdown() {
    return this.forceFlush().then(() => this.exporter.shutdown());
  }
}

function hex(n, digits) {
  return n.toString(16).padStart(digits, '0');
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`export_logs: ${e.message}`);
    process.exit(2);
  }
  const { OTLPLogExporter } = require(EXPORTERS[args.exporter]);
  const exporter = new OTLPLogExporter({
    url: args.endpoint,
    compression: args.compression,
    timeoutMillis: 30000,
    concurrencyLimit: args.in_flight * 2,
  });
  const processor = new CountingProcessor(exporter, args.batch, args.in_flight);
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'shipper-sdk-test' }),
    processors: [processor],
  });
  const logger = provider.getLogger('shipper.test.scope', '1.2.3');
  const start = process.hrtime.bigint();
  const base = 1700000000n * 1000000000n;
  for (let i = 0; i < args.records; i++) {
    while (!processor.hasRoom()) await new Promise((resolve) => setImmediate(resolve));
    const context = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: hex(i + 1, 32),
      spanId: hex(i + 1, 16),
      traceFlags: TraceFlags.SAMPLED,
    });
    const nanos = base + BigInt(i);
    // TimeInput as [seconds, nanoseconds]: exact to the nanosecond, which a Date or a number of
    // milliseconds is not.
    const time = [Number(nanos / 1000000000n), Number(nanos % 1000000000n)];
    logger.emit({
      body: `record ${i} of ${args.run}`,
      severityNumber: SeverityNumber.INFO,
      severityText: 'info',
      eventName: 'shipper.test',
      timestamp: time,
      observedTimestamp: [time[0], time[1] + 1000000],
      context,
      attributes: {
        seq: i,
        run: args.run,
        'max.safe.int': Number.MAX_SAFE_INTEGER,
        ratio: i + 0.5,
        ok: i % 2 === 0,
        tags: ['a', i],
        nested: { k: 'v' },
      },
    });
  }
  await provider.shutdown();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(JSON.stringify({ exported: processor.exported, failed: processor.failed,
                               seconds, errors: [...processor.errors] }));
  process.exit(processor.failed === 0 && processor.exported === args.records ? 0 : 1);
}

main().catch((e) => {
  console.error(`export_logs: ${e.stack || e}`);
  process.exit(1);
});
