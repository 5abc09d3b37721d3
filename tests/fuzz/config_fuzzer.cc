// Fuzz target: config parsing. The input's first line is one -E override (key=value), the rest
// a YAML config file; ParseConfig must return a Config or an error, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "shipper/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  if (size_t newline = input.find('\n'); newline != absl::string_view::npos) {
    overrides.emplace_back(input.substr(0, newline));
    input.remove_prefix(newline + 1);
  }
  (void)shipper::ParseConfig(input, "fuzz.yml", overrides);
  return 0;
}
