// What a queued event becomes over OTLP: the LogRecord, Span or metric data point, with its
// Resource and InstrumentationScope (and a point's Metric), as protobuf wire bytes written straight
// from the event's bytes (shipper/event/wire_event.h), never through protobuf messages.
//
// An event marked as a log record (Event.otel_signal OTEL_SIGNAL_LOG, as the OTLP input marks
// every event it makes: shipper/input/otlp/otlp_conversion.h) is sent back as the LogRecord it
// was. Each field of the input's shape, of its kind, goes back where it came from (body.text or
// body.structured, attributes, resource and scope with their schema_url, attributes and
// dropped_attributes_count, scope.name / scope.version, severity_text, severity_number,
// event_name, trace_id and span_id as lowercase hex, dropped_attributes_count,
// observed_timestamp); the event's timestamp is time_unix_nano unless the metadata says
// otlp.time_unix_nano_unset; the metadata's otlp.flags are the flags, and the strings at the
// paths otlp.bytes lists are sent as the bytes their base64 decodes to. Events from the Producer
// API may carry the mark too (nothing stops a client from setting field 15): whatever such an event
// holds beyond the input's shape never makes an invalid request and is never dropped. A field of
// another name, or of the right name but not its kind or form (a trace_id that is not 32 hex
// digits, a severity_number beyond int32), goes as an attribute with its key as it is (beside the
// record's own attributes, so a key may repeat); a source, and metadata entries other than the
// input's (or not of their form), go to the resource as in the mapping below; data_stream is left
// out (the input derives it from the attributes, which go back as they are).
//
// An event marked as a span (OTEL_SIGNAL_SPAN) is sent back as the Span it was, and one marked as
// a data point (OTEL_SIGNAL_DATA_POINT) as the data point it was, in a Metric of the name, type,
// unit, description, temporality, monotonic flag and metadata it had: each field of
// shipper/input/otlp/otlp_signals.h's shape, of its kind, goes back where it came from (the
// "exact" ones included: a point's data_point entry, a span's flags; a span's end time is its
// start plus its duration). As with log records, a field of another name, kind or form goes as an
// attribute of the span or point with its key as it is, and data_stream is left out. A data point
// event without a `metrics` entry of one metric, or whose metric.type is not one of the five,
// cannot be a point: it goes as a log record by the mapping below. The strings at the paths its
// otlp.bytes metadata lists are sent as bytes, as with log records; any other metadata entry goes
// to the resource as in the mapping below.
//
// Any other event (the Producer API's) by one mapping, as a log record:
//   time_unix_nano        the event's timestamp
//   body                  fields.message, when set
//   attributes            every other field, with its key as it is
//   resource.attributes   source.input_id, source.stream_id, data_stream.type, .dataset and
//                         .namespace (each when set), and each metadata entry as
//                         metadata.<key>
//   scope                 none
//
// Values, either way: string, bool, double as they are; int32, int64, uint32 as int; uint64 as
// int up to 2^63-1, above that its decimal string; float as double; an object as a kvlist, a list
// as an array, null as an empty AnyValue, a timestamp as its RFC 3339 string (UTC, nanoseconds).
//
// Thread safety: stateless functions; call from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_RECORD_H_
#define SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_RECORD_H_

#include <string>

#include "absl/strings/string_view.h"
#include "shipper/event/wire_event.h"
#include "shipper/input/otlp/otlp_signals.h"

namespace shipper {

// One event as OTLP: its signal, and the bodies (wire bytes, without tag and length) of its
// messages.
struct OtlpRecord {
  OtlpSignal signal = OtlpSignal::kLogs;
  std::string resource;  // opentelemetry.proto.resource.v1.Resource
  std::string scope;     // opentelemetry.proto.common.v1.InstrumentationScope
  // A LogRecord, a Span, or a data point (NumberDataPoint, HistogramDataPoint,
  // ExponentialHistogramDataPoint or SummaryDataPoint, as metric_type says).
  std::string record;
  // The schema_url of the Resource* and of the Scope* message the record goes in.
  std::string resource_schema_url, scope_schema_url;
  // A data point's Metric: its fields but its data (name, description, unit, metadata); the field
  // number of its data (Metric.gauge, .sum ...); and that data's fields but its points
  // (aggregation_temporality, is_monotonic). Empty and 0 for other signals.
  std::string metric, metric_data;
  uint32_t metric_type = 0;
};

// Writes what the queued event `event` (canonical wire bytes) becomes into *out, replacing its
// contents (their buffers are reused).
void MapEvent(absl::string_view event, OtlpRecord* out);

// MapEvent() of an event's parsed `parts`, for the events of a batch in order: `before` and
// `before_record` are null, or the parts of the event before this one and what MapEvent() made of
// it, both unchanged since. A Producer API event whose source, data_stream and metadata are
// `before`'s (a client's batch shares them) takes its resource from `before_record` instead of
// writing it again: what comes out is MapEvent()'s.
void MapEvent(const wire::EventParts& parts, OtlpRecord* out, const wire::EventParts* before,
              const OtlpRecord* before_record);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_RECORD_H_
