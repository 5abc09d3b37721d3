// Addresses as config keys give them: host:port, [v6]:port, or unix:///path for a socket file.
//
// Thread safety: stateless; call from any thread.
#ifndef SHIPPER_SHIPPER_CONFIG_ADDRESS_H_
#define SHIPPER_SHIPPER_CONFIG_ADDRESS_H_

#include <netdb.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shipper {

// The socket file of a unix: address ("unix:///abs/path" or "unix:rel/path"); empty for any
// other address.
std::string UnixSocketPath(absl::string_view address);

using AddressList = std::unique_ptr<addrinfo, void (*)(addrinfo*)>;

// The addresses to listen on for host:port (an empty host: every interface; port 0: any free
// one). The error says why, in a few words: "not host:port or unix:///path", or the resolver's
// own words.
absl::StatusOr<AddressList> ResolveListenAddress(absl::string_view address);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_ADDRESS_H_
