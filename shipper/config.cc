#include "shipper/config.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <functional>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/match.h"
#include "yaml-cpp/yaml.h"

namespace shipper {
namespace {

// What a config file or -E says about outputs, before the one active output is decided.
struct Draft {
  Config config;
  std::map<OutputKind, bool> enabled;  // only outputs whose `enabled` key was given
};

// One configuration key: how to set it from a YAML scalar and how to show its value.
struct Key {
  std::string name;
  std::string expected;  // what a valid value looks like, for errors and --help
  std::string help;
  std::function<absl::Status(const std::string& scalar, Draft&)> set;
  std::function<std::string(Draft&)> show;
  // Also takes a YAML list of scalars, handed to `set` joined by commas.
  bool list = false;
};

// Each key reads and writes one field of the draft.
template <typename T>
using Field = std::function<T&(Draft&)>;

template <typename T>
Key Typed(std::string name, std::string help, std::string expected,
          std::function<std::optional<T>(const std::string&)> parse,
          std::function<std::string(const T&)> show, Field<T> field) {
  return Key{name, expected, std::move(help),
             [=](const std::string& scalar, Draft& d) {
               std::optional<T> value = parse(scalar);
               if (!value) {
                 return absl::InvalidArgumentError(absl::StrCat(
                     "config key '", name, "': expected ", expected, ", got '", scalar, "'"));
               }
               field(d) = *std::move(value);
               return absl::OkStatus();
             },
             [=](Draft& d) { return show(field(d)); }};
}

Key Bool(std::string name, std::string help, Field<bool> field) {
  return Typed<bool>(
      std::move(name), std::move(help), "true or false",
      [](const std::string& s) -> std::optional<bool> {
        std::string v = absl::AsciiStrToLower(s);
        if (v == "true") return true;
        if (v == "false") return false;
        return std::nullopt;
      },
      [](const bool& v) { return std::string(v ? "true" : "false"); }, std::move(field));
}

// A whole number >= min; with `bytes`, a KiB/MiB/GiB suffix multiplies it.
Key Size(std::string name, std::string help, size_t min, bool bytes, Field<size_t> field) {
  return Typed<size_t>(
      std::move(name), std::move(help),
      absl::StrCat("a whole number >= ", min, bytes ? " (KiB, MiB or GiB suffix allowed)" : ""),
      [=](const std::string& s) -> std::optional<size_t> {
        absl::string_view v = s;
        uint64_t unit = 1;
        if (bytes) {
          for (auto [suffix, mult] : {std::pair{"KiB", uint64_t{1} << 10},
                                      std::pair{"MiB", uint64_t{1} << 20},
                                      std::pair{"GiB", uint64_t{1} << 30}}) {
            if (absl::ConsumeSuffix(&v, suffix)) unit = mult;
          }
        }
        uint64_t n;
        if (!absl::SimpleAtoi(v, &n) || n < min || n > SIZE_MAX / unit) return std::nullopt;
        return n * unit;
      },
      [](const size_t& v) { return absl::StrCat(v); }, std::move(field));
}

Key Duration(std::string name, std::string help, Field<absl::Duration> field) {
  return Typed<absl::Duration>(
      std::move(name), std::move(help), "a duration such as 5ms, 10s or 1m (or 0)",
      [](const std::string& s) -> std::optional<absl::Duration> {
        absl::Duration v;
        if (s == "0") return absl::ZeroDuration();
        if (!absl::ParseDuration(s, &v) || v < absl::ZeroDuration()) return std::nullopt;
        return v;
      },
      [](const absl::Duration& v) { return absl::FormatDuration(v); }, std::move(field));
}

Key String(std::string name, std::string help, Field<std::string> field) {
  return Typed<std::string>(
      std::move(name), std::move(help), "a non-empty string",
      [](const std::string& s) -> std::optional<std::string> {
        if (s.empty()) return std::nullopt;
        return s;
      },
      [](const std::string& v) { return v; }, std::move(field));
}

// An enum that its own module parses and names.
template <typename T>
Key Enum(std::string name, std::string help, std::string choices,
         absl::StatusOr<T> (*parse)(absl::string_view), absl::string_view (*show)(T),
         Field<T> field) {
  return Typed<T>(
      std::move(name), std::move(help), absl::StrCat("one of ", choices),
      [parse](const std::string& s) -> std::optional<T> {
        absl::StatusOr<T> v = parse(s);
        if (!v.ok()) return std::nullopt;
        return *v;
      },
      [show](const T& v) { return std::string(show(v)); }, std::move(field));
}

// One of a fixed set of names.
template <typename T>
Key Choice(std::string name, std::string help, std::vector<std::pair<std::string, T>> choices,
           Field<T> field) {
  std::vector<std::string> names;
  for (const auto& choice : choices) names.push_back(choice.first);
  return Typed<T>(
      std::move(name), std::move(help), absl::StrCat("one of ", absl::StrJoin(names, "|")),
      [choices](const std::string& s) -> std::optional<T> {
        for (const auto& [n, v] : choices) {
          if (n == s) return v;
        }
        return std::nullopt;
      },
      [choices](const T& v) {
        for (const auto& [n, c] : choices) {
          if (c == v) return n;
        }
        return std::string();
      },
      std::move(field));
}

// File permissions in octal, as Beats writes them (0600).
Key Permissions(std::string name, std::string help, Field<uint32_t> field) {
  return Typed<uint32_t>(
      std::move(name), std::move(help), "octal permissions from 0000 to 0777, such as 0600",
      [](const std::string& s) -> std::optional<uint32_t> {
        if (s.empty() || s.size() > 4 || s.find_first_not_of("01234567") != std::string::npos) {
          return std::nullopt;
        }
        return static_cast<uint32_t>(std::stoul(s, nullptr, 8));
      },
      [](const uint32_t& v) { return absl::StrFormat("%04o", v); }, std::move(field));
}

// A YAML list, or one scalar of comma-separated items.
Key StringList(std::string name, std::string help, Field<std::vector<std::string>> field) {
  Key key = Typed<std::vector<std::string>>(
      std::move(name), std::move(help), "a list of non-empty strings",
      [](const std::string& s) -> std::optional<std::vector<std::string>> {
        std::vector<std::string> items = absl::StrSplit(s, ',');
        for (std::string& item : items) {
          item = std::string(absl::StripAsciiWhitespace(item));
          if (item.empty()) return std::nullopt;
        }
        return items;
      },
      [](const std::vector<std::string>& v) { return absl::StrJoin(v, ","); }, std::move(field));
  key.list = true;
  return key;
}

Key OutputEnabled(const std::string& output, OutputKind kind, std::string help) {
  return Bool(absl::StrCat("shipper.output.", output, ".enabled"), std::move(help),
              [kind](Draft& d) -> bool& { return d.enabled[kind]; });
}

absl::string_view RoundingName(runtime::Rounding r) {
  return r == runtime::Rounding::kFloor ? "floor" : "ceil";
}

const std::vector<Key>& Keys() {
  static const std::vector<Key>* keys = new std::vector<Key>{
      String("shipper.server.server", "gRPC listen address: host:port or unix:///path",
             [](Draft& d) -> std::string& { return d.config.server_address; }),
      Typed<std::string>(
          "shipper.server.health.address",
          "second listener serving only the gRPC health service, for Kubernetes probes (\"\": none)",
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
          [](Draft& d) -> std::string& { return d.config.health_address; }),
      Permissions("shipper.server.socket_mode", "permissions of a unix:///path socket file",
                  [](Draft& d) -> uint32_t& { return d.config.socket_mode; }),
      Size("shipper.server.max_message_size",
           "largest request accepted, in bytes as sent (at most 2GiB - 1)", 1, true,
           [](Draft& d) -> size_t& { return d.config.limits.max_message_size; }),
      Size("shipper.server.max_receive_memory",
           "memory gRPC may hold for requests being received, all connections together; "
           "beyond it streams are reset (RESOURCE_EXHAUSTED)",
           1, true, [](Draft& d) -> size_t& { return d.config.limits.max_receive_memory; }),
      Size("shipper.server.max_events_per_request", "most events one PublishEvents may carry",
           1, false, [](Draft& d) -> size_t& { return d.config.limits.max_events_per_request; }),
      Size("shipper.server.max_nesting_depth",
           "deepest Struct/ListValue nesting in an event's fields or metadata", 1, false,
           [](Draft& d) -> size_t& { return d.config.limits.max_nesting_depth; }),
      Size("shipper.server.max_concurrent_streams",
           "calls one connection may have in flight; more wait for a free slot", 1, false,
           [](Draft& d) -> size_t& { return d.config.limits.max_concurrent_streams; }),
      Size("shipper.server.max_connections",
           "connections served at once; calls on more are refused until one closes (0: no "
           "limit)",
           0, false, [](Draft& d) -> size_t& { return d.config.limits.max_connections; }),
      String("shipper.server.ssl.certificate",
             "PEM certificate (chain) of the listener; set: TLS, unset: plaintext",
             [](Draft& d) -> std::string& { return d.config.ssl.certificate; }),
      String("shipper.server.ssl.key", "PEM private key of ssl.certificate",
             [](Draft& d) -> std::string& { return d.config.ssl.key; }),
      String("shipper.server.ssl.certificate_authorities",
             "PEM bundle of the CAs that client certificates must chain to",
             [](Draft& d) -> std::string& { return d.config.ssl.certificate_authorities; }),
      Choice<ClientAuthentication>(
          "shipper.server.ssl.client_authentication",
          "none: no client certificate; optional: verified if sent; required: mTLS",
          {{"none", ClientAuthentication::kNone},
           {"optional", ClientAuthentication::kOptional},
           {"required", ClientAuthentication::kRequired}},
          [](Draft& d) -> ClientAuthentication& { return d.config.ssl.client_authentication; }),
      Size("shipper.queue.mem.events", "queue capacity in events", 1, false,
           [](Draft& d) -> size_t& { return d.config.queue.max_events; }),
      Size("shipper.queue.mem.bytes", "queue capacity in bytes of events as received (0: none)", 0,
           true, [](Draft& d) -> size_t& { return d.config.queue.max_bytes; }),
      Size("shipper.queue.mem.flush.min_events",
           "buffered loop: events to gather before a batch is handed out (<= 1: direct loop)", 0,
           false, [](Draft& d) -> size_t& { return d.config.queue.flush_min_events; }),
      Duration("shipper.queue.mem.flush.timeout",
               "buffered loop: longest wait for flush.min_events after the first event",
               [](Draft& d) -> absl::Duration& { return d.config.queue.flush_timeout; }),
      Enum<queue::WaitStrategy>(
          "shipper.queue.mem.wait_strategy", "how idle consumers and blocked producers wait",
          "blocking|phased|sleeping", queue::ParseWaitStrategy, queue::WaitStrategyName,
          [](Draft& d) -> queue::WaitStrategy& { return d.config.queue.wait_strategy; }),
      Size("shipper.output.bulk_max_size", "most events an output writes at once", 1, false,
           [](Draft& d) -> size_t& { return d.config.bulk_max_size; }),
      OutputEnabled("file", OutputKind::kFile,
                    "write NDJSON to a file (the default output when none is enabled)"),
      String("shipper.output.file.path", "directory of the file output",
             [](Draft& d) -> std::string& { return d.config.file.path; }),
      String("shipper.output.file.filename", "file name inside path",
             [](Draft& d) -> std::string& { return d.config.file.filename; }),
      Size("shipper.output.file.rotate_every_kb",
           "rotate the file before it grows past this many KiB", 1, false,
           [](Draft& d) -> size_t& { return d.config.file.rotate_every_kb; }),
      Size("shipper.output.file.number_of_files",
           "files kept: filename, filename.1, ...; the oldest is deleted on rotation", 2, false,
           [](Draft& d) -> size_t& { return d.config.file.number_of_files; }),
      Permissions("shipper.output.file.permissions", "permissions of the files created",
                  [](Draft& d) -> uint32_t& { return d.config.file.permissions; }),
      Choice<FsyncPolicy>(
          "shipper.output.file.fsync",
          "batch: flush each batch to disk before it counts as persisted; never: leave it to "
          "the kernel",
          {{"batch", FsyncPolicy::kBatch}, {"never", FsyncPolicy::kNever}},
          [](Draft& d) -> FsyncPolicy& { return d.config.file.fsync; }),
      OutputEnabled("console", OutputKind::kConsole, "write NDJSON to stdout, for debugging"),
      OutputEnabled("redis", OutputKind::kRedis, "send events to Redis"),
      StringList("shipper.output.redis.hosts",
                 "Redis servers as host:port; the next is tried when one fails",
                 [](Draft& d) -> std::vector<std::string>& { return d.config.redis.hosts; }),
      String("shipper.output.redis.key",
             "list, channel or stream name; %{[data_stream.dataset]} takes it from each event, "
             "%{[field]:default} when the field may be missing",
             [](Draft& d) -> std::string& { return d.config.redis.key; }),
      Choice<RedisDatatype>(
          "shipper.output.redis.datatype", "RPUSH to a list, PUBLISH to a channel, XADD to a stream",
          {{"list", RedisDatatype::kList},
           {"channel", RedisDatatype::kChannel},
           {"stream", RedisDatatype::kStream}},
          [](Draft& d) -> RedisDatatype& { return d.config.redis.datatype; }),
      Size("shipper.output.redis.db", "Redis database number (SELECT)", 0, false,
           [](Draft& d) -> size_t& { return d.config.redis.db; }),
      String("shipper.output.redis.password", "Redis password (AUTH); unset: none",
             [](Draft& d) -> std::string& { return d.config.redis.password; }),
      Duration("shipper.output.redis.timeout", "connect and reply timeout",
               [](Draft& d) -> absl::Duration& { return d.config.redis.timeout; }),
      OutputEnabled("shipper", OutputKind::kShipper,
                    "forward events to another Shipper (aggregator tier)"),
      String("shipper.output.shipper.server",
             "the next Shipper's address: host:port or unix:///path",
             [](Draft& d) -> std::string& { return d.config.shipper.server; }),
      Duration("shipper.output.shipper.timeout", "deadline of each PublishEvents call",
               [](Draft& d) -> absl::Duration& { return d.config.shipper.timeout; }),
      Bool("shipper.output.shipper.ssl.enabled", "TLS to the next Shipper",
           [](Draft& d) -> bool& { return d.config.shipper.ssl.enabled; }),
      String("shipper.output.shipper.ssl.certificate_authorities",
             "PEM bundle of the CAs the next Shipper's certificate must chain to (unset: "
             "gRPC's default roots)",
             [](Draft& d) -> std::string& { return d.config.shipper.ssl.certificate_authorities; }),
      String("shipper.output.shipper.ssl.certificate",
             "PEM client certificate for mTLS (with ssl.key)",
             [](Draft& d) -> std::string& { return d.config.shipper.ssl.certificate; }),
      String("shipper.output.shipper.ssl.key", "PEM private key of ssl.certificate",
             [](Draft& d) -> std::string& { return d.config.shipper.ssl.key; }),
      Duration("shipper.output.backoff.init",
               "first wait before an output retries a failed batch; doubles up to backoff.max",
               [](Draft& d) -> absl::Duration& { return d.config.backoff_init; }),
      Duration("shipper.output.backoff.max", "longest wait between retries (they never stop)",
               [](Draft& d) -> absl::Duration& { return d.config.backoff_max; }),
      String("shipper.dead_letter.path",
             "NDJSON file for events an output rejects for good (unset: logged at ERROR)",
             [](Draft& d) -> std::string& { return d.config.dead_letter_path; }),
      OutputEnabled("discard", OutputKind::kDiscard, "count and drop events, for benchmarks"),
      Enum<runtime::Rounding>(
          "shipper.cpu.rounding", "how a fractional CPU quota becomes a thread count",
          "floor|ceil", runtime::ParseRounding, RoundingName,
          [](Draft& d) -> runtime::Rounding& { return d.config.cpu.rounding; }),
      Duration("shipper.cpu.retune_interval",
               "how often the CPU quota is re-read to resize thread pools (0: never)",
               [](Draft& d) -> absl::Duration& { return d.config.cpu.retune_interval; }),
      Duration("shipper.shutdown_timeout",
               "after SIGTERM, how long the queue may drain into the output",
               [](Draft& d) -> absl::Duration& { return d.config.shutdown_timeout; }),
      Bool("shipper.http.enabled", "serve /metrics (Prometheus) and /healthz over HTTP",
           [](Draft& d) -> bool& { return d.config.http.enabled; }),
      String("shipper.http.host", "address the HTTP endpoint listens on",
             [](Draft& d) -> std::string& { return d.config.http.host; }),
      Typed<int>(
          "shipper.http.port", "port of the HTTP endpoint (0: a free one, logged at start)",
          "a port number from 0 to 65535",
          [](const std::string& s) -> std::optional<int> {
            int port;
            if (!absl::SimpleAtoi(s, &port) || port < 0 || port > 65535) return std::nullopt;
            return port;
          },
          [](const int& v) { return absl::StrCat(v); },
          [](Draft& d) -> int& { return d.config.http.port; }),
      Duration("shipper.metrics.period",
               "how often one INFO line logs what the counters did since the last (0: never)",
               [](Draft& d) -> absl::Duration& { return d.config.metrics_period; }),
  };
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
  const Key* closest = nullptr;
  size_t best = 0;
  for (const Key& key : Keys()) {
    size_t d = EditDistance(name, key.name);
    if (closest == nullptr || d < best) closest = &key, best = d;
  }
  std::string hint = best <= 3 ? absl::StrCat("; did you mean '", closest->name, "'?")
                               : "; see --help for the list of keys";
  return absl::InvalidArgumentError(
      absl::StrCat(where, "unknown config key '", name, "'", hint));
}

bool IsKeyPrefix(absl::string_view prefix) {
  for (const Key& key : Keys()) {
    if (absl::StartsWith(key.name, absl::StrCat(prefix, "."))) return true;
  }
  return false;
}

absl::Status Set(const std::string& name, const YAML::Node& node, absl::string_view where,
                 Draft& draft) {
  for (const Key& key : Keys()) {
    if (key.name != name) continue;
    if (key.list && node.IsSequence()) {
      std::vector<std::string> items;
      for (const YAML::Node& item : node) {
        if (!item.IsScalar()) {
          return absl::InvalidArgumentError(absl::StrCat(where, "config key '", name,
                                                         "': expected ", key.expected));
        }
        items.push_back(item.Scalar());
      }
      absl::Status status = key.set(absl::StrJoin(items, ","), draft);
      if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(where, status.message()));
      return absl::OkStatus();
    }
    if (!node.IsScalar()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "config key '", name, "': expected ", key.expected, ", got a ",
          node.IsMap() ? "map" : node.IsSequence() ? "list" : "null"));
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

// Walks nested and dotted maps alike, setting every leaf.
absl::Status SetTree(const std::string& prefix, const YAML::Node& node, absl::string_view source,
                     Draft& draft) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      std::string name = entry.first.as<std::string>();
      if (!prefix.empty()) name = absl::StrCat(prefix, ".", name);
      absl::Status status = SetTree(name, entry.second, source, draft);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  if (node.IsNull() && (prefix.empty() || IsKeyPrefix(prefix))) return absl::OkStatus();
  return Set(prefix, node, Where(source, node), draft);
}

// What no single key can check on its own.
absl::StatusOr<Config> Validate(Config config) {
  if (config.output == OutputKind::kShipper && config.shipper.server.empty()) {
    return absl::InvalidArgumentError(
        "config: the shipper output needs shipper.output.shipper.server (the next Shipper's "
        "address)");
  }
  const Config::ShipperOutput::Ssl& ssl = config.shipper.ssl;
  if (!ssl.enabled &&
      !(ssl.certificate_authorities.empty() && ssl.certificate.empty() && ssl.key.empty())) {
    return absl::InvalidArgumentError(
        "config: shipper.output.shipper.ssl files are set but TLS is off: set "
        "shipper.output.shipper.ssl.enabled: true");
  }
  if (ssl.certificate.empty() != ssl.key.empty()) {
    return absl::InvalidArgumentError(
        "config: shipper.output.shipper.ssl.certificate and ssl.key go together (mTLS): set "
        "both or neither");
  }
  if (config.redis.timeout <= absl::ZeroDuration() ||
      config.shipper.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "config: shipper.output.redis.timeout and shipper.output.shipper.timeout must be above 0");
  }
  // gRPC takes max_concurrent_streams as an int; a message is never near 2GiB.
  if (config.limits.max_message_size > INT_MAX ||
      config.limits.max_concurrent_streams > INT_MAX) {
    return absl::InvalidArgumentError(
        "config: shipper.server.max_message_size and shipper.server.max_concurrent_streams must "
        "be below 2GiB");
  }
  if (config.limits.max_receive_memory < config.limits.max_message_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: shipper.server.max_receive_memory (", config.limits.max_receive_memory,
        " bytes) must be at least shipper.server.max_message_size (",
        config.limits.max_message_size, " bytes), or no request of that size could arrive"));
  }
  // Requests are checked by recursing once per level (request_validation.h): this bounds the
  // stack that takes.
  constexpr size_t kMaxNestingDepthCeiling = 1000;
  if (config.limits.max_nesting_depth > kMaxNestingDepthCeiling) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: shipper.server.max_nesting_depth must be at most ", kMaxNestingDepthCeiling,
        " (every level costs stack while a request is checked)"));
  }
  if (config.backoff_max < config.backoff_init) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: shipper.output.backoff.max (", absl::FormatDuration(config.backoff_max),
        ") is below shipper.output.backoff.init (", absl::FormatDuration(config.backoff_init),
        ")"));
  }
  return config;
}

