#include "shipper/config/config.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "shipper/config/key.h"
#include "shipper/config/preflight.h"
#include "shipper/config/problems.h"
#include "shipper/output/registry.h"
#include "yaml-cpp/yaml.h"

namespace shipper {
namespace {

// What a config file and -E say, before the one active output is chosen: the server's settings
// and every output's.
struct Draft {
  Config config;
  std::map<std::string, std::unique_ptr<OutputSettings>> outputs;  // by name, all of them
  std::set<std::string> given;                                     // the keys the file and -E set
  // Keys of the archived Go shipper that mean nothing here (ArchivedKeys).
  std::string type;  // the output type Elastic Agent configured
  bool monitoring = false;
  bool expvar = false;

  Draft() {
    for (const OutputType& type : Outputs()) outputs[type.name] = type.defaults();
  }
};

absl::string_view RoundingName(runtime::Rounding r) {
  return r == runtime::Rounding::kFloor ? "floor" : "ceil";
}

// The server's keys (each output declares its own, shipper/output/<name>/).
std::vector<Key<Config>> ServerKeys() {
  using K = KeysOf<Config>;
  return {
      K::String("shipper.server.server", "gRPC listen address: host:port or unix:///path",
                &Config::server_address),
      K::Typed<std::string>(
          "shipper.server.health.address",
          "second listener serving only the gRPC health service, for Kubernetes probes (\"\": "
          "none)",
          "host:port or \"\"",
          [](const std::string& s) -> std::optional<std::string> {
            if (s.empty()) return s;
            size_t colon = s.rfind(':');
            int port;
            if (colon == std::string::npos || !absl::SimpleAtoi(s.substr(colon + 1), &port) ||
                port < 0 || port > 65535) {
              return std::nullopt;  // a unix socket cannot serve Kubernetes' gRPC probes
            }
            return s;
          },
          [](const std::string& v) { return v.empty() ? std::string("\"\"") : v; },
          &Config::health_address),
      K::Permissions("shipper.server.socket_mode", "permissions of a unix:///path socket file",
                     &Config::socket_mode),
      K::Size("shipper.server.max_message_size",
              "largest request accepted, in bytes as sent (at most 2GiB - 1)", 1, true,
              [](Config& c) -> size_t& { return c.limits.max_message_size; }),
      K::Size("shipper.server.max_receive_memory",
              "memory gRPC may hold for requests being received, all connections together; "
              "beyond it streams are reset (RESOURCE_EXHAUSTED). Unset under a container memory "
              "limit: a quarter of it",
              1, true, [](Config& c) -> size_t& { return c.limits.max_receive_memory; }),
      K::Size("shipper.server.max_events_per_request", "most events one PublishEvents may carry", 1,
              false, [](Config& c) -> size_t& { return c.limits.max_events_per_request; }),
      K::Size("shipper.server.max_nesting_depth",
              "deepest Struct/ListValue nesting in an event's fields or metadata", 1, false,
              [](Config& c) -> size_t& { return c.limits.max_nesting_depth; }),
      K::Size("shipper.server.max_concurrent_streams",
              "calls one connection may have in flight; more wait for a free slot", 1, false,
              [](Config& c) -> size_t& { return c.limits.max_concurrent_streams; }),
      K::Size("shipper.server.max_connections",
              "connections served at once; calls on more are refused until one closes (0: no "
              "limit)",
              0, false, [](Config& c) -> size_t& { return c.limits.max_connections; }),
      K::String("shipper.server.ssl.certificate",
                "PEM certificate (chain) of the listener; set: TLS, unset: plaintext",
                [](Config& c) -> std::string& { return c.ssl.certificate; }),
      K::String("shipper.server.ssl.key", "PEM private key of ssl.certificate",
                [](Config& c) -> std::string& { return c.ssl.key; }),
      K::StringList(
          "shipper.server.ssl.certificate_authorities",
          "PEM files (a list, or one) of the CAs that client certificates must chain to",
          [](Config& c) -> std::vector<std::string>& { return c.ssl.certificate_authorities; }),
      K::Choice<ClientAuthentication>(
          "shipper.server.ssl.client_authentication",
          "none: no client certificate; optional: verified if sent; required: mTLS",
          {{"none", ClientAuthentication::kNone},
           {"optional", ClientAuthentication::kOptional},
           {"required", ClientAuthentication::kRequired}},
          [](Config& c) -> ClientAuthentication& { return c.ssl.client_authentication; }),
      K::Size("shipper.queue.mem.events", "queue capacity in events", 1, false,
              [](Config& c) -> size_t& { return c.queue.max_events; }),
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
      K::Size("shipper.output.bulk_max_size", "most events an output writes at once", 1, false,
              &Config::bulk_max_size),
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
      K::Bool("shipper.strict_mode",
              "refuse events without a timestamp, a source.input_id and a full data_stream, as "
              "the archived Go shipper's strict mode did",
              [](Config& c) -> bool& { return c.limits.strict_mode; }),
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

// Spellings of the previous release, kept for this one as aliases: each sets the key it names,
// with a WARNING. The archived shipper and Beats spell them http.* and logging.metrics.*.
constexpr std::pair<const char*, const char*> kDeprecatedKeys[] = {
    {"shipper.http.enabled", "http.enabled"},
    {"shipper.http.host", "http.host"},
    {"shipper.http.port", "http.port"},
    {"shipper.metrics.period", "logging.metrics.period"},
};

// Every key: the server's, the archived shipper's, then each output's `enabled` and its own.
const std::vector<Key<Draft>>& Keys() {
  static const std::vector<Key<Draft>>* keys = [] {
    auto* keys = new std::vector<Key<Draft>>;
    for (const Key<Config>& key : ServerKeys()) {
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

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

absl::Status UnknownKey(absl::string_view name, absl::string_view where) {
  const Key<Draft>* closest = nullptr;
  size_t best = 0;
  for (const Key<Draft>& key : Keys()) {
    size_t d = EditDistance(name, key.name);
    if (closest == nullptr || d < best) closest = &key, best = d;
  }
  std::string hint = best <= 3 ? absl::StrCat("; did you mean '", closest->name, "'?")
                               : "; see --help for the list of keys";
  return absl::InvalidArgumentError(absl::StrCat(where, "unknown config key '", name, "'", hint));
}

bool IsKeyPrefix(absl::string_view prefix) {
  const std::string dotted = absl::StrCat(prefix, ".");
  for (const Key<Draft>& key : Keys()) {
    if (absl::StartsWith(key.name, dotted)) return true;
  }
  for (const auto& [old_name, name] : kDeprecatedKeys) {
    if (absl::StartsWith(old_name, dotted)) return true;
  }
  return false;
}

absl::Status Set(std::string name, const YAML::Node& node, absl::string_view where, Draft& draft) {
  for (const auto& [old_name, new_name] : kDeprecatedKeys) {
    if (name != old_name) continue;
    draft.config.warnings.push_back(absl::StrCat(where, name, " is deprecated: write ", new_name,
                                                 " (the old spelling goes in the next release)"));
    name = new_name;
  }
  for (const Key<Draft>& key : Keys()) {
    if (key.name != name) continue;
    draft.given.insert(name);
    if (key.list && node.IsSequence()) {
      std::vector<std::string> items;
      for (const YAML::Node& item : node) {
        if (!item.IsScalar()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, "config key '", name, "': expected ", key.expected));
        }
        items.push_back(item.Scalar());
      }
      absl::Status status = key.set(absl::StrJoin(items, ","), draft);
      if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(where, status.message()));
      return absl::OkStatus();
    }
    if (!node.IsScalar()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "config key '", name, "': expected ",
                                                     key.expected, ", got a ",
                                                     node.IsMap()        ? "map"
                                                     : node.IsSequence() ? "list"
                                                                         : "null"));
    }
    absl::Status status = key.set(node.Scalar(), draft);
    if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(where, status.message()));
    return absl::OkStatus();
  }
  return UnknownKey(name, where);
}

std::string Where(absl::string_view source, const YAML::Node& node) {
  return absl::StrCat(source, ":", node.Mark().line + 1, ": ");
}

// Walks nested and dotted maps alike, setting every leaf; adds a problem for each bad one.
void SetTree(const std::string& prefix, const YAML::Node& node, absl::string_view source,
             Draft& draft, Problems* problems) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      std::string name = entry.first.as<std::string>();
      if (!prefix.empty()) name = absl::StrCat(prefix, ".", name);
      SetTree(name, entry.second, source, draft, problems);
    }
    return;
  }
  if (node.IsNull() && (prefix.empty() || IsKeyPrefix(prefix))) return;
  problems->Add(Set(prefix, node, Where(source, node), draft));
}

