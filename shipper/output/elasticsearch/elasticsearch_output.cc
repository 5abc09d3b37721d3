#include "shipper/output/elasticsearch/elasticsearch_output.h"

#include <curl/curl.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "shipper/config/pem.h"
#include "shipper/config/preflight.h"
#include "shipper/event/field_format.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/output/backoff.h"
#include "shipper/output/batch_json.h"

namespace shipper {
namespace {

constexpr char kKeys[] = "shipper.output.elasticsearch.";
// Keeps answers small: the per-item status and error, not the ids and shards of every item.
constexpr char kBulkPath[] = "/_bulk?filter_path=errors,items.*.status,items.*.error";
// How long a failing host is skipped while another is available: Beats' backoff defaults.
constexpr absl::Duration kHostBackoffInit = absl::Seconds(1);
constexpr absl::Duration kHostBackoffMax = absl::Seconds(60);

std::string KeyName(absl::string_view key) { return absl::StrCat(kKeys, key); }

struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};
struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Headers = std::unique_ptr<curl_slist, SlistDeleter>;

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
    return absl::InvalidArgumentError(absl::StrCat(KeyName("hosts"), ": '", host, "' ", why,
                                                   " (expected http(s)://host:port[/path])"));
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

absl::Status Gzip(absl::string_view in, int level, std::string* out) {
  z_stream z{};
  // 15 + 16: the largest window, with a gzip header and trailer (what Content-Encoding: gzip is).
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("elasticsearch: zlib could not start");
  }
  out->resize(deflateBound(&z, in.size()));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  const int rc = deflate(&z, Z_FINISH);
  out->resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::InternalError("elasticsearch: gzip failed");
  return absl::OkStatus();
}

size_t AppendAnswer(char* data, size_t size, size_t n, void* answer) {
  static_cast<std::string*>(answer)->append(data, size * n);
  return size * n;
}

// libcurl calls it about once a second while a request waits, more often while data flows:
// a non-zero return aborts the request, which is how Cancel() reaches requests in flight.
int AbortWhenCancelled(void* cancelled, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancelled)->load(std::memory_order_relaxed);
}

// A keep-alive connection to one host: libcurl reuses the connection of a handle from request
// to request.
struct Connection {
  std::unique_ptr<CURL, CurlDeleter> curl;
  std::string answer;             // the body of the last answer
  char error[CURL_ERROR_SIZE]{};  // libcurl's detail of the last failure
};

// What a request got: an HTTP status, or 0 and why there was no answer.
struct Answer {
  long status = 0;
  std::string error;
};

// One event as the bulk request carries it.
struct Item {
  size_t event;        // i in the Events of Write()
  bool create;         // the action: create (409: already there) or index
  std::string action;  // its action line, with the newline
};

// The PEM files TLS reads, in the order of Tls's members; unset ones are skipped.
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

// The TLS material, read once at Build().
struct Tls {
  std::string ca, certificate, key;  // PEM; empty: unset
  VerificationMode mode;
};

class ElasticsearchOutput final : public Output {
 public:
  ElasticsearchOutput(const ElasticsearchSettings& config, std::vector<std::string> hosts,
                      FieldFormat index, std::optional<FieldFormat> pipeline, Tls tls)
      : config_(config),
        index_(std::move(index)),
        pipeline_(std::move(pipeline)),
        metadata_id_(*FieldFormat::Parse("%{[@metadata._id]:}", "_id")),
        metadata_op_type_(*FieldFormat::Parse("%{[@metadata.op_type]:}", "op_type")),
        metadata_pipeline_(*FieldFormat::Parse("%{[@metadata.pipeline]:}", "pipeline")),
        tls_(std::move(tls)),
        bases_(std::move(hosts)),
        created_(Items("created")),
        duplicate_(Items("duplicate")),
        retried_(Items("retried")),
        dead_lettered_(Items("dead_lettered")),
        hosts_(bases_.size()) {
    // No "Expect: 100-continue" for big bodies: it costs a round trip per request.
    std::vector<std::string> common = {"Expect:", "Accept: application/json"};
    if (!config_.api_key.empty()) {
      common.push_back(absl::StrCat("Authorization: ApiKey ", absl::Base64Escape(config_.api_key)));
    }
    common.insert(common.end(), config_.headers.begin(), config_.headers.end());
    std::vector<std::string> bulk = common;
    bulk.push_back("Content-Type: application/x-ndjson");
    if (config_.compression_level > 0) bulk.push_back("Content-Encoding: gzip");
    get_headers_ = MakeHeaders(common);
    bulk_headers_ = MakeHeaders(bulk);
  }

