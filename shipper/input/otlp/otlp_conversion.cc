#include "shipper/input/otlp/otlp_conversion.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "google/protobuf/stubs/common.h"
#include "shipper/event/wire_event.h"
#include "shipper/input/otlp/otlp_fields.h"

namespace shipper {
namespace otlp {

// The size of every nested message of a conversion's events, in the order the Writer needs
// them: appended by the Sizer's pass, read back in order by the Writer's. Kept in blocks that
// double from kFirstBlock entries up to kLargestBlock, each charged to the budget before it is
// allocated and never moved (a growing vector holds both its copies while it moves them).
// Once a block cannot be had (past max_held, or no room in the budget) nothing more is kept:
// the entries are only counted, and needed_bytes() says what keeping them all takes. The blocks'
// index (24 bytes per block, a few KiB at most) is not charged.
//
// Add(), Set() and Cursor::Next() run once per nested message of every record (a few per tiny
// record): their common case (the entry in the newest block, or in the block being read) is
// inline, and what runs once per block (Grow, an older block, the next block) is not, so that
// the passes that call them stay as compact as with the plain vector this replaced.
class MessageSizes {
 public:
  explicit MessageSizes(runtime::MemoryBudget* budget) : budget_(budget) {}
  ~MessageSizes() {
    if (budget_ != nullptr) budget_->Release(held_);
  }
  MessageSizes(const MessageSizes&) = delete;
  MessageSizes& operator=(const MessageSizes&) = delete;

  void set_max_held(size_t bytes) { max_held_ = bytes; }

  // A new entry; its index. Its value is what Set() gives it.
  ABSL_ATTRIBUTE_ALWAYS_INLINE size_t Add() {
    if (ABSL_PREDICT_FALSE(size_ == capacity_)) Grow();
    return size_++;
  }
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Set(size_t i, uint32_t size) {
    // Most entries are set while their block is the newest: a message's size is known as soon
    // as its body was measured.
    if (ABSL_PREDICT_TRUE(i >= last_first_ && i < kept_)) {
      last_entries_[i - last_first_] = size;
    } else {
      SetInOlderBlock(i, size);
    }
  }
  size_t size() const { return size_; }
  // Forgets the entries from `n` on; their blocks stay, for the entries added next.
  void Truncate(size_t n) { size_ = n; }

  // Whether every entry added was kept.
  bool kept() const { return kept_ == capacity_; }
  // The blocks every entry added takes, in bytes: held (and charged) when kept().
  size_t needed_bytes() const { return capacity_ * sizeof(uint32_t); }

  // The entries, from the first, in order. REQUIRES: kept().
  class Cursor {
   public:
    explicit Cursor(const MessageSizes* sizes) : sizes_(sizes) {}
    ABSL_ATTRIBUTE_ALWAYS_INLINE uint32_t Next() {
      if (ABSL_PREDICT_FALSE(next_ == end_)) NextBlock();
      return *next_++;
    }
    // Whether every entry was read.
    bool done() const {
      if (block_ == 0) return sizes_->size_ == 0;
      const Block& block = sizes_->blocks_[block_ - 1];
      return block.first + static_cast<size_t>(next_ - block.entries.get()) == sizes_->size_;
    }

   private:
    ABSL_ATTRIBUTE_NOINLINE void NextBlock() {
      const Block& block = sizes_->blocks_[block_++];
      next_ = block.entries.get();
      end_ = next_ + block.size;
    }

    const MessageSizes* const sizes_;
    size_t block_ = 0;
    const uint32_t* next_ = nullptr;
    const uint32_t* end_ = nullptr;
  };

 private:
  static constexpr size_t kFirstBlock = 256;      // entries: 1 KiB
  static constexpr size_t kLargestBlock = 65536;  // entries: 256 KiB

  struct Block {
    std::unique_ptr<uint32_t[]> entries;
    size_t first;  // the index of its first entry
    size_t size;   // entries
  };

  // One block more: kept if it may be, else only counted.
  ABSL_ATTRIBUTE_NOINLINE void Grow() {
    const size_t n = std::min(kFirstBlock << std::min<size_t>(blocks_counted_, 8), kLargestBlock);
    const size_t bytes = n * sizeof(uint32_t);
    ++blocks_counted_;
    if (kept() && held_ + bytes <= max_held_ &&
        (budget_ == nullptr || budget_->TryAcquire(bytes))) {
      held_ += bytes;
      blocks_.push_back(Block{std::unique_ptr<uint32_t[]>(new uint32_t[n]), capacity_, n});
      last_entries_ = blocks_.back().entries.get();
      last_first_ = capacity_;
      kept_ += n;
    }
    capacity_ += n;
  }

  ABSL_ATTRIBUTE_NOINLINE void SetInOlderBlock(size_t i, uint32_t size) {
    if (i >= kept_) return;  // only counted
    auto block = std::upper_bound(blocks_.begin(), blocks_.end(), i,
                                  [](size_t i, const Block& b) { return i < b.first; });
    --block;
    block->entries[i - block->first] = size;
  }

  runtime::MemoryBudget* const budget_;
  size_t max_held_ = SIZE_MAX;
  std::vector<Block> blocks_;  // kept
  size_t blocks_counted_ = 0;  // kept or not
  size_t held_ = 0;            // bytes, charged
  size_t kept_ = 0;            // entries the kept blocks hold
  size_t capacity_ = 0;        // entries the blocks counted hold, kept or not
  size_t size_ = 0;
  // The newest kept block's entries and the index of its first (nullptr and 0 before any).
  uint32_t* last_entries_ = nullptr;
  size_t last_first_ = 0;
};

}  // namespace otlp

namespace {

using wire::Field;
using wire::Reader;
using wire::WireType;

// Field numbers of the queued form (proto/messages.proto) beside wire_event.h's.
enum : uint32_t { kEntry = 1, kEntryKey = 1, kEntryValue = 2 };  // Struct, its entries
enum : uint32_t { kSeconds = 1, kNanos = 2 };                    // Timestamp
enum : uint32_t { kStreamType = 1, kStreamDataset = 2, kStreamNamespace = 3 };  // DataStream
enum : uint32_t { kListValues = 1 };                                            // ListValue

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
  explicit Sizer(otlp::MessageSizes* sizes) : sizes_(sizes) {}

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
    const size_t slot = sizes_->Add();
    const size_t start = pos_;
    body();
    const size_t len = pos_ - start;
    // Larger than 4 GiB only inside a record far above max_record_bytes (< 2 GiB), which is
    // rejected and never written.
    sizes_->Set(slot, static_cast<uint32_t>(std::min<size_t>(len, UINT32_MAX)));
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

  otlp::MessageSizes* const sizes_;
  size_t pos_ = 0;
};

// Writes the events, taking each nested message's size from the Sizer's `sizes`.
class Writer {
 public:
  static constexpr bool kWrites = true;
  Writer(otlp::MessageSizes::Cursor* sizes, char* out) : sizes_(sizes), out_(out), start_(out) {}

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
    const uint32_t len = sizes_->Next();
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

  otlp::MessageSizes::Cursor* const sizes_;
  char* out_;
  char* const start_;
};

}  // namespace

// First wins: a key is inserted once; later copies are refused. Small lists compare keys in a
// row; lists longer than kSmall move to a hash set, so that a hostile list costs linear time.
class OtlpConversion::KeySet {
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
  using BytesPath = OtlpConversion::BytesPath;
  using PathPart = OtlpConversion::PathPart;

 public:
  explicit Pass(OtlpConversion* c) : c_(c) {}

