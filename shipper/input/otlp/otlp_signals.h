// The three OpenTelemetry signals the OTLP input takes, and what a span and a data point become.
// A log record's mapping is otlp_conversion.h's; what all three share is said there too (the
// queued form, values and attribute keys, resource and scope, data_stream routing, what OTLP
// allows that the queued form does not, records too large).
//
// Each span, and each data point of a metric, becomes one event, in the queued form of the
// Producer API's events (canonical wire bytes of elastic.agent.shipper.v1.messages.Event,
// shipper/event/wire_event.h), so that the queue, Delivery and every output stay type-erased. The
// fields are shaped as the Collector's Elasticsearch exporter writes documents in its `otel`
// mapping mode (Elasticsearch's traces-*.otel-* and metrics-*.otel-* templates), plus what that
// exporter leaves out and the OTLP output needs to send the span or point back unchanged
// (noted "exact" below). Ids are lowercase hex of the bytes as sent (any length); "when set": a
// field absent, empty or 0 is not written.
//
// Every event of all three signals:
//   Event.otel_signal  OTEL_SIGNAL_LOG, OTEL_SIGNAL_SPAN or OTEL_SIGNAL_DATA_POINT.
//   Event.data_stream  type, dataset, namespace: the string attribute data_stream.type (...) of
//                      the record, span or data point, else of the scope, else of the resource;
//                      by default logs, traces or metrics; generic; default. The dataset gets
//                      ".otel" appended unless it ends so: traces-generic.otel-default.
//   fields.resource    {attributes, dropped_attributes_count, schema_url}, each when set
//                      (schema_url: the ResourceLogs/Spans/Metrics'); no entry when none is.
//   fields.scope       {name, version, attributes, dropped_attributes_count, schema_url}, each
//                      when set (schema_url: the ScopeLogs/Spans/Metrics'); no entry when none is.
//   Event.metadata     otlp.bytes, the paths of the bytes values written as base64 strings, as
//                      otlp_conversion.h says, when there is any; nothing else for spans and
//                      points. The paths go into lists: ["events", 0, "attributes", "k"],
//                      ["data_point", "exemplars", 1, "filtered_attributes", "k"],
//                      ["metric", "metadata", "k"].
//
// A span (OTEL_SIGNAL_SPAN):
//   Event.timestamp          start_time_unix_nano, exactly (0 stays 1970-01-01).
//   trace_id, span_id        hex, when set.
//   trace_state              when set.
//   parent_span_id           hex, when set.
//   flags                    int64, when set (exact).
//   name                     when set.
//   kind                     "Unspecified", "Internal", "Server", "Client", "Producer",
//                            "Consumer"; an unknown number as an int64.
//   duration                 uint64 nanoseconds: end_time_unix_nano - start_time_unix_nano
//                            modulo 2^64, so that start + duration is the end exactly.
//   attributes               when set.
//   dropped_attributes_count, dropped_events_count, dropped_links_count: int64, when set.
//   events                   when set: a list of {timestamp (a Timestamp, exact), name,
//                            attributes, dropped_attributes_count}, in order; each entry's
//                            fields when set (the timestamp always).
//   links                    when set: a list of {trace_id, span_id (hex), trace_state,
//                            attributes, dropped_attributes_count, flags}, in order; each
//                            entry's fields when set.
//   status                   always: {code: "Unset", "Ok" or "Error" (an unknown number as an
//                            int64), message when set}.
//
// A data point (OTEL_SIGNAL_DATA_POINT), one event per point of every Metric; a Metric without
// points, or whose data is of a type this schema does not know, makes none:
//   Event.timestamp          time_unix_nano, exactly.
//   start_timestamp          a Timestamp, when set.
//   unit                     the metric's, when set.
//   attributes               the point's, when set.
//   metrics                  {<metric name>: <value>}, one entry; the name as sent (dots kept):
//     gauge, sum             the number as sent: as_int an int64, as_double a float64 (NaN and
//                            infinities are written null in JSON); null when neither is set.
//     histogram              {counts: [int64], values: [float64]}: one pair per bucket whose
//                            count is not 0, the value its midpoint (the first bucket's: its
//                            bound, halved when positive; the last, unbounded one's: the last
//                            bound). No bounds: one pair, count and sum / count, when count > 0.
//     exponential_histogram  {counts, values} likewise: the negative buckets from the most
//                            negative, the zero bucket (value 0), the positive buckets; each
//                            value the midpoint of its bucket's bounds at the point's scale.
//     summary                {sum: float64, value_count: int64}.
//   _doc_count               histogram, exponential_histogram, summary: count (int64), when set.
//   metric                   {type: "gauge", "sum", "histogram", "exponential_histogram" or
//                            "summary"; description when set; temporality: "delta" or
//                            "cumulative" (an unknown number as an int64) for sum and both
//                            histograms, when set; monotonic (a bool) for sum, always;
//                            metadata (the Metric's key/values) when set}.
//   data_point               exact, each when set (no entry for a gauge or sum point without
//                            flags or exemplars): flags (int64); for a histogram count
//                            (uint64), sum, min, max (float64, each when present),
//                            bucket_counts ([uint64]), explicit_bounds ([float64]); for an
//                            exponential histogram count, sum, min, max, scale (int64, always),
//                            zero_count (uint64), zero_threshold (float64), positive and negative
//                            ({offset (int64, always), bucket_counts ([uint64])}, when the
//                            message is present); for a summary count, sum (always),
//                            quantile_values ([{quantile, value}], float64s, always both);
//                            exemplars ([{timestamp (a Timestamp, always), value (int64 or
//                            float64; null when neither is set), trace_id, span_id (hex),
//                            filtered_attributes}]).
//
// Thread safety: constants and pure functions; use from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_SIGNALS_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_SIGNALS_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace shipper {

// Which ExportXServiceRequest an export carries.
enum class OtlpSignal { kLogs, kTraces, kMetrics };

// "logs", "traces", "metrics": the metrics' signal label, the default data_stream.type and the
// OTLP/HTTP path's last part (/v1/logs).
inline absl::string_view SignalName(OtlpSignal signal) {
  switch (signal) {
    case OtlpSignal::kLogs:
      return "logs";
    case OtlpSignal::kTraces:
      return "traces";
    case OtlpSignal::kMetrics:
      return "metrics";
  }
  return "";
}
// The gRPC method that exports the signal: "/opentelemetry.proto.collector.logs.v1.LogsService/
// Export", ...trace.v1.TraceService/Export, ...metrics.v1.MetricsService/Export.
inline absl::string_view ExportMethod(OtlpSignal signal) {
  switch (signal) {
    case OtlpSignal::kLogs:
      return "/opentelemetry.proto.collector.logs.v1.LogsService/Export";
    case OtlpSignal::kTraces:
      return "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
    case OtlpSignal::kMetrics:
      return "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
  }
  return "";
}
// The signal a gRPC method exports, if it is one of the three Export methods.
inline std::optional<OtlpSignal> SignalOfMethod(absl::string_view method) {
  for (const OtlpSignal signal : {OtlpSignal::kLogs, OtlpSignal::kTraces, OtlpSignal::kMetrics}) {
    if (method == ExportMethod(signal)) return signal;
  }
  return std::nullopt;
}
// "log records", "spans", "data points": what one export of the signal holds, in messages.
inline absl::string_view SignalRecords(OtlpSignal signal) {
  switch (signal) {
    case OtlpSignal::kLogs:
      return "log records";
    case OtlpSignal::kTraces:
      return "spans";
    case OtlpSignal::kMetrics:
      return "data points";
  }
  return "";
}

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_SIGNALS_H_
