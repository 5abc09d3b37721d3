#include "shipper/config/pem.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shipper {

absl::StatusOr<std::string> ReadPem(absl::string_view key, const std::string& path,
                                    absl::string_view what) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("config key '", key, "': cannot read '", path,
                                                   "' (", std::strerror(errno), ")"));
  }
  std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!absl::StrContains(pem, "-----BEGIN ") || !absl::StrContains(pem, what)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config key '", key, "': '", path, "' is not a PEM file with a ", what));
  }
  return pem;
}

}  // namespace shipper
