// Events as Shipper queues them: the protobuf wire bytes of one
// elastic.agent.shipper.v1.messages.Event, exactly as the client sent them, never decoded into
// messages. Decoding a request into messages cost ~90 % of the server's CPU (a map per Struct,
// allocations per field); reading the bytes where they lie costs a fraction of that.
//
// Queued bytes are always in *canonical* form (request_validation.h makes them so): well formed,
// nesting within the limit, strings UTF-8, every singular field at most once, each Value with at
// most one kind, each Struct's keys distinct. Read in canonical form, the bytes mean exactly what
// protobuf's parser would make of them, so these readers never merge, override or deduplicate.
// Unknown fields, and known numbers with another wire type (protobuf keeps both as unknown
// fields), are skipped.
//
// Thread safety: stateless readers over immutable bytes; use from any thread.
#ifndef SHIPPER_SHIPPER_EVENT_WIRE_EVENT_H_
#define SHIPPER_SHIPPER_EVENT_WIRE_EVENT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/base/attributes.h"
#include "absl/strings/string_view.h"
#include "queue/event.h"

namespace shipper::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

// One field of a message body.
struct Field {
  uint32_t tag = 0;         // number << 3 | wire type: one word, compared whole
  uint64_t scalar = 0;      // varint, or fixed32/fixed64 bits
  absl::string_view bytes;  // length-delimited contents

  uint32_t number() const { return tag >> 3; }
  WireType type() const { return static_cast<WireType>(tag & 7); }
};

// Reads the fields of one message body in order. Stops, with ok() false, at the first malformed
// field: a truncated varint or length, a length past the end, field number 0, or a group (not in
// this schema; protobuf would skip it, we refuse it).
class Reader {
 public:
  explicit Reader(absl::string_view body)
      : p_(reinterpret_cast<const uint8_t*>(body.data())), end_(p_ + body.size()) {}

  // The next field; false at the end of the body or at a malformed field. Inlined: it runs for
  // every field of every event.
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool Next(Field* field) {
    if (p_ == end_) return false;
    uint64_t tag;
    if (!Varint(&tag) || tag > UINT32_MAX || (tag >> 3) == 0) return Fail();
    field->tag = static_cast<uint32_t>(tag);
    // Values go through locals so that `field` never escapes and stays in registers.
    uint64_t value;
    switch (field->type()) {
      case kVarint:
        if (!Varint(&value)) return Fail();
        field->scalar = value;
        return true;
      case kFixed64:
      case kFixed32: {
        const int size = field->type() == kFixed64 ? 8 : 4;
        if (end_ - p_ < size) return Fail();
        value = 0;
        std::memcpy(&value, p_, size);  // little endian, as the wire format
        p_ += size;
        field->scalar = value;
        return true;
      }
      case kLength:
        if (!Varint(&value) || value > static_cast<uint64_t>(end_ - p_)) return Fail();
        field->bytes = {reinterpret_cast<const char*>(p_), static_cast<size_t>(value)};
        p_ += value;
        return true;
    }
    return Fail();
  }
  // False once a malformed field was met.
  bool ok() const { return ok_; }
  // Whether every field was read.
  bool done() const { return p_ == end_; }

