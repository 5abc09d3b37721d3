#include "shipper/request_validation.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;

// Protobuf counts every nested message against its recursion limit: an event (1) holds a
// Struct (2) of map entries (3) of Values (4) whose Struct (5) is the second level, so a Struct
// at level L sits at 3L - 1 and its Values at 3L + 1, a Value's Timestamp one deeper. This limit
// lets level max + 1 parse (for ValidatePublishRequest's precise message) and nothing deeper.
int ParseRecursionLimit(size_t max_nesting_depth) {
  constexpr size_t kCeiling = 1 << 20;  // keeps the arithmetic in int for absurd settings
  return static_cast<int>(3 * std::min(max_nesting_depth, kCeiling) + 5);
}

// The deepest level of Struct/ListValue nesting under `root` (level 1), stopping as soon as it
// exceeds `max`: an explicit stack, never recursion.
size_t NestingDepth(const pb::Struct& root, size_t max) {
  struct Item {
    const pb::Value* value;
    size_t level;  // of the Struct or ListValue holding `value`
  };
  std::vector<Item> stack;
  for (const auto& entry : root.data()) stack.push_back({&entry.second, 1});
  size_t deepest = 1;
  while (!stack.empty() && deepest <= max) {
    const Item item = stack.back();
    stack.pop_back();
    const size_t level = item.level + 1;
    if (item.value->has_struct_value()) {
      deepest = std::max(deepest, level);
      for (const auto& entry : item.value->struct_value().data()) {
        stack.push_back({&entry.second, level});
      }
    } else if (item.value->has_list_value()) {
      deepest = std::max(deepest, level);
      for (const pb::Value& value : item.value->list_value().values()) {
        stack.push_back({&value, level});
      }
    }
  }
  return deepest;
}

absl::Status TooManyEvents(size_t n, const RequestLimits& limits) {
  return absl::InvalidArgumentError(absl::StrCat(
      "request has ", n, " events, more than shipper.server.max_events_per_request (",
      limits.max_events_per_request, "): send them in smaller requests"));
}

// The chunks as one protobuf input stream.
class BytesStream {
 public:
  explicit BytesStream(absl::Span<const absl::string_view> chunks) {
    for (absl::string_view chunk : chunks) {
      streams_.push_back(&arrays_.emplace_back(chunk.data(), static_cast<int>(chunk.size())));
    }
    concatenated_.emplace(streams_.data(), static_cast<int>(streams_.size()));
  }
  google::protobuf::io::ZeroCopyInputStream* stream() { return &*concatenated_; }

 private:
  std::deque<google::protobuf::io::ArrayInputStream> arrays_;  // a deque: elements never move
  std::vector<google::protobuf::io::ZeroCopyInputStream*> streams_;
  std::optional<google::protobuf::io::ConcatenatingInputStream> concatenated_;
};

// How many `events` fields (number 2, length-delimited) the request's top level holds, skipping
// over each without decoding it. Stops at the first malformed field: decoding then refuses it.
size_t CountEvents(absl::Span<const absl::string_view> chunks) {
  using google::protobuf::internal::WireFormatLite;
  BytesStream bytes(chunks);
  google::protobuf::io::CodedInputStream coded(bytes.stream());
  size_t events = 0;
  while (const uint32_t tag = coded.ReadTag()) {
    uint64_t varint;
    uint32_t length;
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_VARINT:
        if (!coded.ReadVarint64(&varint)) return events;
        break;
      case WireFormatLite::WIRETYPE_FIXED64:
        if (!coded.Skip(8)) return events;
        break;
      case WireFormatLite::WIRETYPE_FIXED32:
        if (!coded.Skip(4)) return events;
        break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED:
        if (!coded.ReadVarint32(&length) || !coded.Skip(static_cast<int>(length))) return events;
        events += WireFormatLite::GetTagFieldNumber(tag) == 2;
        break;
      default:  // groups: not in this message
        return events;
    }
  }
  return events;
}

}  // namespace

absl::Status DecodePublishRequest(absl::Span<const absl::string_view> chunks,
                                  const RequestLimits& limits, pb::PublishRequest* request) {
  const size_t events = CountEvents(chunks);
  if (events > limits.max_events_per_request) return TooManyEvents(events, limits);
  BytesStream bytes(chunks);
  google::protobuf::io::CodedInputStream coded(bytes.stream());
  coded.SetRecursionLimit(ParseRecursionLimit(limits.max_nesting_depth));
  if (!request->ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request is not a valid PublishRequest: truncated or not protobuf, a string that is "
        "not UTF-8 (use valid UTF-8 in every string and map key), or Struct/ListValue nested "
        "far deeper than shipper.server.max_nesting_depth (",
        limits.max_nesting_depth, ")"));
  }
  return ValidatePublishRequest(*request, limits);
}

void RateLimitProtobufUtf8Errors() {
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel level, const char* file,
                                     int line, const std::string& message) {
    if (absl::StrContains(message, "invalid UTF-8")) {
      LOG_EVERY_N(WARNING, 1000) << "protobuf (1 in 1000 shown): " << message;
    } else if (level >= google::protobuf::LOGLEVEL_ERROR) {
      LOG(ERROR) << "protobuf " << file << ":" << line << ": " << message;
    } else {
      LOG(INFO) << "protobuf " << file << ":" << line << ": " << message;
    }
  });
}

absl::Status ValidatePublishRequest(const pb::PublishRequest& request,
                                    const RequestLimits& limits) {
  const size_t n = static_cast<size_t>(request.events_size());
  if (n > limits.max_events_per_request) return TooManyEvents(n, limits);
  for (size_t i = 0; i < n; ++i) {
    const pb::Event& event = request.events(static_cast<int>(i));
    for (const auto& [name, root] : {std::pair{"fields", &event.fields()},
                                     std::pair{"metadata", &event.metadata()}}) {
      const size_t depth = NestingDepth(*root, limits.max_nesting_depth);
      if (depth > limits.max_nesting_depth) {
        return absl::InvalidArgumentError(absl::StrCat(
            "event ", i, ": ", name, " nest Struct/ListValue more than "
            "shipper.server.max_nesting_depth (", limits.max_nesting_depth,
            ") levels deep: flatten the event"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace shipper
