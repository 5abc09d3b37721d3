#include "shipper/config/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "shipper/config/key.h"
#include "shipper/config/loader.h"
#include "shipper/config/memory_sizing.h"
#include "shipper/config/preflight.h"
#include "shipper/config/problems.h"
#include "shipper/input/registry.h"
#include "shipper/output/registry.h"

namespace shipper {
namespace {

// What a config file and -E say, before the one active output is chosen: the pipeline's and the
// server's settings, every input's and every output's.
struct Draft {
  Config config;
  std::map<std::string, std::unique_ptr<InputSettings>> inputs;    // by name, all of them
  std::map<std::string, std::unique_ptr<OutputSettings>> outputs;  // by name, all of them
  // Keys of the archived Go shipper that mean nothing here (ArchivedKeys).
  std::string type;  // the output type Elastic Agent configured
  bool monitoring = false;
  bool expvar = false;

  Draft() {
    for (const InputType& type : Inputs()) inputs[type.name] = type.defaults();
    for (const OutputType& type : Outputs()) outputs[type.name] = type.defaults();
  }
};

absl::string_view RoundingName(runtime::Rounding r) {
  return r == runtime::Rounding::kFloor ? "floor" : "ceil";
}

// The pipeline's keys: the queue, what every output shares, CPU, shutdown and monitoring. The
// shared server, each input and each output declare their own in their rooms.
std::vector<Key<Config>> PipelineKeys() {
  using K = KeysOf<Config>;
  return {
      K::Size("shipper.queue.mem.events",
              "queue capacity in events; its ring holds 32 bytes an event from the start, counted "
              "against the memory limit",
              1, false, [](Config& c) -> size_t& { return c.queue.max_events; }),
      K::Size("shipper.queue.mem.bytes",
              "memory budget for received requests and the events queued from them, in bytes as "
              "received; spent: partial acceptance (0: none). Unset under a container memory "
              "limit: a quarter of it",
              0, true, [](Config& c) -> size_t& { return c.queue.max_bytes; }),
      K::Size("shipper.queue.mem.flush.min_events",
              "buffered loop: events to gather before a batch is handed out (<= 1: direct loop)", 0,
              false, [](Config& c) -> size_t& { return c.queue.flush_min_events; }),
      K::Duration("shipper.queue.mem.flush.timeout",
                  "buffered loop: longest wait for flush.min_events after the first event",
                  [](Config& c) -> absl::Duration& { return c.queue.flush_timeout; }),
      K::Enum<queue::WaitStrategy>(
          "shipper.queue.mem.wait_strategy", "how idle consumers and blocked producers wait",
          "blocking|phased|sleeping", queue::ParseWaitStrategy, queue::WaitStrategyName,
          [](Config& c) -> queue::WaitStrategy& { return c.queue.wait_strategy; }),
      K::Bool("shipper.queue.disk.enabled",
              "keep the queue on disk (survives restarts) instead of in memory",
              &Config::disk_queue),
      K::String("shipper.queue.disk.path", "directory of the disk queue's files",
                [](Config& c) -> std::string& { return c.disk.path; }),
      K::Size("shipper.queue.disk.max_size",
              "bytes the disk queue's files may hold; beyond, clients get partial acceptance", 1,
              true, [](Config& c) -> size_t& { return c.disk.max_size; }),
      K::Size("shipper.queue.disk.segment_size",
              "bytes per segment file, freed whole once delivered (0: max_size / 10, at least "
              "1MiB)",
              0, true, [](Config& c) -> size_t& { return c.disk.segment_size; }),
      K::Size("shipper.queue.disk.buffer_size",
              "bytes of events accepted and not yet written at most (0: 4MiB, or max_size / 4 "
              "if less); the queue holds up to four such buffers in memory",
              0, true, [](Config& c) -> size_t& { return c.disk.buffer_size; }),
      K::Size("shipper.queue.disk.flush.min_events",
              "buffered loop, as shipper.queue.mem.flush.min_events", 0, false,
              [](Config& c) -> size_t& { return c.disk.flush_min_events; }),
      K::Duration("shipper.queue.disk.flush.timeout",
                  "buffered loop, as shipper.queue.mem.flush.timeout",
                  [](Config& c) -> absl::Duration& { return c.disk.flush_timeout; }),
      K::Enum<queue::WaitStrategy>(
          "shipper.queue.disk.wait_strategy", "as shipper.queue.mem.wait_strategy",
          "blocking|phased|sleeping", queue::ParseWaitStrategy, queue::WaitStrategyName,
          [](Config& c) -> queue::WaitStrategy& { return c.disk.wait_strategy; }),
      K::Size("shipper.output.batch_max_events",
              "most events an output worker takes from the queue and writes at once", 1, false,
              &Config::batch_max_events),
      K::Duration("shipper.output.backoff.init",
                  "first wait before an output retries what failed; doubles up to backoff.max",
                  &Config::backoff_init),
      K::Duration("shipper.output.backoff.max", "longest wait between retries (they never stop)",
                  &Config::backoff_max),
      K::String("shipper.dead_letter.path",
                "NDJSON file for events an output rejects for good (unset: logged at ERROR)",
                &Config::dead_letter_path),
      K::Enum<runtime::Rounding>("shipper.cpu.rounding",
                                 "how a fractional CPU quota becomes a thread count", "floor|ceil",
                                 runtime::ParseRounding, RoundingName,
                                 [](Config& c) -> runtime::Rounding& { return c.cpu.rounding; }),
      K::Duration("shipper.cpu.retune_interval",
                  "how often the CPU quota is re-read to resize thread pools (0: never)",
                  [](Config& c) -> absl::Duration& { return c.cpu.retune_interval; }),
      K::Duration("shipper.shutdown_timeout",
                  "after SIGTERM, how long the queue may drain into the output",
                  &Config::shutdown_timeout),
      K::Bool("http.enabled", "serve /metrics (Prometheus) and /healthz over HTTP",
              [](Config& c) -> bool& { return c.http.enabled; }),
      K::String("http.host", "address the HTTP endpoint listens on",
                [](Config& c) -> std::string& { return c.http.host; }),
      K::Port("http.port", "port of the HTTP endpoint (0: a free one, logged at start)",
              [](Config& c) -> int& { return c.http.port; }),
      K::Bool("logging.metrics.enabled",
              "log one INFO line every logging.metrics.period with what the counters did",
              [](Config& c) -> bool& { return c.metrics_log.enabled; }),
      K::Duration("logging.metrics.period", "how often that line is logged (0: never)",
                  [](Config& c) -> absl::Duration& { return c.metrics_log.period; }),
  };
}

// Keys the archived Go shipper's config files carry (its sample elastic-agent-shipper.yml), taken
// so those files start unchanged; what each means here is said at start (Archived).
std::vector<Key<Draft>> ArchivedKeys() {
  using K = KeysOf<Draft>;
  return {
      K::String("type",
                "the output type Elastic Agent gave the archived shipper; must name the enabled "
                "output",
                &Draft::type),
      K::Bool("monitoring.enabled", "the archived shipper's monitoring switch (no effect here)",
              &Draft::monitoring),
      K::Bool("http.expvar.enabled", "Go's expvar endpoint (none here: /metrics serves Prometheus)",
              &Draft::expvar),
  };
}

// Earlier spellings, kept as aliases: each sets the key it names, with a WARNING. The archived
// shipper and Beats spell them http.* and logging.metrics.*.
constexpr std::pair<const char*, const char*> kDeprecatedKeys[] = {
    {"shipper.http.enabled", "http.enabled"},
    {"shipper.http.host", "http.host"},
    {"shipper.http.port", "http.port"},
    {"shipper.metrics.period", "logging.metrics.period"},
    // Beside shipper.output.elasticsearch.bulk_max_size (events per bulk request) the name misled.
    {"shipper.output.bulk_max_size", "shipper.output.batch_max_events"},
};

// Every key: the server's, each input's, the pipeline's, the archived shipper's, then each
// output's `enabled` and its own.
const std::vector<Key<Draft>>& Keys() {
  static const std::vector<Key<Draft>>* keys = [] {
    auto* keys = new std::vector<Key<Draft>>;
    for (const Key<ServerSettings>& key : ServerKeys()) {
      keys->push_back(
          key.Within<Draft>([](Draft& d) -> ServerSettings& { return d.config.server; }));
    }
    for (const InputType& type : Inputs()) {
      for (const Key<InputSettings>& key : type.keys) {
        keys->push_back(key.Within<Draft>(
            [name = type.name](Draft& d) -> InputSettings& { return *d.inputs.at(name); }));
      }
    }
    for (const Key<Config>& key : PipelineKeys()) {
      keys->push_back(key.Within<Draft>([](Draft& d) -> Config& { return d.config; }));
    }
    for (Key<Draft>& key : ArchivedKeys()) keys->push_back(std::move(key));
    for (const OutputType& type : Outputs()) {
      const auto settings = [name = type.name](Draft& d) -> OutputSettings& {
        return *d.outputs.at(name);
      };
      keys->push_back(
          KeysOf<OutputSettings>::Bool(absl::StrCat("shipper.output.", type.name, ".enabled"),
                                       type.help, &OutputSettings::enabled)
              .Within<Draft>(settings));
      for (const Key<OutputSettings>& key : type.keys) {
        keys->push_back(key.Within<Draft>(settings));
      }
    }
    return keys;
  }();
  return *keys;
}

// What no single key can check on its own, for the pipeline's settings.
void Validate(const Config& config, Problems* problems) {
  problems->Add(queue::MemoryQueue::Validate(config.queue));
  if (config.disk_queue) {
    for (const absl::Status& problem : queue::ValidateDiskOptions(config.disk)) {
      problems->Add(problem);
    }
  }
  ValidateServer(config.server, problems);
  if (config.backoff_max < config.backoff_init) {
    problems->Add(absl::StrCat("config: shipper.output.backoff.max (",
                               absl::FormatDuration(config.backoff_max),
                               ") is below shipper.output.backoff.init (",
                               absl::FormatDuration(config.backoff_init), ")"));
  }
}

// The largest event any enabled input hands the queue: what the disk queue trusts frame lengths
// up to.
uint32_t MaxEventBytes(const Draft& draft) {
  size_t max = 0;
  for (const auto& [name, settings] : draft.inputs) {
    if (settings->enabled) max = std::max(max, settings->max_event_bytes(draft.config.server));
  }
  return static_cast<uint32_t>(std::min<size_t>(max, std::numeric_limits<uint32_t>::max()));
}

// What the archived shipper's own keys mean here: `type` must name the enabled output; the
// others change nothing, and the log says so.
void Archived(const ConfigLoader& loader, Draft& draft, Problems* problems) {
  Config& config = draft.config;
  if (loader.given("type") && draft.type != config.output) {
    problems->Add(absl::StrCat("config: type is '", draft.type, "' but the enabled output is '",
                               config.output, "': set type: ", config.output,
                               " or enable shipper.output.", draft.type));
  }
  if (loader.given("monitoring.enabled")) {
    config.notes.push_back(
        "monitoring.enabled is the archived shipper's; it changes nothing here: Shipper's "
        "metrics are /metrics and /healthz (http.*) and the logging.metrics line");
  }
  if (loader.given("http.expvar.enabled")) {
    config.notes.push_back(
        "http.expvar.enabled: Go's expvar has no equivalent here; /metrics serves the same "
        "counters in Prometheus' text format");
  }
}

// Moves the one enabled output (the file output if none is) into the config; a problem names
// every enabled one when there are several.
void ChooseOutput(Draft& draft, Problems* problems) {
  std::vector<std::string> enabled;
  for (const OutputType& type : Outputs()) {
    if (draft.outputs.at(type.name)->enabled) enabled.push_back(type.name);
  }
  if (enabled.size() > 1) {
    problems->Add(absl::StrCat(
        "config: exactly one output may be enabled, but these are: ", absl::StrJoin(enabled, ", "),
        "; set shipper.output.<name>.enabled: false on the others"));
  }
  draft.config.output = enabled.empty() ? "file" : enabled.front();
  draft.config.output_settings = std::move(draft.outputs.at(draft.config.output));
}

// Moves every input's settings into the config.
void TakeInputs(Draft& draft) {
  for (auto& [name, settings] : draft.inputs) draft.config.inputs[name] = std::move(settings);
}

}  // namespace

absl::StatusOr<Config> ParseConfig(absl::string_view yaml, absl::string_view source,
                                   const std::vector<std::string>& overrides,
                                   const runtime::MemoryLimit& memory_limit) {
  Draft draft;
  ConfigLoader loader(Bind(Keys(), &draft), kDeprecatedKeys);
  if (absl::Status read = loader.LoadYaml(yaml, source); !read.ok()) return read;
  for (const std::string& item : overrides) loader.LoadOverride(item);
  draft.config.warnings = loader.warnings();
  Problems& problems = loader.problems();
  SizeMemory(
      memory_limit, [&loader](absl::string_view key) { return loader.given(key); }, &draft.config,
      &problems);
  draft.config.disk.max_event_bytes = MaxEventBytes(draft);
  Validate(draft.config, &problems);
  for (const auto& [name, settings] : draft.inputs) settings->Validate(&problems);
  for (const auto& [name, settings] : draft.outputs) settings->Validate(&problems);
  ChooseOutput(draft, &problems);
  TakeInputs(draft);
  Archived(loader, draft, &problems);
  if (!problems.empty()) return problems.ToStatus();
  return std::move(draft.config);
}

absl::StatusOr<Config> LoadConfig(const std::string& path,
                                  const std::vector<std::string>& overrides,
                                  const runtime::MemoryLimit& memory_limit) {
  if (path.empty()) return ParseConfig("", "defaults", overrides, memory_limit);
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("config file '", path, "' cannot be read (",
                                                   std::strerror(errno),
                                                   "): check the path given to -c"));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseConfig(text, path, overrides, memory_limit);
}

absl::Status Preflight(const Config& config) {
  Problems problems;
  PreflightServer(config.server, &problems);
  for (const auto& [name, settings] : config.inputs) {
    if (settings->enabled) settings->Preflight(&problems);
  }
  if (!config.dead_letter_path.empty()) {
    CheckAppendFile(&problems, "shipper.dead_letter.path", config.dead_letter_path);
  }
  if (config.disk_queue) problems.Add(queue::PreflightDiskPath(config.disk));
  config.output_settings->Preflight(&problems);
  return problems.ToStatus();
}

std::string ConfigKeysHelp() {
  Draft defaults;  // shows the values the settings start with
  std::string out;
  for (const Key<Draft>& key : Keys()) {
    absl::StrAppend(&out, "  ", key.name, " = ", key.show(defaults), "\n      ", key.help, " (",
                    key.expected, ")\n");
  }
  return out;
}

}  // namespace shipper
