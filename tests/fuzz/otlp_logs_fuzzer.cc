// Fuzz target: the bytes of an ExportLogsServiceRequest (and the same bytes as an
// ExportTraceServiceRequest and an ExportMetricsServiceRequest) as an OTLP sender sends them,
// through the conversion into queued events (shipper/input/otlp/otlp_conversion.h), then every
// event through the JSON encoder that all outputs use. Finds crashes (and, with sanitizers, memory
// errors) on hostile input, and checks that what the conversion writes is what it measured and
// in the canonical form the queue requires: each event parses as an Event, the Producer API's
// scan takes every event of them as it is (rewriting none), and each encodes to one JSON object
// on one line. Where protobuf's parser takes the request too, the records are protobuf's.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/stubs/logging.h"
#include "proto/messages.pb.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/trace_service.pb.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/event/event_json.h"
#include "shipper/input/otlp/otlp_conversion.h"
#include "shipper/input/producer/request_validation.h"

namespace {

namespace pb = elastic::agent::shipper::v1::messages;
namespace collector = opentelemetry::proto::collector;

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// The records protobuf's parser finds in `data` read as the request of `signal`, or -1 when it
// refuses the bytes or cannot tell: a metric's data message sent twice is merged by protobuf,
// its points summed, where the conversion takes the last one (otlp_conversion.h).
int64_t ProtobufRecords(shipper::OtlpSignal signal, const uint8_t* data, size_t size) {
  const int n = static_cast<int>(size);
  int64_t records = 0;
  switch (signal) {
    case shipper::OtlpSignal::kLogs: {
      collector::logs::v1::ExportLogsServiceRequest parsed;
      if (!parsed.ParseFromArray(data, n)) return -1;
      for (const auto& r : parsed.resource_logs()) {
        for (const auto& s : r.scope_logs()) records += s.log_records_size();
      }
      return records;
    }
    case shipper::OtlpSignal::kTraces: {
      collector::trace::v1::ExportTraceServiceRequest parsed;
      if (!parsed.ParseFromArray(data, n)) return -1;
      for (const auto& r : parsed.resource_spans()) {
        for (const auto& s : r.scope_spans()) records += s.spans_size();
      }
      return records;
    }
    case shipper::OtlpSignal::kMetrics:
      break;
  }
  return -1;
}

// One signal's conversion of `data`, checked as the header says.
void FuzzSignal(shipper::OtlpSignal signal, const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  shipper::OtlpConversion conversion(signal);
  if (!conversion
           .Scan(bytes, absl::FromUnixSeconds(1700000000), /*max_record_bytes=*/1 << 20,
                 /*max_records=*/65536)
           .ok()) {
    return;
  }
  auto buffer = std::make_unique<char[]>(conversion.bytes() + 1);
  size_t written = 0, events = 0;
  std::string publish;
  conversion.Write(buffer.get(), [&](absl::string_view event) {
    if (event.data() != buffer.get() + written) abort();  // one after the other
    written += event.size();
    ++events;
    pb::Event parsed;
    if (!parsed.ParseFromArray(event.data(), static_cast<int>(event.size()))) abort();
    publish.push_back('\x12');  // PublishRequest.events
    AppendVarint(event.size(), &publish);
    publish.append(event.data(), event.size());
    rapidjson::StringBuffer out;
    shipper::AppendEventJson(event, events, &out);
    const char* json = out.GetString();
    const size_t length = out.GetSize();
    if (length == 0 || json[length - 1] != '\n') abort();
    for (size_t i = 0; i + 1 < length; ++i) {
      if (json[i] == '\n') abort();
    }
    rapidjson::Document doc;
    doc.Parse(json, length - 1);
    if (doc.HasParseError() || !doc.IsObject()) abort();
  });
  if (written != conversion.bytes() || events != conversion.records()) abort();
  shipper::ScannedRequest scanned;
  shipper::RequestLimits limits;
  limits.max_events_per_request = 1 << 20;
  if (!shipper::ScanPublishRequest(publish, limits, &scanned).ok() ||
      scanned.events.size() != events || !scanned.rewritten.empty()) {
    abort();
  }
  const int64_t records = ProtobufRecords(signal, data, size);
  if (records >= 0 &&
      static_cast<size_t>(records) != conversion.records() + conversion.rejected()) {
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

// The same bytes as each signal's request: their messages number the resource, scope and record
// lists alike, so every seed reaches the records of all three.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (4 << 20)) return 0;
  for (shipper::OtlpSignal signal :
       {shipper::OtlpSignal::kLogs, shipper::OtlpSignal::kTraces, shipper::OtlpSignal::kMetrics}) {
    FuzzSignal(signal, data, size);
  }
  return 0;
}
