#include "shipper/event/event_json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shipper/event/wire_event.h"

namespace shipper {
namespace {

using Entry = EventJsonWriter::Entry;
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

// What rapidjson escapes from UTF-8 to UTF-8: control characters, '"' and '\\'.
constexpr std::array<bool, 256> kPlain = [] {
  std::array<bool, 256> plain{};
  for (int c = 0; c < 256; ++c) plain[c] = c >= 0x20 && c != '"' && c != '\\';
  return plain;
}();

// The high bit of each byte of `x` that needs an escape (below 0x20, '"' or '\\'), and maybe of
// bytes after it: a borrow can flag the bytes above a flagged one, so only the lowest flag is
// exact, and a word with no byte to escape has no flag.
uint64_t EscapeFlags(uint64_t x) {
  constexpr uint64_t kOnes = 0x0101010101010101u, kHigh = 0x8080808080808080u;
  const uint64_t quote = x ^ (kOnes * '"'), backslash = x ^ (kOnes * '\\');
  return (((x - kOnes * 0x20) & ~x) | ((quote - kOnes) & ~quote) |
          ((backslash - kOnes) & ~backslash)) &
         kHigh;
}
uint64_t EscapeFlags(const char* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return EscapeFlags(x);
}

// The n < 8 bytes at `p` as a word, the bytes above them 'a' (plain). Reads only those bytes.
uint64_t ShortWord(const char* p, size_t n) {
  uint64_t x = 0;
  if (n >= 4) {  // two overlapping four-byte loads
    uint32_t low, high;
    std::memcpy(&low, p, 4);
    std::memcpy(&high, p + n - 4, 4);
    x = low | uint64_t{high} << (8 * (n - 4));
  } else if (n > 0) {  // the first, middle and last byte: all of them
    const auto byte = [p](size_t i) { return uint64_t{static_cast<uint8_t>(p[i])}; };
    x = byte(0) | byte(n / 2) << (8 * (n / 2)) | byte(n - 1) << (8 * (n - 1));
  }
  return x | (0x6161616161616161u << (8 * n));
}

// Copies the bytes of `src` (n of them) to `dst` up to the first that needs an escape, a word at a
// time, and returns that byte's position (n if none). May write anything up to dst + max(n, 8).
size_t CopyPlain(const char* src, size_t n, char* dst) {
  if (n < 8) {
    const uint64_t x = ShortWord(src, n);
    std::memcpy(dst, &x, 8);
    const uint64_t flags = EscapeFlags(x);  // the plain bytes above n start no borrow
    return flags ? __builtin_ctzll(flags) / 8 : n;
  }
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::memcpy(dst + i, src + i, 8);
    if (const uint64_t flags = EscapeFlags(src + i)) return i + __builtin_ctzll(flags) / 8;
  }
  if (i == n) return n;
  // The last eight overlap bytes just found plain, among which no flag falls.
  std::memcpy(dst + n - 8, src + n - 8, 8);
  const uint64_t flags = EscapeFlags(src + n - 8);
  return flags ? n - 8 + __builtin_ctzll(flags) / 8 : n;
}

// The position of the first byte from `i` on that needs an escape, or n. Eight bytes at a time;
// the last eight overlap bytes just found plain, among which no flag falls.
size_t PlainUntil(const char* p, size_t i, size_t n) {
  if (n - i < 8) {
    while (i < n && kPlain[static_cast<uint8_t>(p[i])]) ++i;
    return i;
  }
  for (; i + 8 <= n; i += 8) {
    if (const uint64_t flags = EscapeFlags(p + i)) return i + __builtin_ctzll(flags) / 8;
  }
  if (i == n) return n;
  const uint64_t flags = EscapeFlags(p + n - 8);
  return flags ? n - 8 + __builtin_ctzll(flags) / 8 : n;
}

// rapidjson's escape of a byte that kPlain refuses, written at `out` (6 bytes at most).
size_t Escape(uint8_t c, char* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out[0] = '\\';
  switch (c) {
    case '"':
      out[1] = '"';
      return 2;
    case '\\':
      out[1] = '\\';
      return 2;
    case '\b':
      out[1] = 'b';
      return 2;
    case '\f':
      out[1] = 'f';
      return 2;
    case '\n':
      out[1] = 'n';
      return 2;
    case '\r':
      out[1] = 'r';
      return 2;
    case '\t':
      out[1] = 't';
      return 2;
  }
  std::memcpy(out + 1, "u00", 3);
  out[4] = kHex[c >> 4];
  out[5] = kHex[c & 15];
  return 6;
}

// Writes `n` as exactly `width` decimal digits ending just before `end`.
void Digits(uint64_t n, int width, char* end) {
  for (int i = 0; i < width; ++i, n /= 10) *--end = static_cast<char>('0' + n % 10);
}

// One document's encoding. Every value is followed by a ',', which closing its object or array
// turns into the closing bracket: the encoder never asks whether a member is the first.
class Encoder {
 public:
  Encoder(rapidjson::StringBuffer* buffer, std::vector<Entry>* shadowed)
      : buffer_(buffer), shadowed_(shadowed) {}
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

