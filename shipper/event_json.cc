#include "shipper/event_json.h"

#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
using Writer = event_json_internal::Writer;
using Entry = google::protobuf::Map<std::string, pb::Value>::value_type;

void Key(absl::string_view key, Writer& w) { w.Str(key); }

void String(absl::string_view s, Writer& w) { w.Str(s); }

// Writes `n` as exactly `width` decimal digits ending just before `end`.
void Digits(uint64_t n, int width, char* end) {
  for (int i = 0; i < width; ++i, n /= 10) *--end = static_cast<char>('0' + n % 10);
}

// RFC 3339 in UTC with nanoseconds: 2024-05-06T07:08:09.123456789Z. Formatted by hand: it runs
// for every event, and snprintf plus a time-zone lookup cost more than the rest of a small event.
void Timestamp(const google::protobuf::Timestamp& ts, Writer& w) {
  // Days since 1970-01-01 to a civil date: Howard Hinnant's days_from_civil, inverted.
  const int64_t seconds = ts.seconds();
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
  if (year < 0 || year > 9999 || ts.nanos() < 0 || ts.nanos() > 999999999) {
    // Outside what RFC 3339 can say (protobuf's Timestamp allows years 1 to 9999 only): keep the
    // raw value rather than invent a date.
    w.String(absl::StrCat(seconds, "s+", ts.nanos(), "ns").c_str());
    return;
  }
  char buf[] = "0000-00-00T00:00:00.000000000Z";
  Digits(year, 4, buf + 4);
  Digits(month, 2, buf + 7);
  Digits(day, 2, buf + 10);
  Digits(rest / 3600, 2, buf + 13);
  Digits(rest / 60 % 60, 2, buf + 16);
  Digits(rest % 60, 2, buf + 19);
  Digits(ts.nanos(), 9, buf + 29);
  w.Str({buf, sizeof buf - 1});
}

void Double(double d, Writer& w) {
  if (std::isfinite(d)) {
    w.Double(d);
  } else {
    w.Null();
  }
}

void Value(const pb::Value& v, Writer& w);

// Writes the entries of `s` as members of the object being written, except those whose names
// `reserved` lists; those go to `shadowed` for the caller to keep elsewhere.
void Members(const pb::Struct& s, absl::Span<const absl::string_view> reserved,
             std::vector<const Entry*>* shadowed, Writer& w) {
  for (const auto& entry : s.data()) {
    bool clash = false;
    for (absl::string_view r : reserved) clash |= entry.first == r;
    if (clash) {
      shadowed->push_back(&entry);
      continue;
    }
    Key(entry.first, w);
    Value(entry.second, w);
  }
}

void Struct(const pb::Struct& s, Writer& w) {
  w.StartObject();
  for (const auto& [key, value] : s.data()) {
    Key(key, w);
    Value(value, w);
  }
  w.EndObject();
}

void Value(const pb::Value& v, Writer& w) {
  switch (v.kind_case()) {
    case pb::Value::kNullValue:
    case pb::Value::KIND_NOT_SET:
      w.Null();
      break;
    case pb::Value::kFloat64Value:
      Double(v.float64_value(), w);
      break;
    case pb::Value::kFloat32Value:
      Double(v.float32_value(), w);
      break;
    case pb::Value::kInt32Value:
      w.Int(v.int32_value());
      break;
    case pb::Value::kInt64Value:
      w.Int64(v.int64_value());
      break;
    case pb::Value::kUint32Value:
      w.Uint(v.uint32_value());
      break;
    case pb::Value::kUint64Value:
      w.Uint64(v.uint64_value());
      break;
    case pb::Value::kStringValue:
      String(v.string_value(), w);
      break;
    case pb::Value::kBoolValue:
      w.Bool(v.bool_value());
      break;
    case pb::Value::kStructValue:
      Struct(v.struct_value(), w);
      break;
    case pb::Value::kListValue:
      w.StartArray();
      for (const pb::Value& item : v.list_value().values()) Value(item, w);
      w.EndArray();
      break;
    case pb::Value::kTimestampValue:
      Timestamp(v.timestamp_value(), w);
      break;
  }
}

}  // namespace

namespace event_json_internal {

void Writer::Str(absl::string_view s) {
  // What rapidjson escapes from UTF-8 to UTF-8: control characters, '"' and '\\'.
  static constexpr std::array<bool, 256> kPlain = [] {
    std::array<bool, 256> plain{};
    for (int c = 0; c < 256; ++c) plain[c] = c >= 0x20 && c != '"' && c != '\\';
    return plain;
  }();
  for (const char c : s) {
    if (!kPlain[static_cast<unsigned char>(c)]) {
      String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
      return;
    }
  }
  Prefix(rapidjson::kStringType);
  char* out = os_->Push(s.size() + 2);
  out[0] = '"';
  std::memcpy(out + 1, s.data(), s.size());
  out[s.size() + 1] = '"';
  EndValue(true);
}

}  // namespace event_json_internal

void AppendEventJson(const pb::Event& event, uint64_t index, rapidjson::StringBuffer* out) {
  EventJsonWriter(out).Append(event, index);
}

void EventJsonWriter::Append(const pb::Event& event, uint64_t index) {
  Writer& w = writer_;
  w.Reset(*out_);  // keeps the level stack's memory
  std::vector<const Entry*>& shadowed = shadowed_;
  shadowed.clear();
  w.StartObject();
  absl::string_view top_level[3] = {"@metadata"};
  size_t n = 1;
  if (event.has_timestamp()) top_level[n++] = "@timestamp";
  if (event.has_data_stream()) top_level[n++] = "data_stream";
  Members(event.fields(), absl::MakeConstSpan(top_level, n), &shadowed, w);
  if (event.has_timestamp()) {
    Key("@timestamp", w);
    Timestamp(event.timestamp(), w);
  }
  if (event.has_data_stream()) {
    const pb::DataStream& ds = event.data_stream();
    Key("data_stream", w);
    w.StartObject();
    Key("type", w);
    String(ds.type(), w);
    Key("dataset", w);
    String(ds.dataset(), w);
    Key("namespace", w);
    String(ds.namespace_(), w);
    w.EndObject();
  }
  Key("@metadata", w);
  w.StartObject();
  Members(event.metadata(), {"input_id", "stream_id", "index", "shadowed"}, &shadowed, w);
  Key("input_id", w);
  String(event.source().input_id(), w);
  Key("stream_id", w);
  String(event.source().stream_id(), w);
  Key("index", w);
  w.Uint64(index);
  if (!shadowed.empty()) {
    // Fields and metadata entries named like the keys above, kept rather than dropped.
    Key("shadowed", w);
    w.StartObject();
    for (const auto* entry : shadowed) {
      Key(entry->first, w);
      Value(entry->second, w);
    }
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  out_->Put('\n');
}

}  // namespace shipper
