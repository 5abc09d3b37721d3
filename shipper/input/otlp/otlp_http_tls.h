// The TLS half of the OTLP/HTTP server: shipper.otlp.ssl as libmicrohttpd's GnuTLS options, and
// the client check that mTLS needs on top of them.
//
// libmicrohttpd asks a client for its certificate once it has CAs to trust (and then takes one
// without a certificate, or with one it cannot verify, alike): CheckClient() is what verifies it
// against certificate_authorities, for every connection before its first request is served, as
// client_authentication says. TLS 1.2 and later, as the gRPC listener.
//
// Thread safety: immutable once loaded; CheckClient() from any of the server's threads.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_TLS_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_TLS_H_

#include <microhttpd.h>

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shipper/config/tls.h"

namespace shipper {

class OtlpHttpTls {
 public:
  // Reads shipper.otlp.ssl's files; nullptr when TLS is off. INVALID_ARGUMENT names the key of a
  // file that cannot be read. REQUIRES: OtlpTlsBlock().Validate() found no problem.
  static absl::StatusOr<std::unique_ptr<OtlpHttpTls>> Load(const TlsSettings& settings);

  // Appends the daemon's TLS options, which point into this object: it must outlive the daemon.
  // The daemon needs MHD_USE_TLS too.
  void AppendOptions(std::vector<MHD_OptionItem>* options) const;
  // OK when the connection's client may be served; PERMISSION_DENIED saying why not (no
  // certificate where one is required, or one that does not verify).
  absl::Status CheckClient(MHD_Connection* connection) const;

 private:
  OtlpHttpTls(TlsPem pem, ClientAuthentication client_authentication)
      : pem_(std::move(pem)), client_authentication_(client_authentication) {}

  const TlsPem pem_;
  const ClientAuthentication client_authentication_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_TLS_H_