  // `s` quoted and escaped as rapidjson escapes it, then `after`.
  void Quoted(absl::string_view s, char after);
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

  rapidjson::StringBuffer* const buffer_;
  std::vector<Entry>* const shadowed_;
  char* p_ = nullptr;    // where the next byte goes
  char* end_ = nullptr;  // the end of the room claimed
};

void Encoder::Quoted(absl::string_view s, char after) {
  const char* data = s.data();
  const size_t n = s.size();
  Need(n + 10);  // the quotes, `after`, and CopyPlain's words past the end
  *p_++ = '"';
  size_t plain = CopyPlain(data, n, p_);
  p_ += plain;
  while (plain < n) {               // rare: the rest, escape by escape
    Need(6 + (n - plain - 1) + 2);  // the escape, the rest, '"' and `after`
    p_ += Escape(static_cast<uint8_t>(data[plain]), p_);
    const size_t next = PlainUntil(data, plain + 1, n);
    if (next > plain + 1) {  // (memcpy may not take an empty string's null data)
      std::memcpy(p_, data + plain + 1, next - plain - 1);
      p_ += next - plain - 1;
    }
    plain = next;
  }
  *p_++ = '"';
  *p_++ = after;
}

// RFC 3339 in UTC with nanoseconds: 2024-05-06T07:08:09.123456789Z. Formatted by hand: it runs
// for every event, and snprintf plus a time-zone lookup cost more than the rest of a small event.
void Encoder::Timestamp(absl::string_view body) {
  const wire::TimestampParts ts(body);
  // Days since 1970-01-01 to a civil date: Howard Hinnant's days_from_civil, inverted.
  const int64_t seconds = ts.seconds;
  int64_t days = seconds / 86400;
  int64_t rest = seconds % 86400;
  if (rest < 0) rest += 86400, days -= 1;
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2);
  if (year < 0 || year > 9999 || ts.nanos < 0 || ts.nanos > 999999999) {
    // Outside what RFC 3339 can say (protobuf's Timestamp allows years 1 to 9999 only): keep the
    // raw value rather than invent a date.
    String(absl::StrCat(seconds, "s+", ts.nanos, "ns"));
    return;
  }
  static constexpr char kPattern[] = "\"0000-00-00T00:00:00.000000000Z\",";
  Need(sizeof kPattern - 1);
  char* const buf = p_ + 1;  // past the quote
  std::memcpy(p_, kPattern, sizeof kPattern - 1);
  Digits(year, 4, buf + 4);
  Digits(month, 2, buf + 7);
  Digits(day, 2, buf + 10);
  Digits(rest / 3600, 2, buf + 13);
  Digits(rest / 60 % 60, 2, buf + 16);
  Digits(rest % 60, 2, buf + 19);
  Digits(ts.nanos, 9, buf + 29);
  p_ += sizeof kPattern - 1;
}

void Encoder::Double(double d) {
  if (std::isfinite(d)) {
    Number(WriteDouble, d);
  } else {
    Raw("null,");
  }
}

void Encoder::Members(absl::string_view s, absl::Span<const absl::string_view> reserved) {
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

void Encoder::Value(absl::string_view body) {
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

void Encoder::Document(absl::string_view event, uint64_t index, Metadata metadata) {
  const wire::EventParts parts(event);
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

}  // namespace

void AppendEventJson(absl::string_view event, uint64_t index, rapidjson::StringBuffer* out) {
  EventJsonWriter(out).Append(event, index);
}

void EventJsonWriter::Append(absl::string_view event, uint64_t index) {
  Encoder(out_, &shadowed_).Document(event, index, metadata_);
}

}  // namespace shipper
