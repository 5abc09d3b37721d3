#include "shipper/listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grpcpp/security/server_credentials.h"

namespace shipper {
namespace {

// The PEM file a key names, checked to hold a `what` block ("CERTIFICATE", "PRIVATE KEY").
absl::StatusOr<std::string> ReadPem(absl::string_view key, const std::string& path,
                                    absl::string_view what) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("config key '", key, "': cannot read '", path,
                                                   "' (", std::strerror(errno), ")"));
  }
  std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!absl::StrContains(pem, "-----BEGIN ") || !absl::StrContains(pem, what)) {
    return absl::InvalidArgumentError(absl::StrCat("config key '", key, "': '", path,
                                                   "' is not a PEM file with a ", what));
  }
  return pem;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ListenerCredentials(
    const Config::Ssl& ssl) {
  if (ssl.certificate.empty()) {
    if (!ssl.key.empty() || ssl.client_authentication != ClientAuthentication::kNone) {
      return absl::InvalidArgumentError(
          "shipper.server.ssl.key and client_authentication need "
          "shipper.server.ssl.certificate: set it to serve TLS");
    }
    return grpc::InsecureServerCredentials();
  }
  if (ssl.key.empty()) {
    return absl::InvalidArgumentError(
        "shipper.server.ssl.certificate needs shipper.server.ssl.key (its private key)");
  }
  absl::StatusOr<std::string> cert =
      ReadPem("shipper.server.ssl.certificate", ssl.certificate, "CERTIFICATE");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("shipper.server.ssl.key", ssl.key, "PRIVATE KEY");
  if (!key.ok()) return key.status();

  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  switch (ssl.client_authentication) {
    case ClientAuthentication::kNone:
      options.client_certificate_request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
      return grpc::SslServerCredentials(options);
    case ClientAuthentication::kOptional:
      options.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
      break;
    case ClientAuthentication::kRequired:
      options.client_certificate_request =
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
      break;
  }
  if (ssl.certificate_authorities.empty()) {
    return absl::InvalidArgumentError(
        "shipper.server.ssl.client_authentication verifies client certificates against "
        "shipper.server.ssl.certificate_authorities: set it");
  }
  absl::StatusOr<std::string> cas = ReadPem("shipper.server.ssl.certificate_authorities",
                                            ssl.certificate_authorities, "CERTIFICATE");
  if (!cas.ok()) return cas.status();
  options.pem_root_certs = *cas;
  return grpc::SslServerCredentials(options);
}

std::string UnixSocketPath(absl::string_view address) {
  if (!absl::ConsumePrefix(&address, "unix:")) return "";
  absl::ConsumePrefix(&address, "//");  // unix:///abs/path keeps its leading slash
  return std::string(address);
}

absl::Status ReplaceStaleSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();  // nothing there
  if (!S_ISSOCK(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' exists and is not a socket: remove it or change shipper.server.server"));
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("unix socket path '", path, "' is longer than ",
                                                   sizeof(addr.sun_path) - 1, " bytes"));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket(): ", std::strerror(errno)));
  const bool listening = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  if (listening) {
    return absl::UnavailableError(absl::StrCat(
        "another process listens on '", path, "': stop it or change shipper.server.server"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InvalidArgumentError(absl::StrCat("cannot remove the stale socket '", path,
                                                   "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace shipper