  // The Sizer's pass: measures every record into c_. OK or why not.
  absl::Status Measure() {
    return Walk([this](absl::string_view record) { return MeasureRecord(record); });
  }
  // The Writer's pass.
  void Write(char* out, absl::FunctionRef<void(absl::string_view)> emit) {
    otlp::MessageSizes::Cursor sizes(c_->sizes_.get());
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
    DCHECK(sizes.done());
  }

 private:
  // What the messages around a record are called in errors, by signal.
  struct Names {
    const char* request;   // the Export*ServiceRequest
    const char* resource;  // its field of Resource* messages
    const char* scope;     // their field of Scope* messages
    const char* items;     // those messages' field of records (metrics, for metrics)
    const char* record;    // what becomes one event
  };
  const Names& names() const {
    static constexpr Names kLogs{"ExportLogsServiceRequest", "resource_logs", "scope_logs",
                                 "log_records", "log record"};
    static constexpr Names kTraces{"ExportTraceServiceRequest", "resource_spans", "scope_spans",
                                   "spans", "span"};
    static constexpr Names kMetrics{"ExportMetricsServiceRequest", "resource_metrics",
                                    "scope_metrics", "metrics", "data point"};
    switch (c_->signal_) {
      case OtlpSignal::kLogs:
        return kLogs;
      case OtlpSignal::kTraces:
        return kTraces;
      case OtlpSignal::kMetrics:
        break;
    }
    return kMetrics;
  }

  // Calls on_record for each record, after preparing its resource's and scope's entries.
  template <typename OnRecord>
  absl::Status Walk(OnRecord on_record) {
    Reader request(c_->request_);
    Field rl;
    for (resource_i_ = 0; request.Next(&rl);) {
      if (rl.number() != otlp::kResourceItems || rl.type() != wire::kLength) continue;
      if (absl::Status s = ResourceItems(rl.bytes, on_record); !s.ok()) return s;
      ++resource_i_;
    }
    if (!request.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the request is not an ", names().request, " (malformed protobuf)"));
    }
    return absl::OkStatus();
  }

