#include "shipper/input/otlp/otlp_conversion.h"

#include <cstring>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "google/protobuf/stubs/common.h"
#include "shipper/event/wire_event.h"

namespace shipper {
namespace {

using wire::Field;
using wire::Reader;
using wire::WireType;

// Field numbers of the OTLP messages read (proto/otlp/*.proto).
namespace otlp {
enum : uint32_t { kResourceLogs = 1 };              // ExportLogsServiceRequest
enum : uint32_t { kResource = 1, kScopeLogs = 2 };  // ResourceLogs
enum : uint32_t { kResourceAttributes = 1 };        // Resource
enum : uint32_t { kScope = 1, kLogRecords = 2 };    // ScopeLogs
enum : uint32_t { kScopeName = 1, kScopeVersion = 2, kScopeAttributes = 3 };  // Scope
enum : uint32_t {                                                             // LogRecord
  kTime = 1,
  kSeverityNumber = 2,
  kSeverityText = 3,
  kBody = 5,
  kAttributes = 6,
  kDroppedAttributes = 7,
  kTraceId = 9,
  kSpanId = 10,
  kObservedTime = 11,
  kEventName = 12,
};
enum : uint32_t { kKey = 1, kValue = 2 };  // KeyValue
enum : uint32_t {                          // AnyValue
  kString = 1,
  kBool,
  kInt,
  kDouble,
  kArray,
  kKvlist,
  kBytes,
};
enum : uint32_t { kValues = 1 };  // ArrayValue, KeyValueList
}  // namespace otlp

// Field numbers of the queued form (proto/messages.proto) beside wire_event.h's.
enum : uint32_t { kEntry = 1, kEntryKey = 1, kEntryValue = 2 };  // Struct, its entries
enum : uint32_t { kSeconds = 1, kNanos = 2 };                    // Timestamp
enum : uint32_t { kStreamType = 1, kStreamDataset = 2, kStreamNamespace = 3 };  // DataStream

constexpr int64_t kNanosPerSecond = 1000000000;
constexpr absl::string_view kOtelSuffix = ".otel";

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

bool Utf8(absl::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      return google::protobuf::internal::IsStructurallyValidUTF8(s.data(),
                                                                 static_cast<int>(s.size()));
    }
  }
  return true;
}

// The kind field of an AnyValue (the last one, as protobuf keeps the last member of a oneof set
// twice), with its wire type checked; nullopt for an empty AnyValue (null). False: malformed.
bool AnyValueKind(absl::string_view any, std::optional<Field>* kind) {
  Reader reader(any);
  Field field;
  while (reader.Next(&field)) {
    const uint32_t n = field.number();
    WireType type;
    switch (n) {
      case otlp::kBool:
      case otlp::kInt:
        type = wire::kVarint;
        break;
      case otlp::kDouble:
        type = wire::kFixed64;
        break;
      case otlp::kString:
      case otlp::kArray:
      case otlp::kKvlist:
      case otlp::kBytes:
        type = wire::kLength;
        break;
      default:
        continue;
    }
    if (field.type() == type) *kind = field;
  }
  return reader.ok();
}

// A KeyValue's key and AnyValue (empty when absent: null). False: malformed.
bool KeyValueParts(absl::string_view kv, absl::string_view* key, absl::string_view* value) {
  *key = {};
  *value = {};
  Reader reader(kv);
  Field field;
  while (reader.Next(&field)) {
    if (field.type() != wire::kLength) continue;
    if (field.number() == otlp::kKey) *key = field.bytes;
    if (field.number() == otlp::kValue) *value = field.bytes;
  }
  return reader.ok();
}

// The data_stream.* keys, in the order DataStream writes them.
constexpr absl::string_view kStreamKeys[] = {"data_stream.type", "data_stream.dataset",
                                             "data_stream.namespace"};
constexpr size_t kStreamParts = 3;
using StreamValues = std::optional<absl::string_view>[kStreamParts];

