#include "shipper/output/otlp/otlp_output_settings.h"

#include <curl/curl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "shipper/config/address.h"

namespace shipper {
namespace {

struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};

// OK when `url` is an http(s) URL without credentials, query or fragment; the error names `key`.
absl::Status CheckUrl(absl::string_view key, const std::string& url) {
  const auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(OtlpOutputKey(key), ": '", url, "' ", why,
                                                   " (expected http(s)://host[:port][/path])"));
  };
  std::unique_ptr<CURLU, UrlDeleter> parsed(curl_url());
  if (curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), CURLU_NON_SUPPORT_SCHEME) !=
      CURLUE_OK) {
    return invalid("is not a URL");
  }
  char* part = nullptr;
  const auto has = [&](CURLUPart what) {
    if (curl_url_get(parsed.get(), what, &part, 0) != CURLUE_OK) return false;
    curl_free(part);
    return true;
  };
  if (!absl::StartsWithIgnoreCase(url, "http://") && !absl::StartsWithIgnoreCase(url, "https://")) {
    return invalid("is not http or https");
  }
  if (has(CURLUPART_USER)) return invalid("holds credentials: send them in headers");
  if (has(CURLUPART_FRAGMENT)) return invalid("has a fragment");
  return absl::OkStatus();
}

// `Name: value` on one line, as a request header carries it.
bool IsHeader(absl::string_view header) {
  const size_t colon = header.find(':');
  return colon != absl::string_view::npos && colon > 0 &&
         header.find_first_of("\r\n") == absl::string_view::npos &&
         header.substr(0, colon).find(' ') == absl::string_view::npos;
}

bool IsHttp(OtlpProtocol protocol) { return protocol != OtlpProtocol::kGrpc; }

bool IsHttps(absl::string_view url) { return absl::StartsWithIgnoreCase(url, "https:"); }

constexpr OtlpSignal kSignals[] = {OtlpSignal::kLogs, OtlpSignal::kTraces, OtlpSignal::kMetrics};

}  // namespace

std::string OtlpOutputKey(absl::string_view key) {
  return absl::StrCat("shipper.output.otlp.", key);
}

absl::string_view ProtocolName(OtlpProtocol protocol) {
  switch (protocol) {
    case OtlpProtocol::kGrpc:
      return "grpc";
    case OtlpProtocol::kHttpProtobuf:
      return "http/protobuf";
    case OtlpProtocol::kHttpJson:
      return "http/json";
  }
  return "";
}

void OtlpOutputSettings::Validate(Problems* problems) const {
  if (enabled && endpoint.empty() && (!IsHttp(protocol) || logs_endpoint.empty())) {
    problems->Add(
        absl::StrCat("config: the otlp output needs ", OtlpOutputKey("endpoint"),
                     IsHttp(protocol) ? absl::StrCat(" or ", OtlpOutputKey("logs_endpoint")) : "",
                     " (the receiver's address)"));
  }
  if (IsHttp(protocol)) {
    if (!endpoint.empty()) problems->Add(CheckUrl("endpoint", endpoint));
    if (!logs_endpoint.empty()) problems->Add(CheckUrl("logs_endpoint", logs_endpoint));
    // Every URL requests go to, the derived ones too: one problem per key they come from.
    for (absl::string_view key : {"endpoint", "logs_endpoint"}) {
      for (OtlpSignal signal : kSignals) {
        const std::string url = Url(signal);
        if (ssl.enabled || UrlKey(signal) != key || !IsHttps(url)) continue;
        problems->Add(absl::StrCat(OtlpOutputKey(key), ": '", url, "' (", SignalRecords(signal),
                                   ") needs TLS, but ", OtlpOutputKey("ssl.enabled"), " is false"));
        break;
      }
    }
  } else {
    if (compression == OtlpCompression::kZstd) {
      problems->Add(absl::StrCat(OtlpOutputKey("compression"), ": zstd only with ",
                                 OtlpOutputKey("protocol"),
                                 " http/protobuf or http/json; gRPC 1.51 compresses with gzip "
                                 "alone (or none)"));
    }
    if (!logs_endpoint.empty()) {
      problems->Add(absl::StrCat(OtlpOutputKey("logs_endpoint"), ": only for ",
                                 OtlpOutputKey("protocol"),
                                 " http/protobuf or http/json; gRPC takes endpoint"));
    }
    if (!endpoint.empty()) {
      if (absl::StartsWithIgnoreCase(endpoint, "http://") ||
          absl::StartsWithIgnoreCase(endpoint, "https://")) {
        problems->Add(absl::StrCat(OtlpOutputKey("endpoint"), ": '", endpoint,
                                   "' is a URL; protocol grpc takes host:port or unix:///path "
                                   "(TLS by ",
                                   OtlpOutputKey("ssl.enabled"), ")"));
      } else {
        problems->Add(CheckAddress(OtlpOutputKey("endpoint"), endpoint, {/*unix_socket=*/true}));
      }
    }
  }
  for (const std::string& header : headers) {
    if (!IsHeader(header)) {
      problems->Add(absl::StrCat(OtlpOutputKey("headers"), ": '", header,
                                 "' is not 'Name: value' on one line"));
    }
  }
  if (timeout <= absl::ZeroDuration()) {
    problems->Add(absl::StrCat(OtlpOutputKey("timeout"), ": must be above 0"));
  }
  OtlpOutputTls().Validate(ssl, problems);
}

