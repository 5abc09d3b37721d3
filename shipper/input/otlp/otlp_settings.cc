#include "shipper/input/otlp/otlp_settings.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "shipper/config/address.h"
#include "shipper/config/preflight.h"
#include "shipper/input/otlp/otlp_input.h"

namespace shipper {
namespace {

// The HTTP transport serves TCP only: OTLP/HTTP senders know no unix sockets.
constexpr AddressRules kHttpListenAddress = {/*unix_socket=*/false, /*listen=*/true};

}  // namespace

absl::StatusOr<OtlpAck> ParseOtlpAck(absl::string_view name) {
  if (name == "persisted") return OtlpAck::kPersisted;
  if (name == "queued") return OtlpAck::kQueued;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown ack mode '", name, "': expected persisted or queued"));
}

absl::string_view OtlpAckName(OtlpAck ack) {
  switch (ack) {
    case OtlpAck::kPersisted:
      return "persisted";
    case OtlpAck::kQueued:
      return "queued";
  }
  return "";
}

const TlsBlock& OtlpTlsBlock() {
  static const TlsBlock* block = new TlsBlock("shipper.otlp.ssl", TlsSide::kServer, "OTLP senders");
  return *block;
}

void OtlpSettings::Validate(Problems* problems) const {
  problems->Add(CheckAddress("shipper.otlp.grpc.server", grpc_address, kListenAddress));
  problems->Add(CheckAddress("shipper.otlp.http.server", http_address, kHttpListenAddress));
  OtlpTlsBlock().Validate(ssl, problems);
  // gRPC takes the message size as an int.
  if (max_message_size > INT_MAX) {
    problems->Add("config: shipper.otlp.max_message_size must be below 2GiB");
  }
  if (http_header_timeout <= absl::ZeroDuration()) {
    problems->Add("config: shipper.otlp.http.header_timeout must be above 0");
  }
  // libmicrohttpd counts a stalled body in whole seconds.
  if (http_idle_timeout < absl::Seconds(1)) {
    problems->Add("config: shipper.otlp.http.idle_timeout must be 1s or more");
  }
  if (enabled && !grpc_enabled && !http_enabled) {
    problems->Add(
        "config: shipper.otlp.enabled is true but both shipper.otlp.grpc.enabled and "
        "shipper.otlp.http.enabled are false: turn one on, or shipper.otlp.enabled off");
  }
}

void OtlpSettings::Preflight(Problems* problems) const {
  if (grpc_enabled) CheckListenAddress(problems, "shipper.otlp.grpc.server", grpc_address);
  if (http_enabled) CheckListenAddress(problems, "shipper.otlp.http.server", http_address);
  OtlpTlsBlock().Preflight(ssl, problems);
}

absl::StatusOr<std::unique_ptr<Input>> OtlpSettings::Build(const InputContext& context) const {
  return BuildOtlpInput(*this, context);
}

std::string OtlpSettings::Source(const ServerSettings& server) const {
  std::string source = "OTLP logs, traces and metrics";
  if (grpc_enabled) absl::StrAppend(&source, " over gRPC on ", grpc_address);
  if (grpc_enabled && http_enabled) absl::StrAppend(&source, " and");
  if (http_enabled) absl::StrAppend(&source, " over HTTP on ", http_address);
  absl::StrAppend(&source, " (ack: ", OtlpAckName(ack), ")");
  return source;
}

InputType OtlpInputType() {
  using K = KeysOf<OtlpSettings>;
  using S = OtlpSettings;
  std::vector<Key<S>> keys = {
      K::Bool("shipper.otlp.enabled",
              "take OpenTelemetry logs, traces and metrics (OTLP) over gRPC and HTTP, on the "
              "addresses below",
              [](S& s) -> bool& { return s.enabled; }),
      K::Bool("shipper.otlp.grpc.enabled",
              "OTLP/gRPC (LogsService, TraceService, MetricsService), with shipper.otlp",
              &S::grpc_enabled),
      K::Checked(
          "shipper.otlp.grpc.server", "OTLP/gRPC listen address", "host:port or unix:///path",
          [](const std::string& s) { return ParseAddress(s, kListenAddress).status(); },
          [](const std::string& v) { return v; }, &S::grpc_address),
      K::Bool("shipper.otlp.http.enabled",
              "OTLP/HTTP (POST /v1/logs, /v1/traces, /v1/metrics), with shipper.otlp",
              &S::http_enabled),
      K::Checked(
          "shipper.otlp.http.server", "OTLP/HTTP listen address", "host:port",
          [](const std::string& s) { return ParseAddress(s, kHttpListenAddress).status(); },
          [](const std::string& v) { return v; }, &S::http_address),
      K::Size("shipper.otlp.http.max_connections",
              "OTLP/HTTP connections open at once; one more is closed as soon as it is "
              "accepted, and its sender retries",
              1, false, &S::http_max_connections),
      K::Duration("shipper.otlp.http.header_timeout",
                  "a new OTLP/HTTP connection whose first request head has not arrived by then "
                  "is closed",
                  &S::http_header_timeout),
      K::Duration("shipper.otlp.http.idle_timeout",
                  "an OTLP/HTTP connection is closed when its next request has not begun this "
                  "long after the last answer (keep-alive), or its body stalls this long",
                  &S::http_idle_timeout),
      K::Enum<OtlpAck>("shipper.otlp.ack",
                       "answer an export once its records are persisted (the output confirmed "
                       "them; with the disk queue: synced) or once they are queued",
                       "persisted|queued", ParseOtlpAck, OtlpAckName, &S::ack),
      K::Duration("shipper.otlp.retry_delay",
                  "how long senders are told to wait before retrying an export the queue or the "
                  "memory budget had no room for (gRPC RetryInfo, HTTP Retry-After)",
                  &S::retry_delay),
      K::Duration("shipper.otlp.retry_window",
                  "with ack: persisted, how long a persisted export is remembered so that a "
                  "sender's identical retry is answered OK without being queued again (a retry "
                  "of an export still waiting to persist always joins its wait); 0s: not "
                  "remembered",
                  &S::retry_window),
      K::Size("shipper.otlp.max_message_size",
              "largest export request, in bytes after decompression (larger: RESOURCE_EXHAUSTED, "
              "HTTP 413), and largest record once converted (larger: partial_success)",
              1, true, &S::max_message_size),
  };
  for (Key<S>& key : OtlpTlsBlock().KeysWithin<S>(&S::ssl)) keys.push_back(std::move(key));
  return MakeInputType<OtlpSettings>("otlp", keys);
}

}  // namespace shipper