  absl::Status Write(const Events& events, Outcome* outcome) override {
    if (cancelled_.load()) return absl::CancelledError("elasticsearch: shutting down");
    thread_local BatchJson json(Metadata::kOmit);
    json.Encode(events);
    std::vector<Item> items;
    items.reserve(events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      absl::StatusOr<Item> item = MakeItem(events.bytes(i), i);
      if (item.ok()) {
        items.push_back(*std::move(item));
      } else {
        outcome->rejected.push_back({i, absl::StrCat("elasticsearch: ", item.status().message())});
      }
    }
    if (items.empty()) return absl::OkStatus();

    absl::StatusOr<Lease> lease = Acquire();
    if (!lease.ok()) return lease.status();
    absl::Status status = lease->checked ? absl::OkStatus() : CheckVersion(*lease);
    bool answered = false;  // some request of this Write was answered 2xx
    const absl::Span<const Item> all(items);
    for (size_t begin = 0; status.ok() && begin < items.size(); begin += config_.bulk_max_size) {
      const size_t end = std::min(items.size(), begin + config_.bulk_max_size);
      status = Bulk(*lease, json, all.subspan(begin, end - begin), outcome, &answered);
      if (!status.ok()) {
        // The host failed: the requests after this one are not sent, but failed with it.
        for (const Item& item : all.subspan(end)) outcome->Fail(item.event, status.message());
      }
    }
    Release(*std::move(lease), status);
    if (!status.ok() && !answered) {
      // Nothing was written: the whole call failed, which Delivery retries as a whole.
      outcome->Clear();
      return status;
    }
    const auto by_event = [](const Rejection& a, const Rejection& b) { return a.event < b.event; };
    std::sort(outcome->rejected.begin(), outcome->rejected.end(), by_event);
    std::sort(outcome->failed.begin(), outcome->failed.end());
    return absl::OkStatus();
  }

  void Cancel() override {
    cancelled_.store(true);
    // Wakes the writers waiting for a connection: their condition reads cancelled_.
    absl::MutexLock lock(&mu_);
  }

 private:
  // A host's connections and health.
  struct Host {
    size_t in_flight = 0;
    std::vector<std::unique_ptr<Connection>> idle;
    bool checked = false;  // GET / passed since the host last failed to answer
    absl::Time retry_at = absl::InfinitePast();
    std::optional<Backoff> backoff;  // set while the host fails
  };

  // A connection lent to one Write().
  struct Lease {
    size_t host;
    std::unique_ptr<Connection> connection;
    bool checked;       // the host passed GET /
    bool lost = false;  // a request got no answer: the connection is dropped
  };

  static metrics::Counter& Items(absl::string_view outcome) {
    return metrics::ShipperMetrics::Get().OutputItems("elasticsearch", outcome);
  }

  static Headers MakeHeaders(const std::vector<std::string>& lines) {
    curl_slist* list = nullptr;
    for (const std::string& line : lines) list = curl_slist_append(list, line.c_str());
    return Headers(list);
  }

