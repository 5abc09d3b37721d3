#include "shipper/output/elasticsearch/elasticsearch_settings.h"

#include <curl/curl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "shipper/config/pem.h"
#include "shipper/config/preflight.h"

namespace shipper {
namespace {

struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};

// A part of `url`, or nullopt when it has none.
std::optional<std::string> UrlPart(CURLU* url, CURLUPart what) {
  char* part = nullptr;
  if (curl_url_get(url, what, &part, 0) != CURLUE_OK) return std::nullopt;
  std::string s(part);
  curl_free(part);
  return s;
}

// The host's base URL (scheme://host:port[/path], no trailing slash; port 9200 when unset), as
// Beats reads a host.
absl::StatusOr<std::string> ParseHost(const std::string& host) {
  const auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(ElasticsearchKey("hosts"), ": '", host, "' ",
                                                   why, " (expected http(s)://host:port[/path])"));
  };
  std::unique_ptr<CURLU, UrlDeleter> url(curl_url());
  if (curl_url_set(url.get(), CURLUPART_URL, host.c_str(), CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
    return invalid("is not a URL");
  }
  const std::optional<std::string> scheme = UrlPart(url.get(), CURLUPART_SCHEME);
  if (scheme != "http" && scheme != "https") return invalid("is not http or https");
  if (UrlPart(url.get(), CURLUPART_USER)) {
    return invalid("holds credentials: set username and password, or api_key");
  }
  if (UrlPart(url.get(), CURLUPART_QUERY) || UrlPart(url.get(), CURLUPART_FRAGMENT)) {
    return invalid("has a query or fragment");
  }
  if (!UrlPart(url.get(), CURLUPART_PORT)) curl_url_set(url.get(), CURLUPART_PORT, "9200", 0);
  std::optional<std::string> base = UrlPart(url.get(), CURLUPART_URL);
  if (!base) return invalid("is not a URL");
  return std::string(absl::StripSuffix(*base, "/"));
}

// `Name: value`, as a request header carries it.
bool IsHeader(absl::string_view header) {
  const size_t colon = header.find(':');
  return colon != absl::string_view::npos && colon > 0 &&
         header.find_first_of("\r\n") == absl::string_view::npos &&
         header.substr(0, colon).find(' ') == absl::string_view::npos;
}

// The PEM files TLS reads, in the order of ElasticsearchTls's members; unset ones are skipped.
struct PemFile {
  const char* key;  // after shipper.output.elasticsearch.
  const std::string& path;
  const char* what;
};

std::vector<PemFile> PemFiles(const ElasticsearchSettings::Ssl& ssl) {
  return {
      {"ssl.certificate_authorities", ssl.certificate_authorities, "CERTIFICATE"},
      {"ssl.certificate", ssl.certificate, "CERTIFICATE"},
      {"ssl.key", ssl.key, "PRIVATE KEY"},
  };
}

}  // namespace

std::string ElasticsearchKey(absl::string_view key) {
  return absl::StrCat("shipper.output.elasticsearch.", key);
}

void ElasticsearchSettings::Validate(Problems* problems) const {
  if (hosts.empty())
    problems->Add(absl::StrCat(ElasticsearchKey("hosts"), ": name at least one URL"));
  for (const std::string& host : hosts) problems->Add(ParseHost(host).status());
  problems->Add(FieldFormat::Parse(index, ElasticsearchKey("index")).status());
  if (!pipeline.empty())
    problems->Add(FieldFormat::Parse(pipeline, ElasticsearchKey("pipeline")).status());
  if (!api_key.empty() && (!username.empty() || !password.empty())) {
    problems->Add(absl::StrCat("config: ", ElasticsearchKey("api_key"), " and ",
                               ElasticsearchKey("username"), "/", ElasticsearchKey("password"),
                               " are both set: choose one way to log in"));
  }
  if (!api_key.empty() && api_key.find(':') == std::string::npos) {
    problems->Add(
        absl::StrCat(ElasticsearchKey("api_key"), ": expected id:key (the API key's id and key)"));
  }
  if (username.empty() != password.empty()) {
    problems->Add(absl::StrCat("config: ", ElasticsearchKey("username"), " and ",
                               ElasticsearchKey("password"), " go together: set both or neither"));
  }
  for (const std::string& header : headers) {
    if (!IsHeader(header)) {
      problems->Add(absl::StrCat(ElasticsearchKey("headers"), ": '", header,
                                 "' is not 'Name: value' on one line"));
    }
  }
  if (compression_level > 9) {
    problems->Add(absl::StrCat(ElasticsearchKey("compression_level"), ": ", compression_level,
                               " is above 9 (gzip levels are 0, none, to 9)"));
  }
  if (timeout <= absl::ZeroDuration()) {
    problems->Add(absl::StrCat(ElasticsearchKey("timeout"), ": must be above 0"));
  }
  if (ssl.certificate.empty() != ssl.key.empty()) {
    problems->Add(absl::StrCat("config: ", ElasticsearchKey("ssl.certificate"), " and ",
                               ElasticsearchKey("ssl.key"), " go together: set both or neither"));
  }
}

