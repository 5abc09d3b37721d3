#include "shipper/output/elasticsearch/elasticsearch_output.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "rapidjson/document.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/output/batch_json.h"
#include "shipper/output/elasticsearch/elasticsearch_bulk.h"
#include "shipper/output/elasticsearch/elasticsearch_pool.h"
#include "shipper/output/elasticsearch/elasticsearch_settings.h"

namespace shipper {
namespace {

using Lease = ConnectionPool::Lease;

// No "Expect: 100-continue" for big bodies: it costs a round trip per request.
std::vector<std::string> CommonHeaders(const ElasticsearchSettings& config) {
  std::vector<std::string> common = {"Expect:", "Accept: application/json"};
  if (!config.api_key.empty()) {
    common.push_back(absl::StrCat("Authorization: ApiKey ", absl::Base64Escape(config.api_key)));
  }
  common.insert(common.end(), config.headers.begin(), config.headers.end());
  return common;
}

std::vector<std::string> BulkHeaders(const ElasticsearchSettings& config) {
  std::vector<std::string> bulk = CommonHeaders(config);
  bulk.push_back("Content-Type: application/x-ndjson");
  if (config.compression_level > 0) bulk.push_back("Content-Encoding: gzip");
  return bulk;
}

class ElasticsearchOutput final : public Output {
 public:
  ElasticsearchOutput(const ElasticsearchSettings& config, std::unique_ptr<ConnectionPool> pool,
                      BulkActions actions)
      : config_(config),
        actions_(std::move(actions)),
        get_headers_(CommonHeaders(config_)),
        bulk_headers_(BulkHeaders(config_)),
        created_(Items("created")),
        duplicate_(Items("duplicate")),
        retried_(Items("retried")),
        dead_lettered_(Items("dead_lettered")),
        pool_(std::move(pool)) {}

  absl::Status Write(const Events& events, Outcome* outcome) override {
    if (pool_->cancelled()) return absl::CancelledError("elasticsearch: shutting down");
    thread_local BatchJson json(Metadata::kOmit);
    json.Encode(events);
    std::vector<BulkItem> items;
    items.reserve(events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      absl::StatusOr<BulkItem> item = actions_.Item(events.bytes(i), i);
      if (item.ok()) {
        items.push_back(*std::move(item));
      } else {
        outcome->rejected.push_back({i, absl::StrCat("elasticsearch: ", item.status().message())});
      }
    }
    if (items.empty()) return absl::OkStatus();

    absl::StatusOr<Lease> lease = pool_->Acquire();
    if (!lease.ok()) return lease.status();
    absl::Status status = lease->checked() ? absl::OkStatus() : CheckVersion(*lease);
    bool answered = false;  // some request of this Write was answered 2xx
    const absl::Span<const BulkItem> all(items);
    for (size_t begin = 0; status.ok() && begin < items.size(); begin += config_.bulk_max_size) {
      const size_t end = std::min(items.size(), begin + config_.bulk_max_size);
      status = Bulk(*lease, json, all.subspan(begin, end - begin), outcome, &answered);
      if (!status.ok()) {
        // The host failed: the requests after this one are not sent, but failed with it.
        for (const BulkItem& item : all.subspan(end)) outcome->Fail(item.event, status.message());
      }
    }
    pool_->Release(*std::move(lease), status);
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

  void Cancel() override { pool_->Cancel(); }

 private:
  static metrics::Counter& Items(absl::string_view outcome) {
    return metrics::ShipperMetrics::Get().OutputItems("elasticsearch", outcome);
  }

  // Sends `items` in one request, or in halves when it is too large. On an error status none of
  // `items` is written, and all of them are in outcome->failed (the caller stops there).
  absl::Status Bulk(Lease& lease, const BatchJson& json, absl::Span<const BulkItem> items,
                    Outcome* outcome, bool* answered) {
    absl::StatusOr<std::string> body =
        BulkBody(json, items, static_cast<int>(config_.compression_level));
    if (!body.ok()) return body.status();
    const std::string& host = lease.url();
    const HttpAnswer answer = lease.Post(kBulkPath, *body, bulk_headers_);
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
      BulkCounts counts;
      status = ReadItems(host, lease.body(), items, outcome, &counts);
      if (status.ok()) {
        created_.Add(counts.created);
        duplicate_.Add(counts.duplicate);
        retried_.Add(counts.retried);
        dead_lettered_.Add(counts.dead_lettered);
        *answered = true;
        return status;
      }
    } else {
      status = RequestError(lease, answer, "POST /_bulk");
    }
    for (const BulkItem& item : items) outcome->Fail(item.event, status.message());
    return status;
  }