  absl::StatusOr<Item> MakeItem(absl::string_view event, size_t i) const {
    absl::StatusOr<std::string> index = index_.Format(event);
    if (!index.ok()) return index.status();
    const std::string id = *metadata_id_.Format(event);
    std::string pipeline = *metadata_pipeline_.Format(event);
    if (pipeline.empty() && pipeline_) {
      absl::StatusOr<std::string> formatted = pipeline_->Format(event);
      if (!formatted.ok()) return formatted.status();
      pipeline = *std::move(formatted);
    }
    const bool create = *metadata_op_type_.Format(event) != "index";
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    w.StartObject();
    w.Key(create ? "create" : "index");
    w.StartObject();
    w.Key("_index");
    // Elasticsearch refuses index names with capitals; Beats lowercases them too.
    const std::string lower = absl::AsciiStrToLower(*index);
    w.String(lower.data(), static_cast<rapidjson::SizeType>(lower.size()));
    if (!id.empty()) {
      w.Key("_id");
      w.String(id.data(), static_cast<rapidjson::SizeType>(id.size()));
    }
    if (!pipeline.empty()) {
      w.Key("pipeline");
      w.String(pipeline.data(), static_cast<rapidjson::SizeType>(pipeline.size()));
    }
    w.EndObject();
    w.EndObject();
    return Item{i, create,
                absl::StrCat(absl::string_view(buffer.GetString(), buffer.GetSize()), "\n")};
  }

  // Sends `items` in one request, or in halves when it is too large. On an error status none of
  // `items` is written, and all of them are in outcome->failed (the caller stops there).
  absl::Status Bulk(Lease& lease, const BatchJson& json, absl::Span<const Item> items,
                    Outcome* outcome, bool* answered) {
    std::string body;
    for (const Item& item : items) absl::StrAppend(&body, item.action, json.line(item.event));
    std::string gzipped;
    if (config_.compression_level > 0) {
      absl::Status status = Gzip(body, static_cast<int>(config_.compression_level), &gzipped);
      if (!status.ok()) return status;
      body.swap(gzipped);
    }
    const std::string& host = bases_[lease.host];
    const Answer answer = Perform(lease, absl::StrCat(host, kBulkPath), body, bulk_headers_.get());
    metrics::ShipperMetrics::Get()
        .OutputRequests("elasticsearch", answer.status ? absl::StrCat(answer.status) : "none")
        .Add();
    absl::Status status;
    if (answer.status == 413 && items.size() > 1) {
      const size_t half = items.size() / 2;
      status = Bulk(lease, json, items.first(half), outcome, answered);
      if (status.ok()) return Bulk(lease, json, items.subspan(half), outcome, answered);
      items = items.subspan(half);  // the first half's are failed already
    } else if (answer.status == 413) {
      outcome->rejected.push_back(
          {items[0].event, absl::StrCat("elasticsearch ", host,
                                        ": 413: the event alone is larger than the cluster's "
                                        "http.max_content_length")});
      dead_lettered_.Add();
      return absl::OkStatus();
    } else if (answer.status >= 200 && answer.status < 300) {
      status = ReadItems(host, lease.connection->answer, items, outcome);
      if (status.ok()) {
        *answered = true;
        return status;
      }
    } else {
      status = RequestError(lease, answer, "POST /_bulk");
    }
    for (const Item& item : items) outcome->Fail(item.event, status.message());
    return status;
  }

