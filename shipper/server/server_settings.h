// The gRPC server's settings (shipper.server.*): where it listens, its TLS, and what one client
// may ask of it. The Producer API is served there; other inputs listen on addresses of their own
// with the same kinds of settings.
//
// Thread safety: plain values; the key table is immutable once built.
#ifndef SHIPPER_SHIPPER_SERVER_SERVER_SETTINGS_H_
#define SHIPPER_SHIPPER_SERVER_SERVER_SETTINGS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shipper/config/key.h"
#include "shipper/config/problems.h"
#include "shipper/config/tls.h"

namespace shipper {

// What one client may ask of the server; a request beyond a limit is refused with a status that
// names the limit's key.
struct ServerLimits {
  size_t max_message_size = 64 << 20;  // bytes as sent
  // What gRPC may hold for all connections together, foremost requests on their way in; beyond
  // it gRPC resets streams (RESOURCE_EXHAUSTED) until memory frees. >= max_message_size.
  size_t max_receive_memory = 128 << 20;
  size_t max_concurrent_streams = 100;  // HTTP/2 streams (calls) at once per connection
  size_t max_connections = 512;         // live at once; 0: no limit (listener.h)
};

struct ServerSettings {
  // Listen address: host:port (port 0 picks a free one) or unix:///path.
  std::string address = "127.0.0.1:50051";
  // host:port of a second listener that serves only the gRPC health service, for Kubernetes'
  // gRPC probes when `address` is a unix socket; empty: none.
  std::string health_address;
  // Permissions of the socket file when `address` is unix:///path.
  uint32_t socket_mode = 0600;
  ServerLimits limits;
  // TLS on the listener (shipper.server.ssl, ServerTlsBlock()): on when certificate is set; mTLS
  // when client_authentication asks for client certificates.
  TlsSettings ssl;
};

// The shared server's `ssl` block, shipper.server.ssl.*: a server's keys (tls.h). A listener of
// an input's own has a block of its own with the same keys under its prefix.
const TlsBlock& ServerTlsBlock();

// Every shipper.server.* key.
std::vector<Key<ServerSettings>> ServerKeys();

// What no single key can check on its own. Pure.
void ValidateServer(const ServerSettings& server, Problems* problems);

// What the machine must allow: the listen addresses resolve (or their socket directories exist),
// TLS files are readable PEM. Creates, binds and writes nothing.
void PreflightServer(const ServerSettings& server, Problems* problems);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_SERVER_SERVER_SETTINGS_H_
