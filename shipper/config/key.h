// Config keys: how each key is parsed from YAML, shown in --help, and stored.
//
// A Key<S> sets one field of a settings struct S from a YAML scalar, or a list key from the items
// of a YAML list, each carried as it is (an item may hold a comma). The struct's default member
// initializers are the keys' defaults: --help shows the value a default-constructed S holds, so
// every default is written once, where its field is declared. Each module declares the keys of
// its own settings (the server's in config.cc, each output's in its own folder) with
// KeysOf<S>; Key::Within re-targets them at a bigger struct that holds an S.
//
//   struct RedisSettings { std::string key = "shipper"; ... };
//   using K = KeysOf<RedisSettings>;
//   K::String("shipper.output.redis.key", "list, channel or stream name", &RedisSettings::key)
//
// Thread safety: keys are immutable values; call them from any thread on distinct structs.
#ifndef SHIPPER_SHIPPER_CONFIG_KEY_H_
#define SHIPPER_SHIPPER_CONFIG_KEY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace shipper {

template <typename S>
struct Key {
  std::string name;      // in full: shipper.output.redis.key
  std::string expected;  // what a valid value looks like, for errors and --help
  std::string help;
  // Sets the field from a YAML scalar; INVALID_ARGUMENT names the key and what was expected.
  std::function<absl::Status(const std::string& scalar, S&)> set;
  std::function<std::string(S&)> show;
  // A list key's: sets the field from the items of a YAML list (each a scalar). Null for a
  // scalar key, which refuses a list.
  std::function<absl::Status(const std::vector<std::string>& items, S&)> set_list;

  bool list() const { return set_list != nullptr; }

  // The same key on a struct `Whole` whose `part` is the S this key sets.
  template <typename Whole>
  Key<Whole> Within(std::function<S&(Whole&)> part) const {
    Key<Whole> within{name, expected, help,
                      [set = set, part](const std::string& scalar, Whole& whole) {
                        return set(scalar, part(whole));
                      },
                      [show = show, part](Whole& whole) { return show(part(whole)); }};
    if (list()) {
      within.set_list = [set_list = set_list, part](const std::vector<std::string>& items,
                                                    Whole& whole) {
        return set_list(items, part(whole));
      };
    }
    return within;
  }
};

// `keys` of a struct S, re-targeted at its base class Base (a room's settings as the table that
// lists the room holds them). REQUIRES: the Base each key is given is an S.
template <typename Base, typename S>
std::vector<Key<Base>> KeysWithin(const std::vector<Key<S>>& keys) {
  std::vector<Key<Base>> within;
  within.reserve(keys.size());
  for (const Key<S>& key : keys) {
    within.push_back(
        key.template Within<Base>([](Base& base) -> S& { return static_cast<S&>(base); }));
  }
  return within;
}

// Each key reads and writes one field: a pointer to a member (&S::field) or a function.
template <typename S, typename T>
using Field = std::function<T&(S&)>;

// Parsers shared by the key types below: nullopt when the scalar is not a valid value.
namespace key_internal {
std::optional<bool> ParseBool(const std::string& s);
// A whole number >= min; with `bytes`, a KiB/MiB/GiB suffix multiplies it.
std::optional<size_t> ParseSize(const std::string& s, size_t min, bool bytes);
// A duration such as 5ms or 10s, or 0; never negative.
std::optional<absl::Duration> ParseDuration(const std::string& s);
// Octal permissions from 0000 to 0777.
std::optional<uint32_t> ParsePermissions(const std::string& s);
// Comma-separated non-empty items, whitespace around them stripped.
std::optional<std::vector<std::string>> SplitCommas(const std::string& s);
// A list as YAML writes it, for --help: ["a", "b,c"].
std::string ShowList(const std::vector<std::string>& items);
std::optional<int> ParsePort(const std::string& s);
std::string ShowPermissions(uint32_t mode);
}  // namespace key_internal

// The key types, for fields of S.
template <typename S>
struct KeysOf {
  template <typename T>
  static Key<S> Typed(std::string name, std::string help, std::string expected,
                      std::function<std::optional<T>(const std::string&)> parse,
                      std::function<std::string(const T&)> show, Field<S, T> field) {
    return Key<S>{name, expected, std::move(help),
                  [=](const std::string& scalar, S& s) {
                    std::optional<T> value = parse(scalar);
                    if (!value) {
                      return absl::InvalidArgumentError(absl::StrCat(
                          "config key '", name, "': expected ", expected, ", got '", scalar, "'"));
                    }
                    field(s) = *std::move(value);
                    return absl::OkStatus();
                  },
                  [=](S& s) { return show(field(s)); }};
  }

  static Key<S> Bool(std::string name, std::string help, Field<S, bool> field) {
    return Typed<bool>(
        std::move(name), std::move(help), "true or false", key_internal::ParseBool,
        [](const bool& v) { return std::string(v ? "true" : "false"); }, std::move(field));
  }

