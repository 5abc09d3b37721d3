#include "shipper/request_validation.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"

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

}  // namespace

absl::Status DecodePublishRequest(google::protobuf::io::ZeroCopyInputStream* input,
                                  const RequestLimits& limits, pb::PublishRequest* request) {
  google::protobuf::io::CodedInputStream coded(input);
  coded.SetRecursionLimit(ParseRecursionLimit(limits.max_nesting_depth));
  if (!request->ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request is not a valid PublishRequest: truncated or not protobuf, a string that is "
        "not UTF-8 (use valid UTF-8 in every string and map key), or Struct/ListValue nested "
        "far deeper than shipper.server.max_nesting_depth (",
        limits.max_nesting_depth, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePublishRequest(const pb::PublishRequest& request,
                                    const RequestLimits& limits) {
  const size_t n = static_cast<size_t>(request.events_size());
  if (n > limits.max_events_per_request) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request has ", n, " events, more than shipper.server.max_events_per_request (",
        limits.max_events_per_request, "): send them in smaller requests"));
  }
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
