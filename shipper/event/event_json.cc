#include "shipper/event/event_json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shipper/event/date_time.h"
#include "shipper/event/wire_event.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace shipper {
namespace {

namespace kind = wire::value;

// Room claimed from the buffer at a time: most documents fit in one window.
constexpr size_t kWindow = 4096;
// The longest number written: "-0.000001234567890123456", "-1.2345678901234567e-308", or 20
// digits and a sign.
constexpr size_t kMaxNumber = 25;

// Writes `v` in decimal at `out` and returns the end.
template <typename T>
char* WriteInteger(T v, char* out) {
  return std::to_chars(out, out + kMaxNumber, v).ptr;
}

// Writes the finite `v` at `out` as rapidjson's Writer::Double lays it out (its Prettify), and
// returns the end: the shortest digits that read back as `v` (std::to_chars), as an integer with
// ".0" up to 21 digits, with a point inside them or after "0.00000" down to 1e-6, else in
// exponent form without '+' or leading zeros ("1e21", "1.5e-7"). -0 is "-0.0".
char* WriteDouble(double v, char* out) {
  if (std::signbit(v)) *out++ = '-';
  v = std::fabs(v);
  if (v == 0) {
    std::memcpy(out, "0.0", 3);
    return out + 3;
  }
  char sci[32];  // "d.ddde-XXX": at most 17 digits
  char* const sci_end = std::to_chars(sci, sci + sizeof sci, v, std::chars_format::scientific).ptr;
  char* const e = std::find(sci, sci_end, 'e');
  char digits[20];
  int length = 0;
  for (const char* c = sci; c != e; ++c) {
    if (*c != '.') digits[length++] = *c;
  }
  int exponent = 0;  // v = d.ddd × 10^exponent
  std::from_chars(e[1] == '+' ? e + 2 : e + 1, sci_end, exponent);
  const int kk = exponent + 1;  // v = 0.digits × 10^kk
  const int k = kk - length;    // v = digits × 10^k
  if (0 <= k && kk <= 21) {
    std::memcpy(out, digits, length);
    std::memset(out + length, '0', kk - length);
    std::memcpy(out + kk, ".0", 2);
    return out + kk + 2;
  }
  if (0 < kk && kk <= 21) {
    std::memcpy(out, digits, kk);
    out[kk] = '.';
    std::memcpy(out + kk + 1, digits + kk, length - kk);
    return out + length + 1;
  }
  if (-6 < kk && kk <= 0) {
    const int offset = 2 - kk;
    std::memcpy(out, "0.", 2);
    std::memset(out + 2, '0', offset - 2);
    std::memcpy(out + offset, digits, length);
    return out + offset + length;
  }
  *out++ = digits[0];
  if (length > 1) {
    *out++ = '.';
    std::memcpy(out, digits + 1, length - 1);
    out += length - 1;
  }
  *out++ = 'e';
  return std::to_chars(out, out + 5, kk - 1).ptr;
}

// Strings are scanned and copied a block of 16 bytes at a time.
constexpr size_t kBlock = 16;

// Copies the kBlock bytes at `src` to `dst` and returns which of them rapidjson escapes from
// UTF-8 to UTF-8 (control characters, '"' and '\\'): bit i for byte i.
#if defined(__SSE2__)  // every x86-64 CPU
uint32_t CopyBlock(const char* src, char* dst) {
  const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), block);
  const __m128i quote = _mm_cmpeq_epi8(block, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(block, _mm_set1_epi8('\\'));
  // Below 0x20, unsigned: the byte is its own minimum with 0x1F.
  const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(block, _mm_set1_epi8(0x1F)), block);
  return static_cast<uint32_t>(
      _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)));
}
#else  // the same a byte at a time
uint32_t CopyBlock(const char* src, char* dst) {
  std::memcpy(dst, src, kBlock);
  uint32_t escapes = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const auto c = static_cast<uint8_t>(src[i]);
    escapes |= uint32_t{c < 0x20 || c == '"' || c == '\\'} << i;
  }
  return escapes;
}
#endif

