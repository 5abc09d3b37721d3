// Fuzz target: an OTLP/JSON body as a sender posts it to /v1/logs, through the decoder into
// protobuf (shipper/input/otlp/otlp_json.h). Finds crashes (and, with sanitizers, memory errors
// and stack exhaustion from deep nesting) on hostile input, and checks what the decoder promises:
// what it takes becomes bytes that protobuf's parser takes as an ExportLogsServiceRequest, and
// what it refuses is INVALID_ARGUMENT whose JSON error body is one valid JSON object.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/stubs/logging.h"
#include "proto/otlp/logs_service.pb.h"
#include "rapidjson/document.h"
#include "shipper/input/otlp/otlp_json.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (4 << 20)) return 0;
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  // What the server counts and charges before it decodes: where both take the body, it counts
  // every record and bounds the protobuf the decoding makes.
  const absl::StatusOr<shipper::otlp::JsonCost> cost =
      shipper::otlp::JsonDecodingCost(json, /*max_records=*/65536);
  std::string protobuf;
  const absl::Status status = shipper::otlp::JsonToProtobufRequest(json, &protobuf);
  if (!status.ok()) {
    if (status.code() != absl::StatusCode::kInvalidArgument) abort();
    if (!protobuf.empty()) abort();  // nothing appended for a refused body
    const std::string body = shipper::otlp::StatusBody(status, /*json=*/true);
    rapidjson::Document document;
    document.Parse(body.data(), body.size());
    if (document.HasParseError() || !document.IsObject()) abort();
    return 0;
  }
  opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest request;
  if (!request.ParseFromString(protobuf)) abort();
  if (cost.ok()) {
    if (protobuf.size() > cost->bytes) abort();
    size_t records = 0;
    for (const auto& rl : request.resource_logs()) {
      for (const auto& sl : rl.scope_logs()) records += sl.log_records_size();
    }
    if (records != cost->records) abort();
  }
  return 0;
}