// Fills what `found` lacks from the attributes (field `number` of `container`) named as
// kStreamKeys, in one read of the list: the value of the first attribute of each name, when it
// is a string. Malformed attributes are the conversion's to refuse; here they count as absent.
void StreamAttributes(absl::string_view container, uint32_t number, StreamValues& found) {
  bool decided[kStreamParts];
  size_t open = 0;
  for (size_t i = 0; i < kStreamParts; ++i) {
    decided[i] = found[i].has_value();
    open += decided[i] ? 0 : 1;
  }
  Reader reader(container);
  Field field;
  while (open > 0 && reader.Next(&field)) {
    if (field.number() != number || field.type() != wire::kLength) continue;
    absl::string_view k, v;
    if (!KeyValueParts(field.bytes, &k, &v) || !absl::StartsWith(k, "data_stream.")) continue;
    for (size_t i = 0; i < kStreamParts; ++i) {
      if (decided[i] || k != kStreamKeys[i]) continue;
      // The first attribute of the name decides, also when it is not a string.
      decided[i] = true;
      --open;
      std::optional<Field> kind;
      if (AnyValueKind(v, &kind) && kind && kind->number() == otlp::kString) found[i] = kind->bytes;
    }
  }
}

// Measures what a Writer would write: the first of the conversion's two passes. Each nested
// message's size goes into `sizes`, in the order the Writer will need them.
class Sizer {
 public:
  static constexpr bool kWrites = false;
  explicit Sizer(std::vector<uint32_t>* sizes) : sizes_(sizes) {}

  void Tag(uint32_t number, WireType type) { pos_ += VarintSize(number << 3 | type); }
  void Varint(uint64_t v) { pos_ += VarintSize(v); }
  void Fixed64(uint64_t) { pos_ += 8; }
  void Bytes(uint32_t number, absl::string_view a, absl::string_view b = {}) {
    Tag(number, wire::kLength);
    Varint(a.size() + b.size());
    pos_ += a.size() + b.size();
  }
  void Hex(uint32_t number, absl::string_view raw) { Sized(number, 2 * raw.size()); }
  void Base64(uint32_t number, absl::string_view raw) { Sized(number, (raw.size() + 2) / 3 * 4); }
  template <typename Body>
  void Message(uint32_t number, Body body) {
    const size_t slot = sizes_->size();
    sizes_->push_back(0);
    const size_t start = pos_;
    body();
    const size_t len = pos_ - start;
    // Larger than 4 GiB only inside a record far above max_record_bytes (< 2 GiB), which is
    // rejected and never written.
    (*sizes_)[slot] = static_cast<uint32_t>(std::min<size_t>(len, UINT32_MAX));
    Tag(number, wire::kLength);
    Varint(len);
  }
  // A run of bytes written elsewhere once and copied here (the resource's and scope's entries).
  void Copy(absl::string_view, size_t size) { pos_ += size; }

  size_t size() const { return pos_; }

 private:
  void Sized(uint32_t number, size_t size) {
    Tag(number, wire::kLength);
    Varint(size);
    pos_ += size;
  }

  std::vector<uint32_t>* const sizes_;
  size_t pos_ = 0;
};

// Writes the events, taking each nested message's size from the Sizer's `sizes`.
class Writer {
 public:
  static constexpr bool kWrites = true;
  Writer(const uint32_t** sizes, char* out) : sizes_(sizes), out_(out), start_(out) {}

  void Tag(uint32_t number, WireType type) { Varint(number << 3 | type); }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      *out_++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *out_++ = static_cast<char>(v);
  }
  void Fixed64(uint64_t v) {
    std::memcpy(out_, &v, 8);  // little endian, as the wire format
    out_ += 8;
  }
  void Bytes(uint32_t number, absl::string_view a, absl::string_view b = {}) {
    Tag(number, wire::kLength);
    Varint(a.size() + b.size());
    Append(a);
    Append(b);
  }
  void Hex(uint32_t number, absl::string_view raw) {
    static constexpr char kDigits[] = "0123456789abcdef";
    Tag(number, wire::kLength);
    Varint(2 * raw.size());
    for (char c : raw) {
      const auto byte = static_cast<unsigned char>(c);
      *out_++ = kDigits[byte >> 4];
      *out_++ = kDigits[byte & 15];
    }
  }
  void Base64(uint32_t number, absl::string_view raw) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    Tag(number, wire::kLength);
    Varint((raw.size() + 2) / 3 * 4);
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
    size_t n = raw.size();
    for (; n >= 3; n -= 3, p += 3) {
      const uint32_t v = p[0] << 16 | p[1] << 8 | p[2];
      for (int shift : {18, 12, 6, 0}) *out_++ = kAlphabet[(v >> shift) & 63];
    }
    if (n > 0) {
      const uint32_t v = p[0] << 16 | (n == 2 ? p[1] << 8 : 0);
      *out_++ = kAlphabet[(v >> 18) & 63];
      *out_++ = kAlphabet[(v >> 12) & 63];
      *out_++ = n == 2 ? kAlphabet[(v >> 6) & 63] : '=';
      *out_++ = '=';
    }
  }
  template <typename Body>
  void Message(uint32_t number, Body body) {
    const uint32_t len = *(*sizes_)++;
    Tag(number, wire::kLength);
    Varint(len);
    const char* start = out_;
    body();
    DCHECK_EQ(static_cast<size_t>(out_ - start), len);
  }
  void Copy(absl::string_view bytes, size_t) { Append(bytes); }

  size_t size() const { return out_ - start_; }

 private:
  void Append(absl::string_view s) {
    if (s.empty()) return;
    std::memcpy(out_, s.data(), s.size());
    out_ += s.size();
  }

  const uint32_t** const sizes_;
  char* out_;
  char* const start_;
};

}  // namespace

