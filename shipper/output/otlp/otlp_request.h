// Export{Logs,Trace,Metrics}ServiceRequests of mapped records (otlp_record.h): which records go
// together so that no request is larger than max_request_bytes and no request mixes signals, and
// their bytes, grouped by resource and scope (one Resource* message per distinct resource and
// schema_url, one Scope* message per distinct scope and schema_url within it, and for data points
// one Metric per distinct name, type, unit, description, temporality, monotonic flag and metadata
// within that; records in the order given), as protobuf or as OTLP/JSON.
//
// Thread safety: stateless functions; call from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_REQUEST_H_
#define SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_REQUEST_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shipper/output/otlp/otlp_record.h"

namespace shipper {

struct RequestPlan {
  std::vector<std::vector<size_t>> requests;  // positions in the records, ascending
  std::vector<size_t> too_large;              // records alone larger than max_bytes, ascending
};

// Splits `records` into requests of one signal each (the logs', then the spans', then the data
// points'), each in order, whose encoding is at most `max_bytes` (by a bound a few
// bytes per record above the encoding's size). A request is closed once the next record would take
// it above `fill_bytes` (at most max_bytes): a record between the two goes alone.
RequestPlan PlanRequests(absl::Span<const OtlpRecord> records, size_t max_bytes, size_t fill_bytes);
inline RequestPlan PlanRequests(absl::Span<const OtlpRecord> records, size_t max_bytes) {
  return PlanRequests(records, max_bytes, max_bytes);
}

// The serialized Export*ServiceRequest of records[i] for each i of `which` (all of one signal).
std::string EncodeRequest(absl::Span<const OtlpRecord> records, absl::Span<const size_t> which);

// The OTLP/JSON form of a serialized Export*ServiceRequest of `signal` (the protobuf JSON mapping
// with lowerCamelCase names and enums as integers; trace and span ids as hex, as the OTLP
// specification wants). INTERNAL when `request` is not one.
absl::StatusOr<std::string> RequestJson(OtlpSignal signal, absl::string_view request);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_REQUEST_H_
