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

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "queue/queue.h"
#include "runtime/cpu_quota.h"

namespace shipper {

enum class OutputKind { kFile, kConsole, kDiscard };

struct Config {
  // gRPC listen address: host:port (port 0 picks a free one) or unix:///path.
  std::string server_address = "127.0.0.1:50051";
  queue::Options queue;
  // How many events an output worker takes from the queue at once.
  size_t bulk_max_size = 4096;

  // Exactly one output is active; the file output when none is enabled.
  OutputKind output = OutputKind::kFile;
  struct FileOutput {
    std::string path = "./data";  // a directory
    std::string filename = "shipper.ndjson";
  } file;

  struct Cpu {
    int override_cpus = 0;  // > 0 from --cpus or SHIPPER_CPUS; set by main, not a key
    runtime::Rounding rounding = runtime::Rounding::kFloor;
    absl::Duration retune_interval = absl::Seconds(10);  // 0 turns re-tuning off
  } cpu;

  // After SIGTERM, how long the queue may drain into the output before the process exits.
  absl::Duration shutdown_timeout = absl::Seconds(30);
};

// Builds the configuration from an optional YAML file (empty path: defaults only) and
// `key=value` overrides applied in order. INVALID_ARGUMENT says which key is wrong and why.
absl::StatusOr<Config> LoadConfig(const std::string& path,
                                  const std::vector<std::string>& overrides);

// Same, from YAML text instead of a file (`source` names it in errors).
absl::StatusOr<Config> ParseConfig(absl::string_view yaml, absl::string_view source,
                                   const std::vector<std::string>& overrides);

// One line per key with its default and meaning, for --help.
std::string ConfigKeysHelp();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_H_
