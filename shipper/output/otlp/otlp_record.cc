#include "shipper/output/otlp/otlp_record.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "shipper/event/date_time.h"
#include "shipper/event/wire_event.h"
#include "shipper/input/otlp/otlp_fields.h"
#include "shipper/output/otlp/otlp_wire_writer.h"

namespace shipper {
namespace {

using wire::ValueParts;

// Field numbers of proto/otlp (otlp_fields.h) this file names unqualified.
using otlp::kResourceAttributes;
using otlp::kResourceDropped;
using otlp::kScopeAttributes;
using otlp::kScopeDropped;
using otlp::kScopeName;
using otlp::kScopeVersion;
using otlp::kValues;  // ArrayValue, KeyValueList
constexpr uint32_t kKeyValueKey = otlp::kKey, kKeyValueValue = otlp::kValue;

// The values to send as bytes (the event's otlp.bytes metadata), and the path of the value being
// written, below the event's fields.
class BytesPaths {
 public:
  // From otlp.bytes's list; false when it is not a list of paths (nothing is taken then).
  bool Parse(absl::string_view list) {
    bool ok = true;
    wire::ForEachItem(list, [&](absl::string_view item) {
      const ValueParts path(item);
      ok = ok && path.kind == wire::value::kList;
      if (!ok) return;
      paths_.emplace_back();
      wire::ForEachItem(path.bytes, [&](absl::string_view step) {
        const ValueParts p(step);
        if (p.kind == wire::value::kString) {
          paths_.back().push_back({p.bytes, 0, false});
        } else if (p.kind == wire::value::kInt64) {
          paths_.back().push_back({{}, static_cast<int64_t>(p.scalar), true});
        } else {
          ok = false;
        }
      });
    });
    if (!ok) paths_.clear();
    return ok;
  }

  void Push(absl::string_view key) { at_.push_back({key, 0, false}); }
  void Push(int64_t index) { at_.push_back({{}, index, true}); }
  void Pop() { at_.pop_back(); }
  bool AtBytes() const {
    for (const std::vector<Step>& path : paths_) {
      if (path == at_) return true;
    }
    return false;
  }

 private:
  struct Step {
    absl::string_view key;
    int64_t index;
    bool is_index;
    bool operator==(const Step& o) const {
      return is_index == o.is_index && (is_index ? index == o.index : key == o.key);
    }
  };
  std::vector<std::vector<Step>> paths_;
  std::vector<Step> at_;
};

// While it lives, `bytes` (when not null) is at `step` below where it was.
class BytesStep {
 public:
  template <typename Step>
  BytesStep(BytesPaths* bytes, Step step) : bytes_(bytes) {
    if (bytes_ != nullptr) bytes_->Push(step);
  }
  ~BytesStep() {
    if (bytes_ != nullptr) bytes_->Pop();
  }
  BytesStep(const BytesStep&) = delete;
  BytesStep& operator=(const BytesStep&) = delete;