// -E key=value: the value is YAML, as in a file. One that YAML cannot read as a value (an
// unbalanced bracket, a leading % or @) is refused with how to quote it, not taken as null.
void SetOverride(const std::string& item, Draft& draft, Problems* problems) {
  std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
  if (item.find('=') == std::string::npos || kv.first.empty()) {
    return problems->Add(absl::StrCat("-E expects key=value, got '", item, "'"));
  }
  const auto unreadable = [&](absl::string_view why) {
    problems->Add(absl::StrCat("-E ", kv.first, ": the value '", kv.second, "' is not valid YAML (",
                               why, "); quote it: -E '", kv.first, "=\"", kv.second, "\"'"));
  };
  YAML::Node value;
  try {
    value = YAML::Load(kv.second);
  } catch (const YAML::Exception& e) {
    return unreadable(e.msg);
  }
  const bool null_literal = kv.second.empty() || kv.second == "~" || kv.second == "null" ||
                            kv.second == "Null" || kv.second == "NULL";
  if (value.IsNull() && !null_literal) return unreadable("YAML reads it as nothing");
  problems->Add(Set(kv.first, value, "-E: ", draft));
}

constexpr size_t kMiB = size_t{1} << 20;

// Sizes the memory budgets left unset from the container's memory limit and refuses budgets set
// that do not fit it (config.h: LoadConfig).
void SizeMemory(const runtime::MemoryLimit& limit, Draft& draft, Problems* problems) {
  Config& config = draft.config;
  config.memory_limit = limit;
  if (!limit.limited()) return;
  const size_t bytes = static_cast<size_t>(limit.bytes);
  const std::string where = absl::StrCat("the container's memory limit (", bytes, " bytes, ",
                                         limit.source, " ", limit.cgroup_dir, ")");
  if (bytes < kFixedMemoryOverhead + 8 * kMiB) {
    return problems->Add(absl::StrCat("config: ", where, " leaves no room for Shipper's fixed ",
                                      "overhead (", kFixedMemoryOverhead,
                                      " bytes) and its memory budgets: raise the limit"));
  }
  // A quarter each: half the limit for what clients send, the fixed overhead in the rest and a
  // margin (a 256Mi sidecar: 64MiB + 64MiB + 64MiB, 64MiB to spare).
  const size_t quarter = bytes / 4 / kMiB * kMiB;
  if (!draft.given.count("shipper.queue.mem.bytes")) config.queue.max_bytes = quarter;
  if (!draft.given.count("shipper.server.max_receive_memory")) {
    config.limits.max_receive_memory = quarter;
  }
  if (!draft.given.count("shipper.server.max_message_size")) {
    config.limits.max_message_size =
        std::min(config.limits.max_message_size, config.limits.max_receive_memory);
  }
  if (config.queue.max_bytes == 0) {
    return problems->Add(absl::StrCat("config: shipper.queue.mem.bytes is 0 (no budget) under ",
                                      where, ": set a budget, or leave it unset to size it from ",
                                      "the limit"));
  }
  size_t total = config.queue.max_bytes + config.limits.max_receive_memory + kFixedMemoryOverhead;
  std::string keys = "shipper.queue.mem.bytes + shipper.server.max_receive_memory";
  if (config.disk_queue) {
    total += 4 * queue::DiskBufferSize(config.disk);  // see queue::DiskOptions::buffer_size
    keys += " + 4 x shipper.queue.disk.buffer_size";
  }
  if (total > bytes) {
    problems->Add(absl::StrCat("config: ", keys, " (", total - kFixedMemoryOverhead,
                               " bytes) and Shipper's fixed overhead (", kFixedMemoryOverhead,
                               " bytes) do not fit ", where,
                               ": lower them, or leave them unset to size them from the limit"));
  }
}

