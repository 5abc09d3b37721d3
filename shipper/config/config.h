// Shipper's configuration: every key, its type, default and meaning. The pipeline's keys (queue,
// delivery, CPU, shutdown, monitoring) are declared here (config.cc); the shared server's in
// shipper/server/server_settings.h; each input's and output's in its own folder
// (shipper/input/<name>/, shipper/output/<name>/), gathered through their tables
// (shipper/input/registry.h, shipper/output/registry.h).
//
// Keys follow the Beats style (and the archived Go shipper's names where it had the key). A YAML
// file may nest them (`shipper: {queue: {mem: {events: 4096}}}`) or dot them
// (`shipper.queue.mem.events: 4096`); `-E key=value` overrides any key, the value read as YAML.
// Unknown keys and wrong types are refused with the key and what was expected.
//
// Thread safety: a Config is a plain value; build it once at start.
#ifndef SHIPPER_SHIPPER_CONFIG_CONFIG_H_
#define SHIPPER_SHIPPER_CONFIG_CONFIG_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "queue/disk_options.h"
#include "queue/memory_queue.h"
#include "runtime/cpu_quota.h"
#include "runtime/memory_limit.h"
#include "shipper/input/input.h"
#include "shipper/output/output.h"
#include "shipper/server/server_settings.h"

namespace shipper {

struct Config {
  ServerSettings server;  // shipper.server.*: the shared gRPC server (shipper/server/)
  // Every input's settings by name, enabled or not (shipper/input/<name>/); the Producer API's
  // is always enabled.
  std::map<std::string, std::shared_ptr<const InputSettings>> inputs;
  // The settings of input `name` as their own type. REQUIRES: they are an S.
  template <typename S>
  const S& input_as(const std::string& name) const {
    return dynamic_cast<const S&>(*inputs.at(name));
  }
  queue::MemoryOptions queue;  // shipper.queue.mem.*
  // The disk queue instead (shipper.queue.disk.enabled): events survive restarts and outputs
  // down for longer than memory could hold; queue/disk_queue.h says how.
  bool disk_queue = false;
  queue::DiskOptions disk;  // shipper.queue.disk.*
  // How many events an output worker takes from the queue at once.
  size_t batch_max_events = 4096;

  // Exactly one output is active: shipper.output.<output>, the file output when none is
  // enabled. Its settings are the output's own (shipper/output/<name>/); never null once
  // ParseConfig built the Config.
  std::string output = "file";
  std::shared_ptr<const OutputSettings> output_settings;
  // The active output's settings as their own type. REQUIRES: `output` is S's output.
  template <typename S>
  const S& output_as() const {
    return dynamic_cast<const S&>(*output_settings);
  }

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

  // The container's memory limit found at start (runtime/memory_limit.h), which ParseConfig sized
  // the memory budgets from: shipper.queue.mem.bytes (what Shipper holds for requests it copied
  // and events it queued, runtime/memory_budget.h) and shipper.server.max_receive_memory (what
  // gRPC holds). Peak RSS stays below their sum plus kFixedMemoryOverhead.
  runtime::MemoryLimit memory_limit;

  // After SIGTERM, how long the queue may drain into the output before the process exits.
  absl::Duration shutdown_timeout = absl::Seconds(30);

  // The monitoring endpoint: /metrics (Prometheus) and /healthz over HTTP.
  struct Http {
    bool enabled = true;
    std::string host = "127.0.0.1";
    int port = 8282;  // the Go shipper's; 0 picks a free one (the log says which)
  } http;
  // One INFO line every period with what the counters did since the last (period 0: never).
  struct MetricsLog {
    bool enabled = true;
    absl::Duration period = absl::Seconds(30);
  } metrics_log;

  // Lines for the log at start, not settings: deprecated spellings used (WARNING), keys taken
  // that mean nothing here (INFO).
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
};

// What Shipper's memory holds beside its two budgets, measured under floods of every event shape
// with the output down (BENCHMARKS.md "Memory"): code, thread stacks, the memory queue's ring at
// the default shipper.queue.mem.events (a larger ring counts beside the budgets:
// ExtraRingBytes), gRPC's and the allocator's own, batches being encoded. A memory limit must
// leave it room.
constexpr size_t kFixedMemoryOverhead = size_t{64} << 20;

// Builds the configuration from an optional YAML file (empty path: defaults only) and
// `key=value` overrides applied in order, and checks that its settings make sense together
// (pure: nothing outside the config and `memory_limit` is looked at). INVALID_ARGUMENT names
// every key that is wrong and why, one per line.
//
// With a memory limit (main detects it), shipper.queue.mem.bytes and
// shipper.server.max_receive_memory left unset are a quarter of the limit each, and
// shipper.server.max_message_size left unset at most max_receive_memory; budgets set that do not
// fit the limit with kFixedMemoryOverhead are refused, naming the keys and the limit. Without a
// limit the defaults stay.
absl::StatusOr<Config> LoadConfig(const std::string& path,
                                  const std::vector<std::string>& overrides,
                                  const runtime::MemoryLimit& memory_limit = {});

// Same, from YAML text instead of a file (`source` names it in errors).
absl::StatusOr<Config> ParseConfig(absl::string_view yaml, absl::string_view source,
                                   const std::vector<std::string>& overrides,
                                   const runtime::MemoryLimit& memory_limit = {});

// Checks that this machine can run `config`: every file a key names is readable (TLS
// certificates and keys, valid PEM), every directory Shipper writes to is writable or can be
// created, listen addresses resolve and their socket directories exist, and whatever else the
// active output needs. Creates, binds and writes nothing. Start and --check_config both call it,
// so both refuse the same configs with the same words. INVALID_ARGUMENT lists every problem.
absl::Status Preflight(const Config& config);

// One line per key with its default and meaning, for --help.
std::string ConfigKeysHelp();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_CONFIG_H_
