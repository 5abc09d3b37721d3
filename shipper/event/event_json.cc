#include "shipper/event/event_json.h"

#include <array>
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

using Writer = event_json_internal::Writer;
using Entry = event_json_internal::Entry;
namespace kind = wire::value;

void Key(absl::string_view key, Writer& w) { w.Str(key); }

void String(absl::string_view s, Writer& w) { w.Str(s); }

// Writes `n` as exactly `width` decimal digits ending just before `end`.
void Digits(uint64_t n, int width, char* end) {
  for (int i = 0; i < width; ++i, n /= 10) *--end = static_cast<char>('0' + n % 10);
}

// RFC 3339 in UTC with nanoseconds: 2024-05-06T07:08:09.123456789Z. Formatted by hand: it runs
// for every event, and snprintf plus a time-zone lookup cost more than the rest of a small event.
void Timestamp(absl::string_view body, Writer& w) {
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
    w.String(absl::StrCat(seconds, "s+", ts.nanos, "ns").c_str());
    return;
  }
  char buf[] = "0000-00-00T00:00:00.000000000Z";
  Digits(year, 4, buf + 4);
  Digits(month, 2, buf + 7);
  Digits(day, 2, buf + 10);
  Digits(rest / 3600, 2, buf + 13);
  Digits(rest / 60 % 60, 2, buf + 16);
  Digits(rest % 60, 2, buf + 19);
  Digits(ts.nanos, 9, buf + 29);
  w.Str({buf, sizeof buf - 1});
}

void Double(double d, Writer& w) {
  if (std::isfinite(d)) {
    w.Double(d);
  } else {
    w.Null();
  }
}

void Value(absl::string_view body, Writer& w);

// Writes the entries of `s` as members of the object being written, except those whose names
// `reserved` lists; those go to `shadowed` for the caller to keep elsewhere.
void Members(absl::string_view s, absl::Span<const absl::string_view> reserved,
             std::vector<Entry>* shadowed, Writer& w) {
  wire::ForEachEntry(s, [&](absl::string_view key, absl::string_view value) {
    for (absl::string_view r : reserved) {
      if (key == r) {
        shadowed->push_back({key, value});
        return;
      }
    }
    Key(key, w);
    Value(value, w);
  });
}

void Struct(absl::string_view s, Writer& w) {
  w.StartObject();
  wire::ForEachEntry(s, [&](absl::string_view key, absl::string_view value) {
    Key(key, w);
    Value(value, w);
  });
  w.EndObject();
}

void Value(absl::string_view body, Writer& w) {
  const wire::ValueParts v(body);
  switch (v.kind) {
    case kind::kFloat64:
      Double(absl::bit_cast<double>(v.scalar), w);
      break;
    case kind::kFloat32:
      Double(absl::bit_cast<float>(static_cast<uint32_t>(v.scalar)), w);
      break;
    case kind::kInt32:
      w.Int(static_cast<int32_t>(v.scalar));
      break;
    case kind::kInt64:
      w.Int64(static_cast<int64_t>(v.scalar));
      break;
    case kind::kUint32:
      w.Uint(static_cast<uint32_t>(v.scalar));
      break;
    case kind::kUint64:
      w.Uint64(v.scalar);
      break;
    case kind::kString:
      String(v.bytes, w);
      break;
    case kind::kBool:
      w.Bool(v.scalar != 0);
      break;
    case kind::kStruct:
      Struct(v.bytes, w);
      break;
    case kind::kList:
      w.StartArray();
      wire::ForEachItem(v.bytes, [&](absl::string_view item) { Value(item, w); });
      w.EndArray();
      break;
    case kind::kTimestamp:
      Timestamp(v.bytes, w);
      break;
    default:  // null, or no kind set
      w.Null();
      break;
  }
}

}  // namespace

