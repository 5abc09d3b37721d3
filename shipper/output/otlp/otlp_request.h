// ExportLogsServiceRequests of mapped records (otlp_log_record.h): which records go together so
// that no request is larger than max_request_bytes, and their bytes, grouped by resource and scope
// (one ResourceLogs per distinct resource, one ScopeLogs per distinct scope within it, records
// in the order given), as protobuf or as OTLP/JSON.
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
#include "shipper/output/otlp/otlp_log_record.h"

namespace shipper {

struct RequestPlan {
  std::vector<std::vector<size_t>> requests;  // positions in the records, ascending
  std::vector<size_t> too_large;              // records alone larger than max_bytes, ascending
};

// Splits `records` in order into requests whose encoding is at most `max_bytes` (by a bound a few
// bytes per record above the encoding's size).
RequestPlan PlanRequests(absl::Span<const OtlpLogRecord> records, size_t max_bytes);

// The serialized ExportLogsServiceRequest of records[i] for each i of `which`.
std::string EncodeRequest(absl::Span<const OtlpLogRecord> records, absl::Span<const size_t> which);

// The OTLP/JSON form of a serialized ExportLogsServiceRequest (the protobuf JSON mapping with
// lowerCamelCase names and enums as integers; trace and span ids as hex, as the OTLP
// specification wants). INTERNAL when `request` is not one.
absl::StatusOr<std::string> RequestJson(absl::string_view request);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_REQUEST_H_
