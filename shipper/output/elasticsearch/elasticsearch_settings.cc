#include "shipper/output/elasticsearch/elasticsearch_settings.h"

#include <curl/curl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

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
  ElasticsearchTls().Validate(ssl, problems);
  if (!ssl.enabled) {
    for (const std::string& host : hosts) {
      if (absl::StartsWithIgnoreCase(host, "https:")) {
        problems->Add(absl::StrCat(ElasticsearchKey("hosts"), ": '", host, "' needs TLS, but ",
                                   ElasticsearchKey("ssl.enabled"), " is false"));
      }
    }
  }
}

void ElasticsearchSettings::Preflight(Problems* problems) const {
  ElasticsearchTls().Preflight(ssl, problems);
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

const TlsBlock& ElasticsearchTls() {
  static const TlsBlock* block =
      new TlsBlock(ElasticsearchKey("ssl"), TlsSide::kClient, "Elasticsearch");
  return *block;
}

std::vector<Key<ElasticsearchSettings>> ElasticsearchKeys() {
  using K = KeysOf<ElasticsearchSettings>;
  std::vector<Key<ElasticsearchSettings>> keys = {
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
  };
  for (Key<ElasticsearchSettings>& key :
       ElasticsearchTls().KeysWithin<ElasticsearchSettings>(&ElasticsearchSettings::ssl)) {
    keys.push_back(std::move(key));
  }
  return keys;
}

}  // namespace shipper
