#include "shipper/output/grpc_credentials.h"

#include <string>
#include <vector>

#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace shipper {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ClientCredentials(
    const TlsBlock& block, const TlsSettings& ssl) {
  if (!ssl.enabled) return grpc::InsecureChannelCredentials();
  absl::StatusOr<TlsPem> pem = block.Read(ssl);
  if (!pem.ok()) return pem.status();
  if (ssl.verification_mode == VerificationMode::kFull) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = pem->certificate_authorities;
    options.pem_cert_chain = pem->certificate;
    options.pem_private_key = pem->key;
    return grpc::SslCredentials(options);
  }
  namespace tls = grpc::experimental;
  std::vector<tls::IdentityKeyCertPair> identity;
  if (!pem->certificate.empty()) identity.push_back({pem->key, pem->certificate});
  tls::TlsChannelCredentialsOptions options;
  if (!pem->certificate_authorities.empty() || !identity.empty()) {
    options.set_certificate_provider(std::make_shared<tls::StaticDataCertificateProvider>(
        pem->certificate_authorities, identity));
    if (!pem->certificate_authorities.empty()) options.watch_root_certs();
    if (!identity.empty()) options.watch_identity_key_cert_pairs();
  }
  options.set_verify_server_certs(ssl.verification_mode == VerificationMode::kCertificate);
  options.set_certificate_verifier(std::make_shared<tls::NoOpCertificateVerifier>());
  options.set_check_call_host(false);
  return tls::TlsCredentials(options);
}

}  // namespace shipper
