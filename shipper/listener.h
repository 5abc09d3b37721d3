// How the gRPC listener is secured and where its unix socket lives.
//
// TLS is on when shipper.server.ssl.certificate is set; client_authentication decides whether
// clients must present a certificate that chains to ssl.certificate_authorities (mTLS).
// A unix:///path listener's socket file belongs to this process: a stale one left by a crash
// is replaced before listening, Shipper sets its permissions once gRPC has created it, and
// removes it on exit.
//
// Thread safety: stateless functions; call from any thread.
#ifndef SHIPPER_SHIPPER_LISTENER_H_
#define SHIPPER_SHIPPER_LISTENER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/server_credentials.h"
#include "shipper/config.h"

namespace shipper {

// Insecure credentials without a certificate, TLS or mTLS credentials otherwise. Reads the PEM
// files now; INVALID_ARGUMENT names the key whose file is missing, unreadable or not PEM, or
// the key that a setting needs but lacks.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ListenerCredentials(
    const Config::Ssl& ssl);

// The socket file of a unix: address ("unix:///abs/path" or "unix:rel/path"); empty for any
// other address.
std::string UnixSocketPath(absl::string_view address);

// Makes `path` free for a new socket: removes a socket file nobody listens on (left by a crash).
// UNAVAILABLE when a process still accepts connections on it, INVALID_ARGUMENT when the path
// holds something other than a socket (never deleted).
absl::Status ReplaceStaleSocket(const std::string& path);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_LISTENER_H_
