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

absl::StatusOr<std::string> ReadPems(absl::string_view key, const std::vector<std::string>& paths,
                                     absl::string_view what) {
  std::string pems;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> pem = ReadPem(key, path, what);
    if (!pem.ok()) return pem.status();
    absl::StrAppend(&pems, *pem, absl::EndsWith(*pem, "\n") ? "" : "\n");
  }
  return pems;
}

}  // namespace shipper
