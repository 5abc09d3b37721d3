#include "shipper/input/producer/request_validation.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/stubs/common.h"
#include "proto/messages.pb.h"
#include "shipper/event/wire_event.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
using wire::Field;
using wire::Reader;

enum class Problem { kNone, kMalformed, kNotUtf8, kTooDeep };

// Checks one Event's bytes against the schema, the nesting limit and UTF-8, and tells whether
// they are canonical. Recurses once per message level; Structs and ListValues deeper than the
// limit are refused before they are entered, so the depth is bounded by the limit.
class EventScanner {
 public:
  // `request`: the whole buffer the events lie in.
  EventScanner(absl::string_view request, size_t max_depth)
      : end_(request.data() + request.size()), max_depth_(max_depth) {}

  Problem Scan(absl::string_view event) {
    canonical_ = true;
    keys_.clear();
    uint32_t seen = 0;
    Reader reader(event);
    Field field;
    while (reader.Next(&field)) {
      if (field.type() != wire::kLength) continue;
      Problem p = Problem::kNone;
      switch (field.number()) {
        case wire::event::kTimestamp:
          p = Timestamp(field.bytes);
          break;
        case wire::event::kSource:
        case wire::event::kDataStream:
          p = Strings(field.bytes, field.number() == wire::event::kSource ? 2 : 3);
          break;
        case wire::event::kMetadata:
        case wire::event::kFields:
          p = Struct(field.bytes, 1);
          too_deep_in_ = field.number() == wire::event::kFields ? "fields" : "metadata";
          break;
        default:
          continue;
      }
      if (p != Problem::kNone) return p;
      Once(&seen, field.number());
    }
    return reader.ok() ? Problem::kNone : Problem::kMalformed;
  }

  bool canonical() const { return canonical_; }
  // Whether `s`, which lies in the request, is UTF-8. Most strings are ASCII: that is checked
  // here, 8 bytes at a time and without a branch per byte (a short string is read as one word
  // with the bytes after it masked off, when the request goes on that far); the others go to
  // protobuf's validator.
  bool Utf8(absl::string_view s) const {
    const char* p = s.data();
    const size_t n = s.size();
    uint64_t high = 0, word;
    if (n < 8 && end_ - p >= 8) {
      std::memcpy(&word, p, 8);
      high = word & ((uint64_t{1} << (8 * n)) - 1);  // little endian: s is the low n bytes
    } else {
      for (size_t i = 0; i + 8 <= n; i += 8) {
        std::memcpy(&word, p + i, 8);
        high |= word;
      }
      if (n >= 8) {
        std::memcpy(&word, p + n - 8, 8);
        high |= word;
      } else {
        for (size_t i = 0; i < n; ++i) high |= static_cast<uint8_t>(p[i]);
      }
    }
    return (high & 0x8080808080808080u) == 0 ||
           google::protobuf::internal::IsStructurallyValidUTF8(p, static_cast<int>(n));
  }
  // After kTooDeep: "fields" or "metadata", whichever was too deep.
  const char* too_deep_in() const { return too_deep_in_; }

 private:
  struct Key {
    uint64_t hash;
    absl::string_view name;
    bool operator<(const Key& o) const { return hash != o.hash ? hash < o.hash : name < o.name; }
  };

  // A known singular field seen a second time makes the message non-canonical (protobuf would
  // merge or override).
  void Once(uint32_t* seen, uint32_t number) {
    const uint32_t bit = uint32_t{1} << number;
    if (*seen & bit) canonical_ = false;
    *seen |= bit;
  }

  // Equal names hash equal. From the length and three bytes: it runs for every key, and names
  // of one Struct seldom agree on all four.
  static uint64_t Hash(absl::string_view s) {
    if (s.empty()) return 0;
    const auto byte = [&s](size_t i) { return static_cast<uint64_t>(static_cast<uint8_t>(s[i])); };
    return s.size() << 24 | byte(0) << 16 | byte(s.size() / 2) << 8 | byte(s.size() - 1);
  }

