#include "shipper/config.h"

#include <algorithm>
#include <cerrno>
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
      Size("shipper.queue.mem.events", "queue capacity in events", 1, false,
           [](Draft& d) -> size_t& { return d.config.queue.max_events; }),
      Size("shipper.queue.mem.bytes", "queue capacity in bytes of decoded events (0: none)", 0,
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
      OutputEnabled("console", OutputKind::kConsole, "write NDJSON to stdout, for debugging"),
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

// Decides the one active output: an error names every enabled one when there are several.
absl::Status ChooseOutput(Draft& draft) {
  std::vector<std::string> names;
  for (const auto& [kind, on] : draft.enabled) {
    if (!on) continue;
    draft.config.output = kind;
    names.push_back(kind == OutputKind::kFile      ? "file"
                    : kind == OutputKind::kConsole ? "console"
                                                   : "discard");
  }
  if (names.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: exactly one output may be enabled, but these are: ",
        absl::StrJoin(names, ", "), "; set shipper.output.<name>.enabled: false on the others"));
  }
  return absl::OkStatus();
}

}  // namespace

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
  return draft.config;
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
