// Fuzz target: the bytes of a PublishRequest as a client sends them, through the service's own
// scan, then every event through the JSON encoder that all outputs use. Finds crashes (and, with
// sanitizers, memory errors) on hostile input, checks that every encoded event is one valid JSON
// object on one line, and checks the scan against protobuf's parser: what the scan accepts,
// protobuf parses, and each queued event means what protobuf made of it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/string_view.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/util/field_comparator.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/messages.pb.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/event/event_json.h"
#include "shipper/input/producer/request_validation.h"

namespace {

namespace pb = elastic::agent::shipper::v1::messages;

// Aborts (a crash for the fuzzer) unless `line` is a JSON object.
void CheckJsonObject(const char* line, size_t size) {
  rapidjson::Document doc;
  doc.Parse(line, size);
  if (doc.HasParseError() || !doc.IsObject()) abort();
}

bool Parse(absl::string_view bytes, google::protobuf::Message* message) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(1000);  // deeper than the scan's default limit allows
  return message->ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

// Whether the two messages are equal, a NaN equal to a NaN.
bool Equal(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_field_comparator(&comparator);
  return differencer.Compare(a, b);
}

}  // namespace

// Protobuf logs an ERROR for every string that is not UTF-8: at fuzzing speed that is noise.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (64 << 20)) return 0;  // the server's default max_message_size refuses it earlier
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  shipper::ScannedRequest scanned;
  if (!shipper::ScanPublishRequest(bytes, shipper::RequestLimits{}, &scanned).ok()) return 0;
  pb::PublishRequest parsed;
  if (!Parse(bytes, &parsed) || parsed.uuid() != scanned.uuid ||
      static_cast<size_t>(parsed.events_size()) != scanned.events.size()) {
    abort();
  }
  uint64_t index = 0;
  for (absl::string_view event : scanned.events) {
    pb::Event queued;
    if (!Parse(event, &queued) || !Equal(queued, parsed.events(index))) {
      abort();
    }
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