  // A whole number >= min; with `bytes`, a KiB/MiB/GiB suffix multiplies it.
  static Key<S> Size(std::string name, std::string help, size_t min, bool bytes,
                     Field<S, size_t> field) {
    return Typed<size_t>(
        std::move(name), std::move(help),
        absl::StrCat("a whole number >= ", min, bytes ? " (KiB, MiB or GiB suffix allowed)" : ""),
        [=](const std::string& s) { return key_internal::ParseSize(s, min, bytes); },
        [](const size_t& v) { return absl::StrCat(v); }, std::move(field));
  }

  static Key<S> Duration(std::string name, std::string help, Field<S, absl::Duration> field) {
    return Typed<absl::Duration>(
        std::move(name), std::move(help), "a duration such as 5ms, 10s or 1m (or 0)",
        key_internal::ParseDuration,
        [](const absl::Duration& v) { return absl::FormatDuration(v); }, std::move(field));
  }

  static Key<S> String(std::string name, std::string help, Field<S, std::string> field) {
    return Typed<std::string>(
        std::move(name), std::move(help), "a non-empty string",
        [](const std::string& s) -> std::optional<std::string> {
          if (s.empty()) return std::nullopt;
          return s;
        },
        [](const std::string& v) { return v; }, std::move(field));
  }

  // A string `check` accepts (an address, say); its error, the reason, follows what was
  // expected in the key's.
  static Key<S> Checked(std::string name, std::string help, std::string expected,
                        std::function<absl::Status(const std::string&)> check,
                        std::function<std::string(const std::string&)> show,
                        Field<S, std::string> field) {
    return Key<S>{name, expected, std::move(help),
                  [name, expected, check, field](const std::string& scalar, S& s) {
                    if (absl::Status status = check(scalar); !status.ok()) {
                      return absl::InvalidArgumentError(
                          absl::StrCat("config key '", name, "': expected ", expected, ", got '",
                                       scalar, "' (", status.message(), ")"));
                    }
                    field(s) = scalar;
                    return absl::OkStatus();
                  },
                  [show, field](S& s) { return show(field(s)); }};
  }

  // One of a fixed set of names.
  template <typename T>
  static Key<S> Choice(std::string name, std::string help,
                       std::vector<std::pair<std::string, T>> choices, Field<S, T> field) {
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

  // An enum that its own module parses and names.
  template <typename T>
  static Key<S> Enum(std::string name, std::string help, std::string choices,
                     absl::StatusOr<T> (*parse)(absl::string_view), absl::string_view (*show)(T),
                     Field<S, T> field) {
    return Typed<T>(
        std::move(name), std::move(help), absl::StrCat("one of ", choices),
        [parse](const std::string& s) -> std::optional<T> {
          absl::StatusOr<T> v = parse(s);
          if (!v.ok()) return std::nullopt;
          return *v;
        },
        [show](const T& v) { return std::string(show(v)); }, std::move(field));
  }

  // File permissions in octal, as Beats writes them (0600).
  static Key<S> Permissions(std::string name, std::string help, Field<S, uint32_t> field) {
    return Typed<uint32_t>(
        std::move(name), std::move(help), "octal permissions from 0000 to 0777, such as 0600",
        key_internal::ParsePermissions, key_internal::ShowPermissions, std::move(field));
  }

  static Key<S> Port(std::string name, std::string help, Field<S, int> field) {
    return Typed<int>(
        std::move(name), std::move(help), "a port number from 0 to 65535", key_internal::ParsePort,
        [](const int& v) { return absl::StrCat(v); }, std::move(field));
  }

  // A list of non-empty strings: a YAML list, each item as it is (commas and all), or one
  // scalar, which is one item.
  static Key<S> StringList(std::string name, std::string help,
                           Field<S, std::vector<std::string>> field) {
    return List(
        std::move(name), std::move(help), "a list of non-empty strings",
        [](const std::string& s) -> std::optional<std::vector<std::string>> {
          if (s.empty()) return std::nullopt;
          return std::vector<std::string>{s};
        },
        std::move(field));
  }

  // A list of items that never hold a comma (addresses, URLs): a YAML list, or one scalar of
  // comma-separated items, as Beats' -E takes them.
  static Key<S> CommaList(std::string name, std::string help,
                          Field<S, std::vector<std::string>> field) {
    return List(std::move(name), std::move(help),
                "a list of non-empty strings, or one string of them separated by commas",
                key_internal::SplitCommas, std::move(field));
  }

  // A list key: `scalar` reads a scalar's items (nullopt: not valid); a YAML list's items must
  // each be non-empty.
  static Key<S> List(
      std::string name, std::string help, std::string expected,
      std::function<std::optional<std::vector<std::string>>(const std::string&)> scalar,
      Field<S, std::vector<std::string>> field) {
    Key<S> key = Typed<std::vector<std::string>>(name, std::move(help), expected, std::move(scalar),
                                                 key_internal::ShowList, field);
    key.set_list = [name, expected, field](const std::vector<std::string>& items, S& s) {
      for (const std::string& item : items) {
        if (item.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("config key '", name, "': expected ", expected, ", got an empty item"));
        }
      }
      field(s) = items;
      return absl::OkStatus();
    };
    return key;
  }
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_KEY_H_
