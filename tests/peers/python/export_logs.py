"""Exports log records through the OpenTelemetry Python SDK, as an application instrumented with
it would: LoggerProvider -> Logger.emit -> one of the SDK's OTLP log exporters (grpc, or http:
protobuf over HTTP), with the SDK's own serialization and retries. Runs in the venv ./dev
installs from tests/peers/python/requirements.txt (SHIPPER_OTEL_PYTHON).

  python3 export_logs.py --exporter=grpc|http --endpoint=http://127.0.0.1:4317 \
      [--records=20000] [--batch=512] [--run=NAME]
  python3 export_logs.py --exporter=env [...]

--exporter=env configures the exporter as an application does with the OTEL_EXPORTER_OTLP_LOGS_*
variables alone: OTEL_EXPORTER_OTLP_LOGS_PROTOCOL picks it (grpc, or http/protobuf, as the SDK's
own configurator does), which then reads its endpoint, timeout and compression from the
environment.

The records are those of tests/otlp/js/export_logs.js, record for record (its header says what
record i carries), so that one expectation (tests/otlp/sdk_test.py's) checks both SDKs.

The SDK's BatchLogRecordProcessor drops records and logs errors when exports fail; this script
hands each batch of --batch records to the exporter itself (a processor of its own, one export at
a time) so that it knows the result of every export. It prints one JSON line {"exported": n,
"failed": n, "seconds": s} and exits 1 if any export failed, 2 on bad arguments.
"""
import argparse
import json
import sys
import time

from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor, ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

BASE_NS = 1_700_000_000 * 10**9


class CountingProcessor(LogRecordProcessor):
    """Exports every `batch` records at once and counts the records of failed exports."""

    def __init__(self, exporter, batch):
        self.exporter, self.batch = exporter, batch
        self.pending = []
        self.exported = self.failed = 0

    def on_emit(self, log_record):
        self.pending.append(ReadableLogRecord(
            log_record=log_record.log_record, resource=log_record.resource,
            instrumentation_scope=log_record.instrumentation_scope, limits=log_record.limits))
        if len(self.pending) >= self.batch:
            self.force_flush()

    def force_flush(self, timeout_millis=30000):
        records, self.pending = self.pending, []
        if not records:
            return True
        if self.exporter.export(records) == LogRecordExportResult.SUCCESS:
            self.exported += len(records)
        else:
            self.failed += len(records)
        return True

    def shutdown(self):
        self.force_flush()
        self.exporter.shutdown()


def exporter_for(name, endpoint):
    if name == "env":
        import os
        if os.environ["OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"] == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        else:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        return OTLPLogExporter()
    if name == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        return OTLPLogExporter(endpoint=endpoint, insecure=True, timeout=30)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    return OTLPLogExporter(endpoint=endpoint, timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exporter", choices=("grpc", "http", "env"), required=True)
    ap.add_argument("--endpoint")
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--run", default="sdk")
    args = ap.parse_args()

    processor = CountingProcessor(exporter_for(args.exporter, args.endpoint), args.batch)
    provider = LoggerProvider(resource=Resource.create({"service.name": "shipper-sdk-test"}))
    provider.add_log_record_processor(processor)
    logger = provider.get_logger("shipper.test.scope", "1.2.3")
    start = time.monotonic()
    for i in range(args.records):
        span = NonRecordingSpan(SpanContext(trace_id=i + 1, span_id=i + 1, is_remote=False,
                                            trace_flags=TraceFlags(TraceFlags.SAMPLED)))
        logger.emit(
            timestamp=BASE_NS + i, observed_timestamp=BASE_NS + i + 1_000_000,
            context=trace.set_span_in_context(span), severity_number=SeverityNumber.INFO,
            severity_text="info", body=f"record {i} of {args.run}", event_name="shipper.test",
            attributes={"seq": i, "run": args.run, "max.safe.int": 2**53 - 1, "ratio": i + 0.5,
                        "ok": i % 2 == 0, "tags": ["a", i], "nested": {"k": "v"}})
    provider.shutdown()
    print(json.dumps({"exported": processor.exported, "failed": processor.failed,
                      "seconds": round(time.monotonic() - start, 3)}), flush=True)
    sys.exit(0 if processor.failed == 0 and processor.exported == args.records else 1)


if __name__ == "__main__":
    main()
