// Fuzz target: the bytes of a PublishRequest as a client sends them, through the service's own
// decode and validation, then every event through the JSON encoder that all outputs use. Finds
// crashes (and, with sanitizers, memory errors) on hostile input, and checks that every encoded
// event is one valid JSON object on one line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "google/protobuf/arena.h"
#include "google/protobuf/stubs/logging.h"
#include "absl/strings/string_view.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/event_json.h"
#include "shipper/request_validation.h"

namespace {

namespace pb = elastic::agent::shipper::v1::messages;

// Aborts (a crash for the fuzzer) unless `line` is a JSON object.
void CheckJsonObject(const char* line, size_t size) {
  rapidjson::Document doc;
  doc.Parse(line, size);
  if (doc.HasParseError() || !doc.IsObject()) abort();
}

}  // namespace

// Protobuf logs an ERROR for every string that is not UTF-8: at fuzzing speed that is noise.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (64 << 20)) return 0;  // the server's default max_message_size refuses it earlier
  google::protobuf::Arena arena;
  auto* request = google::protobuf::Arena::CreateMessage<pb::PublishRequest>(&arena);
  // Two chunks, as a gRPC ByteBuffer may hold a request in several slices.
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  const absl::string_view chunks[] = {bytes.substr(0, size / 2), bytes.substr(size / 2)};
  if (!shipper::DecodePublishRequest(chunks, shipper::RequestLimits{}, request).ok()) return 0;
  uint64_t index = 0;
  for (const pb::Event& event : request->events()) {
    rapidjson::StringBuffer out;
    shipper::AppendEventJson(event, ++index, &out);
    const char* json = out.GetString();
    const size_t length = out.GetSize();
    if (length == 0 || json[length - 1] != '\n') abort();
    for (size_t i = 0; i + 1 < length; ++i) {
      if (json[i] == '\n') abort();  // one line per event: NDJSON
    }
    CheckJsonObject(json, length - 1);
  }
  return 0;
}
