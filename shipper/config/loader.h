// How a YAML config file and -E overrides become settings: nested and dotted maps alike
// (`shipper: {queue: {mem: {events: 4096}}}` or `shipper.queue.mem.events: 4096`), each leaf set
// through the key of its name; a list key gets a YAML list's items as they are (an item may hold a
// comma). `-E key=value` reads the value as YAML too (a flow list: -E 'k=[a, "b,c"]'), and refuses
// one YAML
// would misread, saying how to quote it. Every bad leaf (unknown key, with the nearest known one
// suggested; wrong type) is one problem naming the file and line or -E, and the key; loading goes
// on, so that one run reports them all.
//
// Thread safety: a ConfigLoader is used by one thread; it sets the settings its keys are bound to.
#ifndef SHIPPER_SHIPPER_CONFIG_LOADER_H_
#define SHIPPER_SHIPPER_CONFIG_LOADER_H_

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shipper/config/key.h"
#include "shipper/config/problems.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace shipper {

// A key bound to the settings it sets.
struct BoundKey {
  std::string name;
  std::string expected;
  // Sets the field from a scalar; the error names the key.
  std::function<absl::Status(const std::string& scalar)> set;
  // A list key's: sets the field from a YAML list's items, as they are. Null for a scalar key.
  std::function<absl::Status(const std::vector<std::string>& items)> set_list;
};

// `keys` of S, bound to `*settings`, which must outlive the result.
template <typename S>
std::vector<BoundKey> Bind(const std::vector<Key<S>>& keys, S* settings) {
  std::vector<BoundKey> bound;
  bound.reserve(keys.size());
  for (const Key<S>& key : keys) {
    BoundKey b{key.name, key.expected, [set = key.set, settings](const std::string& scalar) {
                 return set(scalar, *settings);
               }};
    if (key.list()) {
      b.set_list = [set_list = key.set_list, settings](const std::vector<std::string>& items) {
        return set_list(items, *settings);
      };
    }
    bound.push_back(std::move(b));
  }
  return bound;
}

class ConfigLoader {
 public:
  // `renamed`: old spellings, each still setting the key it names, with a warning.
  ConfigLoader(std::vector<BoundKey> keys,
               absl::Span<const std::pair<const char*, const char*>> renamed);

  // Sets every leaf of the YAML document `yaml`, read from `source` (a path, for errors). An
  // error when it is not YAML or not a map at the top; each bad leaf is a problem instead.
  absl::Status LoadYaml(absl::string_view yaml, absl::string_view source);
  // Sets the key of one `-E key=value`.
  void LoadOverride(const std::string& item);

  // Whether the file or -E set key `name` (under its current spelling).
  bool given(absl::string_view name) const { return given_.count(std::string(name)) > 0; }
  // Every bad leaf so far, one line each.
  Problems& problems() { return problems_; }
  // Old spellings used, one line each: for the log at start.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  // Sets the key `name` from `node`, a scalar (or a list, for list keys).
  absl::Status Set(std::string name, const YAML::Node& node, absl::string_view where);
  // Walks nested and dotted maps alike, setting every leaf; a problem for each bad one.
  void SetTree(const std::string& prefix, const YAML::Node& node, absl::string_view source);
  absl::Status UnknownKey(absl::string_view name, absl::string_view where) const;
  bool IsKeyPrefix(absl::string_view prefix) const;

  const std::vector<BoundKey> keys_;
  const absl::Span<const std::pair<const char*, const char*>> renamed_;
  std::set<std::string> given_;
  Problems problems_;
  std::vector<std::string> warnings_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_LOADER_H_
