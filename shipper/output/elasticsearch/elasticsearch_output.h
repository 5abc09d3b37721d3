// The Elasticsearch output: events go to the `_bulk` API (NDJSON, gzip), with Beats' rules.
//
// Each Write() encodes its events once (the file output's document without `@metadata`), gives
// each a `create` action naming its index (the `index` format, by default the data stream the
// event's data_stream fields name) and sends them in requests of at most `bulk_max_size` events.
// The event's metadata may set `_id`, `op_type` (create or index) and `pipeline`, as in Beats.
//
// What Elasticsearch answers decides each event's fate (Beats' rules):
//   item 2xx                    written
//   item 409 on create          already indexed (a retry's duplicate): written
//   item 429, 5xx               failed for now: only those events are retried, with backoff
//   item other 4xx              rejected for good: the dead-letter file, with error.type/reason
//   request 413                 split in halves, each sent again (one event alone: rejected)
//   request 429, 5xx, no answer an error status: Delivery retries with backoff
//   request 401, 403            the same, and an ERROR line naming the credential keys
// Requests spread over `hosts` round-robin; a host that fails is skipped (backing off) while
// another is available. The first request to a host, and the first after it failed, is `GET /`:
// it logs the cluster's name and version and refuses majors below 7 as a failing host.
//
// Thread safety: Write() from several threads at once; at most `worker` requests are in flight
// per host (the others wait for a free connection). Cancel() from any thread aborts requests in
// flight within about a second (libcurl's progress callback) and makes later Write() calls fail.
#ifndef SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_OUTPUT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shipper/output/output.h"

namespace shipper {

// How much of the server's certificate TLS checks, as Beats' ssl.verification_mode says.
enum class VerificationMode {
  kFull,         // the chain to a trusted CA and the host name
  kCertificate,  // the chain only
  kNone,         // nothing: for tests and trusted networks only
};

// shipper.output.elasticsearch.*
struct ElasticsearchSettings final : OutputSettings {
  // http(s)://host[:port][/path]; port 9200 when unset.
  std::vector<std::string> hosts = {"http://localhost:9200"};
  std::string index =
      "%{[data_stream.type]:logs}-%{[data_stream.dataset]:generic}-%{[data_stream.namespace]:"
      "default}";
  std::string pipeline;  // a format; empty: none (unless the event's metadata names one)
  std::string api_key;   // id:key; excludes username and password
  std::string username;
  std::string password;
  std::vector<std::string> headers;  // "Name: value", added to every request
  size_t compression_level = 1;      // gzip level; 0: none
  size_t bulk_max_size = 1600;       // events per bulk request
  absl::Duration timeout = absl::Seconds(90);
  size_t worker = 1;  // requests in flight per host
  struct Ssl {
    std::string certificate_authorities;  // PEM bundle; unset: the system's roots
    std::string certificate;              // PEM client certificate (with key)
    std::string key;
    VerificationMode verification_mode = VerificationMode::kFull;
  } ssl;

  void Validate(Problems* problems) const override;
  void Preflight(Problems* problems) const override;
  // Reads the PEM files and connects to nothing: Elasticsearch may come up later.
  absl::StatusOr<std::unique_ptr<Output>> Build() const override;
  std::string Destination() const override;
};

// The registry's entry (registry.cc).
OutputType ElasticsearchOutputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_OUTPUT_H_