// First wins: a key is inserted once; later copies are refused. Small lists compare keys in a
// row; lists longer than kSmall move to a hash set, so that a hostile list costs linear time.
class LogsConversion::KeySet {
 public:
  void Clear() {
    n_ = 0;
    big_.clear();
  }
  // False when `key` was inserted before.
  bool Insert(absl::string_view key) {
    if (n_ < kSmall) {
      for (size_t i = 0; i < n_; ++i) {
        if (small_[i] == key) return false;
      }
      small_[n_++] = key;
      if (n_ == kSmall) big_.insert(small_, small_ + kSmall);
      return true;
    }
    return big_.insert(key).second;
  }

 private:
  static constexpr size_t kSmall = 16;
  absl::string_view small_[kSmall];
  size_t n_ = 0;
  absl::flat_hash_set<absl::string_view> big_;  // every key once n_ reached kSmall
};

// Both passes of the conversion walk the request through this one template, so that the Writer
// meets exactly what the Sizer measured. Only the Sizer's pass checks (`Out::kWrites` false);
// the Writer's goes over the same checked bytes.
template <typename Out>
class Pass {
 public:
  explicit Pass(LogsConversion* c) : c_(c) {}

  // The Sizer's pass: measures every record into c_. OK or why not.
  absl::Status Measure() {
    return Walk([this](absl::string_view record) { return MeasureRecord(record); });
  }
  // The Writer's pass.
  void Write(char* out, absl::FunctionRef<void(absl::string_view)> emit) {
    const uint32_t* sizes = c_->sizes_.data();
    sizes_ = &sizes;
    size_t k = 0;
    const absl::Status done = Walk([&](absl::string_view record) {
      if (c_->rejected_records_[k++]) return absl::OkStatus();
      Writer writer(sizes_, out);
      EventBody(writer, record);
      emit(absl::string_view(out, writer.size()));
      out += writer.size();
      return absl::OkStatus();
    });
    DCHECK(done.ok());
    DCHECK_EQ(sizes, c_->sizes_.data() + c_->sizes_.size());
  }

 private:
  // Calls on_record for each record, after preparing its resource's and scope's entries.
  template <typename OnRecord>
  absl::Status Walk(OnRecord on_record) {
    Reader request(c_->request_);
    Field rl;
    for (resource_i_ = 0; request.Next(&rl);) {
      if (rl.number() != otlp::kResourceLogs || rl.type() != wire::kLength) continue;
      if (absl::Status s = ResourceLogs(rl.bytes, on_record); !s.ok()) return s;
      ++resource_i_;
    }
    if (!request.ok()) {
      return absl::InvalidArgumentError(
          "the request is not an ExportLogsServiceRequest (malformed protobuf)");
    }
    return absl::OkStatus();
  }

