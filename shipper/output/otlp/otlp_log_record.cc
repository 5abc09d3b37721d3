#include "shipper/output/otlp/otlp_log_record.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "shipper/event/wire_event.h"
#include "shipper/output/otlp/otlp_wire_writer.h"

namespace shipper {
namespace {

using wire::ValueParts;

// Field numbers of proto/otlp.
namespace any {
enum : uint32_t { kString = 1, kBool, kInt, kDouble, kArray, kKvlist, kBytes };
}
namespace record {
enum : uint32_t {
  kTime = 1,
  kSeverityNumber = 2,
  kSeverityText = 3,
  kBody = 5,
  kAttributes = 6,
  kDropped = 7,
  kTraceId = 9,
  kSpanId = 10,
  kObservedTime = 11,
  kEventName = 12,
};
}
constexpr uint32_t kKeyValueKey = 1, kKeyValueValue = 2;  // KeyValue
constexpr uint32_t kValues = 1;                           // ArrayValue, KeyValueList
constexpr uint32_t kResourceAttributes = 1;
constexpr uint32_t kScopeName = 1, kScopeVersion = 2, kScopeAttributes = 3;

uint64_t UnixNanos(absl::string_view timestamp) {
  const wire::TimestampParts t(timestamp);
  return static_cast<uint64_t>(t.seconds) * 1000000000 + static_cast<uint64_t>(t.nanos);
}

void AnyValue(WireWriter& w, absl::string_view value);

// The entries of a Struct as KeyValues of field `number`.
void KeyValues(WireWriter& w, uint32_t number, absl::string_view struct_body) {
  wire::ForEachEntry(struct_body, [&](absl::string_view key, absl::string_view value) {
    w.Message(number, [&](WireWriter& kv) {
      kv.Bytes(kKeyValueKey, key);
      kv.Message(kKeyValueValue, [&](WireWriter& v) { AnyValue(v, value); });
    });
  });
}

// A Value's body as an AnyValue's.
void AnyValue(WireWriter& w, absl::string_view value) {
  const ValueParts v(value);
  switch (v.kind) {
    case wire::value::kFloat64:
      w.Fixed64(any::kDouble, v.scalar);
      return;
    case wire::value::kFloat32: {
      float f;
      const uint32_t bits = static_cast<uint32_t>(v.scalar);
      static_assert(sizeof(f) == sizeof(bits));
      std::memcpy(&f, &bits, sizeof(f));
      const double d = f;
      uint64_t dbits;
      std::memcpy(&dbits, &d, sizeof(d));
      w.Fixed64(any::kDouble, dbits);
      return;
    }
    case wire::value::kInt32:
      // int32 is sign-extended to 64 bits on the wire already.
    case wire::value::kInt64:
    case wire::value::kUint32:
      w.Varint(any::kInt, v.scalar);
      return;
    case wire::value::kUint64:
      if (v.scalar <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        w.Varint(any::kInt, v.scalar);
      } else {
        w.Bytes(any::kString, absl::StrCat(v.scalar));
      }
      return;
    case wire::value::kString:
      w.Bytes(any::kString, v.bytes);
      return;
    case wire::value::kBool:
      w.Varint(any::kBool, v.scalar != 0);
      return;
    case wire::value::kStruct:
      w.Message(any::kKvlist, [&](WireWriter& list) { KeyValues(list, kValues, v.bytes); });
      return;
    case wire::value::kList:
      w.Message(any::kArray, [&](WireWriter& array) {
        wire::ForEachItem(v.bytes, [&](absl::string_view item) {
          array.Message(kValues, [&](WireWriter& a) { AnyValue(a, item); });
        });
      });
      return;
    case wire::value::kTimestamp: {
      const wire::TimestampParts t(v.bytes);
      const absl::Time time = absl::FromUnixSeconds(t.seconds) + absl::Nanoseconds(t.nanos);
      w.Bytes(any::kString, absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", time, absl::UTCTimeZone()));
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

bool OtlpShapedFields(absl::string_view fields) {
  bool ok = true;
  wire::ForEachEntry(fields, [&](absl::string_view key, absl::string_view value) {
    if (!ok) return;
    const ValueParts v(value);
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
      ok = entries == 1 && ((kind == "text" && IsKind(body, kString)) || kind == "structured");
    } else if (key == "attributes") {
      ok = v.kind == kStruct;
    } else if (key == "resource") {
      static constexpr std::pair<absl::string_view, uint32_t> kResource[] = {
          {"attributes", kStruct}};
      ok = v.kind == kStruct && OnlyKeys(v.bytes, kResource);
    } else if (key == "scope") {
      static constexpr std::pair<absl::string_view, uint32_t> kScope[] = {
          {"name", kString}, {"version", kString}, {"attributes", kStruct}};
      ok = v.kind == kStruct && OnlyKeys(v.bytes, kScope);
    } else if (key == "severity_text" || key == "event_name") {
      ok = v.kind == kString;
    } else if (key == "severity_number" || key == "dropped_attributes_count") {
      ok = v.kind == kInt64;
    } else if (key == "trace_id") {
      ok = v.kind == kString && IsHex(v.bytes, 16);
    } else if (key == "span_id") {
      ok = v.kind == kString && IsHex(v.bytes, 8);
    } else if (key == "observed_timestamp") {
      ok = v.kind == kTimestamp;
    } else {
      ok = false;
    }
  });
  return ok;
}

void MapOtlpShaped(const wire::EventParts& event, OtlpLogRecord* out) {
  WireWriter r(&out->record), resource(&out->resource), scope(&out->scope);
  r.Fixed64(record::kTime, UnixNanos(event.timestamp));
  wire::ForEachEntry(event.fields, [&](absl::string_view key, absl::string_view value) {
    const ValueParts v(value);
    if (key == "body") {
      wire::ForEachEntry(v.bytes, [&](absl::string_view kind, absl::string_view body) {
        r.Message(record::kBody, [&](WireWriter& w) {
          if (kind == "text") {
            w.Bytes(any::kString, ValueParts(body).bytes);
          } else {
            AnyValue(w, body);
          }
        });
      });
    } else if (key == "attributes") {
      KeyValues(r, record::kAttributes, v.bytes);
    } else if (key == "resource") {
      absl::string_view attributes;
      if (Find(v.bytes, "attributes", &attributes)) {
        KeyValues(resource, kResourceAttributes, ValueParts(attributes).bytes);
      }
    } else if (key == "scope") {
      wire::ForEachEntry(v.bytes, [&](absl::string_view part, absl::string_view value) {
        const ValueParts p(value);
        if (part == "name") scope.Bytes(kScopeName, p.bytes);
        if (part == "version") scope.Bytes(kScopeVersion, p.bytes);
        if (part == "attributes") KeyValues(scope, kScopeAttributes, p.bytes);
      });
    } else if (key == "severity_text") {
      r.Bytes(record::kSeverityText, v.bytes);
    } else if (key == "severity_number") {
      r.Varint(record::kSeverityNumber, static_cast<uint32_t>(v.scalar));
    } else if (key == "event_name") {
      r.Bytes(record::kEventName, v.bytes);
    } else if (key == "trace_id") {
      PutHex(r, record::kTraceId, v.bytes);
    } else if (key == "span_id") {
      PutHex(r, record::kSpanId, v.bytes);
    } else if (key == "dropped_attributes_count") {
      r.Varint(record::kDropped, static_cast<uint32_t>(v.scalar));
    } else if (key == "observed_timestamp") {
      r.Fixed64(record::kObservedTime, UnixNanos(v.bytes));
    }
  });
}

void MapProducerEvent(const wire::EventParts& event, OtlpLogRecord* out) {
  WireWriter r(&out->record), resource(&out->resource);
  if (event.has_timestamp) r.Fixed64(record::kTime, UnixNanos(event.timestamp));
  absl::string_view message;
  if (Find(event.fields, "message", &message)) {
    r.Message(record::kBody, [&](WireWriter& w) { AnyValue(w, message); });
  }
  wire::ForEachEntry(event.fields, [&](absl::string_view key, absl::string_view value) {
    if (key == "message") return;
    r.Message(record::kAttributes, [&](WireWriter& kv) {
      kv.Bytes(kKeyValueKey, key);
      kv.Message(kKeyValueValue, [&](WireWriter& w) { AnyValue(w, value); });
    });
  });
  const auto string_attribute = [&](absl::string_view key, absl::string_view value) {
    if (value.empty()) return;
    resource.Message(kResourceAttributes, [&](WireWriter& kv) {
      kv.Bytes(kKeyValueKey, key);
      kv.Message(kKeyValueValue, [&](WireWriter& w) { w.Bytes(any::kString, value); });
    });
  };
  absl::string_view source[3], stream[4];  // by field number
  wire::StringsByNumber(event.source, source);
  wire::StringsByNumber(event.data_stream, stream);
  string_attribute("source.input_id", source[1]);
  string_attribute("source.stream_id", source[2]);
  string_attribute("data_stream.type", stream[1]);
  string_attribute("data_stream.dataset", stream[2]);
  string_attribute("data_stream.namespace", stream[3]);
  wire::ForEachEntry(event.metadata, [&](absl::string_view key, absl::string_view value) {
    resource.Message(kResourceAttributes, [&](WireWriter& kv) {
      kv.Bytes(kKeyValueKey, absl::StrCat("metadata.", key));
      kv.Message(kKeyValueValue, [&](WireWriter& w) { AnyValue(w, value); });
    });
  });
}

bool OtlpShaped(const wire::EventParts& parts) {
  return !parts.has_source && parts.metadata.empty() && OtlpShapedFields(parts.fields);
}

}  // namespace

bool IsOtlpShaped(absl::string_view event) { return OtlpShaped(wire::EventParts(event)); }

void MapEvent(absl::string_view event, OtlpLogRecord* out) {
  out->resource.clear();
  out->scope.clear();
  out->record.clear();
  const wire::EventParts parts(event);
  if (OtlpShaped(parts)) {
    MapOtlpShaped(parts, out);
  } else {
    MapProducerEvent(parts, out);
  }
}

}  // namespace shipper
