#include "shipper/config/address.h"

#include "absl/strings/strip.h"

namespace shipper {

std::string UnixSocketPath(absl::string_view address) {
  if (!absl::ConsumePrefix(&address, "unix:")) return "";
  absl::ConsumePrefix(&address, "//");  // unix:///abs/path keeps its leading slash
  return std::string(address);
}

absl::StatusOr<AddressList> ResolveListenAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError("not host:port or unix:///path");
  }
  absl::string_view bracketed = address.substr(0, colon);
  if (absl::ConsumePrefix(&bracketed, "[")) absl::ConsumeSuffix(&bracketed, "]");
  const std::string host(bracketed), port(address.substr(colon + 1));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(gai_strerror(rc));
  }
  return AddressList(found, freeaddrinfo);
}

}  // namespace shipper