// CopyBlock for the n < kBlock bytes at `src`, reading none past them. Out of line: its array
// would cost every call of its caller a stack guard.
ABSL_ATTRIBUTE_NOINLINE uint32_t CopyShortBlock(const char* src, size_t n, char* dst) {
  char block[kBlock] = {};
  std::memcpy(block, src, n);
  return CopyBlock(block, dst);
}

// rapidjson's escape of each byte CopyBlock flags, padded to a word, and its length: a table,
// since escapes are common (an access log's quotes, a stack trace's newlines and tabs) and a
// switch over them mispredicts.
struct EscapeText {
  char text[7];
  uint8_t size;
};
constexpr std::array<EscapeText, 256> kEscapes = [] {
  std::array<EscapeText, 256> escapes{};
  constexpr char kHex[] = "0123456789ABCDEF";
  for (int c = 0; c < 0x20; ++c) {
    escapes[c] = {{'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]}, 6};
  }
  for (const auto& [c, letter] : {std::pair<char, char>{'"', '"'},
                                  {'\\', '\\'},
                                  {'\b', 'b'},
                                  {'\f', 'f'},
                                  {'\n', 'n'},
                                  {'\r', 'r'},
                                  {'\t', 't'}}) {
    escapes[static_cast<uint8_t>(c)] = {{'\\', letter}, 2};
  }
  return escapes;
}();

}  // namespace

// One document's encoding. Every value is followed by a ',', which closing its object or array
// turns into the closing bracket: the encoder never asks whether a member is the first.
class EventJsonWriter::Encoder {
 public:
  explicit Encoder(EventJsonWriter* writer)
      : writer_(*writer), buffer_(writer->out_), shadowed_(&writer->shadowed_) {}
  // Gives back the room claimed and not written.
  ~Encoder() { buffer_->Pop(static_cast<size_t>(end_ - p_)); }
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  void Document(absl::string_view event, uint64_t index, Metadata metadata);

 private:
  // Makes room for `n` more bytes at p_.
  void Need(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) Grow(n);
  }
  void Grow(size_t n) {
    buffer_->Pop(static_cast<size_t>(end_ - p_));
    const size_t window = std::max(n, kWindow);
    p_ = buffer_->Push(window);  // right after what was written: the document stays contiguous
    end_ = p_ + window;
  }
  void Raw(absl::string_view s) {
    Need(s.size());
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }
  void Char(char c) {
    Need(1);
    *p_++ = c;
  }
  // Ends the object or array being written with `bracket` and a ',' after it. Its opening
  // bracket or a member's ',' is always the last byte written before.
  void Close(char bracket) {
    if (p_[-1] == ',') {
      p_[-1] = bracket;
    } else {
      Char(bracket);
    }
    Char(',');
  }
  // The last ',' written becomes `last`: the end of the document.
  void End(char last) { p_[-1] = last; }

  // `s`, which lies in the event's bytes, quoted and escaped as rapidjson escapes it, then
  // `after`. Inline for what most keys and many values are: not empty, shorter than a block,
  // with more of the event after them, and nothing to escape.
  void Quoted(absl::string_view s, char after) {
    const size_t n = s.size();
    if (n - 1 < kBlock - 1 && readable_end_ - s.data() >= static_cast<ptrdiff_t>(kBlock) &&
        static_cast<size_t>(end_ - p_) >= kBlock + 3) {  // 0 < n < kBlock
      if ((CopyBlock(s.data(), p_ + 1) & ((1u << n) - 1)) == 0) {
        p_[0] = '"';
        p_[n + 1] = '"';
        p_[n + 2] = after;
        p_ += n + 3;
        return;
      }
    }
    QuotedBlocks(s, after);
  }
  // Quoted for any string.
  void QuotedBlocks(absl::string_view s, char after);
  void String(absl::string_view s) { Quoted(s, ','); }
  void Key(absl::string_view key) { Quoted(key, ':'); }
  void Timestamp(absl::string_view body);
  void Double(double d);
  template <typename Format, typename T>
  void Number(Format format, T value) {
    Need(kMaxNumber + 1);
    p_ = format(value, p_);
    *p_++ = ',';
  }
  void Value(absl::string_view body);
  // The entries of `s` as members of the object being written, except those whose names
  // `reserved` lists; those go to shadowed_ for the caller to keep elsewhere.
  void Members(absl::string_view s, absl::Span<const absl::string_view> reserved);

  EventJsonWriter& writer_;
  rapidjson::StringBuffer* const buffer_;
  std::vector<Entry>* const shadowed_;
  char* p_ = nullptr;    // where the next byte goes
  char* end_ = nullptr;  // the end of the room claimed
  // The end of the event's bytes: every string quoted lies in them, so a block read from a
  // string may pass its end up to here.
  const char* readable_end_ = nullptr;
};