// What no single key can check on its own, for the server's settings.
void Validate(const Config& config, Problems* problems) {
  problems->Add(queue::Queue::Validate(config.queue));
  // gRPC takes max_concurrent_streams as an int; a message is never near 2GiB.
  if (config.limits.max_message_size > INT_MAX || config.limits.max_concurrent_streams > INT_MAX) {
    problems->Add(
        "config: shipper.server.max_message_size and shipper.server.max_concurrent_streams must "
        "be below 2GiB");
  }
  if (config.limits.max_receive_memory < config.limits.max_message_size) {
    problems->Add(absl::StrCat(
        "config: shipper.server.max_receive_memory (", config.limits.max_receive_memory,
        " bytes) must be at least shipper.server.max_message_size (",
        config.limits.max_message_size, " bytes), or no request of that size could arrive"));
  }
  // Requests are checked by recursing once per level (request_validation.h): this bounds the
  // stack that takes.
  constexpr size_t kMaxNestingDepthCeiling = 1000;
  if (config.limits.max_nesting_depth > kMaxNestingDepthCeiling) {
    problems->Add(absl::StrCat("config: shipper.server.max_nesting_depth must be at most ",
                               kMaxNestingDepthCeiling,
                               " (every level costs stack while a request is checked)"));
  }
  if (config.backoff_max < config.backoff_init) {
    problems->Add(absl::StrCat("config: shipper.output.backoff.max (",
                               absl::FormatDuration(config.backoff_max),
                               ") is below shipper.output.backoff.init (",
                               absl::FormatDuration(config.backoff_init), ")"));
  }
}

