#include "shipper/event_json.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "rapidjson/writer.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;
using Entry = google::protobuf::Map<std::string, pb::Value>::value_type;

void Key(absl::string_view key, Writer& w) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
}

void String(absl::string_view s, Writer& w) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// RFC 3339 in UTC with nanoseconds: 2024-05-06T07:08:09.123456789Z.
void Timestamp(const google::protobuf::Timestamp& ts, Writer& w) {
  absl::CivilSecond c = absl::ToCivilSecond(absl::FromUnixSeconds(ts.seconds()), absl::UTCTimeZone());
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02d-%02dT%02d:%02d:%02d.%09dZ",
                        static_cast<long long>(c.year()), c.month(), c.day(), c.hour(),
                        c.minute(), c.second(), static_cast<int>(ts.nanos()));
  w.String(buf, static_cast<rapidjson::SizeType>(n));
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

void AppendEventJson(const pb::Event& event, uint64_t index, rapidjson::StringBuffer* out) {
  Writer w(*out);
  std::vector<const Entry*> shadowed;
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
  out->Put('\n');
}

}  // namespace shipper