  // Whether keys_[from..] holds a name twice; pairwise for few keys, sorted for many.
  bool Duplicates(size_t from) {
    const auto begin = keys_.begin() + static_cast<std::ptrdiff_t>(from);
    const size_t n = keys_.size() - from;
    if (n > 16) {
      std::sort(begin, keys_.end());
      for (auto it = begin + 1; it < keys_.end(); ++it) {
        if (it->hash == (it - 1)->hash && it->name == (it - 1)->name) return true;
      }
      return false;
    }
    for (auto a = begin; a < keys_.end(); ++a) {
      for (auto b = a + 1; b < keys_.end(); ++b) {
        if (a->hash == b->hash && a->name == b->name) return true;
      }
    }
    return false;
  }

  Problem Timestamp(absl::string_view body) {
    uint32_t seen = 0;
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (field.type() == wire::kVarint && (field.number() == 1 || field.number() == 2)) {
        Once(&seen, field.number());
      }
    }
    return reader.ok() ? Problem::kNone : Problem::kMalformed;
  }

  // Source or DataStream: string fields 1..`count`.
  Problem Strings(absl::string_view body, uint32_t count) {
    uint32_t seen = 0;
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (field.type() != wire::kLength || field.number() > count) continue;
      if (!Utf8(field.bytes)) return Problem::kNotUtf8;
      Once(&seen, field.number());
    }
    return reader.ok() ? Problem::kNone : Problem::kMalformed;
  }

  // A Struct at nesting `level`.
  Problem Struct(absl::string_view body, size_t level) {
    if (level > max_depth_) return Problem::kTooDeep;
    const size_t first_key = keys_.size();
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (field.number() != 1 || field.type() != wire::kLength) continue;
      if (Problem p = Entry(field.bytes, level); p != Problem::kNone) return p;
    }
    if (!reader.ok()) return Problem::kMalformed;
    if (Duplicates(first_key)) canonical_ = false;
    keys_.resize(first_key);
    return Problem::kNone;
  }

  Problem Entry(absl::string_view body, size_t level) {
    uint32_t seen = 0;
    absl::string_view key;
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (field.type() != wire::kLength || (field.number() != 1 && field.number() != 2)) continue;
      Once(&seen, field.number());
      if (field.number() == 1) {
        if (!Utf8(field.bytes)) return Problem::kNotUtf8;
        key = field.bytes;
      } else if (Problem p = Value(field.bytes, level); p != Problem::kNone) {
        return p;
      }
    }
    if (!reader.ok()) return Problem::kMalformed;
    keys_.push_back({Hash(key), key});
    return Problem::kNone;
  }

  // A Value held by a Struct or ListValue at nesting `level`.
  Problem Value(absl::string_view body, size_t level) {
    bool has_kind = false;
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (!wire::IsValueKind(field)) continue;
      if (has_kind) canonical_ = false;  // the oneof's last kind would win
      has_kind = true;
      Problem p = Problem::kNone;
      switch (field.number()) {
        case wire::value::kString:
          p = Utf8(field.bytes) ? Problem::kNone : Problem::kNotUtf8;
          break;
        case wire::value::kStruct:
          p = Struct(field.bytes, level + 1);
          break;
        case wire::value::kList:
          p = List(field.bytes, level + 1);
          break;
        case wire::value::kTimestamp:
          p = Timestamp(field.bytes);
          break;
      }
      if (p != Problem::kNone) return p;
    }
    return reader.ok() ? Problem::kNone : Problem::kMalformed;
  }

  Problem List(absl::string_view body, size_t level) {
    if (level > max_depth_) return Problem::kTooDeep;
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (field.number() != 1 || field.type() != wire::kLength) continue;
      if (Problem p = Value(field.bytes, level); p != Problem::kNone) return p;
    }
    return reader.ok() ? Problem::kNone : Problem::kMalformed;
  }

  const char* const end_;  // of the request
  const size_t max_depth_;
  bool canonical_ = true;
  const char* too_deep_in_ = nullptr;
  std::vector<Key> keys_;  // of the Structs being scanned, innermost last
};

