#include "shipper/config/tls.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "shipper/config/pem.h"
#include "shipper/config/preflight.h"

namespace shipper {

struct TlsBlock::File {
  std::string key;  // in full
  const std::string* path;
  const char* what;              // the PEM block it holds
  std::string TlsPem::*content;  // where Read() puts it
};

namespace {

// "clients'", "the next Shipper's": for --help.
std::string Possessive(absl::string_view noun) {
  return absl::StrCat(noun, absl::EndsWith(noun, "s") ? "'" : "'s");
}

}  // namespace

TlsBlock::TlsBlock(std::string prefix, TlsSide side, std::string peer)
    : prefix_(std::move(prefix)), side_(side), peer_(std::move(peer)) {}

std::string TlsBlock::KeyName(absl::string_view leaf) const {
  return absl::StrCat(prefix_, ".", leaf);
}

bool TlsBlock::On(const TlsSettings& tls) const {
  return side_ == TlsSide::kServer ? !tls.certificate.empty() : tls.enabled;
}

std::vector<Key<TlsSettings>> TlsBlock::Keys() const {
  using K = KeysOf<TlsSettings>;
  using T = TlsSettings;
  if (side_ == TlsSide::kServer) {
    return {
        K::String(KeyName("certificate"),
                  "PEM certificate (chain) of the listener; set: TLS, unset: plaintext",
                  &T::certificate),
        K::String(KeyName("key"), "PEM private key of ssl.certificate", &T::key),
        K::StringList(KeyName("certificate_authorities"),
                      absl::StrCat("PEM files (a list, or one) of the CAs that ", Possessive(peer_),
                                   " certificates must chain to"),
                      &T::certificate_authorities),
        K::Choice<ClientAuthentication>(
            KeyName("client_authentication"),
            "none: no client certificate; optional: verified if sent; required: mTLS",
            {{"none", ClientAuthentication::kNone},
             {"optional", ClientAuthentication::kOptional},
             {"required", ClientAuthentication::kRequired}},
            &T::client_authentication),
    };
  }
  return {
      K::Bool(KeyName("enabled"), absl::StrCat("TLS to ", peer_), &T::enabled),
      K::StringList(KeyName("certificate_authorities"),
                    absl::StrCat("PEM files (a list, or one) of the CAs that ", Possessive(peer_),
                                 " certificate must chain to (unset: the system's)"),
                    &T::certificate_authorities),
      K::String(KeyName("certificate"), "PEM client certificate for mTLS (with ssl.key)",
                &T::certificate),
      K::String(KeyName("key"), "PEM private key of ssl.certificate", &T::key),
      K::Choice<VerificationMode>(KeyName("verification_mode"),
                                  "full: chain and host name; certificate: chain only; none: "
                                  "nothing (tests only)",
                                  {{"full", VerificationMode::kFull},
                                   {"certificate", VerificationMode::kCertificate},
                                   {"none", VerificationMode::kNone}},
                                  &T::verification_mode),
  };
}

void TlsBlock::Validate(const TlsSettings& tls, Problems* problems) const {
  const bool files =
      !tls.certificate_authorities.empty() || !tls.certificate.empty() || !tls.key.empty();
  if (side_ == TlsSide::kServer) {
    if (tls.certificate.empty()) {
      if (!tls.key.empty() || tls.client_authentication != ClientAuthentication::kNone) {
        problems->Add(absl::StrCat(KeyName("key"), " and client_authentication need ",
                                   KeyName("certificate"), ": set it to serve TLS"));
      }
      return;
    }
    if (tls.key.empty()) {
      problems->Add(
          absl::StrCat(KeyName("certificate"), " needs ", KeyName("key"), " (its private key)"));
    }
    if (tls.client_authentication != ClientAuthentication::kNone &&
        tls.certificate_authorities.empty()) {
      problems->Add(absl::StrCat(KeyName("client_authentication"),
                                 " verifies client certificates against ",
                                 KeyName("certificate_authorities"), ": set it"));
    }
    return;
  }
  if (!tls.enabled && files) {
    problems->Add(absl::StrCat("config: ", prefix_, " files are set but TLS is off: set ",
                               KeyName("enabled"), ": true"));
  }
  if (tls.certificate.empty() != tls.key.empty()) {
    problems->Add(absl::StrCat("config: ", KeyName("certificate"), " and ", KeyName("key"),
                               " go together (the client's own, for mTLS): set both or neither"));
  }
}

std::vector<TlsBlock::File> TlsBlock::Files(const TlsSettings& tls) const {
  std::vector<File> files;
  if (!On(tls)) return files;
  if (!tls.certificate.empty()) {
    files.push_back(
        {KeyName("certificate"), &tls.certificate, "CERTIFICATE", &TlsPem::certificate});
  }
  if (!tls.key.empty()) files.push_back({KeyName("key"), &tls.key, "PRIVATE KEY", &TlsPem::key});
  if (side_ == TlsSide::kClient || tls.client_authentication != ClientAuthentication::kNone) {
    for (const std::string& path : tls.certificate_authorities) {
      files.push_back({KeyName("certificate_authorities"), &path, "CERTIFICATE",
                       &TlsPem::certificate_authorities});
    }
  }
  return files;
}

void TlsBlock::Preflight(const TlsSettings& tls, Problems* problems) const {
  for (const File& file : Files(tls)) CheckPem(problems, file.key, *file.path, file.what);
}

absl::StatusOr<TlsPem> TlsBlock::Read(const TlsSettings& tls) const {
  TlsPem pem;
  for (const File& file : Files(tls)) {
    absl::StatusOr<std::string> read = ReadPem(file.key, *file.path, file.what);
    if (!read.ok()) return read.status();
    // The CA files one after the other, each ending its line.
    absl::StrAppend(&(pem.*file.content), *read, absl::EndsWith(*read, "\n") ? "" : "\n");
  }
  return pem;
}

}  // namespace shipper
