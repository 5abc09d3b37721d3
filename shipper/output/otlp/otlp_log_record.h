// What a queued event becomes over OTLP: the LogRecord, Resource and InstrumentationScope of an
// ExportLogsServiceRequest, as protobuf wire bytes written straight from the event's bytes
// (shipper/event/wire_event.h), never through protobuf messages.
//
// An event the OTLP input made (shipper/input/otlp/otlp_conversion.h) is sent back as the
// LogRecord it was. It is recognised by its shape: no source and no metadata, and fields that
// are only the OTel-native ones, each of its type (body.text or body.structured, attributes,
// resource.attributes, scope.name / scope.version / scope.attributes, severity_text,
// severity_number, event_name, trace_id and span_id as hex, dropped_attributes_count,
// observed_timestamp). Its parts go back where they came from: the event's timestamp as
// time_unix_nano, observed_timestamp as observed_time_unix_nano, body.text as a string body,
// body.structured as any other body, the ids decoded from hex.
//
// Any other event (the Producer API's) by one mapping:
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
#ifndef SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_LOG_RECORD_H_
#define SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_LOG_RECORD_H_

#include <string>

#include "absl/strings/string_view.h"

namespace shipper {

// One event as OTLP: the bodies (wire bytes, without tag and length) of its messages.
struct OtlpLogRecord {
  std::string resource;  // opentelemetry.proto.resource.v1.Resource
  std::string scope;     // opentelemetry.proto.common.v1.InstrumentationScope
  std::string record;    // opentelemetry.proto.logs.v1.LogRecord
};

// Writes what the queued event `event` (canonical wire bytes) becomes into *out, replacing its
// contents (their buffers are reused).
void MapEvent(absl::string_view event, OtlpLogRecord* out);

// Whether the event has the shape the OTLP input gives the records it takes (above).
bool IsOtlpShaped(absl::string_view event);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_LOG_RECORD_H_
