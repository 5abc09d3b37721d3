// The channel credentials of an output that is a gRPC client (the forwarding output, the OTLP
// output): plaintext, or TLS (mTLS with a client certificate) as its client TLS block says.
//
// Thread safety: a pure function but for reading the PEM files; call from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_GRPC_CREDENTIALS_H_
#define SHIPPER_SHIPPER_OUTPUT_GRPC_CREDENTIALS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "shipper/config/tls.h"

namespace shipper {

// Reads the PEM files of `ssl`, the client TLS block `block`. Unset CAs: gRPC's default roots.
// verification_mode full is gRPC's own TLS credentials; the others need its TLS credentials API,
// which can skip the host name and the chain. REQUIRES: block.Validate(ssl) found no problem.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ClientCredentials(const TlsBlock& block,
                                                                            const TlsSettings& ssl);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_GRPC_CREDENTIALS_H_