void EventJsonWriter::Encoder::QuotedBlocks(absl::string_view s, char after) {
  const char* src = s.data();
  size_t n = s.size();
  Need(n + kBlock + 2);  // the quotes, `after`, and the last block's bytes past the end
  *p_++ = '"';
  while (n > 0) {
    // A short string at the event's end is read alone: nothing past the event may be read.
    uint32_t escapes = n >= kBlock || readable_end_ - src >= static_cast<ptrdiff_t>(kBlock)
                           ? CopyBlock(src, p_)
                           : CopyShortBlock(src, n, p_);
    if (n < kBlock) escapes &= (1u << n) - 1;
    if (escapes == 0) {
      const size_t copied = std::min(n, kBlock);
      p_ += copied;
      src += copied;
      n -= copied;
      continue;
    }
    const size_t plain = __builtin_ctz(escapes);
    p_ += plain;
    // The escape, the rest, its last block's bytes past the end, '"' and `after`.
    Need(sizeof(EscapeText) + (n - plain - 1) + kBlock + 2);
    const EscapeText& escape = kEscapes[static_cast<uint8_t>(src[plain])];
    std::memcpy(p_, &escape, sizeof escape);  // a word, of which `size` bytes count
    p_ += escape.size;
    src += plain + 1;
    n -= plain + 1;
  }
  *p_++ = '"';
  *p_++ = after;
}

// RFC 3339 in UTC with nanoseconds: 2024-05-06T07:08:09.123456789Z. Formatted by hand: it runs
// for every event, and snprintf plus a time-zone lookup cost more than the rest of a small event.
void EventJsonWriter::Encoder::Timestamp(absl::string_view body) {
  const wire::TimestampParts ts(body);
  const bool cached = ts.seconds == writer_.date_time_seconds_;
  if (ts.nanos < 0 || ts.nanos > 999999999 ||
      (!cached && !FormatDateTime(ts.seconds, writer_.date_time_))) {
    // Outside what RFC 3339 can say (protobuf's Timestamp allows years 1 to 9999 only): keep the
    // raw value rather than invent a date.
    Raw(absl::StrCat("\"", ts.seconds, "s+", ts.nanos, "ns\","));
    return;
  }
  writer_.date_time_seconds_ = ts.seconds;
  static constexpr char kPattern[] = "\"0000-00-00T00:00:00.000000000Z\",";
  Need(sizeof kPattern - 1);
  std::memcpy(p_, kPattern, sizeof kPattern - 1);
  std::memcpy(p_ + 1, writer_.date_time_, sizeof writer_.date_time_);
  Digits(ts.nanos, 9, p_ + 30);
  p_ += sizeof kPattern - 1;
}

void EventJsonWriter::Encoder::Double(double d) {
  if (std::isfinite(d)) {
    Number(WriteDouble, d);
  } else {
    Raw("null,");
  }
}