  // GET /: the cluster's name and version, logged; majors below 7 refused.
  absl::Status CheckVersion(Lease& lease) {
    const std::string& host = lease.url();
    const HttpAnswer answer = lease.Get("/", get_headers_);
    if (answer.status != 200) return RequestError(lease, answer, "GET /");
    rapidjson::Document doc;
    const std::string& body = lease.body();
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
    lease.set_checked();
    return absl::OkStatus();
  }

  // The error of a request answered with a status that fails it as a whole, or not answered.
  absl::Status RequestError(const Lease& lease, const HttpAnswer& answer,
                            absl::string_view request) const {
    const std::string& host = lease.url();
    if (answer.status == 0) {
      return absl::UnavailableError(
          absl::StrCat("elasticsearch ", host, ": ", request, ": ", answer.error));
    }
    if (answer.status == 401 || answer.status == 403) {
      const std::string keys =
          !config_.api_key.empty() ? ElasticsearchKey("api_key")
          : !config_.username.empty()
              ? absl::StrCat(ElasticsearchKey("username"), " and ", ElasticsearchKey("password"))
              : absl::StrCat(ElasticsearchKey("api_key"), " or ", ElasticsearchKey("username"),
                             " and ", ElasticsearchKey("password"), " (none is set)");
      const std::string message =
          absl::StrCat("elasticsearch ", host, ": ", request, " answered ", answer.status,
                       answer.status == 401 ? " (unauthorized)" : " (forbidden)", ": check ", keys,
                       "; the events are kept and retried");
      LOG(ERROR) << message;
      return answer.status == 401 ? absl::UnauthenticatedError(message)
                                  : absl::PermissionDeniedError(message);
    }
    return absl::UnavailableError(absl::StrCat("elasticsearch ", host, ": ", request, " answered ",
                                               answer.status, ": ", lease.body().substr(0, 300)));
  }

  // Constant after construction.
  const ElasticsearchSettings config_;
  const BulkActions actions_;
  const HttpHeaders get_headers_;
  const HttpHeaders bulk_headers_;
  // shipper_output_items_total{output="elasticsearch"} by outcome.
  metrics::Counter& created_;
  metrics::Counter& duplicate_;
  metrics::Counter& retried_;
  metrics::Counter& dead_lettered_;

  const std::unique_ptr<ConnectionPool> pool_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Output>> ElasticsearchSettings::Build() const {
  absl::StatusOr<TlsPem> tls = ElasticsearchTls().Read(ssl);
  if (!tls.ok()) return tls.status();
  absl::StatusOr<std::unique_ptr<ConnectionPool>> pool = ConnectionPool::New(
      {HostUrls(), worker, timeout, username, password, *std::move(tls), ssl.verification_mode});
  if (!pool.ok()) return pool.status();
  return std::make_unique<ElasticsearchOutput>(*this, *std::move(pool),
                                               BulkActions(IndexFormat(), PipelineFormat()));
}

OutputType ElasticsearchOutputType() {
  return MakeOutputType<ElasticsearchSettings>(
      "elasticsearch", "send events to Elasticsearch (the _bulk API, Beats' rules)",
      ElasticsearchKeys());
}

}  // namespace shipper
