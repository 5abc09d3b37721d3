// Addresses as config keys give them: host:port, [v6]:port, or unix:///path (unix:rel/path) for
// a socket file.
//
// One parser for every key that names an address (the listeners', the outputs' hosts), so that
// each takes the same forms and refuses the same mistakes in the same words. What a key allows
// beside host:port (a unix socket, the listeners' empty host and port 0, Redis' default port)
// its AddressRules say.
//
// Thread safety: stateless; call from any thread.
#ifndef SHIPPER_SHIPPER_CONFIG_ADDRESS_H_
#define SHIPPER_SHIPPER_CONFIG_ADDRESS_H_

#include <netdb.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shipper {

struct AddressRules {
  bool unix_socket = false;  // unix:///path is allowed
  // A listener's: an empty host (":50051", every interface) and port 0 (any free one).
  bool listen = false;
  int default_port = 0;  // > 0: a host without :port takes this one
};

// A listener's: host:port (an empty host, port 0) or unix:///path.
constexpr AddressRules kListenAddress = {/*unix_socket=*/true, /*listen=*/true};

struct Address {
  // A host name, an IPv4 address or an IPv6 one (without its brackets); empty: every interface.
  std::string host;
  int port = 0;
  std::string unix_path;  // not empty: a unix socket's file, and host and port mean nothing

  // host:port, an IPv6 host in brackets, or unix://path.
  std::string ToString() const;
};

// `text` as an address by `rules`. INVALID_ARGUMENT says why in a few words that start with what
// was expected: "not host:port: no port", "not host:port or unix:///path: ...".
absl::StatusOr<Address> ParseAddress(absl::string_view text, const AddressRules& rules);

// OK when `text` parses by `rules`; else INVALID_ARGUMENT "<key>: '<text>' is not host:port: why".
absl::Status CheckAddress(absl::string_view key, absl::string_view text, const AddressRules& rules);

using AddressList = std::unique_ptr<addrinfo, void (*)(addrinfo*)>;

// The addresses to listen on for `address`, a host:port by the listeners' rules (an empty host:
// every interface; port 0: any free one). The error says why in a few words: ParseAddress's, or
// the resolver's own.
absl::StatusOr<AddressList> ResolveListenAddress(const Address& address);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_ADDRESS_H_