void OtlpOutputSettings::Preflight(Problems* problems) const {
  OtlpOutputTls().Preflight(ssl, problems);
}

std::string OtlpOutputSettings::Destination() const {
  return absl::StrCat("otlp ", ProtocolName(protocol), " ",
                      IsHttp(protocol) ? LogsUrl() : endpoint);
}

std::string OtlpOutputSettings::Target(OtlpSignal signal) const {
  if (!IsHttp(protocol)) return absl::StrCat(endpoint, ExportMethod(signal));
  std::string url = Url(signal);
  return url.empty() ? std::string(ProtocolName(protocol)) : url;
}

absl::string_view OtlpOutputSettings::UrlKey(OtlpSignal signal) const {
  const bool from_logs_endpoint =
      !logs_endpoint.empty() && (signal == OtlpSignal::kLogs || endpoint.empty());
  return from_logs_endpoint ? "logs_endpoint" : "endpoint";
}

bool OtlpOutputSettings::AnyHttps() const {
  for (OtlpSignal signal : kSignals) {
    if (IsHttps(Url(signal))) return true;
  }
  return false;
}

std::string OtlpOutputSettings::Url(OtlpSignal signal) const {
  const std::string path = absl::StrCat("/v1/", SignalName(signal));
  if (logs_endpoint.empty()) return absl::StrCat(absl::StripSuffix(endpoint, "/"), path);
  if (signal == OtlpSignal::kLogs) return logs_endpoint;
  if (!endpoint.empty()) return absl::StrCat(absl::StripSuffix(endpoint, "/"), path);
  absl::string_view base = logs_endpoint;
  if (!absl::ConsumeSuffix(&base, "/v1/logs")) return "";
  return absl::StrCat(base, path);
}

std::vector<std::pair<std::string, std::string>> OtlpOutputSettings::HeaderPairs() const {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& header : headers) {
    const size_t colon = header.find(':');
    pairs.emplace_back(absl::AsciiStrToLower(header.substr(0, colon)),
                       std::string(absl::StripAsciiWhitespace(header.substr(colon + 1))));
  }
  return pairs;
}

const TlsBlock& OtlpOutputTls() {
  static const TlsBlock* block =
      new TlsBlock(OtlpOutputKey("ssl"), TlsSide::kClient, "the OTLP receiver");
  return *block;
}

std::vector<Key<OtlpOutputSettings>> OtlpOutputKeys() {
  using K = KeysOf<OtlpOutputSettings>;
  using S = OtlpOutputSettings;
  std::vector<Key<S>> keys = {
      K::String(
          OtlpOutputKey("endpoint"),
          "the receiver: host:port or unix:///path over gRPC; over HTTP a base URL "
          "http(s)://host[:port][/path] to which /v1/logs, /v1/traces and /v1/metrics are appended",
          &S::endpoint),
      K::String(
          OtlpOutputKey("logs_endpoint"),
          "over HTTP, the full URL of logs, used as given (instead of endpoint); without endpoint, "
          "spans and data points go to its /v1/traces and /v1/metrics siblings",
          &S::logs_endpoint),
      K::Choice<OtlpProtocol>(OtlpOutputKey("protocol"), "how requests go",
                              {{"grpc", OtlpProtocol::kGrpc},
                               {"http/protobuf", OtlpProtocol::kHttpProtobuf},
                               {"http/json", OtlpProtocol::kHttpJson}},
                              &S::protocol),
      K::Choice<OtlpCompression>(OtlpOutputKey("compression"), "compression of requests",
                                 {{"gzip", OtlpCompression::kGzip},
                                  {"zstd", OtlpCompression::kZstd},
                                  {"none", OtlpCompression::kNone}},
                                 &S::compression),
      K::StringList(OtlpOutputKey("headers"),
                    "request headers (gRPC metadata), each 'Name: value', such as "
                    "'Authorization: ApiKey ...'",
                    &S::headers),
      K::Duration(OtlpOutputKey("timeout"), "deadline of each export request", &S::timeout),
      K::Size(OtlpOutputKey("max_request_bytes"),
              "largest uncompressed request; batches are split to stay below it (the "
              "Collector's receivers take 4 MiB by default)",
              1024, true, &S::max_request_bytes),
      K::Size(OtlpOutputKey("max_in_flight"), "export requests in flight per output worker", 1,
              false, &S::max_in_flight),
  };
  for (Key<S>& key : OtlpOutputTls().KeysWithin<S>(&S::ssl)) keys.push_back(std::move(key));
  return keys;
}

}  // namespace shipper
