// The response to an export taken, for each signal: ExportLogsServiceResponse,
// ExportTraceServiceResponse or ExportMetricsServiceResponse, with partial_success (its
// rejected_log_records, rejected_spans or rejected_data_points, and error_message) set only when
// records were rejected, as the OTLP specification asks. Both transports answer with it (HTTP
// also in OTLP/JSON, otlp_json.h ResponseToJson).
//
// Thread safety: a pure function; call it from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_RESPONSE_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_RESPONSE_H_

#include <memory>

#include "google/protobuf/message.h"
#include "shipper/input/otlp/otlp_exports.h"
#include "shipper/input/otlp/otlp_signals.h"

namespace shipper {

// REQUIRES: outcome.status is OK.
std::unique_ptr<google::protobuf::Message> ExportResponse(OtlpSignal signal,
                                                          const ExportOutcome& outcome);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_RESPONSE_H_
