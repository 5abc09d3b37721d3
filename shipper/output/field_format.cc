#include "shipper/output/field_format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;

// The scalar at `path` inside `s`, written out; nullopt when missing or not a scalar.
std::optional<std::string> Lookup(const pb::Struct& s, const std::vector<std::string>& path,
                                  size_t from) {
  const pb::Struct* current = &s;
  for (size_t i = from; i < path.size(); ++i) {
    auto it = current->data().find(path[i]);
    if (it == current->data().end()) return std::nullopt;
    const pb::Value& v = it->second;
    if (i + 1 < path.size()) {
      if (v.kind_case() != pb::Value::kStructValue) return std::nullopt;
      current = &v.struct_value();
      continue;
    }
    switch (v.kind_case()) {
      case pb::Value::kStringValue:
        return v.string_value();
      case pb::Value::kInt32Value:
        return absl::StrCat(v.int32_value());
      case pb::Value::kInt64Value:
        return absl::StrCat(v.int64_value());
      case pb::Value::kUint32Value:
        return absl::StrCat(v.uint32_value());
      case pb::Value::kUint64Value:
        return absl::StrCat(v.uint64_value());
      case pb::Value::kFloat32Value:
        return absl::StrCat(v.float32_value());
      case pb::Value::kFloat64Value:
        return absl::StrCat(v.float64_value());
      case pb::Value::kBoolValue:
        return std::string(v.bool_value() ? "true" : "false");
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::string> NonEmpty(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

std::optional<std::string> Resolve(const pb::Event& event, const std::vector<std::string>& path) {
  if (path.size() == 2 && path[0] == "data_stream") {
    if (path[1] == "type") return NonEmpty(event.data_stream().type());
    if (path[1] == "dataset") return NonEmpty(event.data_stream().dataset());
    if (path[1] == "namespace") return NonEmpty(event.data_stream().namespace_());
  }
  if (path.size() == 2 && path[0] == "source") {
    if (path[1] == "input_id") return NonEmpty(event.source().input_id());
    if (path[1] == "stream_id") return NonEmpty(event.source().stream_id());
  }
  if (path.size() > 1 && path[0] == "@metadata") return Lookup(event.metadata(), path, 1);
  return Lookup(event.fields(), path, 0);
}

}  // namespace

absl::StatusOr<FieldFormat> FieldFormat::Parse(absl::string_view format,
                                               absl::string_view setting) {
  FieldFormat result;
  absl::string_view rest = format;
  while (!rest.empty()) {
    const size_t open = rest.find("%{[");
    if (open != 0) {
      result.parts_.push_back({std::string(rest.substr(0, open)), {}, std::nullopt});
      if (open == absl::string_view::npos) break;
      rest.remove_prefix(open);
    }
    const size_t close = rest.find("]");
    const size_t end = rest.find("}");
    if (close == absl::string_view::npos || end == absl::string_view::npos || end < close ||
        close == 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          setting, ": bad field reference in '", format,
          "': write %{[field.path]} or %{[field.path]:default}"));
    }
    Part part;
    part.text = std::string(rest.substr(3, close - 3));
    part.path = absl::StrSplit(part.text, '.');
    absl::string_view tail = rest.substr(close + 1, end - close - 1);
    if (!tail.empty()) {
      if (tail[0] != ':') {
        return absl::InvalidArgumentError(absl::StrCat(
            setting, ": unexpected '", tail, "' after ]", " in '", format,
            "': write %{[field.path]} or %{[field.path]:default}"));
      }
      part.fallback = std::string(tail.substr(1));
    }
    result.parts_.push_back(std::move(part));
    rest.remove_prefix(end + 1);
  }
  return result;
}

absl::StatusOr<std::string> FieldFormat::Format(const pb::Event& event) const {
  std::string out;
  for (const Part& part : parts_) {
    if (part.path.empty()) {
      out += part.text;
      continue;
    }
    std::optional<std::string> value = Resolve(event, part.path);
    if (!value) value = part.fallback;
    if (!value) {
      return absl::NotFoundError(
          absl::StrCat("the event has no scalar field '", part.text, "' for the key"));
    }
    out += *value;
  }
  return out;
}

}  // namespace shipper
