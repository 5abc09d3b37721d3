#include "shipper/server/server_settings.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "shipper/config/address.h"
#include "shipper/config/preflight.h"

namespace shipper {

const TlsBlock& ServerTlsBlock() {
  static const TlsBlock* block = new TlsBlock("shipper.server.ssl", TlsSide::kServer, "clients");
  return *block;
}

std::vector<Key<ServerSettings>> ServerKeys() {
  using K = KeysOf<ServerSettings>;
  using S = ServerSettings;
  const auto limit = [](size_t ServerLimits::*member) {
    return [member](S& s) -> size_t& { return s.limits.*member; };
  };
  std::vector<Key<S>> keys = {
      K::String("shipper.server.server", "gRPC listen address: host:port or unix:///path",
                &S::address),
      K::Checked(
          "shipper.server.health.address",
          "second listener serving only the gRPC health service, for Kubernetes probes (\"\": "
          "none)",
          "host:port or \"\"",
          [](const std::string& s) {
            // A unix socket cannot serve Kubernetes' gRPC probes.
            if (s.empty()) return absl::OkStatus();
            return ParseAddress(s, {/*unix_socket=*/false, /*listen=*/true}).status();
          },
          [](const std::string& v) { return v.empty() ? std::string("\"\"") : v; },
          &S::health_address),
      K::Permissions("shipper.server.socket_mode", "permissions of a unix:///path socket file",
                     &S::socket_mode),
      K::Size("shipper.server.max_message_size",
              "largest request accepted, in bytes as sent (at most 2GiB - 1)", 1, true,
              limit(&ServerLimits::max_message_size)),
      K::Size("shipper.server.max_receive_memory",
              "memory gRPC may hold for requests being received, all connections together; "
              "beyond it streams are reset (RESOURCE_EXHAUSTED). Unset under a container memory "
              "limit: a quarter of it",
              1, true, limit(&ServerLimits::max_receive_memory)),
      K::Size("shipper.server.max_concurrent_streams",
              "calls one connection may have in flight; more wait for a free slot", 1, false,
              limit(&ServerLimits::max_concurrent_streams)),
      K::Size("shipper.server.max_connections",
              "connections served at once; calls on more are refused until one closes (0: no "
              "limit)",
              0, false, limit(&ServerLimits::max_connections)),
  };
  for (Key<S>& key : ServerTlsBlock().KeysWithin<S>(&S::ssl)) keys.push_back(std::move(key));
  return keys;
}

void ValidateServer(const ServerSettings& server, Problems* problems) {
  problems->Add(CheckAddress("shipper.server.server", server.address, kListenAddress));
  ServerTlsBlock().Validate(server.ssl, problems);
  const ServerLimits& limits = server.limits;
  // gRPC takes max_concurrent_streams as an int; a message is never near 2GiB.
  if (limits.max_message_size > INT_MAX || limits.max_concurrent_streams > INT_MAX) {
    problems->Add(
        "config: shipper.server.max_message_size and shipper.server.max_concurrent_streams must "
        "be below 2GiB");
  }
  if (limits.max_receive_memory < limits.max_message_size) {
    problems->Add(
        absl::StrCat("config: shipper.server.max_receive_memory (", limits.max_receive_memory,
                     " bytes) must be at least shipper.server.max_message_size (",
                     limits.max_message_size, " bytes), or no request of that size could arrive"));
  }
}

void PreflightServer(const ServerSettings& server, Problems* problems) {
  CheckListenAddress(problems, "shipper.server.server", server.address);
  if (!server.health_address.empty()) {
    CheckListenAddress(problems, "shipper.server.health.address", server.health_address);
  }
  ServerTlsBlock().Preflight(server.ssl, problems);
}

}  // namespace shipper