 private:
  bool Fail() {
    ok_ = false;
    p_ = end_;
    return false;
  }
  // Up to 10 bytes; like protobuf, keeps the low 64 bits. Tags and most lengths take one byte.
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool Varint(uint64_t* value) {
    if (p_ < end_ && *p_ < 0x80) {
      *value = *p_++;
      return true;
    }
    return LongVarint(value);
  }
  bool LongVarint(uint64_t* value) {
    uint64_t result = 0;
    for (int i = 0; i < 10 && p_ < end_; ++i) {
      const uint8_t byte = *p_++;
      result |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
      if (byte < 0x80) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// Field numbers of the schema (proto/messages.proto).
namespace event {
enum : uint32_t {
  kTimestamp = 1,
  kSource = 2,
  kDataStream = 3,
  kMetadata = 4,
  kFields = 5,
  kOtelSignal = 15,
};
}
// Event.otel_signal's values (enum OtelSignal).
namespace otel {
enum : uint64_t { kUnspecified = 0, kLog = 1, kSpan = 2, kDataPoint = 3 };
}
namespace value {
enum : uint32_t {
  kNull = 1,
  kFloat64,
  kFloat32,
  kInt32,
  kInt64,
  kUint32,
  kUint64,
  kString,
  kBool,
  kStruct,
  kList,
  kTimestamp,
};
}

// Whether `field` of a Value is one of its kinds (value::kNull..value::kTimestamp) with that
// kind's wire type; anything else is an unknown field to protobuf.
inline bool IsValueKind(const Field& field) {
  const uint32_t kind = field.number();
  const WireType type = kind == value::kFloat64                          ? kFixed64
                        : kind == value::kFloat32                        ? kFixed32
                        : kind >= value::kString && kind != value::kBool ? kLength
                                                                         : kVarint;
  return kind >= value::kNull && kind <= value::kTimestamp && field.type() == type;
}

// The parts of a canonical event; absent message fields are empty (has_* says whether they were
// sent, as protobuf's has_timestamp(), has_source() and has_data_stream() would).
struct EventParts {
  bool has_timestamp = false;
  bool has_source = false;
  bool has_data_stream = false;
  absl::string_view timestamp, source, data_stream, metadata, fields;
  // As protobuf reads an open enum: the last varint of field 15, any value (otel::k*).
  uint64_t otel_signal = otel::kUnspecified;

  explicit EventParts(absl::string_view event);
};

// A canonical Value: its kind (0 when none is set, which protobuf reads as null) and contents.
struct ValueParts {
  uint32_t kind = 0;
  uint64_t scalar = 0;      // varint or fixed bits, for scalar kinds
  absl::string_view bytes;  // string, Struct, ListValue or Timestamp body

  // Inline for what nearly every value is: one field, of a kind. Anything else (unknown fields
  // too) is read field by field.
  ABSL_ATTRIBUTE_ALWAYS_INLINE explicit ValueParts(absl::string_view value) {
    Reader reader(value);
    Field field;
    if (reader.Next(&field) && reader.done() && IsValueKind(field)) {
      kind = field.number();
      scalar = field.scalar;
      bytes = field.bytes;
    } else if (!value.empty()) {
      ReadFields(value);
    }
  }

 private:
  void ReadFields(absl::string_view value);
};

// A Timestamp's fields, as protobuf's int64 seconds and int32 nanos.
struct TimestampParts {
  int64_t seconds = 0;
  int32_t nanos = 0;

  explicit TimestampParts(absl::string_view timestamp);
};

// Whether a Struct entry's body is exactly its key, then its value, each with a length below
// 128, as most are; if so, stores them. Else the caller reads the entry field by field.
inline bool ShortEntry(absl::string_view body, absl::string_view* key, absl::string_view* value) {
  const auto* p = reinterpret_cast<const uint8_t*>(body.data());
  const size_t n = body.size();
  if (n < 4 || p[0] != (1 << 3 | kLength) || p[1] >= 0x80) return false;
  const size_t v = 2 + p[1];  // where the value's tag would be
  if (v + 2 > n || p[v] != (2 << 3 | kLength) || p[v + 1] >= 0x80 || v + 2 + p[v + 1] != n) {
    return false;
  }
  *key = body.substr(2, p[1]);
  *value = body.substr(v + 2);
  return true;
}

// Calls visit(key, value_body) for each entry of a canonical Struct, in wire order. An entry
// without a key has the key ""; without a value, an empty body (a Value of no kind).
template <typename Visit>
void ForEachEntry(absl::string_view struct_body, Visit visit) {
  Reader entries(struct_body);
  Field entry;
  while (entries.Next(&entry)) {
    if (entry.number() != 1 || entry.type() != kLength) continue;
    absl::string_view key, value;
    if (!ShortEntry(entry.bytes, &key, &value)) {
      Reader parts(entry.bytes);
      Field part;
      while (parts.Next(&part)) {
        if (part.type() != kLength) continue;
        if (part.number() == 1) key = part.bytes;
        if (part.number() == 2) value = part.bytes;
      }
    }
    visit(key, value);
  }
}

// Calls visit(value_body) for each item of a canonical ListValue.
template <typename Visit>
void ForEachItem(absl::string_view list_body, Visit visit) {
  Reader items(list_body);
  Field item;
  while (items.Next(&item)) {
    if (item.number() == 1 && item.type() == kLength) visit(item.bytes);
  }
}

// Stores each string field of a canonical Source or DataStream in strings[its number]; numbers
// past the array are skipped, absent fields stay as they were.
template <size_t N>
void StringsByNumber(absl::string_view body, absl::string_view (&strings)[N]) {
  Reader reader(body);
  Field field;
  while (reader.Next(&field)) {
    if (field.type() == kLength && field.number() < N) strings[field.number()] = field.bytes;
  }
}

// The wire bytes a queued Shipper event holds.
inline absl::string_view Bytes(const queue::Event& event) {
  return {static_cast<const char*>(event.data()), event.bytes()};
}

}  // namespace shipper::wire

#endif  // SHIPPER_SHIPPER_EVENT_WIRE_EVENT_H_
