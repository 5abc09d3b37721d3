// The record shapes of the OTLP benchmarks: the event shapes of event_shapes.h as OTLP log
// records (the same content, so that OTLP figures compare with the Producer API's), and the
// trace and metric shapes, each an export of its own signal:
//   span       a server span as an HTTP server's SDK makes it: trace, span and parent ids, name,
//              kind, start and end, status Ok, 10 attributes (strings, ints, a bool) and 2 span
//              events (with 1 and 2 attributes, a string and a double);
//   gauge      one NumberDataPoint (as_double, 3 attributes) of a gauge Metric of its own;
//   histogram  one HistogramDataPoint of 20 buckets (19 explicit bounds, count, sum, min, max,
//              2 attributes) of a cumulative histogram Metric of its own.
//
// The seq-th log record of an event shape carries the seq-th event's timestamp as
// time_unix_nano, its "message" field as a string body and every other field as an attribute
// (structs as kvlists, lists as arrays, integers as int_value, timestamps as their Unix
// nanoseconds). The seq-th span or point differs from its neighbours in its ids, times, values
// and an attribute, as consecutive ones of a real service do.
//
// Thread safety: pure functions; call them from any thread.
#ifndef SHIPPER_TESTS_LOAD_OTLP_SHAPES_H_
#define SHIPPER_TESTS_LOAD_OTLP_SHAPES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shipper/input/otlp/otlp_signals.h"
#include "tests/load/event_shapes.h"

namespace shipper::load {

struct OtlpShape {
  enum class Kind { kLogRecord, kSpan, kGauge, kHistogram };
  // A log record of `log_shape`: every event shape is an OTLP shape.
  OtlpShape(EventShape log_shape) : log(log_shape) {}  // NOLINT(runtime/explicit)
  explicit OtlpShape(Kind kind) : kind(kind) {}

  Kind kind = Kind::kLogRecord;
  EventShape log = EventShape::kFilebeat;  // kLogRecord's
};

// "filebeat", "tiny", "large" (log records), "span", "gauge" or "histogram".
absl::string_view OtlpShapeName(const OtlpShape& shape);

// The inverse of OtlpShapeName; INVALID_ARGUMENT, naming the valid shapes, for anything else.
absl::StatusOr<OtlpShape> ParseOtlpShape(absl::string_view name);

// The signal whose export carries `shape`: logs, traces or metrics.
OtlpSignal ShapeSignal(const OtlpShape& shape);

// A serialized Export{Logs,Trace,Metrics}ServiceRequest (ShapeSignal's) of `records` records
// (log records, spans or data points) of `shape`, seq first_seq onwards, under one resource
// (service.name "shipper-bench") and one scope.
std::string MakeOtlpRequest(const OtlpShape& shape, uint64_t first_seq, int records);

}  // namespace shipper::load

#endif  // SHIPPER_TESTS_LOAD_OTLP_SHAPES_H_
