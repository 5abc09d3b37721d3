// The Elasticsearch benchmark's helper (./dev bench e2e, tests/bench/e2e.py): a `_bulk` sink fast
// enough that Shipper, not the server, limits a run, and the baseline Shipper is measured
// against.
//
//   es_bench --serve
//       a bulk sink (not Elasticsearch: it stores nothing) on 127.0.0.1, port from the kernel:
//       prints "listening on 127.0.0.1:PORT" and serves until killed. GET / answers a cluster
//       version (the output checks it); POST .../_bulk reads a body (gzip or not), counts its
//       action lines and answers every item created ({"errors":false,"items":[{"create":{"status":
//       201}},...]}, the documented answer under Shipper's filter_path); GET /_fake/stats
//       answers {"bulk", "items", "bytes"} (bytes as on the wire), as the Python fake does.
//   es_bench --produce --url=http://HOST:PORT --shape=filebeat --events=N
//       sends N documents of the shape, as Shipper's Elasticsearch output writes them (its
//       action lines, documents without @metadata, gzip level --compression_level, requests of
//       --bulk_max_size), straight to that server with libcurl: --inflight requests at a time,
//       each on a keep-alive connection of its own. The documents are encoded before the clock
//       starts, as kafka_bench --produce does; building each body and compressing it is timed.
//       Prints one JSON line: {"events", "events_per_sec", "cpu_sec", "failed"}.
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/codec/compression.h"
#include "shipper/event/event_json.h"
#include "shipper/output/elasticsearch/elasticsearch_bulk.h"
#include "shipper/output/elasticsearch/elasticsearch_settings.h"
#include "tests/load/event_shapes.h"
#include "tests/load/process_cpu.h"

ABSL_FLAG(bool, serve, false, "serve a _bulk sink until killed");
ABSL_FLAG(bool, produce, false, "send --events documents to --url");
ABSL_FLAG(std::string, url, "", "the sink's base URL (--produce)");
ABSL_FLAG(std::string, shape, "filebeat", "event shape: filebeat, tiny or large");
ABSL_FLAG(uint64_t, events, 100000, "documents to send");
ABSL_FLAG(int, compression_level, 1, "gzip level; 0: none (the output's compression_level)");
ABSL_FLAG(uint64_t, bulk_max_size, 1600, "documents per request (the output's bulk_max_size)");
ABSL_FLAG(int, inflight, 1, "requests at a time (the output's worker: 1 per host)");

