// shipper.output.elasticsearch.*: the Elasticsearch output's settings, their keys and checks, and
// what Build() makes of them (the hosts' URLs, the formats, the TLS material).
//
// Everything here is pure but Preflight(), which reads the PEM files, and Build()
// (elasticsearch_output.cc), which reads them too and makes the output.
//
// Thread safety: the settings are immutable once built; use them from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_SETTINGS_H_
#define SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_SETTINGS_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shipper/config/key.h"
#include "shipper/config/problems.h"
#include "shipper/config/tls.h"
#include "shipper/event/field_format.h"
#include "shipper/output/output.h"

namespace shipper {

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
  // TLS to the https:// hosts (a client's shipper.output.elasticsearch.ssl block, tls.h), on
  // unless ssl.enabled is false, which refuses https:// hosts.
  TlsSettings ssl{/*enabled=*/true};

  void Validate(Problems* problems) const override;
  void Preflight(Problems* problems) const override;
  // Reads the PEM files and connects to nothing (elasticsearch_output.cc): Elasticsearch may come
  // up later.
  absl::StatusOr<std::unique_ptr<Output>> Build() const override;
  std::string Destination() const override;

  // REQUIRES for the three: Validate() found no problem.
  // Each host's base URL: scheme://host:port[/path], no trailing slash, port 9200 when unset.
  std::vector<std::string> HostUrls() const;
  FieldFormat IndexFormat() const;
  std::optional<FieldFormat> PipelineFormat() const;  // nullopt: no pipeline
};

// Every shipper.output.elasticsearch.* key but `enabled`.
std::vector<Key<ElasticsearchSettings>> ElasticsearchKeys();

// "shipper.output.elasticsearch." + key, for messages that name a key.
std::string ElasticsearchKey(absl::string_view key);

// The shipper.output.elasticsearch.ssl block.
const TlsBlock& ElasticsearchTls();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_SETTINGS_H_
