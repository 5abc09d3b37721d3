#include "shipper/config/key.h"

#include <climits>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shipper::key_internal {

std::optional<bool> ParseBool(const std::string& s) {
  const std::string v = absl::AsciiStrToLower(s);
  if (v == "true") return true;
  if (v == "false") return false;
  return std::nullopt;
}

std::optional<size_t> ParseSize(const std::string& s, size_t min, bool bytes) {
  absl::string_view v = s;
  uint64_t unit = 1;
  if (bytes) {
    for (auto [suffix, mult] :
         {std::pair{"KiB", uint64_t{1} << 10}, std::pair{"MiB", uint64_t{1} << 20},
          std::pair{"GiB", uint64_t{1} << 30}}) {
      if (absl::ConsumeSuffix(&v, suffix)) unit = mult;
    }
  }
  uint64_t n;
  // The least is of the size in bytes: 4MiB is above a least of 1024.
  if (!absl::SimpleAtoi(v, &n) || n > SIZE_MAX / unit || n * unit < min) return std::nullopt;
  return n * unit;
}

std::optional<absl::Duration> ParseDuration(const std::string& s) {
  if (s == "0") return absl::ZeroDuration();
  absl::Duration v;
  if (!absl::ParseDuration(s, &v) || v < absl::ZeroDuration()) return std::nullopt;
  return v;
}

std::optional<uint32_t> ParsePermissions(const std::string& s) {
  if (s.empty() || s.size() > 4 || s.find_first_not_of("01234567") != std::string::npos) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(std::stoul(s, nullptr, 8));
}

std::optional<std::vector<std::string>> SplitCommas(const std::string& s) {
  std::vector<std::string> items = absl::StrSplit(s, ',');
  for (std::string& item : items) {
    item = std::string(absl::StripAsciiWhitespace(item));
    if (item.empty()) return std::nullopt;
  }
  return items;
}

std::string ShowList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const std::string& item : items) {
    absl::StrAppend(&out, out.size() > 1 ? ", " : "", "\"", absl::CEscape(item), "\"");
  }
  return out + "]";
}

std::optional<int> ParsePort(const std::string& s) {
  int port;
  if (!absl::SimpleAtoi(s, &port) || port < 0 || port > 65535) return std::nullopt;
  return port;
}

std::string ShowPermissions(uint32_t mode) { return absl::StrFormat("%04o", mode); }

}  // namespace shipper::key_internal