namespace shipper {
namespace {

// Distinct documents cycled through: more than a request holds, so that gzip never sees one
// document twice in a body.
constexpr size_t kDocuments = 8192;

int Serve() {
  std::atomic<uint64_t> bulks{0}, items{0}, bytes{0};
  httplib::Server server;
  // Headers and body go out in two writes: without this, Nagle holds the body until the
  // client's delayed ACK (40 ms a request). Elasticsearch sets it too.
  server.set_tcp_nodelay(true);
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        R"({"name":"es-bench","cluster_name":"es-bench","version":{"number":"8.11.0"}})",
        "application/json");
  });
  server.Get("/_fake/stats", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(absl::StrCat(R"({"bulk":)", bulks.load(), R"(,"items":)", items.load(),
                                 R"(,"bytes":)", bytes.load(), "}"),
                    "application/json");
  });
  server.Post(R"(/(.*/)?_bulk)", [&](const httplib::Request& req, httplib::Response& res) {
    // cpp-httplib has inflated a gzip body already (Debian builds it with zlib).
    const std::string& body = req.body;
    // Each item is an action line and a document line: Shipper sends no delete.
    const size_t n = std::count(body.begin(), body.end(), '\n') / 2;
    bulks.fetch_add(1, std::memory_order_relaxed);
    items.fetch_add(n, std::memory_order_relaxed);
    bytes.fetch_add(req.get_header_value<uint64_t>("Content-Length"), std::memory_order_relaxed);
    static constexpr absl::string_view kItem = R"({"create":{"status":201}},)";
    std::string answer = R"({"errors":false,"items":[)";
    answer.reserve(answer.size() + n * kItem.size() + 2);
    for (size_t i = 0; i < n; ++i) answer.append(kItem.data(), kItem.size());
    if (n > 0) answer.pop_back();
    answer += "]}";
    res.set_content(answer, "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  if (port < 0) {
    std::cerr << "es_bench: cannot listen on 127.0.0.1\n";
    return 1;
  }
  std::cerr << "listening on 127.0.0.1:" << port << std::endl;
  return server.listen_after_bind() ? 0 : 1;
}

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One item as the output sends it: its action line and its document line.
struct Item {
  std::string action;
  std::string document;  // with its newline
};

int Produce() {
  absl::StatusOr<load::EventShape> shape = load::ParseEventShape(absl::GetFlag(FLAGS_shape));
  if (!shape.ok()) {
    std::cerr << "es_bench: " << shape.status() << "\n";
    return 1;
  }
  const ElasticsearchSettings settings;  // the output's defaults: its index format
  const BulkActions actions(settings.IndexFormat(), settings.PipelineFormat());
  std::vector<Item> items(kDocuments);
  elastic::agent::shipper::v1::messages::Event event;
  for (size_t i = 0; i < kDocuments; ++i) {
    load::MakeEvent(*shape, i, &event);
    const std::string bytes = event.SerializeAsString();
    absl::StatusOr<BulkItem> item = actions.Item(bytes, i);
    if (!item.ok()) {
      std::cerr << "es_bench: " << item.status() << "\n";
      return 1;
    }
    rapidjson::StringBuffer json;
    EventJsonWriter(&json, Metadata::kOmit).Append(bytes, i + 1);
    items[i] = {std::move(item->action), std::string(json.GetString(), json.GetSize())};
  }

  const std::string url = absl::StrCat(absl::GetFlag(FLAGS_url), kBulkPath);
  const uint64_t events = absl::GetFlag(FLAGS_events);
  const uint64_t per_request = std::max<uint64_t>(1, absl::GetFlag(FLAGS_bulk_max_size));
  const int level = absl::GetFlag(FLAGS_compression_level);
  std::atomic<uint64_t> next{0}, delivered{0}, failed{0};
  curl_global_init(CURL_GLOBAL_DEFAULT);

  const auto send = [&] {
    CURL* curl = curl_easy_init();
    // No "Expect: 100-continue", as the output: it costs a round trip per request.
    curl_slist* headers = curl_slist_append(nullptr, "Expect:");
    headers = curl_slist_append(headers, "Content-Type: application/x-ndjson");
    if (level > 0) headers = curl_slist_append(headers, "Content-Encoding: gzip");
    std::string body, answer;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Append);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    for (uint64_t first; (first = next.fetch_add(per_request)) < events;) {
      const uint64_t n = std::min(per_request, events - first);
      // As the output builds a body (BulkBody): compressed as it is assembled.
      body.clear();
      if (level > 0) {
        Encoder gzip(ContentCoding::kGzip, level);
        for (uint64_t i = first; i < first + n; ++i) {
          gzip.Add(items[i % kDocuments].action);
          gzip.Add(items[i % kDocuments].document);
        }
        absl::StatusOr<std::string> gzipped = gzip.Finish();
        if (!gzipped.ok()) {
          failed.fetch_add(n);
          continue;
        }
        body = *std::move(gzipped);
      } else {
        for (uint64_t i = first; i < first + n; ++i) {
          body += items[i % kDocuments].action;
          body += items[i % kDocuments].document;
        }
      }
      answer.clear();
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
      long status = 0;
      if (curl_easy_perform(curl) == CURLE_OK) {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      }
      const bool ok = status == 200 && absl::StrContains(answer, R"("errors":false)");
      if (!ok && failed.fetch_add(n) == 0) {
        std::cerr << "es_bench: " << url << " answered " << status << ": " << answer.substr(0, 200)
                  << "\n";
      }
      if (ok) delivered.fetch_add(n);
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
  };

  const double cpu0 = load::ProcessCpuSeconds();
  const absl::Time start = absl::Now();
  std::vector<std::thread> senders;
  for (int i = 0; i < std::max(1, absl::GetFlag(FLAGS_inflight)); ++i) senders.emplace_back(send);
  for (std::thread& t : senders) t.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::cout << "{\"events\": " << delivered
            << ", \"events_per_sec\": " << static_cast<uint64_t>(delivered / seconds)
            << ", \"cpu_sec\": " << load::ProcessCpuSeconds() - cpu0 << ", \"failed\": " << failed
            << "}" << std::endl;
  curl_global_cleanup();
  return failed == 0 && delivered == events ? 0 : 1;
}

}  // namespace
}  // namespace shipper

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_serve)) return shipper::Serve();
  if (absl::GetFlag(FLAGS_produce)) return shipper::Produce();
  std::cerr << "es_bench: --serve or --produce\n";
  return 2;
}