// TLS on the listener: settings that go together, and their files.
void CheckListenerSsl(const Config::Ssl& ssl, Problems* problems) {
  if (ssl.certificate.empty()) {
    if (!ssl.key.empty() || ssl.client_authentication != ClientAuthentication::kNone) {
      problems->Add(
          "shipper.server.ssl.key and client_authentication need "
          "shipper.server.ssl.certificate: set it to serve TLS");
    }
    return;
  }
  if (ssl.key.empty()) {
    return problems->Add(
        "shipper.server.ssl.certificate needs shipper.server.ssl.key (its private key)");
  }
  CheckPem(problems, "shipper.server.ssl.certificate", ssl.certificate, "CERTIFICATE");
  CheckPem(problems, "shipper.server.ssl.key", ssl.key, "PRIVATE KEY");
  if (ssl.client_authentication == ClientAuthentication::kNone) return;
  if (ssl.certificate_authorities.empty()) {
    return problems->Add(
        "shipper.server.ssl.client_authentication verifies client certificates against "
        "shipper.server.ssl.certificate_authorities: set it");
  }
  for (const std::string& path : ssl.certificate_authorities) {
    CheckPem(problems, "shipper.server.ssl.certificate_authorities", path, "CERTIFICATE");
  }
}

// What the archived shipper's own keys mean here: `type` must name the enabled output; the
// others change nothing, and the log says so.
void Archived(Draft& draft, Problems* problems) {
  Config& config = draft.config;
  if (draft.given.count("type") && draft.type != config.output) {
    problems->Add(absl::StrCat("config: type is '", draft.type, "' but the enabled output is '",
                               config.output, "': set type: ", config.output,
                               " or enable shipper.output.", draft.type));
  }
  if (draft.given.count("monitoring.enabled")) {
    config.notes.push_back(
        "monitoring.enabled is the archived shipper's; it changes nothing here: Shipper's "
        "metrics are /metrics and /healthz (http.*) and the logging.metrics line");
  }
  if (draft.given.count("http.expvar.enabled")) {
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

}  // namespace

absl::StatusOr<Config> ParseConfig(absl::string_view yaml, absl::string_view source,
                                   const std::vector<std::string>& overrides,
                                   const runtime::MemoryLimit& memory_limit) {
  Draft draft;
  Problems problems;
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsNull() && !root.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": expected a map of config keys at the top level"));
    }
    SetTree("", root, source, draft, &problems);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  for (const std::string& item : overrides) SetOverride(item, draft, &problems);
  SizeMemory(memory_limit, draft, &problems);
  Validate(draft.config, &problems);
  for (const auto& [name, settings] : draft.outputs) settings->Validate(&problems);
  ChooseOutput(draft, &problems);
  Archived(draft, &problems);
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
  CheckListenAddress(&problems, "shipper.server.server", config.server_address);
  if (!config.health_address.empty()) {
    CheckListenAddress(&problems, "shipper.server.health.address", config.health_address);
  }
  CheckListenerSsl(config.ssl, &problems);
  if (!config.dead_letter_path.empty()) {
    CheckAppendFile(&problems, "shipper.dead_letter.path", config.dead_letter_path);
  }
  if (config.disk_queue) {
    for (const absl::Status& problem : queue::ValidateDiskOptions(config.disk)) {
      problems.Add(problem);
    }
  }
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
