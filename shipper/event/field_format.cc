#include "shipper/event/field_format.h"

#include <optional>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "shipper/event/wire_event.h"

namespace shipper {
namespace {

namespace kind = wire::value;

// The scalar at `path` (from path[from] on) inside the Struct `s`, written out; nullopt when
// missing or not a scalar.
std::optional<std::string> Lookup(absl::string_view s, const std::vector<std::string>& path,
                                  size_t from) {
  absl::string_view current = s;
  for (size_t i = from; i < path.size(); ++i) {
    std::optional<absl::string_view> found;
    wire::ForEachEntry(current, [&](absl::string_view key, absl::string_view value) {
      if (key == path[i]) found = value;
    });
    if (!found) return std::nullopt;
    const wire::ValueParts v(*found);
    if (i + 1 < path.size()) {
      if (v.kind != kind::kStruct) return std::nullopt;
      current = v.bytes;
      continue;
    }
    switch (v.kind) {
      case kind::kString:
        return std::string(v.bytes);
      case kind::kInt32:
        return absl::StrCat(static_cast<int32_t>(v.scalar));
      case kind::kInt64:
        return absl::StrCat(static_cast<int64_t>(v.scalar));
      case kind::kUint32:
        return absl::StrCat(static_cast<uint32_t>(v.scalar));
      case kind::kUint64:
        return absl::StrCat(v.scalar);
      case kind::kFloat32:
        return absl::StrCat(absl::bit_cast<float>(static_cast<uint32_t>(v.scalar)));
      case kind::kFloat64:
        return absl::StrCat(absl::bit_cast<double>(v.scalar));
      case kind::kBool:
        return std::string(v.scalar != 0 ? "true" : "false");
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::string> NonEmpty(absl::string_view s) {
  if (s.empty()) return std::nullopt;
  return std::string(s);
}

std::optional<std::string> Resolve(const wire::EventParts& parts,
                                   const std::vector<std::string>& path) {
  if (path.size() == 2 && path[0] == "data_stream") {
    absl::string_view ds[4];  // by field number: type, dataset, namespace
    wire::StringsByNumber(parts.data_stream, ds);
    if (path[1] == "type") return NonEmpty(ds[1]);
    if (path[1] == "dataset") return NonEmpty(ds[2]);
    if (path[1] == "namespace") return NonEmpty(ds[3]);
  }
  if (path.size() == 2 && path[0] == "source") {
    absl::string_view source[3];  // by field number: input_id, stream_id
    wire::StringsByNumber(parts.source, source);
    if (path[1] == "input_id") return NonEmpty(source[1]);
    if (path[1] == "stream_id") return NonEmpty(source[2]);
  }
  if (path.size() > 1 && path[0] == "@metadata") return Lookup(parts.metadata, path, 1);
  return Lookup(parts.fields, path, 0);
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
      return absl::InvalidArgumentError(
          absl::StrCat(setting, ": bad field reference in '", format,
                       "': write %{[field.path]} or %{[field.path]:default}"));
    }
    Part part;
    part.text = std::string(rest.substr(3, close - 3));
    part.path = absl::StrSplit(part.text, '.');
    absl::string_view tail = rest.substr(close + 1, end - close - 1);
    if (!tail.empty()) {
      if (tail[0] != ':') {
        return absl::InvalidArgumentError(
            absl::StrCat(setting, ": unexpected '", tail, "' after ]", " in '", format,
                         "': write %{[field.path]} or %{[field.path]:default}"));
      }
      part.fallback = std::string(tail.substr(1));
    }
    result.parts_.push_back(std::move(part));
    rest.remove_prefix(end + 1);
  }
  return result;
}

absl::StatusOr<std::string> FieldFormat::Format(absl::string_view event) const {
  std::string out;
  // Read once for all references (the default Elasticsearch index has three), and only if one
  // needs it.
  std::optional<wire::EventParts> parts;
  for (const Part& part : parts_) {
    if (part.path.empty()) {
      out += part.text;
      continue;
    }
    if (!parts) parts.emplace(event);
    std::optional<std::string> value = Resolve(*parts, part.path);
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
