#include "shipper/config/loader.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "yaml-cpp/yaml.h"

namespace shipper {
namespace {

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string Where(absl::string_view source, const YAML::Node& node) {
  return absl::StrCat(source, ":", node.Mark().line + 1, ": ");
}

}  // namespace

ConfigLoader::ConfigLoader(std::vector<BoundKey> keys,
                           absl::Span<const std::pair<const char*, const char*>> renamed)
    : keys_(std::move(keys)), renamed_(renamed) {}

absl::Status ConfigLoader::UnknownKey(absl::string_view name, absl::string_view where) const {
  const BoundKey* closest = nullptr;
  size_t best = 0;
  for (const BoundKey& key : keys_) {
    size_t d = EditDistance(name, key.name);
    if (closest == nullptr || d < best) closest = &key, best = d;
  }
  std::string hint = closest != nullptr && best <= 3
                         ? absl::StrCat("; did you mean '", closest->name, "'?")
                         : "; see --help for the list of keys";
  return absl::InvalidArgumentError(absl::StrCat(where, "unknown config key '", name, "'", hint));
}

bool ConfigLoader::IsKeyPrefix(absl::string_view prefix) const {
  const std::string dotted = absl::StrCat(prefix, ".");
  for (const BoundKey& key : keys_) {
    if (absl::StartsWith(key.name, dotted)) return true;
  }
  for (const auto& [old_name, name] : renamed_) {
    if (absl::StartsWith(old_name, dotted)) return true;
  }
  return false;
}

absl::Status ConfigLoader::Set(std::string name, const YAML::Node& node, absl::string_view where) {
  for (const auto& [old_name, new_name] : renamed_) {
    if (name != old_name) continue;
    warnings_.push_back(absl::StrCat(where, name, " is deprecated: write ", new_name,
                                     " (the old spelling will be refused in a later release)"));
    name = new_name;
  }
  for (const BoundKey& key : keys_) {
    if (key.name != name) continue;
    given_.insert(name);
    if (key.set_list != nullptr && node.IsSequence()) {
      std::vector<std::string> items;
      for (const YAML::Node& item : node) {
        if (!item.IsScalar()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, "config key '", name, "': expected ", key.expected));
        }
        items.push_back(item.Scalar());
      }
      absl::Status status = key.set_list(items);
      if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(where, status.message()));
      return absl::OkStatus();
    }
    if (!node.IsScalar()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "config key '", name, "': expected ",
                                                     key.expected, ", got a ",
                                                     node.IsMap()        ? "map"
                                                     : node.IsSequence() ? "list"
                                                                         : "null"));
    }
    absl::Status status = key.set(node.Scalar());
    if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(where, status.message()));
    return absl::OkStatus();
  }
  return UnknownKey(name, where);
}

void ConfigLoader::SetTree(const std::string& prefix, const YAML::Node& node,
                           absl::string_view source) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      std::string name = entry.first.as<std::string>();
      if (!prefix.empty()) name = absl::StrCat(prefix, ".", name);
      SetTree(name, entry.second, source);
    }
    return;
  }
  if (node.IsNull() && (prefix.empty() || IsKeyPrefix(prefix))) return;
  problems_.Add(Set(prefix, node, Where(source, node)));
}

absl::Status ConfigLoader::LoadYaml(absl::string_view yaml, absl::string_view source) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsNull() && !root.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": expected a map of config keys at the top level"));
    }
    SetTree("", root, source);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  return absl::OkStatus();
}

// The value is YAML, as in a file. One that YAML cannot read as a value (an unbalanced bracket, a
// leading % or @) is refused with how to quote it, not taken as null.
void ConfigLoader::LoadOverride(const std::string& item) {
  std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
  if (item.find('=') == std::string::npos || kv.first.empty()) {
    return problems_.Add(absl::StrCat("-E expects key=value, got '", item, "'"));
  }
  const auto unreadable = [&](absl::string_view why) {
    problems_.Add(absl::StrCat("-E ", kv.first, ": the value '", kv.second, "' is not valid YAML (",
                               why, "); quote it: -E '", kv.first, "=\"", kv.second, "\"'"));
  };
  YAML::Node value;
  try {
    value = YAML::Load(kv.second);
  } catch (const YAML::Exception& e) {
    return unreadable(e.msg);
  }
  const bool null_literal = kv.second.empty() || kv.second == "~" || kv.second == "null" ||
                            kv.second == "Null" || kv.second == "NULL";
  if (value.IsNull() && !null_literal) return unreadable("YAML reads it as nothing");
  problems_.Add(Set(kv.first, value, "-E: "));
}

}  // namespace shipper