void ElasticsearchSettings::Preflight(Problems* problems) const {
  for (const PemFile& file : PemFiles(ssl)) {
    if (!file.path.empty()) CheckPem(problems, ElasticsearchKey(file.key), file.path, file.what);
  }
}

std::string ElasticsearchSettings::Destination() const {
  return absl::StrCat("elasticsearch ", absl::StrJoin(hosts, ","), " index ", index);
}

std::vector<std::string> ElasticsearchSettings::HostUrls() const {
  std::vector<std::string> urls;
  for (const std::string& host : hosts) urls.push_back(*ParseHost(host));
  return urls;
}

FieldFormat ElasticsearchSettings::IndexFormat() const {
  return *FieldFormat::Parse(index, ElasticsearchKey("index"));
}

std::optional<FieldFormat> ElasticsearchSettings::PipelineFormat() const {
  if (pipeline.empty()) return std::nullopt;
  return *FieldFormat::Parse(pipeline, ElasticsearchKey("pipeline"));
}

absl::StatusOr<ElasticsearchTls> ReadElasticsearchTls(const ElasticsearchSettings::Ssl& ssl) {
  ElasticsearchTls tls{"", "", "", ssl.verification_mode};
  std::string* pems[] = {&tls.ca, &tls.certificate, &tls.key};
  const std::vector<PemFile> files = PemFiles(ssl);
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].path.empty()) continue;
    absl::StatusOr<std::string> pem =
        ReadPem(ElasticsearchKey(files[i].key), files[i].path, files[i].what);
    if (!pem.ok()) return pem.status();
    *pems[i] = *std::move(pem);
  }
  return tls;
}

std::vector<Key<ElasticsearchSettings>> ElasticsearchKeys() {
  using K = KeysOf<ElasticsearchSettings>;
  using Ssl = ElasticsearchSettings::Ssl;
  const auto ssl = [](auto member) {
    return [member](ElasticsearchSettings & s) -> auto& { return s.ssl.*member; };
  };
  return {
      K::CommaList(ElasticsearchKey("hosts"),
                   "URLs http(s)://host:port[/path] (port 9200 when unset); requests spread "
                   "over them, a failing one backs off",
                   &ElasticsearchSettings::hosts),
      K::String(ElasticsearchKey("index"),
                "index or data stream of each event, a format: %{[field]:default} takes it "
                "from the event",
                &ElasticsearchSettings::index),
      K::String(ElasticsearchKey("pipeline"),
                "ingest pipeline, a format (unset: none, unless @metadata.pipeline names one)",
                &ElasticsearchSettings::pipeline),
      K::String(ElasticsearchKey("api_key"), "API key as id:key (instead of username and password)",
                &ElasticsearchSettings::api_key),
      K::String(ElasticsearchKey("username"), "basic authentication user (with password)",
                &ElasticsearchSettings::username),
      K::String(ElasticsearchKey("password"), "basic authentication password",
                &ElasticsearchSettings::password),
      K::StringList(ElasticsearchKey("headers"),
                    "extra request headers, each 'Name: value' (a list; a value may hold "
                    "commas)",
                    &ElasticsearchSettings::headers),
      K::Size(ElasticsearchKey("compression_level"), "gzip level of request bodies, 0 (none) to 9",
              0, false, &ElasticsearchSettings::compression_level),
      K::Size(ElasticsearchKey("bulk_max_size"), "most events in one bulk request", 1, false,
              &ElasticsearchSettings::bulk_max_size),
      K::Duration(ElasticsearchKey("timeout"), "deadline of each HTTP request",
                  &ElasticsearchSettings::timeout),
      K::Size(ElasticsearchKey("worker"), "bulk requests in flight per host", 1, false,
              &ElasticsearchSettings::worker),
      K::String(ElasticsearchKey("ssl.certificate_authorities"),
                "PEM bundle of the CAs the server's certificate must chain to (unset: the "
                "system's)",
                ssl(&Ssl::certificate_authorities)),
      K::String(ElasticsearchKey("ssl.certificate"), "PEM client certificate (with ssl.key)",
                ssl(&Ssl::certificate)),
      K::String(ElasticsearchKey("ssl.key"), "PEM private key of ssl.certificate", ssl(&Ssl::key)),
      K::Choice<VerificationMode>(ElasticsearchKey("ssl.verification_mode"),
                                  "full: chain and host name; certificate: chain only; none: "
                                  "nothing (tests only)",
                                  {{"full", VerificationMode::kFull},
                                   {"certificate", VerificationMode::kCertificate},
                                   {"none", VerificationMode::kNone}},
                                  ssl(&Ssl::verification_mode)),
  };
}

}  // namespace shipper