  template <typename OnRecord>
  absl::Status ResourceItems(absl::string_view body, OnRecord& on_record) {
    resource_ = resource_schema_ = {};
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (field.type() != wire::kLength) continue;
      if (field.number() == otlp::kResource) resource_ = field.bytes;
      if (field.number() == otlp::kSchemaUrl) resource_schema_ = field.bytes;
    }
    if (!reader.ok()) return Invalid(absl::StrCat("malformed ", names().resource));
    for (auto& v : resource_stream_) v.reset();
    StreamAttributes(resource_, otlp::kResourceAttributes, resource_stream_);
    scope_i_ = record_i_ = point_i_ = -1;
    part_ = "resource";
    if (!Cached(&c_->resource_, &resource_size_, [&](auto& out) { return ResourceEntry(out); })) {
      return Invalid(problem_);
    }
    Reader scopes(body);
    for (scope_i_ = 0; scopes.Next(&field);) {
      if (field.number() != otlp::kScopeItems || field.type() != wire::kLength) continue;
      if (absl::Status s = ScopeItems(field.bytes, on_record); !s.ok()) return s;
      ++scope_i_;
    }
    return absl::OkStatus();
  }

  template <typename OnRecord>
  absl::Status ScopeItems(absl::string_view body, OnRecord& on_record) {
    scope_ = scope_schema_ = {};
    Reader reader(body);
    Field field;
    while (reader.Next(&field)) {
      if (field.type() != wire::kLength) continue;
      if (field.number() == otlp::kScope) scope_ = field.bytes;
      if (field.number() == otlp::kSchemaUrl) scope_schema_ = field.bytes;
    }
    if (!reader.ok()) return Invalid(absl::StrCat("malformed ", names().scope));
    // What the scope's records do not set themselves: resolved here once, so that a record costs
    // its own bytes, not its scope's and resource's attribute lists again.
    for (auto& v : scope_stream_) v.reset();
    StreamAttributes(scope_, otlp::kScopeAttributes, scope_stream_);
    for (size_t i = 0; i < kStreamParts; ++i) {
      if (!scope_stream_[i]) scope_stream_[i] = resource_stream_[i];
    }
    record_i_ = point_i_ = -1;
    part_ = "scope";
    if (!Cached(&c_->scope_, &scope_size_, [&](auto& out) { return ScopeEntry(out); })) {
      return Invalid(problem_);
    }
    Reader records(body);
    for (record_i_ = 0; records.Next(&field);) {
      if (field.number() != otlp::kItems || field.type() != wire::kLength) continue;
      absl::Status s = c_->signal_ == OtlpSignal::kMetrics ? Metric(field.bytes, on_record)
                                                           : on_record(field.bytes);
      if (!s.ok()) return s;
      ++record_i_;
    }
    return absl::OkStatus();
  }

  // A Metric's data points, each a record.
  template <typename OnRecord>
  absl::Status Metric(absl::string_view body, OnRecord& on_record) {
    point_i_ = -1;
    metric_ = MetricParts{};
    metric_.metric = body;
    Reader reader(body);
    Field f;
    while (reader.Next(&f)) {
      switch (f.number()) {
        case otlp::metric::kName:
          if (f.type() == wire::kLength) metric_.name = f.bytes;
          break;
        case otlp::metric::kDescription:
          if (f.type() == wire::kLength) metric_.description = f.bytes;
          break;
        case otlp::metric::kUnit:
          if (f.type() == wire::kLength) metric_.unit = f.bytes;
          break;
        case otlp::metric::kMetadata:
          if (f.type() == wire::kLength) metric_.has_metadata = true;
          break;
        case otlp::metric::kGauge:
        case otlp::metric::kSum:
        case otlp::metric::kHistogram:
        case otlp::metric::kExponentialHistogram:
        case otlp::metric::kSummary:
          // The last member of the oneof set wins, as protobuf keeps it.
          if (f.type() == wire::kLength) {
            metric_.type = f.number();
            metric_.data = f.bytes;
          }
          break;
      }
    }
    if (!reader.ok()) return Invalid("malformed metric");
    if (!Out::kWrites && !(Utf8(metric_.name) && Utf8(metric_.description) && Utf8(metric_.unit))) {
      return Invalid("the metric's name, description or unit is not UTF-8");
    }
    if (metric_.type == 0) return absl::OkStatus();  // no data this schema knows: no points
    Reader data(metric_.data);
    while (data.Next(&f)) {
      if (f.type() != wire::kVarint) continue;
      if (f.number() == otlp::metric::kTemporality) metric_.temporality = f.scalar;
      if (f.number() == otlp::metric::kMonotonic && metric_.type == otlp::metric::kSum) {
        metric_.monotonic = f.scalar != 0;
      }
    }
    if (!data.ok()) return Invalid("malformed metric data");
    switch (metric_.type) {
      case otlp::metric::kGauge:
      case otlp::metric::kSum:
        metric_.layout = otlp::metric::kNumberLayout;
        break;
      case otlp::metric::kHistogram:
        metric_.layout = otlp::metric::kHistogramLayout;
        break;
      case otlp::metric::kExponentialHistogram:
        metric_.layout = otlp::metric::kExponentialLayout;
        break;
      default:
        metric_.layout = otlp::metric::kSummaryLayout;
    }
    Reader points(metric_.data);
    for (point_i_ = 0; points.Next(&f);) {
      if (f.number() != otlp::metric::kDataPoints || f.type() != wire::kLength) continue;
      if (absl::Status s = on_record(f.bytes); !s.ok()) return s;
      ++point_i_;
    }
    return absl::OkStatus();
  }

  // The resource's entry of the fields: its attributes, dropped count and schema_url, when any
  // is set.
  template <typename O>
  bool ResourceEntry(O& out) {
    c_->resource_bytes_.clear();
    bool any = false;
    uint64_t dropped = 0;
    Reader reader(resource_);
    Field field;
    while (reader.Next(&field)) {
      any = any || (field.number() == otlp::kResourceAttributes && field.type() == wire::kLength);
      if (field.number() == otlp::kResourceDropped && field.type() == wire::kVarint) {
        dropped = static_cast<uint32_t>(field.scalar);
      }
    }
    if (!reader.ok()) return Fail("malformed resource");
    if (!Out::kWrites && !Utf8(resource_schema_)) return Fail("schema_url is not UTF-8");
    if (!any && dropped == 0 && resource_schema_.empty()) return true;
    bool ok = true;
    Entry(out, "resource", [&] {
      out.Message(wire::value::kStruct, [&] {
        if (any) {
          Entry(out, "attributes", [&] {
            out.Message(wire::value::kStruct, [&] {
              Root(&c_->resource_bytes_, {"resource", "attributes"});
              ok = Attributes(out, resource_, otlp::kResourceAttributes, 0);
            });
          });
        }
        Count(out, "dropped_attributes_count", dropped);
        String(out, "schema_url", resource_schema_);
      });
    });
    return ok;
  }

  // The scope's entry of the fields: its name, version, attributes, dropped count and
  // schema_url, when any is set.
  template <typename O>
  bool ScopeEntry(O& out) {
    c_->scope_bytes_.clear();
    absl::string_view name, version;
    bool has_attributes = false;
    uint64_t dropped = 0;
    Reader reader(scope_);
    Field field;
    while (reader.Next(&field)) {
      if (field.number() == otlp::kScopeDropped && field.type() == wire::kVarint) {
        dropped = static_cast<uint32_t>(field.scalar);
      }
      if (field.type() != wire::kLength) continue;
      if (field.number() == otlp::kScopeName) name = field.bytes;
      if (field.number() == otlp::kScopeVersion) version = field.bytes;
      if (field.number() == otlp::kScopeAttributes) has_attributes = true;
    }
    if (!reader.ok()) return Fail("malformed scope");
    if (!Out::kWrites && !(Utf8(name) && Utf8(version) && Utf8(scope_schema_))) {
      return Fail("a string is not UTF-8");
    }
    if (name.empty() && version.empty() && !has_attributes && dropped == 0 &&
        scope_schema_.empty()) {
      return true;
    }
    bool ok = true;
    Entry(out, "scope", [&] {
      out.Message(wire::value::kStruct, [&] {
        String(out, "name", name);
        String(out, "version", version);
        if (has_attributes) {
          Entry(out, "attributes", [&] {
            out.Message(wire::value::kStruct, [&] {
              Root(&c_->scope_bytes_, {"scope", "attributes"});
              ok = Attributes(out, scope_, otlp::kScopeAttributes, 0);
            });
          });
        }
        Count(out, "dropped_attributes_count", dropped);
        String(out, "schema_url", scope_schema_);
      });
    });
    return ok;
  }

  // Writes the entry `write` makes once into `bytes` (the Writer's pass) or measures it (the
  // Sizer's), so that each record copies it. The entry's size is one more entry of sizes_.
  template <typename Write>
  bool Cached(std::string* bytes, size_t* size, Write write) {
    if constexpr (Out::kWrites) {
      *size = sizes_->Next();
      bytes->resize(*size);
      Writer writer(sizes_, bytes->data());
      write(writer);
      DCHECK_EQ(writer.size(), *size);
      return true;
    } else {
      otlp::MessageSizes* sizes = c_->sizes_.get();
      const size_t slot = sizes->Add();
      Sizer sizer(sizes);
      if (!write(sizer)) return false;
      *size = sizer.size();
      sizes->Set(slot, static_cast<uint32_t>(std::min<size_t>(*size, UINT32_MAX)));
      return true;
    }
  }

  // A record's fields, as read.
  struct RecordParts {
    uint64_t time = 0, observed = 0;
    uint64_t severity_number = 0, dropped = 0, flags = 0;
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
        case otlp::kFlags:
          if (f.type() == wire::kFixed32) p->flags = f.scalar;
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
      return absl::ResourceExhaustedError(
          absl::StrCat("the request holds more than ", c_->max_records_, " ",
                       SignalRecords(c_->signal_), ": send fewer per export"));
    }
    otlp::MessageSizes* sizes = c_->sizes_.get();
    const size_t first = sizes->size();
    Sizer sizer(sizes);
    part_ = names().record;
    if (!EventBody(sizer, record)) return Invalid(problem_);
    const size_t bytes = sizer.size();
    const bool rejected = bytes > c_->max_record_bytes_;
    c_->rejected_records_.push_back(rejected);
    if (rejected) {
      sizes->Truncate(first);  // the Writer never walks it
      ++c_->rejected_;
      c_->largest_rejected_ = std::max(c_->largest_rejected_, bytes);
    } else {
      ++c_->taken_;
      c_->bytes_ += bytes;
    }
    return absl::OkStatus();
  }

  // One record's Event: its timestamp, data_stream, fields and signal.
  template <typename O>
  bool EventBody(O& out, absl::string_view record) {
    c_->record_bytes_.clear();
    bool ok;
    uint64_t signal;
    switch (c_->signal_) {
      case OtlpSignal::kLogs:
        ok = LogEvent(out, record);
        signal = wire::otel::kLog;
        break;
      case OtlpSignal::kTraces:
        ok = SpanEvent(out, record);
        signal = wire::otel::kSpan;
        break;
      default:
        ok = PointEvent(out, record);
        signal = wire::otel::kDataPoint;
    }
    out.Tag(wire::event::kOtelSignal, wire::kVarint);
    out.Varint(signal);
    return ok;
  }

  template <typename O>
  bool LogEvent(O& out, absl::string_view record) {
    RecordParts p;
    if (!Parts(record, &p)) return false;
    const uint64_t ns = p.time != 0 ? p.time : p.observed != 0 ? p.observed : c_->arrival_ns_;
    out.Message(wire::event::kTimestamp, [&] { Timestamp(out, ns); });
    out.Message(wire::event::kDataStream, [&] { DataStream(out, record, otlp::kAttributes); });
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
              Root(&c_->record_bytes_, {"body", "structured"});
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
          out.Message(wire::value::kStruct, [&] {
            Root(&c_->record_bytes_, {"attributes"});
            ok = ok && Attributes(out, record, otlp::kAttributes, 0);
          });
        });
      }
      out.Copy(c_->resource_, resource_size_);
      out.Copy(c_->scope_, scope_size_);
      if (p.observed != 0) {
        Entry(out, "observed_timestamp",
              [&] { out.Message(wire::value::kTimestamp, [&] { Timestamp(out, p.observed); }); });
      }
    });
    LogMetadata(out, p);
    return ok;
  }

  // What a receiver of the log record sees that the fields do not hold (and an Elasticsearch
  // document leaves out): the event's metadata, when there is any.
  template <typename O>
  void LogMetadata(O& out, const RecordParts& p) {
    if (p.flags == 0 && p.time != 0 && !AnyBytes()) return;
    out.Message(wire::event::kMetadata, [&] {
      Count(out, "otlp.flags", p.flags);
      if (p.time == 0) {
        Entry(out, "otlp.time_unix_nano_unset", [&] {
          out.Tag(wire::value::kBool, wire::kVarint);
          out.Varint(1);
        });
      }
      BytesEntry(out);
    });
  }

  // A span's or data point's metadata: otlp.bytes, when it has bytes values.
  template <typename O>
  void SignalMetadata(O& out) {
    if (AnyBytes()) out.Message(wire::event::kMetadata, [&] { BytesEntry(out); });
  }

  bool AnyBytes() const {
    return !(c_->record_bytes_.empty() && c_->resource_bytes_.empty() && c_->scope_bytes_.empty());
  }

  // The metadata entry otlp.bytes: the paths of the record's, resource's and scope's bytes
  // values, when there is any.
  template <typename O>
  void BytesEntry(O& out) {
    if (!AnyBytes()) return;
    const std::vector<BytesPath>* bytes[] = {&c_->record_bytes_, &c_->resource_bytes_,
                                             &c_->scope_bytes_};
    Entry(out, "otlp.bytes", [&] {
      out.Message(wire::value::kList, [&] {
        for (const std::vector<BytesPath>* paths : bytes) {
          for (const BytesPath& path : *paths) {
            out.Message(kListValues, [&] {
              out.Message(wire::value::kList, [&] {
                for (const PathPart& part : path) {
                  out.Message(kListValues, [&] {
                    if (part.is_index) {
                      Int(out, part.index);
                    } else {
                      out.Bytes(wire::value::kString, part.key);
                    }
                  });
                }
              });
            });
          }
        }
      });
    });
  }

  // Where the values written next lie (`root`, below the event's fields), and which list the
  // paths of their bytes values go to.
  void Root(std::vector<BytesPath>* paths, std::initializer_list<absl::string_view> root) {
    bytes_paths_ = paths;
    path_ = prefix_;
    for (absl::string_view key : root) path_.push_back({key, 0, false});
  }

  // Runs write() with the roots it sets below `key`[index] (a span's event or link, a point's
  // exemplar) or `key` alone (index < 0), and returns what it returns.
  template <typename Write>
  bool Below(std::initializer_list<absl::string_view> keys, int64_t index, Write write) {
    prefix_.clear();
    for (absl::string_view key : keys) prefix_.push_back({key, 0, false});
    if (index >= 0) prefix_.push_back({{}, index, true});
    const bool ok = write();
    prefix_.clear();
    return ok;
  }

  // A span's fields, as read.
  struct SpanParts {
    uint64_t start = 0, end = 0, kind = 0, flags = 0;
    uint64_t dropped_attributes = 0, dropped_events = 0, dropped_links = 0;
    absl::string_view trace_id, span_id, parent_span_id, trace_state, name, status;
    bool has_attributes = false, has_events = false, has_links = false;
  };

  bool ReadSpan(absl::string_view span, SpanParts* p) {
    Reader reader(span);
    Field f;
    while (reader.Next(&f)) {
      const bool varint = f.type() == wire::kVarint, bytes = f.type() == wire::kLength;
      switch (f.number()) {
        case otlp::span::kTraceId:
          if (bytes) p->trace_id = f.bytes;
          break;
        case otlp::span::kSpanId:
          if (bytes) p->span_id = f.bytes;
          break;
        case otlp::span::kTraceState:
          if (bytes) p->trace_state = f.bytes;
          break;
        case otlp::span::kParentSpanId:
          if (bytes) p->parent_span_id = f.bytes;
          break;
        case otlp::span::kName:
          if (bytes) p->name = f.bytes;
          break;
        case otlp::span::kKind:
          if (varint) p->kind = static_cast<uint32_t>(f.scalar);
          break;
        case otlp::span::kStart:
          if (f.type() == wire::kFixed64) p->start = f.scalar;
          break;
        case otlp::span::kEnd:
          if (f.type() == wire::kFixed64) p->end = f.scalar;
          break;
        case otlp::span::kAttributes:
          p->has_attributes = p->has_attributes || bytes;
          break;
        case otlp::span::kDroppedAttributes:
          if (varint) p->dropped_attributes = static_cast<uint32_t>(f.scalar);
          break;
        case otlp::span::kEvents:
          p->has_events = p->has_events || bytes;
          break;
        case otlp::span::kDroppedEvents:
          if (varint) p->dropped_events = static_cast<uint32_t>(f.scalar);
          break;
        case otlp::span::kLinks:
          p->has_links = p->has_links || bytes;
          break;
        case otlp::span::kDroppedLinks:
          if (varint) p->dropped_links = static_cast<uint32_t>(f.scalar);
          break;
        case otlp::span::kStatus:
          if (bytes) p->status = f.bytes;
          break;
        case otlp::span::kFlags:
          if (f.type() == wire::kFixed32) p->flags = f.scalar;
          break;
      }
    }
    if (!reader.ok()) return Fail("malformed span");
    if (!Out::kWrites && !(Utf8(p->trace_state) && Utf8(p->name))) {
      return Fail("trace_state or name is not UTF-8");
    }
    return true;
  }

  template <typename O>
  bool SpanEvent(O& out, absl::string_view span) {
    SpanParts p;
    if (!ReadSpan(span, &p)) return false;
    out.Message(wire::event::kTimestamp, [&] { Timestamp(out, p.start); });
    out.Message(wire::event::kDataStream, [&] { DataStream(out, span, otlp::span::kAttributes); });
    bool ok = true;
    out.Message(wire::event::kFields, [&] {
      Id(out, "trace_id", p.trace_id);
      Id(out, "span_id", p.span_id);
      String(out, "trace_state", p.trace_state);
      Id(out, "parent_span_id", p.parent_span_id);
      Count(out, "flags", p.flags);
      String(out, "name", p.name);
      static constexpr absl::string_view kKinds[] = {"Unspecified", "Internal", "Server",
                                                     "Client",      "Producer", "Consumer"};
      Entry(out, "kind", [&] { Named(out, p.kind, kKinds); });
      Entry(out, "duration", [&] { Uint(out, p.end - p.start); });
      if (p.has_attributes) ok = AttributesEntry(out, "attributes", span, otlp::span::kAttributes);
      Count(out, "dropped_attributes_count", p.dropped_attributes);
      Count(out, "dropped_events_count", p.dropped_events);
      Count(out, "dropped_links_count", p.dropped_links);
      if (p.has_events) {
        int64_t i = 0;
        Entry(out, "events", [&] {
          Items(out, span, otlp::span::kEvents, [&](absl::string_view event) {
            return ok && (ok = Below({"events"}, i++, [&] { return SpanEventEntry(out, event); }));
          });
        });
      }
      if (p.has_links) {
        int64_t i = 0;
        Entry(out, "links", [&] {
          Items(out, span, otlp::span::kLinks, [&](absl::string_view link) {
            return ok && (ok = Below({"links"}, i++, [&] { return LinkEntry(out, link); }));
          });
        });
      }
      ok = ok && StatusEntry(out, p.status);
      out.Copy(c_->resource_, resource_size_);
      out.Copy(c_->scope_, scope_size_);
    });
    SignalMetadata(out);
    return ok;
  }

  // One Span.Event as a Struct Value's body.
  template <typename O>
  bool SpanEventEntry(O& out, absl::string_view event) {
    uint64_t time = 0, dropped = 0;
    absl::string_view name;
    bool has_attributes = false;
    Reader reader(event);
    Field f;
    while (reader.Next(&f)) {
      if (f.number() == otlp::span::kEventTime && f.type() == wire::kFixed64) time = f.scalar;
      if (f.number() == otlp::span::kEventName && f.type() == wire::kLength) name = f.bytes;
      if (f.number() == otlp::span::kEventAttributes && f.type() == wire::kLength) {
        has_attributes = true;
      }
      if (f.number() == otlp::span::kEventDropped && f.type() == wire::kVarint) {
        dropped = static_cast<uint32_t>(f.scalar);
      }
    }
    if (!reader.ok()) return Fail("malformed span event");
    if (!Out::kWrites && !Utf8(name)) return Fail("a span event's name is not UTF-8");
    bool ok = true;
    out.Message(wire::value::kStruct, [&] {
      TimestampEntry(out, "timestamp", time);
      String(out, "name", name);
      if (has_attributes) {
        ok = AttributesEntry(out, "attributes", event, otlp::span::kEventAttributes);
      }
      Count(out, "dropped_attributes_count", dropped);
    });
    return ok;
  }

  // One Span.Link as a Struct Value's body.
  template <typename O>
  bool LinkEntry(O& out, absl::string_view link) {
    uint64_t dropped = 0, flags = 0;
    absl::string_view trace_id, span_id, trace_state;
    bool has_attributes = false;
    Reader reader(link);
    Field f;
    while (reader.Next(&f)) {
      const bool bytes = f.type() == wire::kLength;
      switch (f.number()) {
        case otlp::span::kLinkTraceId:
          if (bytes) trace_id = f.bytes;
          break;
        case otlp::span::kLinkSpanId:
          if (bytes) span_id = f.bytes;
          break;
        case otlp::span::kLinkTraceState:
          if (bytes) trace_state = f.bytes;
          break;
        case otlp::span::kLinkAttributes:
          has_attributes = has_attributes || bytes;
          break;
        case otlp::span::kLinkDropped:
          if (f.type() == wire::kVarint) dropped = static_cast<uint32_t>(f.scalar);
          break;
        case otlp::span::kLinkFlags:
          if (f.type() == wire::kFixed32) flags = f.scalar;
          break;
      }
    }
    if (!reader.ok()) return Fail("malformed span link");
    if (!Out::kWrites && !Utf8(trace_state)) return Fail("a link's trace_state is not UTF-8");
    bool ok = true;
    out.Message(wire::value::kStruct, [&] {
      Id(out, "trace_id", trace_id);
      Id(out, "span_id", span_id);
      String(out, "trace_state", trace_state);
      if (has_attributes)
        ok = AttributesEntry(out, "attributes", link, otlp::span::kLinkAttributes);
      Count(out, "dropped_attributes_count", dropped);
      Count(out, "flags", flags);
    });
    return ok;
  }

  template <typename O>
  bool StatusEntry(O& out, absl::string_view status) {
    uint64_t code = 0;
    absl::string_view message;
    Reader reader(status);
    Field f;
    while (reader.Next(&f)) {
      if (f.number() == otlp::span::kStatusCode && f.type() == wire::kVarint) {
        code = static_cast<uint32_t>(f.scalar);
      }
      if (f.number() == otlp::span::kStatusMessage && f.type() == wire::kLength) message = f.bytes;
    }
    if (!reader.ok()) return Fail("malformed status");
    if (!Out::kWrites && !Utf8(message)) return Fail("the status message is not UTF-8");
    Entry(out, "status", [&] {
      out.Message(wire::value::kStruct, [&] {
        static constexpr absl::string_view kCodes[] = {"Unset", "Ok", "Error"};
        Entry(out, "code", [&] { Named(out, code, kCodes); });
        String(out, "message", message);
      });
    });
    return true;
  }

  // The metric whose data points are being converted.
  struct MetricParts {
    absl::string_view metric, name, description, unit, data;
    uint32_t type = 0;  // the field number of its data (otlp::metric::kGauge...), 0: none known
    uint64_t temporality = 0;
    bool monotonic = false, has_metadata = false;
    otlp::metric::PointLayout layout{};
  };

  // An exponential histogram's positive or negative buckets: their offset and counts (in
  // `counts`, which holds them until the point is written).
  struct Buckets {
    int64_t offset = 0;
    const std::vector<uint64_t>* counts = nullptr;
  };

  // A data point's fields, as read (those of its kind; the others stay unset).
  struct PointParts {
    uint64_t time = 0, start = 0, flags = 0, count = 0, zero_count = 0;
    int64_t scale = 0;
    std::optional<Field> value;  // NumberDataPoint's as_double or as_int
    std::optional<double> sum, min, max;
    double zero_threshold = 0;
    std::optional<absl::string_view> positive, negative;
    bool has_attributes = false, has_exemplars = false, has_buckets = false, has_bounds = false,
         has_quantiles = false;
  };

  bool ReadPoint(absl::string_view point, PointParts* p) {
    const otlp::metric::PointLayout& layout = metric_.layout;
    const uint32_t type = metric_.type;
    const bool number = type == otlp::metric::kGauge || type == otlp::metric::kSum;
    Reader reader(point);
    Field f;
    while (reader.Next(&f)) {
      const uint32_t n = f.number();
      const bool fixed64 = f.type() == wire::kFixed64, bytes = f.type() == wire::kLength;
      if (n == otlp::metric::kStart && fixed64) p->start = f.scalar;
      if (n == otlp::metric::kTime && fixed64) p->time = f.scalar;
      if (n == layout.attributes && bytes) p->has_attributes = true;
      if (n == layout.exemplars && bytes) p->has_exemplars = true;
      if (n == layout.flags && f.type() == wire::kVarint)
        p->flags = static_cast<uint32_t>(f.scalar);
      if (number) {
        if ((n == otlp::metric::kAsDouble || n == otlp::metric::kAsInt) && fixed64) p->value = f;
        continue;
      }
      if (n == otlp::metric::kCount && fixed64) p->count = f.scalar;
      if (n == otlp::metric::kPointSum && fixed64) p->sum = AsDouble(f.scalar);
      if (n == layout.min && fixed64) p->min = AsDouble(f.scalar);
      if (n == layout.max && fixed64) p->max = AsDouble(f.scalar);
      if (type == otlp::metric::kHistogram) {
        if (n == otlp::metric::kBucketCounts) p->has_buckets = true;
        if (n == otlp::metric::kExplicitBounds) p->has_bounds = true;
      } else if (type == otlp::metric::kExponentialHistogram) {
        if (n == otlp::metric::kScale && f.type() == wire::kVarint) p->scale = ZigZag(f.scalar);
        if (n == otlp::metric::kZeroCount && fixed64) p->zero_count = f.scalar;
        if (n == otlp::metric::kZeroThreshold && fixed64) p->zero_threshold = AsDouble(f.scalar);
        if (n == otlp::metric::kPositive && bytes) p->positive = f.bytes;
        if (n == otlp::metric::kNegative && bytes) p->negative = f.bytes;
      } else if (n == otlp::metric::kQuantileValues && bytes) {
        p->has_quantiles = true;
      }
    }
    if (!reader.ok()) return Fail("malformed data point");
    return true;
  }

  template <typename O>
  bool PointEvent(O& out, absl::string_view point) {
    PointParts p;
    if (!ReadPoint(point, &p)) return false;
    const uint32_t type = metric_.type;
    // The histogram's buckets, read once for both of their entries.
    std::vector<uint64_t>& counts = c_->counts_;
    std::vector<double>& bounds = c_->bounds_;
    if (type == otlp::metric::kHistogram) {
      counts.clear();
      bounds.clear();
      if (!Repeated(point, otlp::metric::kBucketCounts, wire::kFixed64,
                    [&](uint64_t v) { counts.push_back(v); }) ||
          !Repeated(point, otlp::metric::kExplicitBounds, wire::kFixed64,
                    [&](uint64_t v) { bounds.push_back(AsDouble(v)); })) {
        return Fail("malformed bucket_counts or explicit_bounds");
      }
      if (!Out::kWrites && !counts.empty() && counts.size() != bounds.size() + 1) {
        return Fail(absl::StrCat("the histogram has ", counts.size(), " bucket_counts and ",
                                 bounds.size(), " explicit_bounds: expected one count more"));
      }
    }
    Buckets positive, negative;
    if (type == otlp::metric::kExponentialHistogram &&
        !(ReadBuckets(p.positive, &positive, &c_->positive_) &&
          ReadBuckets(p.negative, &negative, &c_->negative_))) {
      return Fail("malformed positive or negative buckets");
    }
    out.Message(wire::event::kTimestamp, [&] { Timestamp(out, p.time); });
    out.Message(wire::event::kDataStream,
                [&] { DataStream(out, point, metric_.layout.attributes); });
    bool ok = true;
    out.Message(wire::event::kFields, [&] {
      if (p.start != 0) TimestampEntry(out, "start_timestamp", p.start);
      String(out, "unit", metric_.unit);
      if (p.has_attributes) {
        ok = AttributesEntry(out, "attributes", point, metric_.layout.attributes);
      }
      Entry(out, "metrics", [&] {
        out.Message(wire::value::kStruct, [&] {
          Entry(out, metric_.name, [&] {
            switch (type) {
              case otlp::metric::kGauge:
              case otlp::metric::kSum:
                return NumberValue(out, p.value, otlp::metric::kAsInt);
              case otlp::metric::kHistogram:
                return HistogramValue(out, p, counts, bounds);
              case otlp::metric::kExponentialHistogram:
                return ExponentialValue(out, p, positive, negative);
            }
            out.Message(wire::value::kStruct, [&] {
              Entry(out, "sum", [&] { Double(out, p.sum.value_or(0)); });
              Entry(out, "value_count", [&] { Int(out, static_cast<int64_t>(p.count)); });
            });
          });
        });
      });
      if (type != otlp::metric::kGauge && type != otlp::metric::kSum) {
        Count(out, "_doc_count", p.count);
      }
      ok = ok && MetricEntry(out);
      const bool number = type == otlp::metric::kGauge || type == otlp::metric::kSum;
      if (!number || p.flags != 0 || p.has_exemplars) {
        Entry(out, "data_point", [&] {
          out.Message(wire::value::kStruct,
                      [&] { ok = ok && DataPointBody(out, point, p, positive, negative); });
        });
      }
      out.Copy(c_->resource_, resource_size_);
      out.Copy(c_->scope_, scope_size_);
    });
    SignalMetadata(out);
    return ok;
  }

  // The entry `metric`: what the Metric says of all its points.
  template <typename O>
  bool MetricEntry(O& out) {
    bool ok = true;
    const uint32_t type = metric_.type;
    Entry(out, "metric", [&] {
      out.Message(wire::value::kStruct, [&] {
        Entry(out, "type", [&] {
          switch (type) {
            case otlp::metric::kGauge:
              return out.Bytes(wire::value::kString, "gauge");
            case otlp::metric::kSum:
              return out.Bytes(wire::value::kString, "sum");
            case otlp::metric::kHistogram:
              return out.Bytes(wire::value::kString, "histogram");
            case otlp::metric::kExponentialHistogram:
              return out.Bytes(wire::value::kString, "exponential_histogram");
          }
          out.Bytes(wire::value::kString, "summary");
        });
        String(out, "description", metric_.description);
        if (type == otlp::metric::kSum || type == otlp::metric::kHistogram ||
            type == otlp::metric::kExponentialHistogram) {
          static constexpr absl::string_view kTemporalities[] = {"", "delta", "cumulative"};
          if (metric_.temporality != 0) {
            Entry(out, "temporality", [&] { Named(out, metric_.temporality, kTemporalities); });
          }
        }
        if (type == otlp::metric::kSum) {
          Entry(out, "monotonic", [&] {
            out.Tag(wire::value::kBool, wire::kVarint);
            out.Varint(metric_.monotonic ? 1 : 0);
          });
        }
        if (metric_.has_metadata) {
          ok = Below({"metric"}, -1, [&] {
            return AttributesEntry(out, "metadata", metric_.metric, otlp::metric::kMetadata);
          });
        }
      });
    });
    return ok;
  }

  // The exact values of the point that `metrics` does not keep, as a Struct's entries.
  template <typename O>
  bool DataPointBody(O& out, absl::string_view point, const PointParts& p, const Buckets& positive,
                     const Buckets& negative) {
    Count(out, "flags", p.flags);
    const uint32_t type = metric_.type;
    if (type != otlp::metric::kGauge && type != otlp::metric::kSum) {
      Entry(out, "count", [&] { Uint(out, p.count); });
      if (type == otlp::metric::kSummary) {
        Entry(out, "sum", [&] { Double(out, p.sum.value_or(0)); });
      } else {
        Optional(out, "sum", p.sum);
        Optional(out, "min", p.min);
        Optional(out, "max", p.max);
      }
    }
    if (type == otlp::metric::kHistogram) {
      if (!c_->counts_.empty()) {
        Entry(out, "bucket_counts", [&] {
          out.Message(wire::value::kList, [&] {
            for (uint64_t n : c_->counts_) out.Message(kListValues, [&] { Uint(out, n); });
          });
        });
      }
      if (!c_->bounds_.empty()) {
        Entry(out, "explicit_bounds", [&] {
          out.Message(wire::value::kList, [&] {
            for (double b : c_->bounds_) out.Message(kListValues, [&] { Double(out, b); });
          });
        });
      }
    }
    if (type == otlp::metric::kExponentialHistogram) {
      Entry(out, "scale", [&] { Int(out, p.scale); });
      if (p.zero_count != 0) Entry(out, "zero_count", [&] { Uint(out, p.zero_count); });
      if (p.zero_threshold != 0) {
        Entry(out, "zero_threshold", [&] { Double(out, p.zero_threshold); });
      }
      if (p.positive) BucketsEntry(out, "positive", positive);
      if (p.negative) BucketsEntry(out, "negative", negative);
    }
    bool ok = true;
    if (p.has_quantiles) {
      Entry(out, "quantile_values", [&] {
        Items(out, point, otlp::metric::kQuantileValues, [&](absl::string_view q) {
          double quantile = 0, value = 0;
          Reader reader(q);
          Field f;
          while (reader.Next(&f)) {
            if (f.type() != wire::kFixed64) continue;
            if (f.number() == otlp::metric::kQuantile) quantile = AsDouble(f.scalar);
            if (f.number() == otlp::metric::kQuantileValue) value = AsDouble(f.scalar);
          }
          if (!reader.ok()) return ok = Fail("malformed quantile_values");
          out.Message(wire::value::kStruct, [&] {
            Entry(out, "quantile", [&] { Double(out, quantile); });
            Entry(out, "value", [&] { Double(out, value); });
          });
          return true;
        });
      });
    }
    if (ok && p.has_exemplars) {
      int64_t i = 0;
      Entry(out, "exemplars", [&] {
        Items(out, point, metric_.layout.exemplars, [&](absl::string_view exemplar) {
          return ok && (ok = Below({"data_point", "exemplars"}, i++,
                                   [&] { return ExemplarEntry(out, exemplar); }));
        });
      });
    }
    return ok;
  }

  template <typename O>
  bool ExemplarEntry(O& out, absl::string_view exemplar) {
    uint64_t time = 0;
    std::optional<Field> value;
    absl::string_view trace_id, span_id;
    bool has_attributes = false;
    Reader reader(exemplar);
    Field f;
    while (reader.Next(&f)) {
      const uint32_t n = f.number();
      if (f.type() == wire::kFixed64) {
        if (n == otlp::metric::kExemplarTime) time = f.scalar;
        if (n == otlp::metric::kExemplarDouble || n == otlp::metric::kExemplarInt) value = f;
      }
      if (f.type() != wire::kLength) continue;
      if (n == otlp::metric::kExemplarTraceId) trace_id = f.bytes;
      if (n == otlp::metric::kExemplarSpanId) span_id = f.bytes;
      if (n == otlp::metric::kExemplarAttributes) has_attributes = true;
    }
    if (!reader.ok()) return Fail("malformed exemplar");
    bool ok = true;
    out.Message(wire::value::kStruct, [&] {
      TimestampEntry(out, "timestamp", time);
      Entry(out, "value", [&] { NumberValue(out, value, otlp::metric::kExemplarInt); });
      Id(out, "trace_id", trace_id);
      Id(out, "span_id", span_id);
      if (has_attributes) {
        ok = AttributesEntry(out, "filtered_attributes", exemplar,
                             otlp::metric::kExemplarAttributes);
      }
    });
    return ok;
  }

  static bool ReadBuckets(std::optional<absl::string_view> message, Buckets* buckets,
                          std::vector<uint64_t>* counts) {
    counts->clear();
    buckets->counts = counts;
    if (!message) return true;
    Reader reader(*message);
    Field f;
    while (reader.Next(&f)) {
      if (f.number() == otlp::metric::kOffset && f.type() == wire::kVarint) {
        buckets->offset = ZigZag(f.scalar);
      }
    }
    return reader.ok() && Repeated(*message, otlp::metric::kExpBucketCounts, wire::kVarint,
                                   [&](uint64_t v) { counts->push_back(v); });
  }

  template <typename O>
  static void BucketsEntry(O& out, absl::string_view key, const Buckets& buckets) {
    Entry(out, key, [&] {
      out.Message(wire::value::kStruct, [&] {
        Entry(out, "offset", [&] { Int(out, buckets.offset); });
        if (buckets.counts->empty()) return;
        Entry(out, "bucket_counts", [&] {
          out.Message(wire::value::kList, [&] {
            for (uint64_t n : *buckets.counts) out.Message(kListValues, [&] { Uint(out, n); });
          });
        });
      });
    });
  }

  // A histogram's value as the Elasticsearch exporter writes it: {counts, values}, one pair per
  // bucket counted, each value its bucket's midpoint.
  template <typename O>
  static void HistogramValue(O& out, const PointParts& p, const std::vector<uint64_t>& counts,
                             const std::vector<double>& bounds) {
    CountsAndValues(out, [&](auto pair) {
      if (bounds.empty()) {
        if (p.count > 0) pair(p.count, p.sum.value_or(0) / static_cast<double>(p.count));
        return;
      }
      for (size_t i = 0; i < counts.size(); ++i) {
        if (counts[i] == 0) continue;
        double value;
        if (i == 0) {
          value = bounds[0] > 0 ? bounds[0] / 2 : bounds[0];
        } else if (i >= bounds.size()) {
          value = bounds.back();
        } else {
          value = bounds[i - 1] + (bounds[i] - bounds[i - 1]) / 2;
        }
        pair(counts[i], value);
      }
    });
  }

  // An exponential histogram's likewise: the negative buckets from the most negative, the zero
  // bucket, the positive buckets.
  template <typename O>
  static void ExponentialValue(O& out, const PointParts& p, const Buckets& positive,
                               const Buckets& negative) {
    CountsAndValues(out, [&](auto pair) {
      const std::vector<uint64_t>& neg = *negative.counts;
      for (size_t i = neg.size(); i-- > 0;) {
        if (neg[i] == 0) continue;
        const int64_t index = negative.offset + static_cast<int64_t>(i);
        const double lower = -LowerBoundary(index + 1, p.scale);
        const double upper = -LowerBoundary(index, p.scale);
        pair(neg[i], lower + (upper - lower) / 2);
      }
      if (p.zero_count != 0) pair(p.zero_count, 0.0);
      const std::vector<uint64_t>& pos = *positive.counts;
      for (size_t i = 0; i < pos.size(); ++i) {
        if (pos[i] == 0) continue;
        const int64_t index = positive.offset + static_cast<int64_t>(i);
        const double lower = LowerBoundary(index, p.scale);
        const double upper = LowerBoundary(index + 1, p.scale);
        pair(pos[i], lower + (upper - lower) / 2);
      }
    });
  }

  // The lower bound of bucket `index` at `scale` (OTLP's data model): base^index, base being
  // 2^(2^-scale). In doubles throughout, so that hostile scales and offsets give infinities, not
  // overflows.
  static double LowerBoundary(int64_t index, int64_t scale) {
    if (scale <= 0) {
      const int s = static_cast<int>(std::min<int64_t>(-scale, 1100));
      return std::exp2(static_cast<double>(index) * std::ldexp(1.0, s));
    }
    const int s = static_cast<int>(std::min<int64_t>(scale, 1100));
    return 2.0 * std::exp((static_cast<double>(index) - std::ldexp(1.0, s)) *
                          std::ldexp(std::log(2.0), -s));
  }

  // {counts: [...], values: [...]} from the pairs `pairs` gives: it is called twice, once per
  // list, with a function taking (count, value).
  template <typename O, typename Pairs>
  static void CountsAndValues(O& out, Pairs pairs) {
    out.Message(wire::value::kStruct, [&] {
      Entry(out, "counts", [&] {
        out.Message(wire::value::kList, [&] {
          pairs([&](uint64_t count, double) {
            out.Message(kListValues, [&] { Int(out, static_cast<int64_t>(count)); });
          });
        });
      });
      Entry(out, "values", [&] {
        out.Message(wire::value::kList, [&] {
          pairs([&](uint64_t, double value) {
            out.Message(kListValues, [&] { Double(out, value); });
          });
        });
      });
    });
  }

  // A number data point's or an exemplar's value: as_int (field `int_number`) an int64, as_double
  // a float64, null when neither is set.
  template <typename O>
  static void NumberValue(O& out, const std::optional<Field>& value, uint32_t int_number) {
    if (!value) {
      out.Tag(wire::value::kNull, wire::kVarint);
      out.Varint(0);
    } else if (value->number() == int_number) {
      Int(out, static_cast<int64_t>(value->scalar));
    } else {
      out.Tag(wire::value::kFloat64, wire::kFixed64);
      out.Fixed64(value->scalar);
    }
  }

  // Calls each(v) for every value of the repeated scalar field `number` of `message`, packed or
  // not: fixed64 bits (`type` kFixed64) or varints (kVarint). False when malformed.
  template <typename Each>
  static bool Repeated(absl::string_view message, uint32_t number, WireType type, Each each) {
    Reader reader(message);
    Field f;
    while (reader.Next(&f)) {
      if (f.number() != number) continue;
      if (f.type() == type) {
        each(f.scalar);
        continue;
      }
      if (f.type() != wire::kLength) continue;
      const absl::string_view packed = f.bytes;
      if (type == wire::kFixed64) {
        if (packed.size() % 8 != 0) return false;
        for (size_t i = 0; i < packed.size(); i += 8) {
          uint64_t v;
          std::memcpy(&v, packed.data() + i, 8);  // little endian, as the wire format
          each(v);
        }
        continue;
      }
      for (size_t i = 0; i < packed.size();) {
        uint64_t v = 0;
        int shift = 0;
        for (;;) {
          if (i == packed.size() || shift > 63) return false;
          const auto byte = static_cast<unsigned char>(packed[i++]);
          v |= static_cast<uint64_t>(byte & 0x7f) << shift;
          shift += 7;
          if (byte < 0x80) break;
        }
        each(v);
      }
    }
    return reader.ok();
  }

  static double AsDouble(uint64_t bits) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  // A sint32 as protobuf reads it: the low 32 bits, zigzag-decoded.
  static int64_t ZigZag(uint64_t v) {
    const auto u = static_cast<uint32_t>(v);
    return static_cast<int32_t>((u >> 1) ^ (~(u & 1) + 1));
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

  // data_stream from the record's attributes (its field `attributes`), else the scope's, else
  // the resource's.
  template <typename O>
  void DataStream(O& out, absl::string_view record, uint32_t attributes) {
    StreamValues found;
    StreamAttributes(record, attributes, found);
    for (size_t i = 0; i < kStreamParts; ++i) {
      if (!found[i]) found[i] = scope_stream_[i];
    }
    const absl::string_view type = found[0].value_or(SignalName(c_->signal_));
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
  template <typename O>
  static void Uint(O& out, uint64_t v) {
    out.Tag(wire::value::kUint64, wire::kVarint);
    out.Varint(v);
  }
  template <typename O>
  static void Double(O& out, double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    out.Tag(wire::value::kFloat64, wire::kFixed64);
    out.Fixed64(bits);
  }

  // The entry `key`: a string, when not empty.
  template <typename O>
  static void String(O& out, absl::string_view key, absl::string_view s) {
    if (!s.empty()) Entry(out, key, [&] { out.Bytes(wire::value::kString, s); });
  }
  // The entry `key`: an id as lowercase hex, when not empty.
  template <typename O>
  static void Id(O& out, absl::string_view key, absl::string_view raw) {
    if (!raw.empty()) Entry(out, key, [&] { out.Hex(wire::value::kString, raw); });
  }
  // The entry `key`: an int64, when not 0.
  template <typename O>
  static void Count(O& out, absl::string_view key, uint64_t n) {
    if (n != 0) Entry(out, key, [&] { Int(out, static_cast<int64_t>(n)); });
  }
  // The entry `key`: a float64, when present.
  template <typename O>
  static void Optional(O& out, absl::string_view key, std::optional<double> d) {
    if (d) Entry(out, key, [&] { Double(out, *d); });
  }
  // The entry `key`: a Timestamp.
  template <typename O>
  static void TimestampEntry(O& out, absl::string_view key, uint64_t ns) {
    Entry(out, key, [&] { out.Message(wire::value::kTimestamp, [&] { Timestamp(out, ns); }); });
  }
  // An enum's value: its name in `names` (an empty name, or a number past them: the int64).
  template <typename O, size_t N>
  static void Named(O& out, uint64_t n, const absl::string_view (&names)[N]) {
    if (n < N && !names[n].empty()) {
      out.Bytes(wire::value::kString, names[n]);
    } else {
      Int(out, static_cast<int64_t>(n));
    }
  }

  // One entry of a Struct: its key, then its Value as `value` writes the Value's body.
  template <typename O, typename Body>
  static void Entry(O& out, absl::string_view key, Body value) {
    out.Message(kEntry, [&] {
      out.Bytes(kEntryKey, key);
      out.Message(kEntryValue, value);
    });
  }

  // The entry `key`: the attributes (field `number` of `container`) as a Struct.
  template <typename O>
  bool AttributesEntry(O& out, absl::string_view key, absl::string_view container,
                       uint32_t number) {
    bool ok = true;
    Entry(out, key, [&] {
      out.Message(wire::value::kStruct, [&] {
        Root(&c_->record_bytes_, {key});
        ok = Attributes(out, container, number, 0);
      });
    });
    return ok;
  }

  // A List Value's body: each(item) writes a Value's body for every field `number` of
  // `container`, in order, and says whether it could.
  template <typename O, typename Each>
  bool Items(O& out, absl::string_view container, uint32_t number, Each each) {
    bool ok = true;
    out.Message(wire::value::kList, [&] {
      Reader reader(container);
      Field f;
      while (ok && reader.Next(&f)) {
        if (f.number() != number || f.type() != wire::kLength) continue;
        out.Message(kListValues, [&] { ok = each(f.bytes); });
      }
    });
    return ok;
  }

  // The KeyValues of field `number` of `container` as a Struct's entries, the first of each key.
  template <typename O>
  bool Attributes(O& out, absl::string_view container, uint32_t number, size_t depth) {
    OtlpConversion::KeySet& keys = c_->key_sets_[depth];
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
      path_.push_back({key, 0, false});
      Entry(out, key, [&] { ok = Value(out, value, depth); });
      path_.pop_back();
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
        bytes_paths_->push_back(path_);
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
      for (int64_t i = 0; ok && items.Next(&item);) {
        if (item.number() != otlp::kValues || item.type() != wire::kLength) continue;
        path_.push_back({{}, i++, true});
        out.Message(kListValues, [&] { ok = Value(out, item.bytes, depth + 1); });
        path_.pop_back();
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
    const Names& n = names();
    std::string where = absl::StrCat(n.resource, "[", resource_i_, "]");
    if (scope_i_ >= 0) absl::StrAppend(&where, ".", n.scope, "[", scope_i_, "]");
    if (record_i_ >= 0) absl::StrAppend(&where, ".", n.items, "[", record_i_, "]");
    if (point_i_ >= 0) absl::StrAppend(&where, ".data_points[", point_i_, "]");
    if (record_i_ < 0) absl::StrAppend(&where, " (", part_, ")");
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", why));
  }

  OtlpConversion* const c_;
  otlp::MessageSizes::Cursor* sizes_ = nullptr;  // the Writer's place in c_->sizes_
  absl::string_view resource_, scope_;
  absl::string_view resource_schema_, scope_schema_;  // their Resource*'s and Scope*'s schema_url
  // The path, below the event's fields, of the value being written, and where the paths of its
  // bytes values go (log records send them on as otlp.bytes).
  BytesPath path_;
  std::vector<BytesPath>* bytes_paths_ = &c_->record_bytes_;
  BytesPath prefix_;  // where Root()'s roots lie: below the fields, or in a list's entry (Below())
  StreamValues resource_stream_;  // the resource's data_stream.* attributes
  StreamValues scope_stream_;     // the scope's, else the resource's
  size_t resource_size_ = 0, scope_size_ = 0;
  int resource_i_ = 0, scope_i_ = -1, record_i_ = -1, point_i_ = -1;
  MetricParts metric_;  // with metrics: the metric whose points are converted
  const char* part_ = "";
  std::string problem_;
};

OtlpConversion::OtlpConversion(OtlpSignal signal, runtime::MemoryBudget* budget)
    : signal_(signal),
      sizes_(std::make_unique<otlp::MessageSizes>(budget)),
      key_sets_(kMaxValueDepth + 1) {}
OtlpConversion::~OtlpConversion() = default;

absl::Status OtlpConversion::Scan(absl::string_view request, absl::Time arrival,
                                  size_t max_record_bytes, size_t max_records, size_t max_held) {
  request_ = request;
  arrival_ns_ = static_cast<uint64_t>(std::max<int64_t>(absl::ToUnixNanos(arrival), 0));
  max_record_bytes_ = max_record_bytes;
  max_records_ = max_records;
  sizes_->set_max_held(max_held);
  return Pass<Sizer>(this).Measure();
}

size_t OtlpConversion::bookkeeping_bytes() const { return sizes_->needed_bytes(); }

bool OtlpConversion::kept() const { return sizes_->kept(); }

void OtlpConversion::Write(char* out, absl::FunctionRef<void(absl::string_view)> emit) {
  CHECK(sizes_->kept()) << "Write() without the bookkeeping of every record";
  Pass<Writer>(this).Write(out, emit);
}

}  // namespace shipper