  template <typename OnRecord>
  absl::Status ResourceLogs(absl::string_view body, OnRecord& on_record) {
    resource_ = {};
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (field.number() == otlp::kResource && field.type() == wire::kLength) {
        resource_ = field.bytes;
      }
    }
    if (!reader.ok()) return Invalid("malformed resource_logs");
    for (auto& v : resource_stream_) v.reset();
    StreamAttributes(resource_, otlp::kResourceAttributes, resource_stream_);
    scope_i_ = record_i_ = -1;
    part_ = "resource";
    if (!Cached(&c_->resource_, &resource_size_, [&](auto& out) { return ResourceEntry(out); })) {
      return Invalid(problem_);
    }
    Reader scopes(body);
    for (scope_i_ = 0; scopes.Next(&field);) {
      if (field.number() != otlp::kScopeLogs || field.type() != wire::kLength) continue;
      if (absl::Status s = ScopeLogs(field.bytes, on_record); !s.ok()) return s;
      ++scope_i_;
    }
    return absl::OkStatus();
  }

  template <typename OnRecord>
  absl::Status ScopeLogs(absl::string_view body, OnRecord& on_record) {
    scope_ = {};
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (field.number() == otlp::kScope && field.type() == wire::kLength) scope_ = field.bytes;
    }
    if (!reader.ok()) return Invalid("malformed scope_logs");
    // What the scope's records do not set themselves: resolved here once, so that a record costs
    // its own bytes, not its scope's and resource's attribute lists again.
    for (auto& v : scope_stream_) v.reset();
    StreamAttributes(scope_, otlp::kScopeAttributes, scope_stream_);
    for (size_t i = 0; i < kStreamParts; ++i) {
      if (!scope_stream_[i]) scope_stream_[i] = resource_stream_[i];
    }
    record_i_ = -1;
    part_ = "scope";
    if (!Cached(&c_->scope_, &scope_size_, [&](auto& out) { return ScopeEntry(out); })) {
      return Invalid(problem_);
    }
    Reader records(body);
    for (record_i_ = 0; records.Next(&field);) {
      if (field.number() != otlp::kLogRecords || field.type() != wire::kLength) continue;
      if (absl::Status s = on_record(field.bytes); !s.ok()) return s;
      ++record_i_;
    }
    return absl::OkStatus();
  }

  // The resource's entry of the fields: its attributes, when it has any.
  template <typename O>
  bool ResourceEntry(O& out) {
    bool any = false;
    Reader reader(resource_);
    Field field;
    while (reader.Next(&field)) {
      any = any || (field.number() == otlp::kResourceAttributes && field.type() == wire::kLength);
    }
    if (!reader.ok()) return Fail("malformed resource");
    if (!any) return true;
    bool ok = true;
    Entry(out, "resource", [&] {
      out.Message(wire::value::kStruct, [&] {
        Entry(out, "attributes", [&] {
          out.Message(wire::value::kStruct,
                      [&] { ok = Attributes(out, resource_, otlp::kResourceAttributes, 0); });
        });
      });
    });
    return ok;
  }

  // The scope's entry of the fields: its name, version and attributes, when any is set.
  template <typename O>
  bool ScopeEntry(O& out) {
    absl::string_view name, version;
    bool has_attributes = false;
    Reader reader(scope_);
    Field field;
    while (reader.Next(&field)) {
      if (field.type() != wire::kLength) continue;
      if (field.number() == otlp::kScopeName) name = field.bytes;
      if (field.number() == otlp::kScopeVersion) version = field.bytes;
      if (field.number() == otlp::kScopeAttributes) has_attributes = true;
    }
    if (!reader.ok()) return Fail("malformed scope");
    if (!Out::kWrites && !(Utf8(name) && Utf8(version))) return Fail("a string is not UTF-8");
    if (name.empty() && version.empty() && !has_attributes) return true;
    bool ok = true;
    Entry(out, "scope", [&] {
      out.Message(wire::value::kStruct, [&] {
        if (!name.empty()) Entry(out, "name", [&] { out.Bytes(wire::value::kString, name); });
        if (!version.empty()) {
          Entry(out, "version", [&] { out.Bytes(wire::value::kString, version); });
        }
        if (has_attributes) {
          Entry(out, "attributes", [&] {
            out.Message(wire::value::kStruct,
                        [&] { ok = Attributes(out, scope_, otlp::kScopeAttributes, 0); });
          });
        }
      });
    });
    return ok;
  }

  // Writes the entry `write` makes once into `bytes` (the Writer's pass) or measures it (the
  // Sizer's), so that each record copies it. The entry's size is one more entry of sizes_.
  template <typename Write>
  bool Cached(std::string* bytes, size_t* size, Write write) {
    if constexpr (Out::kWrites) {
      *size = *(*sizes_)++;
      bytes->resize(*size);
      Writer writer(sizes_, bytes->data());
      write(writer);
      DCHECK_EQ(writer.size(), *size);
      return true;
    } else {
      std::vector<uint32_t>& sizes = c_->sizes_;
      const size_t slot = sizes.size();
      sizes.push_back(0);
      Sizer sizer(&sizes);
      if (!write(sizer)) return false;
      *size = sizer.size();
      sizes[slot] = static_cast<uint32_t>(std::min<size_t>(*size, UINT32_MAX));
      return true;
    }
  }

  // A record's fields, as read.
  struct RecordParts {
    uint64_t time = 0, observed = 0;
    uint64_t severity_number = 0, dropped = 0;
    absl::string_view severity_text, trace_id, span_id, event_name, body;
    bool has_body = false, has_attributes = false;
  };

  bool Parts(absl::string_view record, RecordParts* p) {
    Reader reader(record);
    Field f;
    while (reader.Next(&f)) {
      switch (f.number()) {
        case otlp::kTime:
          if (f.type() == wire::kFixed64) p->time = f.scalar;
          break;
        case otlp::kObservedTime:
          if (f.type() == wire::kFixed64) p->observed = f.scalar;
          break;
        case otlp::kSeverityNumber:
          if (f.type() == wire::kVarint) p->severity_number = f.scalar;
          break;
        case otlp::kDroppedAttributes:
          if (f.type() == wire::kVarint) p->dropped = static_cast<uint32_t>(f.scalar);
          break;
        case otlp::kSeverityText:
          if (f.type() == wire::kLength) p->severity_text = f.bytes;
          break;
        case otlp::kTraceId:
          if (f.type() == wire::kLength) p->trace_id = f.bytes;
          break;
        case otlp::kSpanId:
          if (f.type() == wire::kLength) p->span_id = f.bytes;
          break;
        case otlp::kEventName:
          if (f.type() == wire::kLength) p->event_name = f.bytes;
          break;
        case otlp::kBody:
          if (f.type() == wire::kLength) {
            p->body = f.bytes;
            p->has_body = true;
          }
          break;
        case otlp::kAttributes:
          if (f.type() == wire::kLength) p->has_attributes = true;
          break;
      }
    }
    if (!reader.ok()) return Fail("malformed log record");
    if (!Out::kWrites && !(Utf8(p->severity_text) && Utf8(p->event_name))) {
      return Fail("severity_text or event_name is not UTF-8");
    }
    return true;
  }

  absl::Status MeasureRecord(absl::string_view record) {
    if (c_->rejected_records_.size() >= c_->max_records_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the request holds more than ", c_->max_records_, " log records: send fewer per export"));
    }
    std::vector<uint32_t>& sizes = c_->sizes_;
    const size_t first = sizes.size();
    Sizer sizer(&sizes);
    part_ = "log record";
    if (!EventBody(sizer, record)) return Invalid(problem_);
    const size_t bytes = sizer.size();
    const bool rejected = bytes > c_->max_record_bytes_;
    c_->rejected_records_.push_back(rejected);
    if (rejected) {
      sizes.resize(first);  // the Writer never walks it
      ++c_->rejected_;
      c_->largest_rejected_ = std::max(c_->largest_rejected_, bytes);
    } else {
      ++c_->taken_;
      c_->bytes_ += bytes;
    }
    return absl::OkStatus();
  }

  // One record's Event: its timestamp, data_stream and fields.
  template <typename O>
  bool EventBody(O& out, absl::string_view record) {
    RecordParts p;
    if (!Parts(record, &p)) return false;
    const uint64_t ns = p.time != 0 ? p.time : p.observed != 0 ? p.observed : c_->arrival_ns_;
    out.Message(wire::event::kTimestamp, [&] { Timestamp(out, ns); });
    out.Message(wire::event::kDataStream, [&] { DataStream(out, record); });
    bool ok = true;
    out.Message(wire::event::kFields, [&] {
      if (p.has_body) {
        Entry(out, "body", [&] {
          out.Message(wire::value::kStruct, [&] {
            std::optional<Field> kind;
            AnyValueKind(p.body, &kind);
            if (kind && kind->number() == otlp::kString) {
              if (!Out::kWrites && !Utf8(kind->bytes)) ok = Fail("the body is not UTF-8");
              Entry(out, "text", [&] { out.Bytes(wire::value::kString, kind->bytes); });
            } else {
              Entry(out, "structured", [&] { ok = Value(out, p.body, 0); });
            }
          });
        });
      }
      if (!p.severity_text.empty()) {
        Entry(out, "severity_text", [&] { out.Bytes(wire::value::kString, p.severity_text); });
      }
      if (p.severity_number != 0) {
        Entry(out, "severity_number", [&] { Int(out, static_cast<int32_t>(p.severity_number)); });
      }
      if (!p.event_name.empty()) {
        Entry(out, "event_name", [&] { out.Bytes(wire::value::kString, p.event_name); });
      }
      if (!p.trace_id.empty()) {
        Entry(out, "trace_id", [&] { out.Hex(wire::value::kString, p.trace_id); });
      }
      if (!p.span_id.empty()) {
        Entry(out, "span_id", [&] { out.Hex(wire::value::kString, p.span_id); });
      }
      if (p.dropped != 0) {
        Entry(out, "dropped_attributes_count", [&] { Int(out, static_cast<int64_t>(p.dropped)); });
      }
      if (p.has_attributes) {
        Entry(out, "attributes", [&] {
          out.Message(wire::value::kStruct,
                      [&] { ok = ok && Attributes(out, record, otlp::kAttributes, 0); });
        });
      }
      out.Copy(c_->resource_, resource_size_);
      out.Copy(c_->scope_, scope_size_);
      if (p.observed != 0) {
        Entry(out, "observed_timestamp",
              [&] { out.Message(wire::value::kTimestamp, [&] { Timestamp(out, p.observed); }); });
      }
    });
    return ok;
  }

  template <typename O>
  static void Timestamp(O& out, uint64_t ns) {
    const uint64_t seconds = ns / kNanosPerSecond;
    const uint64_t nanos = ns % kNanosPerSecond;
    if (seconds != 0) {
      out.Tag(kSeconds, wire::kVarint);
      out.Varint(seconds);
    }
    if (nanos != 0) {
      out.Tag(kNanos, wire::kVarint);
      out.Varint(nanos);
    }
  }

  // data_stream from the record's attributes, else the scope's, else the resource's.
  template <typename O>
  void DataStream(O& out, absl::string_view record) {
    StreamValues found;
    StreamAttributes(record, otlp::kAttributes, found);
    for (size_t i = 0; i < kStreamParts; ++i) {
      if (!found[i]) found[i] = scope_stream_[i];
    }
    const absl::string_view type = found[0].value_or("logs");
    const absl::string_view dataset = found[1].value_or("generic");
    const absl::string_view ns = found[2].value_or("default");
    out.Bytes(kStreamType, type);
    out.Bytes(kStreamDataset, dataset,
              absl::EndsWith(dataset, kOtelSuffix) ? absl::string_view() : kOtelSuffix);
    out.Bytes(kStreamNamespace, ns);
  }

  template <typename O>
  static void Int(O& out, int64_t v) {
    out.Tag(wire::value::kInt64, wire::kVarint);
    out.Varint(static_cast<uint64_t>(v));
  }

  // One entry of a Struct: its key, then its Value as `value` writes the Value's body.
  template <typename O, typename Body>
  static void Entry(O& out, absl::string_view key, Body value) {
    out.Message(kEntry, [&] {
      out.Bytes(kEntryKey, key);
      out.Message(kEntryValue, value);
    });
  }

  // The KeyValues of field `number` of `container` as a Struct's entries, the first of each key.
  template <typename O>
  bool Attributes(O& out, absl::string_view container, uint32_t number, size_t depth) {
    LogsConversion::KeySet& keys = c_->key_sets_[depth];
    keys.Clear();
    Reader reader(container);
    Field field;
    while (reader.Next(&field)) {
      if (field.number() != number || field.type() != wire::kLength) continue;
      absl::string_view key, value;
      if (!KeyValueParts(field.bytes, &key, &value)) return Fail("malformed attribute");
      if (!Out::kWrites && !Utf8(key)) return Fail("an attribute key is not UTF-8");
      if (!keys.Insert(key)) continue;
      bool ok = true;
      Entry(out, key, [&] { ok = Value(out, value, depth); });
      if (!ok) return false;
      // The nested values used the deeper sets; ours is still this list's.
    }
    if (!reader.ok()) return Fail("malformed attributes");
    return true;
  }

  // An AnyValue as a Value's body. `depth`: the kvlists and arrays around it.
  template <typename O>
  bool Value(O& out, absl::string_view any, size_t depth) {
    std::optional<Field> kind;
    if (!AnyValueKind(any, &kind)) return Fail("malformed value");
    if (!kind) {
      out.Tag(wire::value::kNull, wire::kVarint);
      out.Varint(0);
      return true;
    }
    switch (kind->number()) {
      case otlp::kString:
        if (!Out::kWrites && !Utf8(kind->bytes)) return Fail("a string value is not UTF-8");
        out.Bytes(wire::value::kString, kind->bytes);
        return true;
      case otlp::kBool:
        out.Tag(wire::value::kBool, wire::kVarint);
        out.Varint(kind->scalar != 0 ? 1 : 0);
        return true;
      case otlp::kInt:
        out.Tag(wire::value::kInt64, wire::kVarint);
        out.Varint(kind->scalar);
        return true;
      case otlp::kDouble:
        out.Tag(wire::value::kFloat64, wire::kFixed64);
        out.Fixed64(kind->scalar);
        return true;
      case otlp::kBytes:
        out.Base64(wire::value::kString, kind->bytes);
        return true;
      case otlp::kArray:
      case otlp::kKvlist:
        break;
    }
    if (depth + 1 > kMaxValueDepth) {
      return Fail(absl::StrCat("values nest deeper than ", kMaxValueDepth, " levels"));
    }
    bool ok = true;
    if (kind->number() == otlp::kKvlist) {
      out.Message(wire::value::kStruct,
                  [&] { ok = Attributes(out, kind->bytes, otlp::kValues, depth + 1); });
      return ok;
    }
    out.Message(wire::value::kList, [&] {
      Reader items(kind->bytes);
      Field item;
      while (ok && items.Next(&item)) {
        if (item.number() != otlp::kValues || item.type() != wire::kLength) continue;
        out.Message(1, [&] { ok = Value(out, item.bytes, depth + 1); });
      }
      if (!items.ok()) ok = Fail("malformed array");
    });
    return ok;
  }

  bool Fail(std::string why) {
    if (problem_.empty()) problem_ = std::move(why);
    return false;
  }

  absl::Status Invalid(absl::string_view why) const {
    std::string where = absl::StrCat("resource_logs[", resource_i_, "]");
    if (scope_i_ >= 0) absl::StrAppend(&where, ".scope_logs[", scope_i_, "]");
    if (record_i_ >= 0) absl::StrAppend(&where, ".log_records[", record_i_, "]");
    if (record_i_ < 0) absl::StrAppend(&where, " (", part_, ")");
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", why));
  }

  LogsConversion* const c_;
  const uint32_t** sizes_ = nullptr;  // the Writer's place in c_->sizes_
  absl::string_view resource_, scope_;
  StreamValues resource_stream_;  // the resource's data_stream.* attributes
  StreamValues scope_stream_;     // the scope's, else the resource's
  size_t resource_size_ = 0, scope_size_ = 0;
  int resource_i_ = 0, scope_i_ = -1, record_i_ = -1;
  const char* part_ = "";
  std::string problem_;
};

LogsConversion::LogsConversion() : key_sets_(kMaxValueDepth + 1) {}
LogsConversion::~LogsConversion() = default;

absl::Status LogsConversion::Scan(absl::string_view request, absl::Time arrival,
                                  size_t max_record_bytes, size_t max_records) {
  request_ = request;
  arrival_ns_ = static_cast<uint64_t>(std::max<int64_t>(absl::ToUnixNanos(arrival), 0));
  max_record_bytes_ = max_record_bytes;
  max_records_ = max_records;
  return Pass<Sizer>(this).Measure();
}

void LogsConversion::Write(char* out, absl::FunctionRef<void(absl::string_view)> emit) {
  Pass<Writer>(this).Write(out, emit);
}

}  // namespace shipper
