// TLS settings as every connection's `ssl` block gives them, as Beats has one `ssl` block: the
// listener's (shipper.server.ssl) and each output's (shipper.output.<name>.ssl). One struct, one
// set of key rows made for a key prefix, one Validate and one Preflight, so that every block
// takes the same keys with the same meaning and refuses the same mistakes in the same words,
// naming the key to fix.
//
// The two ends of a connection need different keys:
//   - a server (a listener) serves TLS when `certificate` is set, with its `key`;
//     `client_authentication` asks clients for a certificate, verified against
//     `certificate_authorities` (mTLS).
//   - a client speaks TLS when `enabled`; `certificate_authorities` verify the server's
//     certificate (unset: the system's roots), `verification_mode` says how much of it;
//     `certificate` and `key`, both or neither, are the client's own, for mTLS.
// All files are PEM, named by path.
//
//   struct KafkaSettings { TlsSettings ssl; ... };
//   const TlsBlock tls("shipper.output.kafka.ssl", TlsSide::kClient, "the brokers");
//   keys = tls.KeysWithin<KafkaSettings>(&KafkaSettings::ssl);
//
// Thread safety: plain values; a TlsBlock is immutable. Read() and Preflight() read files.
#ifndef SHIPPER_SHIPPER_CONFIG_TLS_H_
#define SHIPPER_SHIPPER_CONFIG_TLS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shipper/config/key.h"
#include "shipper/config/problems.h"

namespace shipper {

enum class TlsSide { kServer, kClient };

// How much of the server's certificate a client checks, as Beats' ssl.verification_mode says.
enum class VerificationMode {
  kFull,         // the chain to a trusted CA and the host name
  kCertificate,  // the chain only
  kNone,         // nothing: for tests and trusted networks only
};

// Whether a server asks clients for a certificate, and whether it must verify.
enum class ClientAuthentication { kNone, kOptional, kRequired };

struct TlsSettings {
  bool enabled = false;  // a client's switch; a server's TLS follows `certificate`
  std::vector<std::string> certificate_authorities;  // their certificates, together
  std::string certificate;
  std::string key;
  VerificationMode verification_mode = VerificationMode::kFull;              // a client's
  ClientAuthentication client_authentication = ClientAuthentication::kNone;  // a server's
};

// The contents of the PEM files TLS uses, read once when a connection is set up.
struct TlsPem {
  std::string certificate_authorities;  // every CA file's, one after the other; empty: none
  std::string certificate;              // empty: none
  std::string key;
};

// The `ssl` block at `prefix` (shipper.server.ssl) on one `side` of connections to `peer` (for
// --help: "clients", "the brokers").
class TlsBlock {
 public:
  TlsBlock(std::string prefix, TlsSide side, std::string peer);

  // The full name of the block's key `leaf` ("certificate"), for messages.
  std::string KeyName(absl::string_view leaf) const;
  // Whether `tls` turns TLS on: `enabled` for a client, a certificate for a server.
  bool On(const TlsSettings& tls) const;

  // The block's keys: a server's certificate, key, certificate_authorities and
  // client_authentication; a client's enabled, certificate_authorities, certificate, key and
  // verification_mode.
  std::vector<Key<TlsSettings>> Keys() const;
  // The same keys on a settings struct S that holds the block at `field`.
  template <typename S>
  std::vector<Key<S>> KeysWithin(Field<S, TlsSettings> field) const {
    std::vector<Key<S>> keys;
    for (const Key<TlsSettings>& key : Keys()) keys.push_back(key.template Within<S>(field));
    return keys;
  }

  // What no single key can check on its own: files without TLS on, a certificate without its key
  // (or a key without it), client authentication without CAs. Pure.
  void Validate(const TlsSettings& tls, Problems* problems) const;
  // Each file Read() would read is readable PEM of its kind. Creates nothing.
  void Preflight(const TlsSettings& tls, Problems* problems) const;
  // The files of TLS that is on; INVALID_ARGUMENT names the key of a file that cannot be read or
  // is not PEM. Empty when TLS is off. REQUIRES: Validate() found no problem.
  absl::StatusOr<TlsPem> Read(const TlsSettings& tls) const;

 private:
  struct File;
  // The files TLS reads, with their keys: none when it is off; a server's CAs only when it
  // authenticates clients.
  std::vector<File> Files(const TlsSettings& tls) const;

  const std::string prefix_;
  const TlsSide side_;
  const std::string peer_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_TLS_H_
