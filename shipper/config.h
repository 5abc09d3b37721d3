// Shipper's configuration: the one place that knows every key, its type, default and meaning.
//
// Keys follow the Beats style (and the archived Go shipper's names where it had the key). A YAML
// file may nest them (`shipper: {queue: {mem: {events: 4096}}}`) or dot them
// (`shipper.queue.mem.events: 4096`); `-E key=value` overrides any key, the value read as YAML.
// Unknown keys and wrong types are refused with the key and what was expected.
//
// Thread safety: a Config is a plain value; build it once at start.
#ifndef SHIPPER_SHIPPER_CONFIG_H_
#define SHIPPER_SHIPPER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "queue/queue.h"
#include "runtime/cpu_quota.h"

namespace shipper {

enum class OutputKind { kFile, kConsole, kDiscard, kRedis, kShipper };
// When the file output flushes to disk: after every batch (before it counts as persisted), or
// never (the kernel decides; a machine crash may lose what was reported persisted).
enum class FsyncPolicy { kBatch, kNever };
// How the Redis output stores each event: RPUSH onto a list, PUBLISH to a channel, XADD to a
// stream.
enum class RedisDatatype { kList, kChannel, kStream };
// Whether a TLS listener asks clients for a certificate, and whether it must verify.
enum class ClientAuthentication { kNone, kOptional, kRequired };

struct Config {
  // gRPC listen address: host:port (port 0 picks a free one) or unix:///path.
  std::string server_address = "127.0.0.1:50051";
  // host:port of a second listener that serves only the gRPC health service, for Kubernetes'
  // gRPC probes when server_address is a unix socket; empty: none.
  std::string health_address;
  // Permissions of the socket file when server_address is unix:///path.
  uint32_t socket_mode = 0600;
  // What one client may ask of the server; a request beyond a limit is refused with a status
  // that names the limit's key.
  struct Limits {
    size_t max_message_size = 64 << 20;   // bytes of one request, as sent
    // What gRPC may hold for all connections together, foremost requests on their way in;
    // beyond it gRPC resets streams (RESOURCE_EXHAUSTED) until memory frees. >= max_message_size.
    size_t max_receive_memory = 128 << 20;
    size_t max_events_per_request = 65536;
    size_t max_nesting_depth = 64;        // Struct/ListValue levels in an event's fields/metadata
    size_t max_concurrent_streams = 100;  // HTTP/2 streams (calls) at once per connection
    size_t max_connections = 512;         // live at once; 0: no limit (listener.h)
  } limits;
  // TLS on the listener, on when certificate is set; mTLS when client_authentication asks for
  // client certificates, verified against certificate_authorities. Paths of PEM files.
  struct Ssl {
    std::string certificate;
    std::string key;
    std::string certificate_authorities;
    ClientAuthentication client_authentication = ClientAuthentication::kNone;
  } ssl;
  queue::Options queue;
  // How many events an output worker takes from the queue at once.
  size_t bulk_max_size = 4096;

  // Exactly one output is active; the file output when none is enabled.
  OutputKind output = OutputKind::kFile;
  struct FileOutput {
    std::string path = "./data";  // a directory
    std::string filename = "shipper.ndjson";
    size_t rotate_every_kb = 10240;  // Beats' default: 10 MiB per file
    size_t number_of_files = 7;      // filename, filename.1, ... filename.6
    uint32_t permissions = 0600;     // of files the output creates
    FsyncPolicy fsync = FsyncPolicy::kBatch;
  } file;
  struct RedisOutput {
    std::vector<std::string> hosts = {"127.0.0.1:6379"};  // host:port; the next on failure
    std::string key = "shipper";  // may hold %{[field.path]} or %{[field.path]:default}
    RedisDatatype datatype = RedisDatatype::kList;
    size_t db = 0;
    std::string password;  // empty: no AUTH
    absl::Duration timeout = absl::Seconds(5);
  } redis;
  struct ShipperOutput {
    std::string server;  // the next Shipper: host:port or unix:///path
    absl::Duration timeout = absl::Seconds(30);  // per PublishEvents call
    // TLS to the next Shipper when enabled: its certificate is verified against
    // certificate_authorities (empty: gRPC's default roots); certificate and key, both or
    // neither, are this client's own for mTLS. Paths of PEM files.
    struct Ssl {
      bool enabled = false;
      std::string certificate_authorities;
      std::string certificate;
      std::string key;
    } ssl;
  } shipper;

  // Retry policy of every output for transient failures: exponential backoff with jitter from
  // backoff_init up to backoff_max, retrying without limit.
  absl::Duration backoff_init = absl::Seconds(1);
  absl::Duration backoff_max = absl::Seconds(60);
  // NDJSON file for events an output rejects for good; empty: they are logged (with the
  // document) at ERROR instead.
  std::string dead_letter_path;

  struct Cpu {
    int override_cpus = 0;  // > 0 from --cpus or SHIPPER_CPUS; set by main, not a key
    runtime::Rounding rounding = runtime::Rounding::kFloor;
    absl::Duration retune_interval = absl::Seconds(10);  // 0 turns re-tuning off
  } cpu;

  // After SIGTERM, how long the queue may drain into the output before the process exits.
  absl::Duration shutdown_timeout = absl::Seconds(30);

  // The monitoring endpoint: /metrics (Prometheus) and /healthz over HTTP.
  struct Http {
    bool enabled = true;
    std::string host = "127.0.0.1";
    int port = 8282;  // the Go shipper's; 0 picks a free one (the log says which)
  } http;
  // How often one INFO line logs what the counters did since the last line (0: never).
  absl::Duration metrics_period = absl::Seconds(30);
};

// Builds the configuration from an optional YAML file (empty path: defaults only) and
// `key=value` overrides applied in order. INVALID_ARGUMENT says which key is wrong and why.
absl::StatusOr<Config> LoadConfig(const std::string& path,
                                  const std::vector<std::string>& overrides);

// Same, from YAML text instead of a file (`source` names it in errors).
absl::StatusOr<Config> ParseConfig(absl::string_view yaml, absl::string_view source,
                                   const std::vector<std::string>& overrides);

// "file", "console", "discard", "redis" or "shipper": the <name> in shipper.output.<name>.
absl::string_view OutputName(OutputKind kind);

// One line per key with its default and meaning, for --help.
std::string ConfigKeysHelp();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_H_
