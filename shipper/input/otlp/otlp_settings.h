// The OTLP input's settings (shipper.otlp.*): OpenTelemetry's logs over gRPC
// (opentelemetry.proto.collector.logs.v1.LogsService/Export) and over HTTP (POST /v1/logs), each
// on a listener of its own. Off by default, so that Shippers on one host (and tests) never
// collide on the well-known ports 4317 and 4318; the sidecar manifests turn it on.
//
// One struct for both transports: the gRPC transport (grpc_*) and the HTTP one (http_*) share
// the ack mode, the retry delay, the size limit and the TLS block (shipper.otlp.ssl.*, the same
// keys and checks as shipper.server.ssl.*). What every export does with its request, whichever
// transport took it, is otlp_exports.h.
//
// Thread safety: plain values; the key table is immutable once built.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_SETTINGS_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_SETTINGS_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shipper/config/tls.h"
#include "shipper/input/input.h"

namespace shipper {

// When an Export is answered OK (shipper.otlp.ack).
enum class OtlpAck {
  // Once every record it carried is persisted, as the Producer API's persisted index means it:
  // the output confirmed it, or with the disk queue it is synced to disk.
  kPersisted,
  // Once its records are queued: a crash or an output that never recovers loses what was
  // answered, as with the Collector's otlp receiver.
  kQueued,
};

// "persisted" or "queued"; INVALID_ARGUMENT otherwise.
absl::StatusOr<OtlpAck> ParseOtlpAck(absl::string_view name);
// The inverse of ParseOtlpAck.
absl::string_view OtlpAckName(OtlpAck ack);

struct OtlpSettings final : InputSettings {
  // enabled (shipper.otlp.enabled) is false by default: InputSettings'.

  bool grpc_enabled = true;                     // shipper.otlp.grpc.enabled
  std::string grpc_address = "127.0.0.1:4317";  // shipper.otlp.grpc.server: host:port, unix://
  bool http_enabled = true;                     // shipper.otlp.http.enabled
  std::string http_address = "127.0.0.1:4318";  // shipper.otlp.http.server: host:port
  // shipper.otlp.http.max_connections: OTLP/HTTP connections open at once; one more is closed
  // as soon as it is accepted (otlp_http_server.h says why).
  size_t http_max_connections = 512;
  // shipper.otlp.http.header_timeout: a new connection's first request head must have arrived
  // by then (it is closed otherwise), however slowly it trickles in.
  absl::Duration http_header_timeout = absl::Seconds(10);
  // shipper.otlp.http.idle_timeout: a kept-alive connection whose next request head has not
  // arrived this long after the last answer is closed, and so is one whose body stalls this long.
  absl::Duration http_idle_timeout = absl::Seconds(30);

  OtlpAck ack = OtlpAck::kPersisted;              // shipper.otlp.ack
  absl::Duration retry_delay = absl::Seconds(1);  // shipper.otlp.retry_delay
  // shipper.otlp.retry_window: how long an export persisted with ack: persisted is remembered
  // (by a hash of its request), so that the sender's retry of it is answered OK without
  // queueing it again. 0: not remembered (a retry still joins an export waiting to persist).
  absl::Duration retry_window = absl::Minutes(1);
  // shipper.otlp.max_message_size: the largest request, in bytes after decompression; also the
  // largest record once converted (a larger one is rejected in partial_success).
  size_t max_message_size = 64 << 20;
  TlsSettings ssl;  // shipper.otlp.ssl.*, both listeners (OtlpTlsBlock())

  void Validate(Problems* problems) const override;
  void Preflight(Problems* problems) const override;
  absl::StatusOr<std::unique_ptr<Input>> Build(const InputContext& context) const override;
  std::string Source(const ServerSettings& server) const override;
  // A record converted is at most max_message_size (larger ones are rejected).
  size_t max_event_bytes(const ServerSettings& server) const override { return max_message_size; }
};

// shipper.otlp.ssl: a server's TLS keys, as shipper.server.ssl's (tls.h).
const TlsBlock& OtlpTlsBlock();

InputType OtlpInputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_SETTINGS_H_
