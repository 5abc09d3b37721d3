// OTLP/JSON, the encoding OTLP/HTTP carries as application/json: Export*ServiceRequests of the
// three signals in, and the replies (Export*ServiceResponse, google.rpc.Status) out.
//
// It is protobuf's JSON mapping with the OTLP specification's exceptions
// (opentelemetry-proto/docs/specification.md, "JSON Protobuf Encoding"):
// - field names in lowerCamelCase (the proto's own snake_case names are taken too, as protobuf's
//   parser takes them);
// - traceId and spanId as hex strings, either case (32 and 16 digits, or empty), not base64;
// - traces' and metrics' ids likewise: parentSpanId, links' and exemplars' traceId and spanId;
// - enums (severityNumber, kind, code, aggregationTemporality) as integers (names are taken
//   too);
// - 64-bit integers as decimal strings or as numbers; bytesValue as base64;
// - fields with unknown names are ignored, as if they were not there; null is the default value.
//
// A request is decoded into the protobuf bytes of the same request, the form the OTLP input's
// core takes (otlp_exports.h), so one check and one conversion serve both encodings.
//
// Thread safety: free functions without shared state; call them from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_JSON_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_JSON_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "shipper/input/otlp/otlp_signals.h"

namespace shipper::otlp {

// What decoding a request will hold at once, known before anything is built for it.
struct JsonCost {
  size_t bytes = 0;    // RapidJSON's document, protobuf's message graph and encoding, together
  size_t records = 0;  // log records, spans or data points
};

// Reads `json` once, building nothing (RapidJSON's SAX reader, its stack bounded by the depth
// limit), and counts what JsonToProtobufRequest(json) will hold at most besides `json` itself:
// an upper bound, so that the caller can charge it before the decoding allocates any of it.
// RESOURCE_EXHAUSTED once it meets more than `max_records` records of `signal` (it stops there);
// INVALID_ARGUMENT when it is not JSON or nests deeper than the decoder takes.
absl::StatusOr<JsonCost> JsonDecodingCost(absl::string_view json, size_t max_records,
                                          OtlpSignal signal = OtlpSignal::kLogs);

// Decodes the OTLP/JSON Export*ServiceRequest of `signal` `json` and appends its protobuf
// encoding to `*protobuf`. INVALID_ARGUMENT when it is not one, naming the first wrong field by its
// path
// ("resourceLogs[0].scopeLogs[2].logRecords[7].traceId: ...") and what was expected. Takes
// invalid UTF-8 nowhere, and nesting no deeper than protobuf parses (100 messages).
absl::Status JsonToProtobufRequest(absl::string_view json, std::string* protobuf,
                                   OtlpSignal signal = OtlpSignal::kLogs);

// The OTLP/JSON of `response`, an Export*ServiceResponse: "{}" on full success, else
// {"partialSuccess":{"rejectedLogRecords":"2","errorMessage":"..."}} (rejectedSpans,
// rejectedDataPoints; int64 as a string, as protobuf's JSON mapping writes it).
std::string ResponseToJson(const google::protobuf::Message& response);

// The body of an OTLP/HTTP error reply: google.rpc.Status with `status`'s code and message, in
// protobuf (json false) or in JSON ({"code":3,"message":"..."}). REQUIRES: !status.ok().
std::string StatusBody(const absl::Status& status, bool json);

}  // namespace shipper::otlp

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_JSON_H_
