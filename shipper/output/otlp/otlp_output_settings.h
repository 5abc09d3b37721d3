// shipper.output.otlp.*: the OTLP output's settings, their keys and checks, and what Build()
// makes of them (the URL or target requests go to).
//
// Everything here is pure but Preflight(), which reads the PEM files, and Build()
// (otlp_output.cc), which reads them too and makes the output.
//
// Thread safety: the settings are immutable once built; use them from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_OUTPUT_SETTINGS_H_
#define SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_OUTPUT_SETTINGS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shipper/config/key.h"
#include "shipper/config/problems.h"
#include "shipper/config/tls.h"
#include "shipper/input/otlp/otlp_signals.h"
#include "shipper/output/output.h"

namespace shipper {

enum class OtlpProtocol { kGrpc, kHttpProtobuf, kHttpJson };
// zstd: over HTTP only (gRPC 1.51 compresses messages with gzip or deflate alone).
enum class OtlpCompression { kGzip, kNone, kZstd };

// shipper.output.otlp.*
struct OtlpOutputSettings final : OutputSettings {
  // gRPC: host:port or unix:///path. HTTP: a base URL (http(s)://host[:port][/path]) to which
  // /v1/logs, /v1/traces and /v1/metrics are appended, as the OTel exporters read
  // OTEL_EXPORTER_OTLP_ENDPOINT.
  std::string endpoint;
  // HTTP only: the full URL of logs, used as given (OTEL_EXPORTER_OTLP_LOGS_ENDPOINT).
  std::string logs_endpoint;
  OtlpProtocol protocol = OtlpProtocol::kGrpc;
  OtlpCompression compression = OtlpCompression::kGzip;
  std::vector<std::string> headers;  // "Name: value", sent with every request
  absl::Duration timeout = absl::Seconds(5);
  // Of a request's uncompressed body: the Collector's receivers take 4 MiB by default.
  size_t max_request_bytes = 4 << 20;
  size_t max_in_flight = 4;  // requests in flight per worker
  // TLS (a client's shipper.output.otlp.ssl block, tls.h). gRPC: on when enabled. HTTP: an
  // https:// endpoint uses it, and ssl.enabled false refuses one.
  TlsSettings ssl;

  void Validate(Problems* problems) const override;
  void Preflight(Problems* problems) const override;
  // Reads the PEM files and connects to nothing (otlp_output.cc): the receiver may come up later.
  absl::StatusOr<std::unique_ptr<Output>> Build() const override;
  std::string Destination() const override;

  // REQUIRES for all: Validate() found no problem.
  // Where requests of `signal` go, for messages (failures, dead letters): over HTTP the signal's
  // URL (the protocol's name when it has none), over gRPC the endpoint and the signal's Export
  // method.
  std::string Target(OtlpSignal signal) const;
  // HTTP: the URL the requests of `signal` are POSTed to. logs_endpoint is the logs'; when it is
  // set and endpoint is not, the traces' and metrics' are logs_endpoint with its /v1/logs suffix
  // replaced by /v1/traces or /v1/metrics, and empty (spans and points refused, naming the key)
  // when it has no such suffix: sending them to a logs URL would have them read as log records.
  std::string Url(OtlpSignal signal) const;
  std::string LogsUrl() const { return Url(OtlpSignal::kLogs); }
  // HTTP: the key Url(signal) is made from, "endpoint" or "logs_endpoint".
  absl::string_view UrlKey(OtlpSignal signal) const;
  // HTTP: whether any URL requests go to is https (the TLS block is needed).
  bool AnyHttps() const;
  // The headers as (lowercase name, value), as gRPC metadata wants them.
  std::vector<std::pair<std::string, std::string>> HeaderPairs() const;
};

// Every shipper.output.otlp.* key but `enabled`.
std::vector<Key<OtlpOutputSettings>> OtlpOutputKeys();

// "shipper.output.otlp." + key, for messages that name a key.
std::string OtlpOutputKey(absl::string_view key);

// The shipper.output.otlp.ssl block.
const TlsBlock& OtlpOutputTls();

absl::string_view ProtocolName(OtlpProtocol protocol);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_OUTPUT_SETTINGS_H_
