// Field numbers of the OTLP messages (proto/otlp/*.proto): what the OTLP input reads and the OTLP
// output writes, wire bytes to wire bytes, without protobuf messages.
//
// Thread safety: constants.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_FIELDS_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_FIELDS_H_

#include <cstdint>

namespace shipper {

// ResourceLogs, ResourceSpans and ResourceMetrics number their fields alike, and so do their
// scopes' messages.
namespace otlp {
enum : uint32_t { kResourceItems = 1 };                              // Export*ServiceRequest
enum : uint32_t { kResource = 1, kScopeItems = 2, kSchemaUrl = 3 };  // Resource*
enum : uint32_t { kResourceAttributes = 1, kResourceDropped = 2 };   // Resource
enum : uint32_t { kScope = 1, kItems = 2 };                          // Scope*
enum : uint32_t { kScopeName = 1, kScopeVersion = 2, kScopeAttributes = 3, kScopeDropped = 4 };
enum : uint32_t {  // LogRecord
  kTime = 1,
  kSeverityNumber = 2,
  kSeverityText = 3,
  kBody = 5,
  kAttributes = 6,
  kDroppedAttributes = 7,
  kFlags = 8,
  kTraceId = 9,
  kSpanId = 10,
  kObservedTime = 11,
  kEventName = 12,
};
enum : uint32_t { kKey = 1, kValue = 2 };  // KeyValue
enum : uint32_t {                          // AnyValue
  kString = 1,
  kBool,
  kInt,
  kDouble,
  kArray,
  kKvlist,
  kBytes,
};
enum : uint32_t { kValues = 1 };  // ArrayValue, KeyValueList
namespace span {
enum : uint32_t {
  kTraceId = 1,
  kSpanId,
  kTraceState,
  kParentSpanId,
  kName,
  kKind,
  kStart,
  kEnd,
  kAttributes,
  kDroppedAttributes,
  kEvents,
  kDroppedEvents,
  kLinks,
  kDroppedLinks,
  kStatus,
  kFlags,
};
enum : uint32_t { kEventTime = 1, kEventName, kEventAttributes, kEventDropped };  // Span.Event
enum : uint32_t {                                                                 // Span.Link
  kLinkTraceId = 1,
  kLinkSpanId,
  kLinkTraceState,
  kLinkAttributes,
  kLinkDropped,
  kLinkFlags,
};
enum : uint32_t { kStatusMessage = 2, kStatusCode = 3 };  // Status
}  // namespace span
namespace metric {
enum : uint32_t {  // Metric
  kName = 1,
  kDescription = 2,
  kUnit = 3,
  kGauge = 5,
  kSum = 7,
  kHistogram = 9,
  kExponentialHistogram = 10,
  kSummary = 11,
  kMetadata = 12,
};
enum : uint32_t { kDataPoints = 1, kTemporality = 2, kMonotonic = 3 };  // Gauge, Sum, ...
enum : uint32_t { kStart = 2, kTime = 3, kCount = 4, kPointSum = 5 };   // every *DataPoint
enum : uint32_t { kAsDouble = 4, kAsInt = 6 };                          // NumberDataPoint
enum : uint32_t { kBucketCounts = 6, kExplicitBounds = 7 };             // HistogramDataPoint
enum : uint32_t {                                                       // Exponential...
  kScale = 6,
  kZeroCount = 7,
  kPositive = 8,
  kNegative = 9,
  kZeroThreshold = 14,
};
enum : uint32_t { kOffset = 1, kExpBucketCounts = 2 };  // ExponentialHistogramDataPoint.Buckets
enum : uint32_t { kQuantileValues = 6 };                // SummaryDataPoint
enum : uint32_t { kQuantile = 1, kQuantileValue = 2 };  // SummaryDataPoint.ValueAtQuantile
enum : uint32_t {                                       // Exemplar
  kExemplarTime = 2,
  kExemplarDouble = 3,
  kExemplarSpanId = 4,
  kExemplarTraceId = 5,
  kExemplarInt = 6,
  kExemplarAttributes = 7,
};
// Where each kind of data point keeps the fields whose numbers differ (0: it has none).
struct PointLayout {
  uint32_t attributes, exemplars, flags, min, max;
};
constexpr PointLayout kNumberLayout{7, 5, 8, 0, 0};
constexpr PointLayout kHistogramLayout{9, 8, 10, 11, 12};
constexpr PointLayout kExponentialLayout{1, 11, 10, 12, 13};
constexpr PointLayout kSummaryLayout{7, 0, 8, 0, 0};
}  // namespace metric
}  // namespace otlp

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_FIELDS_H_