  // Applies Beats' per-item rules to a 2xx answer of `items`.
  absl::Status ReadItems(const std::string& host, const std::string& body,
                         absl::Span<const Item> items, Outcome* outcome) {
    rapidjson::Document doc;
    doc.Parse(body.data(), body.size());
    const auto unreadable = [&](absl::string_view why) {
      return absl::UnavailableError(
          absl::StrCat("elasticsearch ", host, ": _bulk answer ", why, ": ", body.substr(0, 200)));
    };
    if (doc.HasParseError() || !doc.IsObject()) return unreadable("is not JSON");
    const auto errors = doc.FindMember("errors");
    if (errors != doc.MemberEnd() && errors->value.IsFalse()) {
      created_.Add(items.size());
      return absl::OkStatus();
    }
    const auto answered = doc.FindMember("items");
    if (answered == doc.MemberEnd() || !answered->value.IsArray() ||
        answered->value.Size() != items.size()) {
      return unreadable(absl::StrCat("does not hold one item for each of ", items.size()));
    }
    // Every item is checked before any is applied: an unreadable answer fails them all.
    for (const rapidjson::Value& item : answered->value.GetArray()) {
      if (!item.IsObject() || item.MemberCount() != 1 || !item.MemberBegin()->value.IsObject() ||
          !item.MemberBegin()->value.HasMember("status") ||
          !item.MemberBegin()->value["status"].IsInt()) {
        return unreadable("has an item that is not {action: {status: ...}}");
      }
    }
    for (size_t k = 0; k < items.size(); ++k) {
      const rapidjson::Value& result = answered->value[k].MemberBegin()->value;
      const int code = result["status"].GetInt();
      if (code >= 200 && code < 300) {
        created_.Add();
        continue;
      }
      if (code == 409 && items[k].create) {
        duplicate_.Add();
        continue;
      }
      std::string reason = absl::StrCat("elasticsearch ", host, ": ", code);
      const auto error = result.FindMember("error");
      if (error != result.MemberEnd() && error->value.IsObject()) {
        for (const char* part : {"type", "reason"}) {
          const auto member = error->value.FindMember(part);
          if (member != error->value.MemberEnd() && member->value.IsString()) {
            absl::StrAppend(&reason, " ", member->value.GetString());
          }
        }
      }
      if (code == 429 || code >= 500) {
        outcome->Fail(items[k].event, reason);
        retried_.Add();
      } else {
        outcome->rejected.push_back({items[k].event, std::move(reason)});
        dead_lettered_.Add();
      }
    }
    return absl::OkStatus();
  }

  // GET /: the cluster's name and version, logged; majors below 7 refused.
  absl::Status CheckVersion(Lease& lease) {
    const std::string& host = bases_[lease.host];
    const Answer answer = Perform(lease, absl::StrCat(host, "/"), std::nullopt, get_headers_.get());
    if (answer.status != 200) return RequestError(lease, answer, "GET /");
    rapidjson::Document doc;
    const std::string& body = lease.connection->answer;
    doc.Parse(body.data(), body.size());
    std::string version;
    if (!doc.HasParseError() && doc.IsObject() && doc.HasMember("version") &&
        doc["version"].IsObject() && doc["version"].HasMember("number") &&
        doc["version"]["number"].IsString()) {
      version = doc["version"]["number"].GetString();
    }
    int major = 0;
    if (!absl::SimpleAtoi(absl::string_view(version).substr(0, version.find('.')), &major)) {
      return absl::UnavailableError(absl::StrCat(
          "elasticsearch ", host, ": GET / did not answer a version: ", body.substr(0, 200)));
    }
    const std::string cluster = doc.HasMember("cluster_name") && doc["cluster_name"].IsString()
                                    ? doc["cluster_name"].GetString()
                                    : "(unnamed)";
    if (major < 7) {
      const std::string message =
          absl::StrCat("elasticsearch ", host, ": cluster ", cluster, " runs version ", version,
                       "; this output needs 7 or later (data streams, the _bulk create action)");
      LOG(ERROR) << message;
      return absl::FailedPreconditionError(message);
    }
    LOG(INFO) << "elasticsearch " << host << ": cluster " << cluster << ", version " << version;
    lease.checked = true;
    return absl::OkStatus();
  }

  // The error of a request answered with a status that fails it as a whole, or not answered.
  absl::Status RequestError(Lease& lease, const Answer& answer, absl::string_view request) const {
    const std::string& host = bases_[lease.host];
    if (answer.status == 0) {
      return absl::UnavailableError(
          absl::StrCat("elasticsearch ", host, ": ", request, ": ", answer.error));
    }
    if (answer.status == 401 || answer.status == 403) {
      const std::string keys = !config_.api_key.empty() ? KeyName("api_key")
                               : !config_.username.empty()
                                   ? absl::StrCat(KeyName("username"), " and ", KeyName("password"))
                                   : absl::StrCat(KeyName("api_key"), " or ", KeyName("username"),
                                                  " and ", KeyName("password"), " (none is set)");
      const std::string message =
          absl::StrCat("elasticsearch ", host, ": ", request, " answered ", answer.status,
                       answer.status == 401 ? " (unauthorized)" : " (forbidden)", ": check ", keys,
                       "; the events are kept and retried");
      LOG(ERROR) << message;
      return answer.status == 401 ? absl::UnauthenticatedError(message)
                                  : absl::PermissionDeniedError(message);
    }
    return absl::UnavailableError(absl::StrCat("elasticsearch ", host, ": ", request, " answered ",
                                               answer.status, ": ",
                                               lease.connection->answer.substr(0, 300)));
  }

