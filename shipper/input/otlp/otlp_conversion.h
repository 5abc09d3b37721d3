// The one conversion of OTLP log records into queued events: each LogRecord of an
// ExportLogsServiceRequest becomes one event in the form the Producer API's events are queued in
// (canonical wire bytes of elastic.agent.shipper.v1.messages.Event, shipper/event/wire_event.h),
// so that the one JSON encoder (shipper/event/event_json.h) writes it for every output and
// forwarding carries it unchanged. Read from the request's wire bytes where they lie, never
// parsed into messages; every record of a request is written into one buffer.
//
// The mapping, in the shape of the Collector's Elasticsearch exporter (otel mode) and
// Elasticsearch's logs-*.otel-* templates:
//   Event.timestamp   time_unix_nano, else observed_time_unix_nano, else the arrival time, to
//                     the nanosecond.
//   Event.data_stream type, dataset, namespace: the string attribute data_stream.type (...) of
//                     the record, else of the scope, else of the resource; by default logs,
//                     generic, default. The dataset gets ".otel" appended unless it ends so.
//   Event.fields      body.text (a string body) or body.structured (any other body);
//                     severity_text, severity_number, event_name when set; trace_id, span_id as
//                     lowercase hex when set; dropped_attributes_count when not 0; attributes,
//                     resource.attributes, scope.name, scope.version, scope.attributes when not
//                     empty; observed_timestamp (a timestamp) when set. Attribute keys stay as
//                     sent: "http.method" is one key, not an object.
//   Values            string, bool, int64 (all 64 bits), double as they are; array as a list,
//                     kvlist as an object, bytes as a base64 string (RFC 4648, padded), an empty
//                     AnyValue as null.
//
// Where OTLP allows what the canonical form does not:
//   - A key twice in one attribute list or kvlist: the first wins, the others are dropped (as
//     the Collector's pcommon.Map.Get reads it; canonical Structs need distinct keys).
//   - A string (key or value) that is not UTF-8: the request is refused, INVALID_ARGUMENT naming
//     the record. Protobuf's own parser refuses such a request too, so every OTLP SDK sends UTF-8.
//   - AnyValue nesting deeper than kMaxValueDepth: refused (INVALID_ARGUMENT), so that the event
//     stays within shipper.server.max_nesting_depth's default and the stack stays bounded.
//   - A singular field sent twice: the last wins, also for a message (protobuf would merge two
//     copies of a message field; no sender sends one twice).
//
// A record whose event would be larger than max_record_bytes is rejected (counted, not written:
// partial_success); the others are taken.
//
// Thread safety: a LogsConversion is used by one thread at a time.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_CONVERSION_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_CONVERSION_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace shipper {

// Deepest AnyValue nesting taken: a kvlist or array is a level. With the event's own levels
// (fields, attributes or body, resource's attributes) events nest at most kMaxValueDepth + 3.
inline constexpr size_t kMaxValueDepth = 32;

class LogsConversion {
 public:
  LogsConversion();
  ~LogsConversion();
  LogsConversion(const LogsConversion&) = delete;
  LogsConversion& operator=(const LogsConversion&) = delete;

  // Reads the serialized ExportLogsServiceRequest `request` and works out every record's event;
  // `arrival` is the timestamp of records that carry none. INVALID_ARGUMENT says what is wrong
  // and in which record; RESOURCE_EXHAUSTED when it holds more than max_records records.
  // `request` must stay unchanged until Write() returned. Call once.
  absl::Status Scan(absl::string_view request, absl::Time arrival, size_t max_record_bytes,
                    size_t max_records);

  // After Scan() returned OK:
  size_t records() const { return taken_; }      // events Write() writes
  size_t rejected() const { return rejected_; }  // records larger than max_record_bytes
  size_t largest_rejected() const { return largest_rejected_; }  // bytes, converted
  size_t bytes() const { return bytes_; }  // of every event Write() writes, together

  // Writes the events into `out` (bytes() long), one after the other in request order, and
  // calls emit(event) for each. REQUIRES: Scan() returned OK. Call once.
  void Write(char* out, absl::FunctionRef<void(absl::string_view)> emit);

 private:
  template <typename Out>
  friend class Pass;

  // Which keys of one attribute list or kvlist were seen, to drop the later copies.
  class KeySet;

  absl::string_view request_;
  uint64_t arrival_ns_ = 0;
  size_t max_record_bytes_ = 0;
  size_t max_records_ = 0;
  // The size of every nested message, in the order the writing meets them: Scan measures, Write
  // takes them back to write each length before its contents.
  std::vector<uint32_t> sizes_;
  // Whether each record of the request, in order, is rejected (larger than max_record_bytes).
  std::vector<bool> rejected_records_;
  // One per level of nesting being written (kMaxValueDepth + 1).
  std::vector<KeySet> key_sets_;
  size_t taken_ = 0;
  size_t rejected_ = 0;
  size_t largest_rejected_ = 0;
  size_t bytes_ = 0;
  std::string resource_, scope_;  // the current resource's and scope's entries, written once
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_CONVERSION_H_