// Decides the one active output: an error names every enabled one when there are several.
absl::Status ChooseOutput(Draft& draft) {
  std::vector<std::string> names;
  for (const auto& [kind, on] : draft.enabled) {
    if (!on) continue;
    draft.config.output = kind;
    names.emplace_back(OutputName(kind));
  }
  if (names.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: exactly one output may be enabled, but these are: ",
        absl::StrJoin(names, ", "), "; set shipper.output.<name>.enabled: false on the others"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view OutputName(OutputKind kind) {
  switch (kind) {
    case OutputKind::kFile:
      return "file";
    case OutputKind::kConsole:
      return "console";
    case OutputKind::kDiscard:
      return "discard";
    case OutputKind::kRedis:
      return "redis";
    case OutputKind::kShipper:
      return "shipper";
  }
  return "unknown";
}

absl::StatusOr<Config> ParseConfig(absl::string_view yaml, absl::string_view source,
                                   const std::vector<std::string>& overrides) {
  Draft draft;
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsNull() && !root.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": expected a map of config keys at the top level"));
    }
    absl::Status status = SetTree("", root, source, draft);
    if (!status.ok()) return status;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", e.mark.line + 1,
                                                   ": not valid YAML: ", e.msg));
  }
  for (const std::string& item : overrides) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (item.find('=') == std::string::npos || kv.first.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("-E expects key=value, got '", item, "'"));
    }
    try {
      absl::Status status = Set(kv.first, YAML::Load(kv.second), "-E: ", draft);
      if (!status.ok()) return status;
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat("-E ", kv.first, ": value is not valid YAML: ", e.msg));
    }
  }
  if (absl::Status status = ChooseOutput(draft); !status.ok()) return status;
  return Validate(draft.config);
}

absl::StatusOr<Config> LoadConfig(const std::string& path,
                                  const std::vector<std::string>& overrides) {
  if (path.empty()) return ParseConfig("", "defaults", overrides);
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config file '", path, "' cannot be read (", std::strerror(errno),
        "): check the path given to -c"));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseConfig(text, path, overrides);
}

std::string ConfigKeysHelp() {
  Draft defaults;  // shows the values a Config starts with
  std::string out;
  for (const Key& key : Keys()) {
    absl::StrAppend(&out, "  ", key.name, " = ", key.show(defaults), "\n      ", key.help,
                    " (", key.expected, ")\n");
  }
  return out;
}

}  // namespace shipper