  Answer Perform(Lease& lease, const std::string& url, std::optional<absl::string_view> body,
                 curl_slist* headers) {
    Connection& c = *lease.connection;
    CURL* curl = c.curl.get();
    c.answer.clear();
    c.error[0] = '\0';
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    if (body) {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
    } else {
      curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    }
    const CURLcode rc = curl_easy_perform(curl);
    if (rc != CURLE_OK) {
      lease.lost = true;
      if (rc == CURLE_ABORTED_BY_CALLBACK) return {0, "cancelled at shutdown"};
      return {0, c.error[0] != '\0' ? std::string(c.error) : curl_easy_strerror(rc)};
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    return {status, ""};
  }

  std::unique_ptr<Connection> Connect() {
    auto c = std::make_unique<Connection>();
    c->curl.reset(curl_easy_init());
    CHECK(c->curl != nullptr) << "curl_easy_init failed";
    CURL* curl = c->curl.get();
    // libcurl's timeouts use signals unless told not to, which threads must not.
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(config_.timeout)));
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, c->error);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendAnswer);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &c->answer);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, AbortWhenCancelled);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &cancelled_);
    if (!config_.username.empty()) {
      curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
      curl_easy_setopt(curl, CURLOPT_USERNAME, config_.username.c_str());
      curl_easy_setopt(curl, CURLOPT_PASSWORD, config_.password.c_str());
    }
    const auto blob = [&](CURLoption option, const std::string& pem) {
      if (pem.empty()) return;
      curl_blob b{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(curl, option, &b);
    };
    blob(CURLOPT_CAINFO_BLOB, tls_.ca);
    blob(CURLOPT_SSLCERT_BLOB, tls_.certificate);
    blob(CURLOPT_SSLKEY_BLOB, tls_.key);
    if (!tls_.certificate.empty()) curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    if (!tls_.key.empty()) curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, tls_.mode == VerificationMode::kNone ? 0L : 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, tls_.mode == VerificationMode::kFull ? 2L : 0L);
    return c;
  }

  bool ConnectionFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (cancelled_.load()) return true;
    for (const Host& host : hosts_) {
      if (host.in_flight < config_.worker) return true;
    }
    return false;
  }

  // A connection to the next host round-robin that has one free, preferring hosts that are not
  // backing off; waits while every host has `worker` requests in flight.
  absl::StatusOr<Lease> Acquire() ABSL_LOCKS_EXCLUDED(mu_) {
    Lease lease;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &ElasticsearchOutput::ConnectionFree));
      if (cancelled_.load()) return absl::CancelledError("elasticsearch: shutting down");
      const absl::Time now = absl::Now();
      std::optional<size_t> pick;
      for (size_t k = 0; k < hosts_.size(); ++k) {
        const size_t h = (next_host_ + k) % hosts_.size();
        if (hosts_[h].in_flight >= config_.worker) continue;
        if (hosts_[h].retry_at <= now) {
          pick = h;
          break;
        }
        if (!pick || hosts_[h].retry_at < hosts_[*pick].retry_at) pick = h;
      }
      Host& host = hosts_[*pick];
      next_host_ = *pick + 1;
      ++host.in_flight;
      lease.host = *pick;
      lease.checked = host.checked;
      if (!host.idle.empty()) {
        lease.connection = std::move(host.idle.back());
        host.idle.pop_back();
      }
    }
    if (lease.connection == nullptr) lease.connection = Connect();
    return lease;
  }

  // Returns the lease's connection; a host whose request failed backs off.
  void Release(Lease lease, const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    Host& host = hosts_[lease.host];
    --host.in_flight;
    if (lease.lost) {
      host.checked = false;  // it may come back as another cluster, or another version
    } else {
      host.checked = host.checked || lease.checked;
      host.idle.push_back(std::move(lease.connection));
    }
    if (status.ok()) {
      host.backoff.reset();
      host.retry_at = absl::InfinitePast();
    } else {
      if (!host.backoff) host.backoff.emplace(kHostBackoffInit, kHostBackoffMax);
      host.retry_at = absl::Now() + host.backoff->Next();
    }
  }

  // Constant after construction.
  const ElasticsearchSettings config_;
  const FieldFormat index_;
  const std::optional<FieldFormat> pipeline_;
  // What the event's metadata may set, as in Beats; empty when it does not.
  const FieldFormat metadata_id_;
  const FieldFormat metadata_op_type_;
  const FieldFormat metadata_pipeline_;
  const Tls tls_;
  const std::vector<std::string> bases_;  // the hosts' URLs
  Headers get_headers_;
  Headers bulk_headers_;
  // shipper_output_items_total{output="elasticsearch"} by outcome.
  metrics::Counter& created_;
  metrics::Counter& duplicate_;
  metrics::Counter& retried_;
  metrics::Counter& dead_lettered_;

  std::atomic<bool> cancelled_{false};

  absl::Mutex mu_;
  std::vector<Host> hosts_ ABSL_GUARDED_BY(mu_);  // as bases_
  size_t next_host_ ABSL_GUARDED_BY(mu_) = 0;     // where round-robin starts
};

}  // namespace

