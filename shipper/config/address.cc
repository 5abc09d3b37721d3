#include "shipper/config/address.h"

#include <arpa/inet.h>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace shipper {
namespace {

// An IPv6 address, perhaps with a zone (fe80::1%eth0), as getaddrinfo takes it.
bool IsIpv6(absl::string_view host) {
  const std::string address(host.substr(0, host.find('%')));
  in6_addr parsed;
  return !address.empty() && inet_pton(AF_INET6, address.c_str(), &parsed) == 1;
}

// A host name or an IPv4 address: letters, digits, '-', '_' and dots, not starting with a
// dot or a dash.
bool IsHostName(absl::string_view host) {
  if (host.empty() || host[0] == '.' || host[0] == '-') return false;
  for (char c : host) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string Address::ToString() const {
  if (!unix_path.empty()) return absl::StrCat("unix://", unix_path);
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<Address> ParseAddress(absl::string_view text, const AddressRules& rules) {
  const auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("not host:port",
                                                   rules.unix_socket ? " or unix:///path" : "",
                                                   why.empty() ? "" : ": ", why));
  };
  if (text.empty()) return invalid("empty");
  Address address;
  absl::string_view rest = text;
  if (absl::ConsumePrefix(&rest, "unix:")) {
    if (!rules.unix_socket) return invalid("a unix socket is not allowed here");
    absl::ConsumePrefix(&rest, "//");  // unix:///abs/path keeps its leading slash
    if (rest.empty()) return invalid("no path after unix:");
    address.unix_path = std::string(rest);
    return address;
  }
  absl::string_view host = rest, port;
  bool has_port = false;
  if (absl::ConsumePrefix(&rest, "[")) {
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos) return invalid("no ] after [");
    host = rest.substr(0, close);
    if (!IsIpv6(host)) return invalid(absl::StrCat("'", host, "' is not an IPv6 address"));
    rest.remove_prefix(close + 1);
    if (!rest.empty()) {
      if (!absl::ConsumePrefix(&rest, ":")) return invalid("expected :port after ]");
      port = rest;
      has_port = true;
    }
  } else if (const size_t colon = rest.find(':'); colon != absl::string_view::npos) {
    if (rest.find(':', colon + 1) != absl::string_view::npos) {
      return invalid("an IPv6 address goes in brackets: [::1]:port");
    }
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    has_port = true;
  }
  if (host.empty()) {
    if (!rules.listen || !has_port) return invalid("no host");
  } else if (!IsHostName(host) && !IsIpv6(host)) {
    return invalid(absl::StrCat("'", host, "' is not a host name or IP address"));
  }
  address.host = std::string(host);
  if (!has_port) {
    if (rules.default_port <= 0) return invalid("no port");
    address.port = rules.default_port;
    return address;
  }
  const int min_port = rules.listen ? 0 : 1;
  if (port.empty()) return invalid("no port after :");
  if (!absl::c_all_of(port, [](char c) { return absl::ascii_isdigit(c); }) ||
      !absl::SimpleAtoi(port, &address.port) || address.port < min_port || address.port > 65535) {
    return invalid(absl::StrCat("port '", port, "' is not a number from ", min_port, " to 65535"));
  }
  return address;
}

absl::Status CheckAddress(absl::string_view key, absl::string_view text,
                          const AddressRules& rules) {
  absl::StatusOr<Address> address = ParseAddress(text, rules);
  if (address.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(key, ": '", text, "' is ", address.status().message()));
}

absl::StatusOr<AddressList> ResolveListenAddress(const Address& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(address.port);
  if (int rc = getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port.c_str(),
                           &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(gai_strerror(rc));
  }
  return AddressList(found, freeaddrinfo);
}

}  // namespace shipper
