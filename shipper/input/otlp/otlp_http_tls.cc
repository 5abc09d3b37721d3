#include "shipper/input/otlp/otlp_http_tls.h"

#include <gnutls/gnutls.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "shipper/input/otlp/otlp_settings.h"

namespace shipper {
namespace {

// GnuTLS's defaults without SSL 3, TLS 1.0 and 1.1.
constexpr char kPriorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

}  // namespace

absl::StatusOr<std::unique_ptr<OtlpHttpTls>> OtlpHttpTls::Load(const TlsSettings& settings) {
  if (!OtlpTlsBlock().On(settings)) return nullptr;
  absl::StatusOr<TlsPem> pem = OtlpTlsBlock().Read(settings);
  if (!pem.ok()) return pem.status();
  return std::unique_ptr<OtlpHttpTls>(
      new OtlpHttpTls(*std::move(pem), settings.client_authentication));
}

void OtlpHttpTls::AppendOptions(std::vector<MHD_OptionItem>* options) const {
  options->push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(pem_.certificate.c_str())});
  options->push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(pem_.key.c_str())});
  options->push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(kPriorities)});
  if (client_authentication_ != ClientAuthentication::kNone) {
    options->push_back(
        {MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(pem_.certificate_authorities.c_str())});
  }
}

absl::Status OtlpHttpTls::CheckClient(MHD_Connection* connection) const {
  if (client_authentication_ == ClientAuthentication::kNone) return absl::OkStatus();
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) {
    return absl::PermissionDeniedError("no TLS session");
  }
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  unsigned int certificates = 0;
  if (gnutls_certificate_get_peers(session, &certificates) == nullptr || certificates == 0) {
    if (client_authentication_ == ClientAuthentication::kOptional) return absl::OkStatus();
    return absl::PermissionDeniedError(absl::StrCat("the client sent no certificate (",
                                                    OtlpTlsBlock().KeyName("client_authentication"),
                                                    ": required)"));
  }
  unsigned int verdict = 0;
  const int error = gnutls_certificate_verify_peers2(session, &verdict);
  if (error != GNUTLS_E_SUCCESS || verdict != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("the client's certificate does not verify against ",
                     OtlpTlsBlock().KeyName("certificate_authorities")));
  }
  return absl::OkStatus();
}

}  // namespace shipper