void EventJsonWriter::Encoder::Members(absl::string_view s,
                                       absl::Span<const absl::string_view> reserved) {
  wire::ForEachEntry(s, [&](absl::string_view key, absl::string_view value) {
    for (absl::string_view r : reserved) {
      if (key == r) {
        shadowed_->push_back({key, value});
        return;
      }
    }
    Key(key);
    Value(value);
  });
}

void EventJsonWriter::Encoder::Value(absl::string_view body) {
  const wire::ValueParts v(body);
  switch (v.kind) {
    case kind::kFloat64:
      Double(absl::bit_cast<double>(v.scalar));
      break;
    case kind::kFloat32:
      Double(absl::bit_cast<float>(static_cast<uint32_t>(v.scalar)));
      break;
    case kind::kInt32:
      Number(WriteInteger<int32_t>, static_cast<int32_t>(v.scalar));
      break;
    case kind::kInt64:
      Number(WriteInteger<int64_t>, static_cast<int64_t>(v.scalar));
      break;
    case kind::kUint32:
      Number(WriteInteger<uint32_t>, static_cast<uint32_t>(v.scalar));
      break;
    case kind::kUint64:
      Number(WriteInteger<uint64_t>, v.scalar);
      break;
    case kind::kString:
      String(v.bytes);
      break;
    case kind::kBool:
      Raw(v.scalar != 0 ? "true," : "false,");
      break;
    case kind::kStruct:
      Char('{');
      Members(v.bytes, {});
      Close('}');
      break;
    case kind::kList:
      Char('[');
      wire::ForEachItem(v.bytes, [&](absl::string_view item) { Value(item); });
      Close(']');
      break;
    case kind::kTimestamp:
      Timestamp(v.bytes);
      break;
    default:  // null, or no kind set
      Raw("null,");
      break;
  }
}

void EventJsonWriter::Encoder::Document(absl::string_view event, uint64_t index,
                                        Metadata metadata) {
  const wire::EventParts parts(event);
  readable_end_ = event.data() + event.size();
  shadowed_->clear();
  Char('{');
  absl::string_view top_level[3] = {"@metadata"};
  size_t n = 1;
  if (parts.has_timestamp) top_level[n++] = "@timestamp";
  if (parts.has_data_stream) top_level[n++] = "data_stream";
  Members(parts.fields, absl::MakeConstSpan(top_level, n));
  if (parts.has_timestamp) {
    Raw("\"@timestamp\":");
    Timestamp(parts.timestamp);
  }
  if (parts.has_data_stream) {
    absl::string_view ds[4];  // by field number: type, dataset, namespace
    wire::StringsByNumber(parts.data_stream, ds);
    Raw("\"data_stream\":{\"type\":");
    String(ds[1]);
    Raw("\"dataset\":");
    String(ds[2]);
    Raw("\"namespace\":");
    String(ds[3]);
    Close('}');
  }
  if (metadata == Metadata::kOmit) {
    Close('}');
    End('\n');
    return;
  }
  absl::string_view source[3];  // by field number: input_id, stream_id
  wire::StringsByNumber(parts.source, source);
  Raw("\"@metadata\":{");
  Members(parts.metadata, {"input_id", "stream_id", "index", "shadowed"});
  Raw("\"input_id\":");
  String(source[1]);
  Raw("\"stream_id\":");
  String(source[2]);
  Raw("\"index\":");
  Number(WriteInteger<uint64_t>, index);
  if (!shadowed_->empty()) {
    // Fields and metadata entries named like the keys above, kept rather than dropped.
    Raw("\"shadowed\":{");
    for (const Entry& entry : *shadowed_) {
      Key(entry.key);
      Value(entry.value);
    }
    Close('}');
  }
  Close('}');
  Close('}');
  End('\n');
}

void AppendEventJson(absl::string_view event, uint64_t index, rapidjson::StringBuffer* out) {
  EventJsonWriter(out).Append(event, index);
}

void EventJsonWriter::Append(absl::string_view event, uint64_t index) {
  Encoder(this).Document(event, index, metadata_);
}

}  // namespace shipper