// Protobuf's encoding of what protobuf decodes from a valid, non-canonical event.
std::string Rewritten(absl::string_view event, size_t max_depth) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(event.data()),
                                            static_cast<int>(event.size()));
  // An event (1) holds a Struct (2) of entries (3) of Values (4) whose Struct (5) is the second
  // level: level L's Values sit at 3L + 1, their Timestamps one deeper.
  in.SetRecursionLimit(static_cast<int>(3 * max_depth + 5));
  pb::Event decoded;
  // The scan accepted the bytes, so protobuf does too.
  decoded.ParseFromCodedStream(&in);
  return decoded.SerializeAsString();
}

absl::Status NotAPublishRequest(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("request is not a valid PublishRequest: ", what));
}

// shipper.strict_mode: what the archived Go shipper required of an event, in its words; empty
// when nothing is missing. Reads the canonical event's few top-level fields, nothing nested.
std::string StrictModeProblems(absl::string_view event) {
  const wire::EventParts parts(event);
  std::vector<std::string> problems;
  if (!parts.has_timestamp) problems.push_back("invalid nil Timestamp");
  if (!parts.has_source) {
    problems.push_back("source: cannot be nil");
  } else {
    absl::string_view source[2];  // by field number: input_id = 1
    wire::StringsByNumber(parts.source, source);
    if (source[1].empty()) problems.push_back("source: input_id is a required field");
  }
  if (!parts.has_data_stream) {
    problems.push_back("datastream: cannot be nil");
  } else {
    absl::string_view data_stream[4];  // type = 1, dataset = 2, namespace = 3
    wire::StringsByNumber(parts.data_stream, data_stream);
    std::vector<std::string> missing;
    for (auto [number, name] : {std::pair{2, "dataset"}, {3, "namespace"}, {1, "type"}}) {
      if (data_stream[number].empty())
        missing.push_back(absl::StrCat(name, " is a required field"));
    }
    if (!missing.empty())
      problems.push_back(absl::StrCat("datastream: ", absl::StrJoin(missing, "; ")));
  }
  return absl::StrJoin(problems, "; ");
}

}  // namespace

absl::Status ScanPublishRequest(absl::string_view bytes, const RequestLimits& limits,
                                ScannedRequest* out) {
  EventScanner scanner(bytes, limits.max_nesting_depth);
  size_t count = 0;
  Reader reader(bytes);
  Field field;
  while (reader.Next(&field)) {
    if (field.type() != wire::kLength) continue;
    if (field.number() == 1) {
      if (!scanner.Utf8(field.bytes)) {
        return NotAPublishRequest("its uuid is not UTF-8");
      }
      out->uuid = field.bytes;
      continue;
    }
    // Past the limit, events are only counted, for the refusal to say how many there were.
    if (field.number() != 2 || ++count > limits.max_events_per_request) continue;
    const size_t i = count - 1;
    switch (scanner.Scan(field.bytes)) {
      case Problem::kNone:
        break;
      case Problem::kMalformed:
        return NotAPublishRequest(absl::StrCat("event ", i, " is truncated or not protobuf"));
      case Problem::kNotUtf8:
        return NotAPublishRequest(
            absl::StrCat("event ", i,
                         " has a string that is not UTF-8 (use valid UTF-8 in every "
                         "string and map key)"));
      case Problem::kTooDeep:
        return absl::InvalidArgumentError(absl::StrCat("event ", i, ": ", scanner.too_deep_in(),
                                                       " nest Struct/ListValue more than "
                                                       "shipper.server.max_nesting_depth (",
                                                       limits.max_nesting_depth,
                                                       ") levels deep: flatten the event"));
    }
    if (scanner.canonical()) {
      out->events.push_back(field.bytes);
    } else {
      out->events.push_back(
          out->rewritten.emplace_back(Rewritten(field.bytes, limits.max_nesting_depth)));
    }
    if (limits.strict_mode) {
      if (std::string problems = StrictModeProblems(out->events.back()); !problems.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("event ", i, ": ", problems, " (shipper.strict_mode is on)"));
      }
    }
  }
  if (!reader.ok()) return NotAPublishRequest("truncated or not protobuf");
  if (count > limits.max_events_per_request) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request has ", count, " events, more than shipper.server.max_events_per_request (",
        limits.max_events_per_request, "): send them in smaller requests"));
  }
  return absl::OkStatus();
}

}  // namespace shipper