void ElasticsearchSettings::Validate(Problems* problems) const {
  if (hosts.empty()) problems->Add(absl::StrCat(KeyName("hosts"), ": name at least one URL"));
  for (const std::string& host : hosts) problems->Add(ParseHost(host).status());
  problems->Add(FieldFormat::Parse(index, KeyName("index")).status());
  if (!pipeline.empty()) problems->Add(FieldFormat::Parse(pipeline, KeyName("pipeline")).status());
  if (!api_key.empty() && (!username.empty() || !password.empty())) {
    problems->Add(absl::StrCat("config: ", KeyName("api_key"), " and ", KeyName("username"), "/",
                               KeyName("password"), " are both set: choose one way to log in"));
  }
  if (!api_key.empty() && api_key.find(':') == std::string::npos) {
    problems->Add(absl::StrCat(KeyName("api_key"), ": expected id:key (the API key's id and key)"));
  }
  if (username.empty() != password.empty()) {
    problems->Add(absl::StrCat("config: ", KeyName("username"), " and ", KeyName("password"),
                               " go together: set both or neither"));
  }
  for (const std::string& header : headers) {
    if (!IsHeader(header)) {
      problems->Add(
          absl::StrCat(KeyName("headers"), ": '", header, "' is not 'Name: value' on one line"));
    }
  }
  if (compression_level > 9) {
    problems->Add(absl::StrCat(KeyName("compression_level"), ": ", compression_level,
                               " is above 9 (gzip levels are 0, none, to 9)"));
  }
  if (timeout <= absl::ZeroDuration()) {
    problems->Add(absl::StrCat(KeyName("timeout"), ": must be above 0"));
  }
  if (ssl.certificate.empty() != ssl.key.empty()) {
    problems->Add(absl::StrCat("config: ", KeyName("ssl.certificate"), " and ", KeyName("ssl.key"),
                               " go together: set both or neither"));
  }
}

void ElasticsearchSettings::Preflight(Problems* problems) const {
  for (const PemFile& file : PemFiles(ssl)) {
    if (!file.path.empty()) CheckPem(problems, KeyName(file.key), file.path, file.what);
  }
}