 private:
  BytesPaths* const bytes_;
};

uint64_t UnixNanos(absl::string_view timestamp) {
  const wire::TimestampParts t(timestamp);
  return static_cast<uint64_t>(t.seconds) * 1000000000 + static_cast<uint64_t>(t.nanos);
}

void AnyValue(WireWriter& w, absl::string_view value, BytesPaths* bytes = nullptr);

// The entries of a Struct as KeyValues of field `number`. `bytes`: null, or the values to send as
// bytes, with the path of the Struct.
void KeyValues(WireWriter& w, uint32_t number, absl::string_view struct_body,
               BytesPaths* bytes = nullptr) {
  wire::ForEachEntry(struct_body, [&](absl::string_view key, absl::string_view value) {
    w.Message(number, [&](WireWriter& kv) {
      kv.Bytes(kKeyValueKey, key);
      if (bytes != nullptr) bytes->Push(key);
      kv.Message(kKeyValueValue, [&](WireWriter& v) { AnyValue(v, value, bytes); });
      if (bytes != nullptr) bytes->Pop();
    });
  });
}

// KeyValues() of the Struct at `key` below bytes's path.
void KeyValuesAt(WireWriter& w, uint32_t number, absl::string_view struct_body, BytesPaths* bytes,
                 absl::string_view key) {
  BytesStep at(bytes, key);
  KeyValues(w, number, struct_body, bytes);
}

// A Value's body as an AnyValue's.
void AnyValue(WireWriter& w, absl::string_view value, BytesPaths* bytes) {
  const ValueParts v(value);
  switch (v.kind) {
    case wire::value::kFloat64:
      w.Fixed64(otlp::kDouble, v.scalar);
      return;
    case wire::value::kFloat32: {
      float f;
      const uint32_t bits = static_cast<uint32_t>(v.scalar);
      static_assert(sizeof(f) == sizeof(bits));
      std::memcpy(&f, &bits, sizeof(f));
      const double d = f;
      uint64_t dbits;
      std::memcpy(&dbits, &d, sizeof(d));
      w.Fixed64(otlp::kDouble, dbits);
      return;
    }
    case wire::value::kInt32:
      // int32 is sign-extended to 64 bits on the wire already.
    case wire::value::kInt64:
    case wire::value::kUint32:
      w.Varint(otlp::kInt, v.scalar);
      return;
    case wire::value::kUint64:
      if (v.scalar <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        w.Varint(otlp::kInt, v.scalar);
      } else {
        w.Bytes(otlp::kString, absl::StrCat(v.scalar));
      }
      return;
    case wire::value::kString:
      if (bytes != nullptr && bytes->AtBytes()) {
        std::string raw;
        if (absl::Base64Unescape(v.bytes, &raw)) {
          w.Bytes(otlp::kBytes, raw);
          return;
        }
      }
      w.Bytes(otlp::kString, v.bytes);
      return;
    case wire::value::kBool:
      w.Varint(otlp::kBool, v.scalar != 0);
      return;
    case wire::value::kStruct:
      w.Message(otlp::kKvlist, [&](WireWriter& list) { KeyValues(list, kValues, v.bytes, bytes); });
      return;
    case wire::value::kList:
      w.Message(otlp::kArray, [&](WireWriter& array) {
        int64_t i = 0;
        wire::ForEachItem(v.bytes, [&](absl::string_view item) {
          if (bytes != nullptr) bytes->Push(i++);
          array.Message(kValues, [&](WireWriter& a) { AnyValue(a, item, bytes); });
          if (bytes != nullptr) bytes->Pop();
        });
      });
      return;
    case wire::value::kTimestamp: {
      const wire::TimestampParts t(v.bytes);
      char text[kRfc3339Max];
      if (const size_t n = FormatRfc3339(t.seconds, t.nanos, text); n > 0) {
        w.Bytes(otlp::kString, absl::string_view(text, n));
        return;
      }
      const absl::Time time = absl::FromUnixSeconds(t.seconds) + absl::Nanoseconds(t.nanos);
      w.Bytes(otlp::kString, absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", time, absl::UTCTimeZone()));
      return;
    }
    default:  // null, or no kind: an empty AnyValue
      return;
  }
}

// The value of `key` in a Struct, if there.
bool Find(absl::string_view struct_body, absl::string_view key, absl::string_view* value) {
  bool found = false;
  wire::ForEachEntry(struct_body, [&](absl::string_view k, absl::string_view v) {
    if (!found && k == key) {
      *value = v;
      found = true;
    }
  });
  return found;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Whether `s` is lowercase hex of `bytes` bytes, as the input writes ids.
bool IsHex(absl::string_view s, size_t bytes) {
  if (s.size() != 2 * bytes) return false;
  for (char c : s) {
    if (HexDigit(c) < 0) return false;
  }
  return true;
}

void PutHex(WireWriter& w, uint32_t number, absl::string_view hex) {
  std::string raw(hex.size() / 2, '\0');
  for (size_t i = 0; i < raw.size(); ++i) {
    raw[i] = static_cast<char>(HexDigit(hex[2 * i]) << 4 | HexDigit(hex[2 * i + 1]));
  }
  w.Bytes(number, raw);
}

bool IsKind(absl::string_view value, uint32_t kind) { return ValueParts(value).kind == kind; }

// Whether a Struct's keys are among `allowed`, each of its kind.
template <size_t N>
bool OnlyKeys(absl::string_view struct_body,
              const std::pair<absl::string_view, uint32_t> (&allowed)[N]) {
  bool ok = true;
  wire::ForEachEntry(struct_body, [&](absl::string_view key, absl::string_view value) {
    if (!ok) return;
    for (const auto& [name, kind] : allowed) {
      if (key == name) {
        ok = IsKind(value, kind);
        return;
      }
    }
    ok = false;
  });
  return ok;
}

// Whether an int64 Value fits a uint32 (a dropped count, the flags).
bool IsUint32(const ValueParts& v) {
  return v.kind == wire::value::kInt64 && v.scalar <= std::numeric_limits<uint32_t>::max();
}

// Whether a resource's or scope's dropped_attributes_count, if any, fits its uint32.
bool DroppedFits(absl::string_view struct_body) {
  absl::string_view dropped;
  return !Find(struct_body, "dropped_attributes_count", &dropped) || IsUint32(ValueParts(dropped));
}

// Whether `v`, the field `key` of a log record's event, is an OTel-native part of the shape the
// OTLP input writes (otlp_conversion.h), so that it can go back where it came from.
bool IsNative(absl::string_view key, const ValueParts& v) {
  using namespace wire::value;  // NOLINT: the kinds
  if (key == "body") {
    // Exactly one of text (a string) and structured (any value).
    size_t entries = 0;
    absl::string_view kind, body;
    if (v.kind == kStruct) {
      wire::ForEachEntry(v.bytes, [&](absl::string_view k, absl::string_view b) {
        ++entries;
        kind = k;
        body = b;
      });
    }
    return entries == 1 && ((kind == "text" && IsKind(body, kString)) || kind == "structured");
  }
  if (key == "attributes") return v.kind == kStruct;
  if (key == "resource") {
    static constexpr std::pair<absl::string_view, uint32_t> kResource[] = {
        {"schema_url", kString}, {"attributes", kStruct}, {"dropped_attributes_count", kInt64}};
    return v.kind == kStruct && OnlyKeys(v.bytes, kResource) && DroppedFits(v.bytes);
  }
  if (key == "scope") {
    static constexpr std::pair<absl::string_view, uint32_t> kScope[] = {
        {"schema_url", kString},
        {"name", kString},
        {"version", kString},
        {"attributes", kStruct},
        {"dropped_attributes_count", kInt64}};
    return v.kind == kStruct && OnlyKeys(v.bytes, kScope) && DroppedFits(v.bytes);
  }
  if (key == "severity_text" || key == "event_name") return v.kind == kString;
  if (key == "severity_number") {
    // An enum on the wire: an int32, negative ones sign-extended as the input keeps them.
    const auto n = static_cast<int64_t>(v.scalar);
    return v.kind == kInt64 && n >= std::numeric_limits<int32_t>::min() &&
           n <= std::numeric_limits<int32_t>::max();
  }
  if (key == "dropped_attributes_count") return IsUint32(v);
  if (key == "trace_id") return v.kind == kString && IsHex(v.bytes, 16);
  if (key == "span_id") return v.kind == kString && IsHex(v.bytes, 8);
  if (key == "observed_timestamp") return v.kind == kTimestamp;
  return false;
}

// One field as a KeyValue of field `number`, its key as it is.
void Attribute(WireWriter& w, uint32_t number, absl::string_view key, absl::string_view value) {
  w.Message(number, [&](WireWriter& kv) {
    kv.Bytes(kKeyValueKey, key);
    kv.Message(kKeyValueValue, [&](WireWriter& a) { AnyValue(a, value); });
  });
}

void StringAttribute(WireWriter& w, absl::string_view key, absl::string_view value) {
  if (value.empty()) return;
  w.Message(kResourceAttributes, [&](WireWriter& kv) {
    kv.Bytes(kKeyValueKey, key);
    kv.Message(kKeyValueValue, [&](WireWriter& a) { a.Bytes(otlp::kString, value); });
  });
}

// The event's source as resource attributes.
void ResourceSource(const wire::EventParts& event, WireWriter& resource) {
  absl::string_view source[3];  // by field number
  wire::StringsByNumber(event.source, source);
  StringAttribute(resource, "source.input_id", source[1]);
  StringAttribute(resource, "source.stream_id", source[2]);
}

// A resource or scope entry that IsNative() took, where the OTLP input had taken it from. `bytes`:
// null, or the values to send as bytes.
void ResourceOrScope(absl::string_view key, const ValueParts& v, BytesPaths* bytes,
                     WireWriter& resource, WireWriter& scope, OtlpRecord* out) {
  const bool is_resource = key == "resource";
  WireWriter& w = is_resource ? resource : scope;
  wire::ForEachEntry(v.bytes, [&](absl::string_view part, absl::string_view value) {
    const ValueParts p(value);
    if (part == "attributes") {
      if (bytes != nullptr) {
        bytes->Push(key);
        bytes->Push(part);
      }
      KeyValues(w, is_resource ? uint32_t{kResourceAttributes} : uint32_t{kScopeAttributes},
                p.bytes, bytes);
      if (bytes != nullptr) {
        bytes->Pop();
        bytes->Pop();
      }
    } else if (part == "dropped_attributes_count") {
      w.Varint(is_resource ? uint32_t{kResourceDropped} : uint32_t{kScopeDropped}, p.scalar);
    } else if (part == "schema_url") {
      (is_resource ? out->resource_schema_url : out->scope_schema_url)
          .assign(p.bytes.data(), p.bytes.size());
    } else if (part == "name") {
      w.Bytes(kScopeName, p.bytes);
    } else if (part == "version") {
      w.Bytes(kScopeVersion, p.bytes);
    }
  });
}

// A field that IsNative() took, where the OTLP input had taken it from. `bytes`: null, or the
// values to send as bytes.
void NativeField(absl::string_view key, const ValueParts& v, BytesPaths* bytes, WireWriter& r,
                 WireWriter& resource, WireWriter& scope, OtlpRecord* out) {
  const auto push = [&](std::initializer_list<absl::string_view> path) {
    if (bytes != nullptr) {
      for (absl::string_view step : path) bytes->Push(step);
    }
  };
  const auto pop = [&](size_t steps) {
    if (bytes != nullptr) {
      for (size_t i = 0; i < steps; ++i) bytes->Pop();
    }
  };
  if (key == "body") {
    wire::ForEachEntry(v.bytes, [&](absl::string_view kind, absl::string_view body) {
      r.Message(otlp::kBody, [&](WireWriter& w) {
        if (kind == "text") {
          w.Bytes(otlp::kString, ValueParts(body).bytes);
        } else {
          push({key, kind});
          AnyValue(w, body, bytes);
          pop(2);
        }
      });
    });
  } else if (key == "attributes") {
    push({key});
    KeyValues(r, otlp::kAttributes, v.bytes, bytes);
    pop(1);
  } else if (key == "resource" || key == "scope") {
    ResourceOrScope(key, v, bytes, resource, scope, out);
  } else if (key == "severity_text") {
    r.Bytes(otlp::kSeverityText, v.bytes);
  } else if (key == "severity_number") {
    r.Varint(otlp::kSeverityNumber, v.scalar);
  } else if (key == "event_name") {
    r.Bytes(otlp::kEventName, v.bytes);
  } else if (key == "trace_id") {
    PutHex(r, otlp::kTraceId, v.bytes);
  } else if (key == "span_id") {
    PutHex(r, otlp::kSpanId, v.bytes);
  } else if (key == "dropped_attributes_count") {
    r.Varint(otlp::kDroppedAttributes, v.scalar);
  } else if (key == "observed_timestamp") {
    r.Fixed64(otlp::kObservedTime, UnixNanos(v.bytes));
  }
}

void MapLogRecordEvent(const wire::EventParts& event, OtlpRecord* out) {
  WireWriter r(&out->record), resource(&out->resource), scope(&out->scope);
  // The metadata the OTLP input writes (otlp_conversion.h); any other entry, or one not of its
  // form, goes to the resource as a Producer event's metadata does.
  bool time_unset = false;
  BytesPaths paths;
  BytesPaths* bytes = nullptr;
  std::string other_metadata;
  WireWriter others(&other_metadata);
  wire::ForEachEntry(event.metadata, [&](absl::string_view key, absl::string_view value) {
    const ValueParts v(value);
    if (key == "otlp.flags" && IsUint32(v)) {
      r.Fixed32(otlp::kFlags, static_cast<uint32_t>(v.scalar));
    } else if (key == "otlp.time_unix_nano_unset" && v.kind == wire::value::kBool) {
      time_unset = v.scalar != 0;
    } else if (key == "otlp.bytes" && v.kind == wire::value::kList && bytes == nullptr &&
               paths.Parse(v.bytes)) {
      bytes = &paths;
    } else {
      Attribute(others, kResourceAttributes, absl::StrCat("metadata.", key), value);
    }
  });
  if (event.has_timestamp && !time_unset) r.Fixed64(otlp::kTime, UnixNanos(event.timestamp));
  wire::ForEachEntry(event.fields, [&](absl::string_view key, absl::string_view value) {
    const ValueParts v(value);
    if (IsNative(key, v)) {
      NativeField(key, v, bytes, r, resource, scope, out);
    } else {
      Attribute(r, otlp::kAttributes, key, value);
    }
  });
  ResourceSource(event, resource);
  out->resource.append(other_metadata);
}

// The event's source, and each metadata entry as metadata.<key>, as resource attributes; but
// otlp.bytes when `bytes_taken` (ReadBytesPaths() took it).
void SourceAndMetadata(const wire::EventParts& event, WireWriter& resource,
                       bool bytes_taken = false) {
  ResourceSource(event, resource);
  wire::ForEachEntry(event.metadata, [&](absl::string_view key, absl::string_view value) {
    if (bytes_taken && key == "otlp.bytes") return;
    Attribute(resource, kResourceAttributes, absl::StrCat("metadata.", key), value);
  });
}

// A span's or point's otlp.bytes metadata (the OTLP input's) read into *paths: `paths`, or null
// when there is none of its form.
BytesPaths* ReadBytesPaths(absl::string_view metadata, BytesPaths* paths) {
  absl::string_view value;
  if (!Find(metadata, "otlp.bytes", &value)) return nullptr;
  const ValueParts v(value);
  return v.kind == wire::value::kList && paths->Parse(v.bytes) ? paths : nullptr;
}

// `same_resource`: null, or the resource of a Producer event whose source, data_stream and
// metadata are this one's (the resource is made of nothing else), taken instead of writing it
// again.
void MapProducerEvent(const wire::EventParts& event, OtlpRecord* out,
                      const std::string* same_resource = nullptr) {
  WireWriter r(&out->record), resource(&out->resource);
  if (event.has_timestamp) r.Fixed64(otlp::kTime, UnixNanos(event.timestamp));
  absl::string_view message;
  if (Find(event.fields, "message", &message)) {
    r.Message(otlp::kBody, [&](WireWriter& w) { AnyValue(w, message); });
  }
  wire::ForEachEntry(event.fields, [&](absl::string_view key, absl::string_view value) {
    if (key != "message") Attribute(r, otlp::kAttributes, key, value);
  });
  if (same_resource != nullptr) {
    out->resource.assign(*same_resource);
    return;
  }
  absl::string_view stream[4];  // by field number
  wire::StringsByNumber(event.data_stream, stream);
  StringAttribute(resource, "data_stream.type", stream[1]);
  StringAttribute(resource, "data_stream.dataset", stream[2]);
  StringAttribute(resource, "data_stream.namespace", stream[3]);
  SourceAndMetadata(event, resource);
}

// Spans and data points (otlp_signals.h's shape). Each Write* below writes a value of that shape
// where it came from and says whether it was of the shape; the caller discards what it wrote when
// it was not, and sends the field as an attribute instead.

// An int64 Value as a uint32 (a count, flags) or an int32 (an exponential histogram's scale and
// offset).
bool AsInt32(const ValueParts& v, int64_t* n) {
  *n = static_cast<int64_t>(v.scalar);
  return v.kind == wire::value::kInt64 && *n >= std::numeric_limits<int32_t>::min() &&
         *n <= std::numeric_limits<int32_t>::max();
}
uint64_t ZigZag32(int64_t n) {
  const auto i = static_cast<int32_t>(n);
  return static_cast<uint32_t>((static_cast<uint32_t>(i) << 1) ^ static_cast<uint32_t>(i >> 31));
}

// An id as the input writes it: lowercase hex of the bytes as sent, any length.
bool IsHexId(const ValueParts& v) {
  if (v.kind != wire::value::kString || v.bytes.size() % 2 != 0) return false;
  for (char c : v.bytes) {
    if (HexDigit(c) < 0) return false;
  }
  return true;
}

// An enum as the input names it: a name of `names`, or a number (an int64).
template <size_t N>
bool EnumNumber(const ValueParts& v, const absl::string_view (&names)[N], uint64_t* n) {
  if (v.kind == wire::value::kInt64) {
    *n = v.scalar;
    return true;
  }
  for (size_t i = 0; i < N; ++i) {
    if (v.kind == wire::value::kString && !names[i].empty() && v.bytes == names[i]) {
      *n = i;
      return true;
    }
  }
  return false;
}
constexpr absl::string_view kSpanKinds[] = {"Unspecified", "Internal", "Server",
                                            "Client",      "Producer", "Consumer"};
constexpr absl::string_view kStatusCodes[] = {"Unset", "Ok", "Error"};
constexpr absl::string_view kTemporalities[] = {"", "delta", "cumulative"};

// Each entry of a Struct by entry(key, value); false at the first one it does not take.
template <typename Entry>
bool Entries(absl::string_view struct_body, Entry entry) {
  bool ok = true;
  wire::ForEachEntry(struct_body, [&](absl::string_view key, absl::string_view value) {
    ok = ok && entry(key, ValueParts(value));
  });
  return ok;
}

// A list of Structs (at `key` below bytes's path) as the repeated message field `number`, each
// written by item(body, w, bytes) with bytes's path at its index.
template <typename Item>
bool Messages(const ValueParts& list, uint32_t number, WireWriter& w, Item item, BytesPaths* bytes,
              absl::string_view key) {
  if (list.kind != wire::value::kList) return false;
  BytesStep at(bytes, key);
  bool ok = true;
  int64_t i = 0;
  wire::ForEachItem(list.bytes, [&](absl::string_view value) {
    const ValueParts v(value);
    BytesStep index(bytes, i++);
    ok = ok && v.kind == wire::value::kStruct;
    if (ok) w.Message(number, [&](WireWriter& m) { ok = item(v.bytes, m, bytes); });
  });
  return ok;
}

// A list of scalars of `kind` as the packed repeated field `number`, each encoded by
// put(bits, out) (a WireWriter::Encode*), gathered into one append per chunk of items.
template <typename Put>
bool Packed(const ValueParts& list, uint32_t kind, uint32_t number, WireWriter& w, Put put) {
  if (list.kind != wire::value::kList) return false;
  bool ok = true;
  w.Message(number, [&](WireWriter& m) {
    char chunk[512];
    size_t n = 0;
    wire::ForEachItem(list.bytes, [&](absl::string_view value) {
      const ValueParts v(value);
      ok = ok && v.kind == kind;
      if (!ok) return;
      if (n > sizeof chunk - WireWriter::kMaxItem) {
        m.Raw(absl::string_view(chunk, n));
        n = 0;
      }
      n += put(v.scalar, chunk + n);
    });
    m.Raw(absl::string_view(chunk, n));
  });
  return ok;
}
bool PackedFixed64(const ValueParts& list, uint32_t kind, uint32_t number, WireWriter& w) {
  return Packed(list, kind, number, w, WireWriter::EncodeFixed64);
}

// Writes field `key` of the event as write(value, scratch) writes it, or, when that says it is not
// of the shape, as an attribute (field `attributes` of `w`) with its key as it is.
template <typename Write>
void FieldOrAttribute(WireWriter& w, uint32_t attributes, absl::string_view key,
                      absl::string_view value, std::string* scratch, Write write) {
  scratch->clear();
  WireWriter s(scratch);
  if (write(ValueParts(value), s)) {
    w.Raw(*scratch);
  } else {
    Attribute(w, attributes, key, value);
  }
}

bool WriteSpanEvent(absl::string_view body, WireWriter& w, BytesPaths* bytes) {
  return Entries(body, [&](absl::string_view key, const ValueParts& v) {
    if (key == "timestamp" && v.kind == wire::value::kTimestamp) {
      w.Fixed64(otlp::span::kEventTime, UnixNanos(v.bytes));
    } else if (key == "name" && v.kind == wire::value::kString) {
      w.Bytes(otlp::span::kEventName, v.bytes);
    } else if (key == "attributes" && v.kind == wire::value::kStruct) {
      KeyValuesAt(w, otlp::span::kEventAttributes, v.bytes, bytes, key);
    } else if (key == "dropped_attributes_count" && IsUint32(v)) {
      w.Varint(otlp::span::kEventDropped, v.scalar);
    } else {
      return false;
    }
    return true;
  });
}

bool WriteLink(absl::string_view body, WireWriter& w, BytesPaths* bytes) {
  return Entries(body, [&](absl::string_view key, const ValueParts& v) {
    if (key == "trace_id" && IsHexId(v)) {
      PutHex(w, otlp::span::kLinkTraceId, v.bytes);
    } else if (key == "span_id" && IsHexId(v)) {
      PutHex(w, otlp::span::kLinkSpanId, v.bytes);
    } else if (key == "trace_state" && v.kind == wire::value::kString) {
      w.Bytes(otlp::span::kLinkTraceState, v.bytes);
    } else if (key == "attributes" && v.kind == wire::value::kStruct) {
      KeyValuesAt(w, otlp::span::kLinkAttributes, v.bytes, bytes, key);
    } else if (key == "dropped_attributes_count" && IsUint32(v)) {
      w.Varint(otlp::span::kLinkDropped, v.scalar);
    } else if (key == "flags" && IsUint32(v)) {
      w.Fixed32(otlp::span::kLinkFlags, static_cast<uint32_t>(v.scalar));
    } else {
      return false;
    }
    return true;
  });
}

bool WriteStatus(const ValueParts& status, WireWriter& w) {
  if (status.kind != wire::value::kStruct) return false;
  uint64_t code = 0;
  absl::string_view message;
  const bool ok = Entries(status.bytes, [&](absl::string_view key, const ValueParts& v) {
    if (key == "code") return EnumNumber(v, kStatusCodes, &code);
    message = v.bytes;
    return key == "message" && v.kind == wire::value::kString;
  });
  // An unset status (the input writes it always) is no Status message, as it came.
  if (!ok || (code == 0 && message.empty())) return ok;
  w.Message(otlp::span::kStatus, [&](WireWriter& m) {
    if (!message.empty()) m.Bytes(otlp::span::kStatusMessage, message);
    if (code != 0) m.Varint(otlp::span::kStatusCode, code);
  });
  return true;
}

// A span's field, where the input had taken it from; false (and nothing to keep in `w`) when it is
// not of its shape. `start`: the span's start, which its duration is from; `bytes`: null, or the
// values to send as bytes.
bool WriteSpanField(absl::string_view key, const ValueParts& v, uint64_t start, WireWriter& w,
                    BytesPaths* bytes) {
  namespace span = otlp::span;
  uint64_t n = 0;
  if (key == "trace_id" || key == "span_id" || key == "parent_span_id") {
    if (!IsHexId(v)) return false;
    PutHex(w,
           key == "trace_id"  ? span::kTraceId
           : key == "span_id" ? span::kSpanId
                              : span::kParentSpanId,
           v.bytes);
  } else if ((key == "trace_state" || key == "name") && v.kind == wire::value::kString) {
    w.Bytes(key == "name" ? span::kName : span::kTraceState, v.bytes);
  } else if (key == "flags" && IsUint32(v)) {
    w.Fixed32(span::kFlags, static_cast<uint32_t>(v.scalar));
  } else if (key == "kind" && EnumNumber(v, kSpanKinds, &n)) {
    if (n != 0) w.Varint(span::kKind, n);
  } else if (key == "duration" && v.kind == wire::value::kUint64) {
    w.Fixed64(span::kEnd, start + v.scalar);
  } else if (key == "attributes" && v.kind == wire::value::kStruct) {
    KeyValuesAt(w, span::kAttributes, v.bytes, bytes, key);
  } else if (key == "dropped_attributes_count" && IsUint32(v)) {
    w.Varint(span::kDroppedAttributes, v.scalar);
  } else if (key == "dropped_events_count" && IsUint32(v)) {
    w.Varint(span::kDroppedEvents, v.scalar);
  } else if (key == "dropped_links_count" && IsUint32(v)) {
    w.Varint(span::kDroppedLinks, v.scalar);
  } else if (key == "events") {
    return Messages(v, span::kEvents, w, WriteSpanEvent, bytes, key);
  } else if (key == "links") {
    return Messages(v, span::kLinks, w, WriteLink, bytes, key);
  } else if (key == "status") {
    return WriteStatus(v, w);
  } else {
    return false;
  }
  return true;
}

void MapSpanEvent(const wire::EventParts& event, OtlpRecord* out) {
  out->signal = OtlpSignal::kTraces;
  WireWriter r(&out->record), resource(&out->resource), scope(&out->scope);
  const uint64_t start = event.has_timestamp ? UnixNanos(event.timestamp) : 0;
  if (start != 0) r.Fixed64(otlp::span::kStart, start);
  BytesPaths paths;
  BytesPaths* const bytes = ReadBytesPaths(event.metadata, &paths);
  std::string scratch;
  wire::ForEachEntry(event.fields, [&](absl::string_view key, absl::string_view value) {
    const ValueParts v(value);
    if ((key == "resource" || key == "scope") && IsNative(key, v)) {
      ResourceOrScope(key, v, bytes, resource, scope, out);
      return;
    }
    FieldOrAttribute(r, otlp::span::kAttributes, key, value, &scratch,
                     [&](const ValueParts& p, WireWriter& s) {
                       return WriteSpanField(key, p, start, s, bytes);
                     });
  });
  SourceAndMetadata(event, resource, bytes != nullptr);
}

// What a data point event says of its Metric (its `metric` and `metrics` entries).
struct MetricOfPoint {
  uint32_t type = 0;  // otlp::metric::kGauge ...
  otlp::metric::PointLayout layout{};
  absl::string_view name, value;  // `metrics`'s one entry
  absl::string_view description, metadata;
  uint64_t temporality = 0;
  bool has_temporality = false, monotonic = false;
};

// Reads the point's `metric` and `metrics`; false when they are not of the shape (it is no point).
bool ReadMetric(absl::string_view fields, MetricOfPoint* m) {
  namespace metric = otlp::metric;
  absl::string_view value;
  size_t metrics = 0;
  if (!Find(fields, "metrics", &value) || !IsKind(value, wire::value::kStruct)) return false;
  wire::ForEachEntry(ValueParts(value).bytes, [&](absl::string_view name, absl::string_view v) {
    ++metrics;
    m->name = name;
    m->value = v;
  });
  if (metrics != 1 || !Find(fields, "metric", &value) || !IsKind(value, wire::value::kStruct)) {
    return false;
  }
  return Entries(ValueParts(value).bytes, [&](absl::string_view key, const ValueParts& v) {
    if (key == "type" && v.kind == wire::value::kString) {
      static constexpr std::pair<absl::string_view, uint32_t> kTypes[] = {
          {"gauge", metric::kGauge},
          {"sum", metric::kSum},
          {"histogram", metric::kHistogram},
          {"exponential_histogram", metric::kExponentialHistogram},
          {"summary", metric::kSummary}};
      for (const auto& [name, type] : kTypes) {
        if (v.bytes == name) m->type = type;
      }
      m->layout = m->type == metric::kHistogram              ? metric::kHistogramLayout
                  : m->type == metric::kExponentialHistogram ? metric::kExponentialLayout
                  : m->type == metric::kSummary              ? metric::kSummaryLayout
                                                             : metric::kNumberLayout;
      return m->type != 0;
    }
    if (key == "description" && v.kind == wire::value::kString) {
      m->description = v.bytes;
    } else if (key == "temporality" && EnumNumber(v, kTemporalities, &m->temporality)) {
      m->has_temporality = true;
    } else if (key == "monotonic" && v.kind == wire::value::kBool) {
      m->monotonic = v.scalar != 0;
    } else if (key == "metadata" && v.kind == wire::value::kStruct) {
      m->metadata = v.bytes;
    } else {
      return false;
    }
    return true;
  });
}

// The `value`, when set, of a gauge or sum point or of an exemplar: an int64 or a float64.
bool WriteNumber(const ValueParts& v, uint32_t as_int, uint32_t as_double, WireWriter& w) {
  if (v.kind == wire::value::kInt64) {
    w.Fixed64(as_int, v.scalar);
  } else if (v.kind == wire::value::kFloat64) {
    w.Fixed64(as_double, v.scalar);
  } else {
    return v.kind == wire::value::kNull;
  }
  return true;
}

bool WriteExemplar(absl::string_view body, WireWriter& w, BytesPaths* bytes) {
  namespace metric = otlp::metric;
  return Entries(body, [&](absl::string_view key, const ValueParts& v) {
    if (key == "timestamp" && v.kind == wire::value::kTimestamp) {
      w.Fixed64(metric::kExemplarTime, UnixNanos(v.bytes));
    } else if (key == "value") {
      return WriteNumber(v, metric::kExemplarInt, metric::kExemplarDouble, w);
    } else if ((key == "trace_id" || key == "span_id") && IsHexId(v)) {
      PutHex(w, key == "trace_id" ? metric::kExemplarTraceId : metric::kExemplarSpanId, v.bytes);
    } else if (key == "filtered_attributes" && v.kind == wire::value::kStruct) {
      KeyValuesAt(w, metric::kExemplarAttributes, v.bytes, bytes, key);
    } else {
      return false;
    }
    return true;
  });
}

bool WriteQuantile(absl::string_view body, WireWriter& w, BytesPaths*) {
  return Entries(body, [&](absl::string_view key, const ValueParts& v) {
    if (v.kind != wire::value::kFloat64 || (key != "quantile" && key != "value")) return false;
    w.Fixed64(key == "quantile" ? otlp::metric::kQuantile : otlp::metric::kQuantileValue, v.scalar);
    return true;
  });
}

bool WriteBuckets(const ValueParts& buckets, uint32_t number, WireWriter& w) {
  if (buckets.kind != wire::value::kStruct) return false;
  bool ok = true;
  w.Message(number, [&](WireWriter& m) {
    ok = Entries(buckets.bytes, [&](absl::string_view key, const ValueParts& v) {
      int64_t offset = 0;
      if (key == "offset" && AsInt32(v, &offset)) {
        if (offset != 0) m.Varint(otlp::metric::kOffset, ZigZag32(offset));
        return true;
      }
      return key == "bucket_counts" &&
             Packed(v, wire::value::kUint64, otlp::metric::kExpBucketCounts, m,
                    WireWriter::EncodeVarint);
    });
  });
  return ok;
}

// The exact values of a point (its `data_point` entry) where they came from. `bytes`: null, or the
// values to send as bytes.
bool WriteDataPoint(const ValueParts& data_point, const MetricOfPoint& m, WireWriter& w,
                    BytesPaths* bytes) {
  namespace metric = otlp::metric;
  if (data_point.kind != wire::value::kStruct) return false;
  BytesStep at(bytes, "data_point");
  const bool histogram = m.type == metric::kHistogram;
  const bool exponential = m.type == metric::kExponentialHistogram;
  const bool number = m.type == metric::kGauge || m.type == metric::kSum;
  return Entries(data_point.bytes, [&](absl::string_view key, const ValueParts& v) {
    const bool is_double = v.kind == wire::value::kFloat64,
               is_uint = v.kind == wire::value::kUint64;
    int64_t scale = 0;
    if (key == "flags" && IsUint32(v)) {
      w.Varint(m.layout.flags, v.scalar);
    } else if (key == "exemplars" && m.layout.exemplars != 0) {
      return Messages(v, m.layout.exemplars, w, WriteExemplar, bytes, key);
    } else if (number) {
      return false;
    } else if (key == "count" && is_uint) {
      w.Fixed64(metric::kCount, v.scalar);
    } else if (key == "sum" && is_double) {
      w.Fixed64(metric::kPointSum, v.scalar);
    } else if ((key == "min" || key == "max") && is_double && m.layout.min != 0) {
      w.Fixed64(key == "min" ? m.layout.min : m.layout.max, v.scalar);
    } else if (histogram && key == "bucket_counts") {
      return PackedFixed64(v, wire::value::kUint64, metric::kBucketCounts, w);
    } else if (histogram && key == "explicit_bounds") {
      return PackedFixed64(v, wire::value::kFloat64, metric::kExplicitBounds, w);
    } else if (exponential && key == "scale" && AsInt32(v, &scale)) {
      if (scale != 0) w.Varint(metric::kScale, ZigZag32(scale));
    } else if (exponential && key == "zero_count" && is_uint) {
      w.Fixed64(metric::kZeroCount, v.scalar);
    } else if (exponential && key == "zero_threshold" && is_double) {
      w.Fixed64(metric::kZeroThreshold, v.scalar);
    } else if (exponential && (key == "positive" || key == "negative")) {
      return WriteBuckets(v, key == "positive" ? metric::kPositive : metric::kNegative, w);
    } else if (m.type == metric::kSummary && key == "quantile_values") {
      return Messages(v, metric::kQuantileValues, w, WriteQuantile, nullptr, key);
    } else {
      return false;
    }
    return true;
  });
}

// False when the event is not a data point of the shape (it goes as a log record then).
bool MapPointEvent(const wire::EventParts& event, OtlpRecord* out) {
  namespace metric = otlp::metric;
  MetricOfPoint m;
  if (!ReadMetric(event.fields, &m)) return false;
  out->signal = OtlpSignal::kMetrics;
  out->metric_type = m.type;
  WireWriter r(&out->record), resource(&out->resource), scope(&out->scope);
  if (event.has_timestamp) r.Fixed64(metric::kTime, UnixNanos(event.timestamp));
  BytesPaths paths;
  BytesPaths* const bytes = ReadBytesPaths(event.metadata, &paths);
  const bool number = m.type == metric::kGauge || m.type == metric::kSum;
  absl::string_view unit;
  std::string scratch;
  wire::ForEachEntry(event.fields, [&](absl::string_view key, absl::string_view value) {
    const ValueParts v(value);
    if ((key == "resource" || key == "scope") && IsNative(key, v)) {
      ResourceOrScope(key, v, bytes, resource, scope, out);
      return;
    }
    // What ReadMetric() took, and what the point's exact entries say again.
    if (key == "metric" || (key == "metrics" && !number) ||
        (key == "_doc_count" && !number && v.kind == wire::value::kInt64)) {
      return;
    }
    if (key == "unit" && v.kind == wire::value::kString) {
      unit = v.bytes;
      return;
    }
    FieldOrAttribute(
        r, m.layout.attributes, key, value, &scratch, [&](const ValueParts& p, WireWriter& s) {
          if (key == "metrics") {
            return WriteNumber(ValueParts(m.value), metric::kAsInt, metric::kAsDouble, s);
          }
          if (key == "start_timestamp" && p.kind == wire::value::kTimestamp) {
            s.Fixed64(metric::kStart, UnixNanos(p.bytes));
            return true;
          }
          if (key == "attributes" && p.kind == wire::value::kStruct) {
            KeyValuesAt(s, m.layout.attributes, p.bytes, bytes, key);
            return true;
          }
          return key == "data_point" && WriteDataPoint(p, m, s, bytes);
        });
  });
  WireWriter w(&out->metric);
  w.Bytes(metric::kName, m.name);
  if (!m.description.empty()) w.Bytes(metric::kDescription, m.description);
  if (!unit.empty()) w.Bytes(metric::kUnit, unit);
  if (!m.metadata.empty()) {
    BytesStep at(bytes, "metric");
    KeyValuesAt(w, metric::kMetadata, m.metadata, bytes, "metadata");
  }
  WireWriter data(&out->metric_data);
  if (m.has_temporality && m.temporality != 0) data.Varint(metric::kTemporality, m.temporality);
  if (m.type == metric::kSum && m.monotonic) data.Varint(metric::kMonotonic, 1);
  SourceAndMetadata(event, resource, bytes != nullptr);
  return true;
}

}  // namespace

namespace {

// Whether an event of these parts goes by the Producer API's mapping whatever it holds (one marked
// as a data point may too, when it is not one; it is not taken here, to keep this a cheap test).
bool IsProducerEvent(const wire::EventParts& parts) {
  return parts.otel_signal != wire::otel::kLog && parts.otel_signal != wire::otel::kSpan &&
         parts.otel_signal != wire::otel::kDataPoint;
}

// MapEvent() of an event's parts; `same_resource` as MapProducerEvent() takes it.
void MapParts(const wire::EventParts& parts, OtlpRecord* out,
              const std::string* same_resource = nullptr) {
  out->resource.clear();
  out->scope.clear();
  out->record.clear();
  out->resource_schema_url.clear();
  out->scope_schema_url.clear();
  out->metric.clear();
  out->metric_data.clear();
  out->metric_type = 0;
  out->signal = OtlpSignal::kLogs;
  if (parts.otel_signal == wire::otel::kLog) {
    MapLogRecordEvent(parts, out);
  } else if (parts.otel_signal == wire::otel::kSpan) {
    MapSpanEvent(parts, out);
  } else if (parts.otel_signal != wire::otel::kDataPoint || !MapPointEvent(parts, out)) {
    // MapPointEvent() wrote nothing when it returned false.
    MapProducerEvent(parts, out, same_resource);
  }
}

}  // namespace

void MapEvent(absl::string_view event, OtlpRecord* out) { MapParts(wire::EventParts(event), out); }

void MapEvent(const wire::EventParts& parts, OtlpRecord* out, const wire::EventParts* before,
              const OtlpRecord* before_record) {
  const std::string* same_resource = nullptr;
  if (before != nullptr && before_record != nullptr && IsProducerEvent(parts)) {
    if (IsProducerEvent(*before) && before->source == parts.source &&
        before->data_stream == parts.data_stream && before->metadata == parts.metadata) {
      same_resource = &before_record->resource;
    }
  }
  MapParts(parts, out, same_resource);
}

}  // namespace shipper