namespace event_json_internal {

namespace {

// What rapidjson escapes from UTF-8 to UTF-8: control characters, '"' and '\\'.
constexpr std::array<bool, 256> kPlain = [] {
  std::array<bool, 256> plain{};
  for (int c = 0; c < 256; ++c) plain[c] = c >= 0x20 && c != '"' && c != '\\';
  return plain;
}();

// The position of the first byte from `i` on that needs an escape, or n. Eight bytes at a time:
// in each word, flags bytes below 0x20 and bytes equal to '"' or '\\' (the lowest flag is
// exact, which is the one taken).
size_t PlainUntil(const char* p, size_t i, size_t n) {
  constexpr uint64_t kOnes = 0x0101010101010101u, kHigh = 0x8080808080808080u;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    std::memcpy(&x, p + i, 8);
    const uint64_t quote = x ^ (kOnes * '"'), backslash = x ^ (kOnes * '\\');
    const uint64_t flags =
        ((x - kOnes * 0x20) & ~x) | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash);
    if (flags & kHigh) return i + static_cast<size_t>(__builtin_ctzll(flags & kHigh) / 8);
  }
  while (i < n && kPlain[static_cast<uint8_t>(p[i])]) ++i;
  return i;
}

// rapidjson's escape of a byte that kPlain refuses.
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

}  // namespace

void Writer::Str(absl::string_view s) {
  Prefix(rapidjson::kStringType);
  const size_t n = s.size();
  os_->Put('"');
  for (size_t i = 0; i < n;) {
    const size_t plain = PlainUntil(s.data(), i, n);
    if (plain > i) std::memcpy(os_->Push(plain - i), s.data() + i, plain - i);
    if (plain == n) break;
    char escaped[6];
    const size_t length = Escape(static_cast<uint8_t>(s[plain]), escaped);
    std::memcpy(os_->Push(length), escaped, length);
    i = plain + 1;
  }
  os_->Put('"');
  EndValue(true);
}

}  // namespace event_json_internal

void AppendEventJson(absl::string_view event, uint64_t index, rapidjson::StringBuffer* out) {
  EventJsonWriter(out).Append(event, index);
}

void EventJsonWriter::Append(absl::string_view event, uint64_t index) {
  const wire::EventParts parts(event);
  Writer& w = writer_;
  w.Reset(*out_);  // keeps the level stack's memory
  std::vector<Entry>& shadowed = shadowed_;
  shadowed.clear();
  w.StartObject();
  absl::string_view top_level[3] = {"@metadata"};
  size_t n = 1;
  if (parts.has_timestamp) top_level[n++] = "@timestamp";
  if (parts.has_data_stream) top_level[n++] = "data_stream";
  Members(parts.fields, absl::MakeConstSpan(top_level, n), &shadowed, w);
  if (parts.has_timestamp) {
    Key("@timestamp", w);
    Timestamp(parts.timestamp, w);
  }
  if (parts.has_data_stream) {
    absl::string_view ds[4];  // by field number: type, dataset, namespace
    wire::StringsByNumber(parts.data_stream, ds);
    Key("data_stream", w);
    w.StartObject();
    Key("type", w);
    String(ds[1], w);
    Key("dataset", w);
    String(ds[2], w);
    Key("namespace", w);
    String(ds[3], w);
    w.EndObject();
  }
  if (metadata_ == Metadata::kOmit) {
    w.EndObject();
    out_->Put('\n');
    return;
  }
  absl::string_view source[3];  // by field number: input_id, stream_id
  wire::StringsByNumber(parts.source, source);
  Key("@metadata", w);
  w.StartObject();
  Members(parts.metadata, {"input_id", "stream_id", "index", "shadowed"}, &shadowed, w);
  Key("input_id", w);
  String(source[1], w);
  Key("stream_id", w);
  String(source[2], w);
  Key("index", w);
  w.Uint64(index);
  if (!shadowed.empty()) {
    // Fields and metadata entries named like the keys above, kept rather than dropped.
    Key("shadowed", w);
    w.StartObject();
    for (const Entry& entry : shadowed) {
      Key(entry.key, w);
      Value(entry.value, w);
    }
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  out_->Put('\n');
}

}  // namespace shipper
