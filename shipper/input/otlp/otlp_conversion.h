// The one conversion of OTLP exports into queued events: each LogRecord of an
// ExportLogsServiceRequest, each Span of an ExportTraceServiceRequest and each data point of an
// ExportMetricsServiceRequest becomes one event in the form the Producer API's events are queued
// in (canonical wire bytes of elastic.agent.shipper.v1.messages.Event, shipper/event/wire_event.h),
// so that the one JSON encoder (shipper/event/event_json.h) writes it for every output and
// forwarding carries it unchanged. Read from the request's wire bytes where they lie, never
// parsed into messages; every record of a request is written into one buffer. A span's and a
// data point's mapping, and what all three signals share, is otlp_signals.h's.
//
// A log record's mapping, in the shape of the Collector's Elasticsearch exporter (otel mode) and
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
//                     empty (and resource.*, scope.* as otlp_signals.h says); observed_timestamp
//                     (a timestamp) when set. Attribute keys stay as sent: "http.method" is one
//                     key, not an object.
//   Event.metadata    what a receiver of the record sees that the document leaves out (the
//                     Elasticsearch output sends no @metadata), each entry only when needed:
//                     otlp.flags (int64) when not 0; otlp.time_unix_nano_unset (true) when
//                     time_unix_nano is 0; otlp.bytes, the paths of the bytes values written as
//                     base64 strings: a list of paths, each a list of keys below the fields
//                     (strings) and array positions (int64), e.g. ["attributes", "k", 0].
//                     Spans and data points carry otlp.bytes alike (otlp_signals.h).
//   Event.otel_signal OTEL_SIGNAL_LOG, on every event: what tells the OTLP output to send it
//                     back as the LogRecord it was (the JSON encoder ignores it).
//   Values            string, bool, int64 (all 64 bits), double as they are; array as a list,
//                     kvlist as an object, bytes as a base64 string (RFC 4648, padded), an empty
//                     AnyValue as null.
//
// Where OTLP allows what the canonical form does not:
//   - A key twice in one attribute list or kvlist: the first wins, the others are dropped (as
//     the Collector's pcommon.Map.Get reads it; canonical Structs need distinct keys).
//   - A string (key or value) that is not UTF-8: the request is refused, INVALID_ARGUMENT naming
//     the record, span or data point. Protobuf's own parser refuses such a request too, so every
//     OTLP SDK sends UTF-8.
//   - AnyValue nesting deeper than kMaxValueDepth: refused (INVALID_ARGUMENT), so that the event
//     stays within shipper.server.max_nesting_depth's default and the stack stays bounded.
//   - A singular field sent twice: the last wins, also for a message (protobuf would merge two
//     copies of a message field; no sender sends one twice).
//
//   - A histogram data point whose bucket_counts are neither empty nor one more than its
//     explicit_bounds: refused (INVALID_ARGUMENT), as the data model makes it invalid.
//
// A record (log record, span or data point) whose event would be larger than max_record_bytes is
// rejected (counted, not written: partial_success); the others are taken.
//
// Memory. Besides the events Write() writes (bytes(), into the caller's buffer), a conversion
// holds its bookkeeping: the size of every nested message of the events, 4 bytes each, at most
// about twice the request's size (a request of empty array values). It is kept in blocks, each
// charged to the budget given before it is allocated and never moved, and given back when the
// conversion goes. When a block would take the bookkeeping past Scan's `max_held`, or the budget
// has no room for it, nothing more is allocated: Scan measures the rest without keeping it, so
// that bookkeeping_bytes() still says what the whole request needs, and kept() is false.
//
// Thread safety: an OtlpConversion is used by one thread at a time.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_CONVERSION_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_CONVERSION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/memory_budget.h"
#include "shipper/input/otlp/otlp_signals.h"

namespace shipper {

// Deepest AnyValue nesting taken: a kvlist or array is a level. With the event's own levels
// (fields, a span's events, an event, its attributes) events nest at most kMaxValueDepth + 5.
inline constexpr size_t kMaxValueDepth = 32;

namespace otlp {
class MessageSizes;  // the bookkeeping (otlp_conversion.cc)
}  // namespace otlp

class OtlpConversion {
 public:
  // Converts Export*ServiceRequests of `signal`, its bookkeeping charged to `budget` (nullptr:
  // not charged), which must outlive it.
  explicit OtlpConversion(OtlpSignal signal, runtime::MemoryBudget* budget = nullptr);
  ~OtlpConversion();
  OtlpConversion(const OtlpConversion&) = delete;
  OtlpConversion& operator=(const OtlpConversion&) = delete;

  // Reads the serialized Export*ServiceRequest `request` and works out every record's event;
  // `arrival` is the timestamp of log records that carry none. INVALID_ARGUMENT says what is
  // wrong and in which record; RESOURCE_EXHAUSTED when it holds more than max_records records.
  // `request` must stay unchanged until Write() returned. `max_held`: the most its bookkeeping
  // may hold (see above). Call once.
  absl::Status Scan(absl::string_view request, absl::Time arrival, size_t max_record_bytes,
                    size_t max_records, size_t max_held = SIZE_MAX);

  // After Scan() returned OK:
  size_t records() const { return taken_; }      // events Write() writes
  size_t rejected() const { return rejected_; }  // records larger than max_record_bytes
  size_t largest_rejected() const { return largest_rejected_; }  // bytes, converted
  size_t bytes() const { return bytes_; }  // of every event Write() writes, together
  // What the bookkeeping of the whole request takes, in bytes: charged, if kept().
  size_t bookkeeping_bytes() const;
  // Whether the bookkeeping of the whole request is kept, so that Write() may run.
  bool kept() const;

  // Writes the events into `out` (bytes() long), one after the other in request order, and
  // calls emit(event) for each. REQUIRES: Scan() returned OK and kept(). Call once.
  void Write(char* out, absl::FunctionRef<void(absl::string_view)> emit);

 private:
  template <typename Out>
  friend class Pass;

  // Which keys of one attribute list or kvlist were seen, to drop the later copies.
  class KeySet;
  // One step of a path below the event's fields: a key, or an array's index.
  struct PathPart {
    absl::string_view key;
    int64_t index;
    bool is_index;
  };
  using BytesPath = std::vector<PathPart>;

  const OtlpSignal signal_;
  absl::string_view request_;
  uint64_t arrival_ns_ = 0;
  size_t max_record_bytes_ = 0;
  size_t max_records_ = 0;
  // The size of every nested message, in the order the writing meets them: Scan measures, Write
  // takes them back to write each length before its contents.
  const std::unique_ptr<otlp::MessageSizes> sizes_;
  // Whether each record of the request, in order, is rejected (larger than max_record_bytes).
  std::vector<bool> rejected_records_;
  // One per level of nesting being written (kMaxValueDepth + 1).
  std::vector<KeySet> key_sets_;
  size_t taken_ = 0;
  size_t rejected_ = 0;
  size_t largest_rejected_ = 0;
  size_t bytes_ = 0;
  std::string resource_, scope_;  // the current resource's and scope's entries, written once
  // The paths of the bytes values of the current resource's and scope's entries, and of the
  // record being written.
  std::vector<BytesPath> resource_bytes_, scope_bytes_, record_bytes_;
  // The current data point's buckets (histograms), reused from point to point.
  std::vector<uint64_t> counts_, positive_, negative_;
  std::vector<double> bounds_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_CONVERSION_H_