absl::StatusOr<std::unique_ptr<Output>> ElasticsearchSettings::Build() const {
  // Once, before any thread makes a handle (curl_global_init is not thread-safe everywhere).
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) {
    return absl::InternalError(absl::StrCat("elasticsearch: libcurl: ", curl_easy_strerror(init)));
  }
  std::vector<std::string> bases;
  for (const std::string& host : hosts) bases.push_back(*ParseHost(host));
  Tls tls{"", "", "", ssl.verification_mode};
  std::string* pems[] = {&tls.ca, &tls.certificate, &tls.key};
  const std::vector<PemFile> files = PemFiles(ssl);
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].path.empty()) continue;
    absl::StatusOr<std::string> pem = ReadPem(KeyName(files[i].key), files[i].path, files[i].what);
    if (!pem.ok()) return pem.status();
    *pems[i] = *std::move(pem);
  }
  std::optional<FieldFormat> pipeline_format;
  if (!pipeline.empty()) pipeline_format = *FieldFormat::Parse(pipeline, KeyName("pipeline"));
  return std::make_unique<ElasticsearchOutput>(*this, std::move(bases),
                                               *FieldFormat::Parse(index, KeyName("index")),
                                               std::move(pipeline_format), std::move(tls));
}

std::string ElasticsearchSettings::Destination() const {
  return absl::StrCat("elasticsearch ", absl::StrJoin(hosts, ","), " index ", index);
}

OutputType ElasticsearchOutputType() {
  using K = KeysOf<ElasticsearchSettings>;
  using Ssl = ElasticsearchSettings::Ssl;
  const auto ssl = [](auto member) {
    return [member](ElasticsearchSettings & s) -> auto& { return s.ssl.*member; };
  };
  return MakeOutputType<ElasticsearchSettings>(
      "elasticsearch", "send events to Elasticsearch (the _bulk API, Beats' rules)",
      {
          K::StringList(KeyName("hosts"),
                        "URLs http(s)://host:port[/path] (port 9200 when unset); requests spread "
                        "over them, a failing one backs off",
                        &ElasticsearchSettings::hosts),
          K::String(KeyName("index"),
                    "index or data stream of each event, a format: %{[field]:default} takes it "
                    "from the event",
                    &ElasticsearchSettings::index),
          K::String(KeyName("pipeline"),
                    "ingest pipeline, a format (unset: none, unless @metadata.pipeline names one)",
                    &ElasticsearchSettings::pipeline),
          K::String(KeyName("api_key"), "API key as id:key (instead of username and password)",
                    &ElasticsearchSettings::api_key),
          K::String(KeyName("username"), "basic authentication user (with password)",
                    &ElasticsearchSettings::username),
          K::String(KeyName("password"), "basic authentication password",
                    &ElasticsearchSettings::password),
          K::StringList(KeyName("headers"),
                        "extra request headers, each 'Name: value' (a list: values cannot hold "
                        "commas)",
                        &ElasticsearchSettings::headers),
          K::Size(KeyName("compression_level"), "gzip level of request bodies, 0 (none) to 9", 0,
                  false, &ElasticsearchSettings::compression_level),
          K::Size(KeyName("bulk_max_size"), "most events in one bulk request", 1, false,
                  &ElasticsearchSettings::bulk_max_size),
          K::Duration(KeyName("timeout"), "deadline of each HTTP request",
                      &ElasticsearchSettings::timeout),
          K::Size(KeyName("worker"), "bulk requests in flight per host", 1, false,
                  &ElasticsearchSettings::worker),
          K::String(KeyName("ssl.certificate_authorities"),
                    "PEM bundle of the CAs the server's certificate must chain to (unset: the "
                    "system's)",
                    ssl(&Ssl::certificate_authorities)),
          K::String(KeyName("ssl.certificate"), "PEM client certificate (with ssl.key)",
                    ssl(&Ssl::certificate)),
          K::String(KeyName("ssl.key"), "PEM private key of ssl.certificate", ssl(&Ssl::key)),
          K::Choice<VerificationMode>(KeyName("ssl.verification_mode"),
                                      "full: chain and host name; certificate: chain only; none: "
                                      "nothing (tests only)",
                                      {{"full", VerificationMode::kFull},
                                       {"certificate", VerificationMode::kCertificate},
                                       {"none", VerificationMode::kNone}},
                                      ssl(&Ssl::verification_mode)),
      });
}

}  // namespace shipper
