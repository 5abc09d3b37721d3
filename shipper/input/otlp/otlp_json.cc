#include "shipper/input/otlp/otlp_json.h"

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/descriptor.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"
#include "proto/rpc/status.pb.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "rapidjson/memorystream.h"
#include "rapidjson/reader.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace shipper::otlp {
namespace {

namespace common = opentelemetry::proto::common::v1;
namespace logs = opentelemetry::proto::logs::v1;
namespace service = opentelemetry::proto::collector::logs::v1;
using Value = rapidjson::Value;

// Protobuf's parser refuses messages nested deeper than this: nothing decoded here is.
constexpr int kMaxDepth = 100;

// Where a value sits in the request, for error messages; lives on the stack of the decoder's
// recursion, each level pointing at its parent.
struct Path {
  const Path* parent = nullptr;
  absl::string_view field;  // empty for an element of a list
  int index = -1;           // the element's index in its list

  Path Field(absl::string_view name) const { return Path{this, name, -1}; }
  Path Element(int i) const { return Path{this, {}, i}; }

  std::string ToString() const {
    std::string out = parent ? parent->ToString() : "";
    if (index >= 0) return absl::StrCat(out, "[", index, "]");
    return out.empty() ? std::string(field) : absl::StrCat(out, ".", field);
  }
};

absl::Status Invalid(const Path& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("OTLP/JSON ", path.ToString(), ": ", what));
}

// A member named `camel` (lowerCamelCase, as OTLP/JSON writes it) or `snake` (the proto's name).
bool Named(const Value& name, absl::string_view camel, absl::string_view snake) {
  const absl::string_view n(name.GetString(), name.GetStringLength());
  return n == camel || n == snake;
}

absl::string_view View(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

absl::Status GetString(const Value& v, const Path& path, std::string* out) {
  if (v.IsNull()) return absl::OkStatus();
  if (!v.IsString()) return Invalid(path, "expected a string");
  out->assign(v.GetString(), v.GetStringLength());
  return absl::OkStatus();
}

absl::Status GetBool(const Value& v, const Path& path, bool* out) {
  if (v.IsNull()) return absl::OkStatus();
  if (!v.IsBool()) return Invalid(path, "expected true or false");
  *out = v.GetBool();
  return absl::OkStatus();
}

// An integer in [min, max], as a JSON number (an integral one also in exponent form: 1e3) or as a
// decimal string, as protobuf's JSON mapping takes 64-bit integers.
template <typename T>
absl::Status GetInteger(const Value& v, const Path& path, T* out) {
  constexpr T kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
  if (v.IsNull()) return absl::OkStatus();
  bool fits = false;
  if (v.IsInt64()) {
    const int64_t i = v.GetInt64();
    fits = std::is_signed_v<T> ? i >= static_cast<int64_t>(kMin) && i <= static_cast<int64_t>(kMax)
                               : i >= 0 && static_cast<uint64_t>(i) <= kMax;
    if (fits) *out = static_cast<T>(i);
  } else if (v.IsUint64()) {  // above INT64_MAX
    fits = v.GetUint64() <= static_cast<uint64_t>(kMax);
    if (fits) *out = static_cast<T>(v.GetUint64());
  } else if (v.IsDouble()) {
    const double d = v.GetDouble();
    // 2^63 and 2^64 are exact doubles; the largest in range are below them.
    fits =
        std::trunc(d) == d && d >= static_cast<double>(kMin) && d < static_cast<double>(kMax) + 1.0;
    if (fits) *out = static_cast<T>(d);
  } else if (v.IsString()) {
    const absl::string_view s = View(v);
    if (std::is_signed_v<T>) {
      int64_t i;
      fits = !s.empty() && s.front() != ' ' && s.back() != ' ' && absl::SimpleAtoi(s, &i) &&
             i >= static_cast<int64_t>(kMin) && i <= static_cast<int64_t>(kMax);
      if (fits) *out = static_cast<T>(i);
    } else {
      uint64_t u;
      fits = !s.empty() && s.front() != ' ' && s.back() != ' ' && absl::SimpleAtoi(s, &u) &&
             u <= static_cast<uint64_t>(kMax);
      if (fits) *out = static_cast<T>(u);
    }
  }
  if (fits) return absl::OkStatus();
  return Invalid(path, absl::StrCat("expected an integer from ", kMin, " to ", kMax,
                                    " (a number or a decimal string)"));
}

absl::Status GetDouble(const Value& v, const Path& path, double* out) {
  if (v.IsNull()) return absl::OkStatus();
  if (v.IsNumber()) {
    *out = v.GetDouble();
    return absl::OkStatus();
  }
  if (v.IsString()) {
    const absl::string_view s = View(v);
    if (s == "NaN") {
      *out = std::numeric_limits<double>::quiet_NaN();
    } else if (s == "Infinity") {
      *out = std::numeric_limits<double>::infinity();
    } else if (s == "-Infinity") {
      *out = -std::numeric_limits<double>::infinity();
    } else if (s.empty() || s.front() == ' ' || s.back() == ' ' || !absl::SimpleAtod(s, out) ||
               !std::isfinite(*out)) {
      return Invalid(path, "expected a number, a numeric string, \"NaN\" or \"±Infinity\"");
    }
    return absl::OkStatus();
  }
  return Invalid(path, "expected a number");
}

absl::Status GetBase64(const Value& v, const Path& path, std::string* out) {
  if (v.IsNull()) return absl::OkStatus();
  if (!v.IsString()) return Invalid(path, "expected a base64 string");
  // Protobuf's JSON mapping takes either alphabet, padded or not.
  if (absl::Base64Unescape(View(v), out) || absl::WebSafeBase64Unescape(View(v), out)) {
    return absl::OkStatus();
  }
  return Invalid(path, "not base64");
}

// A trace or span id: `bytes` bytes as hex digits (either case), or empty.
absl::Status GetHexId(const Value& v, const Path& path, size_t bytes, std::string* out) {
  if (v.IsNull()) return absl::OkStatus();
  const auto wrong = [&] {
    return Invalid(path, absl::StrCat("expected ", 2 * bytes,
                                      " hex digits or \"\" (OTLP/JSON ids are hex, not base64)"));
  };
  if (!v.IsString()) return wrong();
  const absl::string_view s = View(v);
  if (s.empty()) return absl::OkStatus();
  if (s.size() != 2 * bytes) return wrong();
  for (char c : s) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return wrong();
  }
  *out = absl::HexStringToBytes(s);
  return absl::OkStatus();
}

// Every field name of the messages decoded here: lowerCamelCase, then the proto's snake_case.
constexpr std::pair<absl::string_view, absl::string_view> kFieldNames[] = {
    {"resourceLogs", "resource_logs"},
    {"resource", "resource"},
    {"scopeLogs", "scope_logs"},
    {"schemaUrl", "schema_url"},
    {"attributes", "attributes"},
    {"droppedAttributesCount", "dropped_attributes_count"},
    {"scope", "scope"},
    {"logRecords", "log_records"},
    {"name", "name"},
    {"version", "version"},
    {"timeUnixNano", "time_unix_nano"},
    {"observedTimeUnixNano", "observed_time_unix_nano"},
    {"severityNumber", "severity_number"},
    {"severityText", "severity_text"},
    {"body", "body"},
    {"flags", "flags"},
    {"traceId", "trace_id"},
    {"spanId", "span_id"},
    {"eventName", "event_name"},
    {"key", "key"},
    {"value", "value"},
    {"stringValue", "string_value"},
    {"boolValue", "bool_value"},
    {"intValue", "int_value"},
    {"doubleValue", "double_value"},
    {"bytesValue", "bytes_value"},
    {"arrayValue", "array_value"},
    {"kvlistValue", "kvlist_value"},
    {"values", "values"},
};
static_assert(std::size(kFieldNames) <= 32, "one bit each in ForEachMember's mask");

// Iterates over the members of the object `v` (null: none) and calls `member(name, value)` for
// each; INVALID_ARGUMENT when `v` is something else, or names a field twice (in either
// spelling: both lists of {"resourceLogs":[...],"resource_logs":[...]} would otherwise be
// taken, where protobuf's parser refuses the second).
template <typename F>
absl::Status ForEachMember(const Value& v, const Path& path, F&& member) {
  if (v.IsNull()) return absl::OkStatus();
  if (!v.IsObject()) return Invalid(path, "expected an object");
  uint32_t seen = 0;
  for (const auto& m : v.GetObject()) {
    for (size_t i = 0; i < std::size(kFieldNames); ++i) {
      if (!Named(m.name, kFieldNames[i].first, kFieldNames[i].second)) continue;
      if (seen & (uint32_t{1} << i)) {
        return Invalid(path.Field(kFieldNames[i].first),
                       "given twice (as lowerCamelCase or snake_case): give it once");
      }
      seen |= uint32_t{1} << i;
      break;
    }
    absl::Status status = member(m.name, m.value);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// Calls `element(value, path)` for each element of the list `v` (null: none).
template <typename F>
absl::Status ForEachElement(const Value& v, const Path& path, F&& element) {
  if (v.IsNull()) return absl::OkStatus();
  if (!v.IsArray()) return Invalid(path, "expected a list");
  int i = 0;
  for (const Value& e : v.GetArray()) {
    absl::Status status = element(e, path.Element(i++));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// Decodes one request; `depth_` counts the messages open around the one being decoded.
class Decoder {
 public:
  absl::Status Request(const Value& v, service::ExportLogsServiceRequest* out) {
    const Path root{nullptr, "request", -1};
    if (!v.IsObject()) return Invalid(root, "expected an object (ExportLogsServiceRequest)");
    return Message(root, [&] {
      return ForEachMember(v, root, [&](const Value& name, const Value& value) {
        if (!Named(name, "resourceLogs", "resource_logs")) return absl::OkStatus();
        const Path path = root.Field("resourceLogs");
        return ForEachElement(value, path, [&](const Value& e, const Path& p) {
          return ResourceLogs(e, p, out->add_resource_logs());
        });
      });
    });
  }

 private:
  // Runs `decode` one message deeper; INVALID_ARGUMENT beyond kMaxDepth.
  template <typename F>
  absl::Status Message(const Path& path, F&& decode) {
    if (depth_ >= kMaxDepth) {
      return Invalid(path, absl::StrCat("nested deeper than ", kMaxDepth, " messages"));
    }
    ++depth_;
    absl::Status status = decode();
    --depth_;
    return status;
  }

  absl::Status ResourceLogs(const Value& v, const Path& path, logs::ResourceLogs* out) {
    return Message(path, [&] {
      return ForEachMember(v, path, [&](const Value& name, const Value& value) {
        if (Named(name, "resource", "resource")) {
          return Resource(value, path.Field("resource"), out->mutable_resource());
        }
        if (Named(name, "scopeLogs", "scope_logs")) {
          return ForEachElement(value, path.Field("scopeLogs"), [&](const Value& e, const Path& p) {
            return ScopeLogs(e, p, out->add_scope_logs());
          });
        }
        if (Named(name, "schemaUrl", "schema_url")) {
          return GetString(value, path.Field("schemaUrl"), out->mutable_schema_url());
        }
        return absl::OkStatus();
      });
    });
  }

  absl::Status Resource(const Value& v, const Path& path,
                        opentelemetry::proto::resource::v1::Resource* out) {
    return Message(path, [&] {
      return ForEachMember(v, path, [&](const Value& name, const Value& value) {
        if (Named(name, "attributes", "attributes")) {
          return KeyValues(value, path.Field("attributes"), out->mutable_attributes());
        }
        if (Named(name, "droppedAttributesCount", "dropped_attributes_count")) {
          return SetInteger<uint32_t>(value, path.Field("droppedAttributesCount"),
                                      [&](uint32_t n) { out->set_dropped_attributes_count(n); });
        }
        return absl::OkStatus();
      });
    });
  }

  absl::Status ScopeLogs(const Value& v, const Path& path, logs::ScopeLogs* out) {
    return Message(path, [&] {
      return ForEachMember(v, path, [&](const Value& name, const Value& value) {
        if (Named(name, "scope", "scope")) {
          return Scope(value, path.Field("scope"), out->mutable_scope());
        }
        if (Named(name, "logRecords", "log_records")) {
          return ForEachElement(value, path.Field("logRecords"),
                                [&](const Value& e, const Path& p) {
                                  return LogRecord(e, p, out->add_log_records());
                                });
        }
        if (Named(name, "schemaUrl", "schema_url")) {
          return GetString(value, path.Field("schemaUrl"), out->mutable_schema_url());
        }
        return absl::OkStatus();
      });
    });
  }

  absl::Status Scope(const Value& v, const Path& path, common::InstrumentationScope* out) {
    return Message(path, [&] {
      return ForEachMember(v, path, [&](const Value& name, const Value& value) {
        if (Named(name, "name", "name")) {
          return GetString(value, path.Field("name"), out->mutable_name());
        }
        if (Named(name, "version", "version")) {
          return GetString(value, path.Field("version"), out->mutable_version());
        }
        if (Named(name, "attributes", "attributes")) {
          return KeyValues(value, path.Field("attributes"), out->mutable_attributes());
        }
        if (Named(name, "droppedAttributesCount", "dropped_attributes_count")) {
          return SetInteger<uint32_t>(value, path.Field("droppedAttributesCount"),
                                      [&](uint32_t n) { out->set_dropped_attributes_count(n); });
        }
        return absl::OkStatus();
      });
    });
  }

  absl::Status LogRecord(const Value& v, const Path& path, logs::LogRecord* out) {
    return Message(path, [&] {
      return ForEachMember(v, path, [&](const Value& name, const Value& value) {
        if (Named(name, "timeUnixNano", "time_unix_nano")) {
          return SetInteger<uint64_t>(value, path.Field("timeUnixNano"),
                                      [&](uint64_t t) { out->set_time_unix_nano(t); });
        }
        if (Named(name, "observedTimeUnixNano", "observed_time_unix_nano")) {
          return SetInteger<uint64_t>(value, path.Field("observedTimeUnixNano"),
                                      [&](uint64_t t) { out->set_observed_time_unix_nano(t); });
        }
        if (Named(name, "severityNumber", "severity_number")) {
          return Severity(value, path.Field("severityNumber"), out);
        }
        if (Named(name, "severityText", "severity_text")) {
          return GetString(value, path.Field("severityText"), out->mutable_severity_text());
        }
        if (Named(name, "body", "body")) {
          return AnyValue(value, path.Field("body"), out->mutable_body());
        }
        if (Named(name, "attributes", "attributes")) {
          return KeyValues(value, path.Field("attributes"), out->mutable_attributes());
        }
        if (Named(name, "droppedAttributesCount", "dropped_attributes_count")) {
          return SetInteger<uint32_t>(value, path.Field("droppedAttributesCount"),
                                      [&](uint32_t n) { out->set_dropped_attributes_count(n); });
        }
        if (Named(name, "flags", "flags")) {
          return SetInteger<uint32_t>(value, path.Field("flags"),
                                      [&](uint32_t f) { out->set_flags(f); });
        }
        if (Named(name, "traceId", "trace_id")) {
          return GetHexId(value, path.Field("traceId"), 16, out->mutable_trace_id());
        }
        if (Named(name, "spanId", "span_id")) {
          return GetHexId(value, path.Field("spanId"), 8, out->mutable_span_id());
        }
        if (Named(name, "eventName", "event_name")) {
          return GetString(value, path.Field("eventName"), out->mutable_event_name());
        }
        return absl::OkStatus();
      });
    });
  }

  // An integer (an enum's number, as OTLP/JSON writes it), or a SeverityNumber's name.
  static absl::Status Severity(const Value& v, const Path& path, logs::LogRecord* out) {
    logs::SeverityNumber named;
    if (v.IsString() && logs::SeverityNumber_Parse(std::string(View(v)), &named)) {
      out->set_severity_number(named);
      return absl::OkStatus();
    }
    if (v.IsString()) return Invalid(path, "expected an integer or a SeverityNumber name");
    // Proto3 enums are open: any int32 is kept as it came, as from protobuf.
    return SetInteger<int32_t>(
        v, path, [&](int32_t n) { out->set_severity_number(logs::SeverityNumber(n)); });
  }

  // GetInteger into a T, then `set(T)` it unless the value is null.
  template <typename T, typename F>
  static absl::Status SetInteger(const Value& v, const Path& path, F&& set) {
    T n = 0;
    absl::Status status = GetInteger(v, path, &n);
    if (status.ok() && !v.IsNull()) set(n);
    return status;
  }

  absl::Status KeyValues(const Value& v, const Path& path,
                         google::protobuf::RepeatedPtrField<common::KeyValue>* out) {
    return ForEachElement(v, path, [&](const Value& e, const Path& p) {
      common::KeyValue* kv = out->Add();
      return Message(p, [&] {
        return ForEachMember(e, p, [&](const Value& name, const Value& value) {
          if (Named(name, "key", "key")) return GetString(value, p.Field("key"), kv->mutable_key());
          if (Named(name, "value", "value")) {
            return AnyValue(value, p.Field("value"), kv->mutable_value());
          }
          return absl::OkStatus();
        });
      });
    });
  }

  // The one value of an AnyValue; an object without one is the empty value (null).
  absl::Status AnyValue(const Value& v, const Path& path, common::AnyValue* out) {
    return Message(path, [&] {
      return ForEachMember(v, path, [&](const Value& name, const Value& value) {
        if (value.IsNull() || !IsAnyValueMember(name)) return absl::OkStatus();
        if (out->value_case() != common::AnyValue::VALUE_NOT_SET) {
          return Invalid(path, "holds more than one value (an AnyValue is one of them)");
        }
        if (Named(name, "stringValue", "string_value")) {
          return GetString(value, path.Field("stringValue"), out->mutable_string_value());
        }
        if (Named(name, "boolValue", "bool_value")) {
          bool b = false;
          absl::Status status = GetBool(value, path.Field("boolValue"), &b);
          out->set_bool_value(b);
          return status;
        }
        if (Named(name, "intValue", "int_value")) {
          return SetInteger<int64_t>(value, path.Field("intValue"),
                                     [&](int64_t i) { out->set_int_value(i); });
        }
        if (Named(name, "doubleValue", "double_value")) {
          double d = 0;
          absl::Status status = GetDouble(value, path.Field("doubleValue"), &d);
          out->set_double_value(d);
          return status;
        }
        if (Named(name, "bytesValue", "bytes_value")) {
          return GetBase64(value, path.Field("bytesValue"), out->mutable_bytes_value());
        }
        if (Named(name, "arrayValue", "array_value")) {
          const Path p = path.Field("arrayValue");
          common::ArrayValue* array = out->mutable_array_value();
          return Message(p, [&] {
            return ForEachMember(value, p, [&](const Value& n, const Value& values) {
              if (!Named(n, "values", "values")) return absl::OkStatus();
              return ForEachElement(values, p.Field("values"), [&](const Value& e, const Path& ep) {
                return AnyValue(e, ep, array->add_values());
              });
            });
          });
        }
        // kvlistValue, the last of IsAnyValueMember's names.
        const Path p = path.Field("kvlistValue");
        common::KeyValueList* list = out->mutable_kvlist_value();
        return Message(p, [&] {
          return ForEachMember(value, p, [&](const Value& n, const Value& values) {
            if (!Named(n, "values", "values")) return absl::OkStatus();
            return KeyValues(values, p.Field("values"), list->mutable_values());
          });
        });
      });
    });
  }

  static bool IsAnyValueMember(const Value& name) {
    return Named(name, "stringValue", "string_value") || Named(name, "boolValue", "bool_value") ||
           Named(name, "intValue", "int_value") || Named(name, "doubleValue", "double_value") ||
           Named(name, "bytesValue", "bytes_value") || Named(name, "arrayValue", "array_value") ||
           Named(name, "kvlistValue", "kvlist_value");
  }

  int depth_ = 0;
};

// Decodes the requests of traces and metrics by their messages' descriptors, with the same
// readers of values as Decoder's (the same OTLP/JSON rules): lowerCamelCase or proto names,
// unknown names ignored, a field twice refused, ids (bytes fields named trace_id, span_id,
// parent_span_id) as hex, other bytes as base64, enums as integers or names, 64-bit integers
// as numbers or strings, doubles also as "NaN" and "±Infinity".
class ReflectiveDecoder {
 public:
  absl::Status Request(const Value& v, google::protobuf::Message* out) {
    const Path root{nullptr, "request", -1};
    if (!v.IsObject()) {
      return Invalid(root, absl::StrCat("expected an object (", out->GetDescriptor()->name(), ")"));
    }
    return Message(v, root, out);
  }

 private:
  using FieldDescriptor = google::protobuf::FieldDescriptor;

  absl::Status Message(const Value& v, const Path& path, google::protobuf::Message* out) {
    if (v.IsNull()) return absl::OkStatus();
    if (!v.IsObject()) return Invalid(path, "expected an object");
    if (depth_ >= kMaxDepth) {
      return Invalid(path, absl::StrCat("nested deeper than ", kMaxDepth, " messages"));
    }
    ++depth_;
    const google::protobuf::Descriptor* descriptor = out->GetDescriptor();
    uint64_t seen = 0;  // by field number: every one of these messages' is below 64
    absl::Status status;
    for (const auto& m : v.GetObject()) {
      const std::string name(m.name.GetString(), m.name.GetStringLength());
      const FieldDescriptor* field = descriptor->FindFieldByName(name);
      if (field == nullptr) field = descriptor->FindFieldByCamelcaseName(name);
      if (field == nullptr) continue;  // unknown: ignored
      const Path at = path.Field(field->json_name());
      if (field->number() < 64) {
        const uint64_t bit = uint64_t{1} << field->number();
        if (seen & bit) {
          status = Invalid(at, "given twice (as lowerCamelCase or snake_case): give it once");
          break;
        }
        seen |= bit;
      }
      status = field->is_repeated() ? ForEachElement(m.value, at,
                                                     [&](const Value& e, const Path& p) {
                                                       return Field(e, p, out, field);
                                                     })
                                    : Field(m.value, at, out, field);
      if (!status.ok()) break;
    }
    --depth_;
    return status;
  }

  // One value of `field` (one element, when it is repeated) into `out`.
  absl::Status Field(const Value& v, const Path& path, google::protobuf::Message* out,
                     const FieldDescriptor* field) {
    const google::protobuf::Reflection* r = out->GetReflection();
    const bool repeated = field->is_repeated();
    // null is the default value: a singular field stays unset (a oneof member too, as protobuf's
    // parser leaves it).
    if (v.IsNull() && !repeated) return absl::OkStatus();
    absl::Status status;
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        google::protobuf::Message* message =
            repeated ? r->AddMessage(out, field) : r->MutableMessage(out, field);
        return Message(v, path, message);
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string bytes;
        if (field->type() == FieldDescriptor::TYPE_STRING) {
          status = GetString(v, path, &bytes);
        } else if (absl::EndsWith(field->name(), "trace_id")) {
          status = GetHexId(v, path, 16, &bytes);
        } else if (absl::EndsWith(field->name(), "span_id")) {
          status = GetHexId(v, path, 8, &bytes);
        } else {
          status = GetBase64(v, path, &bytes);
        }
        if (!status.ok()) return status;
        repeated ? r->AddString(out, field, std::move(bytes))
                 : r->SetString(out, field, std::move(bytes));
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        bool b = false;
        if (status = GetBool(v, path, &b); !status.ok()) return status;
        repeated ? r->AddBool(out, field, b) : r->SetBool(out, field, b);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        double d = 0;
        if (status = GetDouble(v, path, &d); !status.ok()) return status;
        repeated ? r->AddDouble(out, field, d) : r->SetDouble(out, field, d);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_INT32: {
        int32_t i = 0;
        if (status = GetInteger(v, path, &i); !status.ok()) return status;
        repeated ? r->AddInt32(out, field, i) : r->SetInt32(out, field, i);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        int64_t i = 0;
        if (status = GetInteger(v, path, &i); !status.ok()) return status;
        repeated ? r->AddInt64(out, field, i) : r->SetInt64(out, field, i);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        uint32_t u = 0;
        if (status = GetInteger(v, path, &u); !status.ok()) return status;
        repeated ? r->AddUInt32(out, field, u) : r->SetUInt32(out, field, u);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        uint64_t u = 0;
        if (status = GetInteger(v, path, &u); !status.ok()) return status;
        repeated ? r->AddUInt64(out, field, u) : r->SetUInt64(out, field, u);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        int number = 0;
        if (v.IsString()) {
          const google::protobuf::EnumValueDescriptor* named =
              field->enum_type()->FindValueByName(std::string(View(v)));
          if (named == nullptr) {
            return Invalid(path, absl::StrCat("expected an integer or a name of ",
                                              field->enum_type()->name()));
          }
          number = named->number();
        } else if (status = GetInteger(v, path, &number); !status.ok()) {
          return status;
        }
        repeated ? r->AddEnumValue(out, field, number) : r->SetEnumValue(out, field, number);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_FLOAT:
        break;
    }
    return Invalid(path, "a field of a type OTLP does not use");
  }

  int depth_ = 0;
};

// Builds the document from a reader's events, reading each number from its text: integers
// exactly into int64 or uint64, others with absl::SimpleAtod (correctly rounded). RapidJSON
// 1.1's own full-precision parse calls clz(0), undefined, on a zero with a long mantissa
// (0.000...0, found by tests/fuzz/otlp_json), and its normal precision is off by some ULPs.
struct NumberReader {
  rapidjson::Document& document;

  bool RawNumber(const char* text, rapidjson::SizeType length, bool) {
    const absl::string_view number(text, length);
    if (number.find_first_of(".eE") == absl::string_view::npos) {
      int64_t i;
      if (absl::SimpleAtoi(number, &i)) return document.Int64(i);
      uint64_t u;
      if (absl::SimpleAtoi(number, &u)) return document.Uint64(u);
    }
    double d;
    return absl::SimpleAtod(number, &d) && std::isfinite(d) && document.Double(d);
  }
  bool Null() { return document.Null(); }
  bool Bool(bool b) { return document.Bool(b); }
  bool Int(int i) { return document.Int(i); }
  bool Uint(unsigned u) { return document.Uint(u); }
  bool Int64(int64_t i) { return document.Int64(i); }
  bool Uint64(uint64_t u) { return document.Uint64(u); }
  bool Double(double d) { return document.Double(d); }
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    return document.String(s, n, copy);
  }
  bool StartObject() { return document.StartObject(); }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) { return document.Key(s, n, copy); }
  bool EndObject(rapidjson::SizeType n) { return document.EndObject(n); }
  bool StartArray() { return document.StartArray(); }
  bool EndArray(rapidjson::SizeType n) { return document.EndArray(n); }
};

// What decoding one request builds, counted by reading it once with nothing built (see
// JsonDecodingCost), and the limits that refuse a request before anything is built for it.
class CostCounter : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, CostCounter> {
 public:
  // Upper bounds per JSON value of what JsonToProtobufRequest holds for it at once: RapidJSON's
  // document (a 16-byte value, 16 more for a member's name, the same again on its parse stack)
  // and the arena's message graph (a message is at most about 200 bytes, a LogRecord 112; a
  // repeated field's slot 8, doubled as it grows; a std::string 32). Strings are copied into
  // both, each with its terminator or its heap block's header.
  static constexpr size_t kPerContainer = 64 + 256;
  static constexpr size_t kPerScalar = 64 + 48;
  static constexpr size_t kPerStringByte = 2;
  static constexpr size_t kPerKey = 32;
  // RapidJSON's pool chunks and the arena's blocks, partly used.
  static constexpr size_t kFixed = 256 << 10;
  // JSON nesting beyond what the decoder takes (kMaxDepth messages, each an object in a list).
  static constexpr size_t kMaxJsonDepth = 2 * kMaxDepth + 8;

  CostCounter(OtlpSignal signal, size_t max_records)
      : signal_(signal),
        records_depth_(signal == OtlpSignal::kMetrics ? 9 : 6),
        levels_(signal == OtlpSignal::kMetrics ? 5 : 3),
        max_records_(max_records) {}

  bool Default() { return Scalar(); }
  bool RawNumber(const char*, rapidjson::SizeType, bool) { return Scalar(); }
  bool String(const char*, rapidjson::SizeType n, bool) {
    bytes_ += kPerScalar + kPerStringByte * (n + 1);
    return Element();
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    bytes_ += kPerKey + n + 1;
    // `s` lives only during the call: what matters of it is kept.
    const absl::string_view key(s, n);
    for (size_t level = 0; level < levels_; ++level) {
      if (depth_ == kKeyDepths[level]) on_path_[level] = Leads(level, key);
    }
    return true;
  }
  bool StartObject() { return Open(); }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool StartArray() { return Open(); }
  bool EndArray(rapidjson::SizeType) { return Close(); }

  size_t bytes() const { return bytes_ + kFixed; }
  size_t records() const { return records_; }
  // Why the reading stopped when a handler returned false: too deep, or too many records.
  const absl::Status& stopped() const { return stopped_; }

 private:
  // The depths of the objects whose keys lead to the records: request.resourceLogs[i]
  // .scopeLogs[j].logRecords (and .resourceSpans[i].scopeSpans[j].spans) puts the records' list
  // at depth 6, request.resourceMetrics[i].scopeMetrics[j].metrics[k].gauge.dataPoints (or
  // .sum, ...) at depth 9.
  static constexpr size_t kKeyDepths[] = {1, 3, 5, 7, 8};

  // Whether `key`, read at kKeyDepths[level], names the next step to the records.
  bool Leads(size_t level, absl::string_view key) const {
    const auto is = [&](absl::string_view camel, absl::string_view snake) {
      return key == camel || key == snake;
    };
    switch (signal_) {
      case OtlpSignal::kLogs:
        return level == 0   ? is("resourceLogs", "resource_logs")
               : level == 1 ? is("scopeLogs", "scope_logs")
                            : is("logRecords", "log_records");
      case OtlpSignal::kTraces:
        return level == 0   ? is("resourceSpans", "resource_spans")
               : level == 1 ? is("scopeSpans", "scope_spans")
                            : is("spans", "spans");
      case OtlpSignal::kMetrics:
        break;
    }
    switch (level) {
      case 0:
        return is("resourceMetrics", "resource_metrics");
      case 1:
        return is("scopeMetrics", "scope_metrics");
      case 2:
        return is("metrics", "metrics");
      case 3:
        return is("gauge", "gauge") || is("sum", "sum") || is("histogram", "histogram") ||
               is("exponentialHistogram", "exponential_histogram") || is("summary", "summary");
    }
    return is("dataPoints", "data_points");
  }

  bool Scalar() {
    bytes_ += kPerScalar;
    return Element();
  }
  bool Open() {
    bytes_ += kPerContainer;
    if (!Element()) return false;
    if (++depth_ > kMaxJsonDepth) {
      stopped_ = absl::InvalidArgumentError(
          absl::StrCat("OTLP/JSON: nested deeper than ", kMaxDepth, " messages"));
      return false;
    }
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }
  // A value inside the current container: a record when that is a request's records list.
  bool Element() {
    if (depth_ != records_depth_ || !IsRecordsList()) return true;
    if (++records_ <= max_records_) return true;
    stopped_ = absl::ResourceExhaustedError(absl::StrCat("the request holds more than ",
                                                         max_records_, " ", SignalRecords(signal_),
                                                         ": send fewer per export"));
    return false;
  }
  // Whether the container open at records_depth_ is the records' list (each key on the way to
  // it, in either spelling).
  bool IsRecordsList() const {
    for (size_t level = 0; level < levels_; ++level) {
      if (!on_path_[level]) return false;
    }
    return true;
  }

  const OtlpSignal signal_;
  const size_t records_depth_;
  const size_t levels_;  // of kKeyDepths used
  const size_t max_records_;
  size_t bytes_ = 0;
  size_t records_ = 0;
  size_t depth_ = 0;
  // Whether the key last read in the object open at each of kKeyDepths names the step that
  // leads to the records there.
  bool on_path_[std::size(kKeyDepths)] = {};
  absl::Status stopped_;
};

// Writes `s` as a JSON string.
void WriteString(rapidjson::Writer<rapidjson::StringBuffer>* writer, absl::string_view s) {
  writer->String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

}  // namespace

absl::StatusOr<JsonCost> JsonDecodingCost(absl::string_view json, size_t max_records,
                                          OtlpSignal signal) {
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag |
                              rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseNumbersAsStringsFlag;
  CostCounter counter(signal, max_records);
  rapidjson::MemoryStream stream(json.data(), json.size());
  const rapidjson::ParseResult parsed = rapidjson::Reader().Parse<kFlags>(stream, counter);
  if (!counter.stopped().ok()) return counter.stopped();
  if (parsed.IsError()) {
    return absl::InvalidArgumentError(absl::StrCat("OTLP/JSON: not JSON at byte ", parsed.Offset(),
                                                   ": ",
                                                   rapidjson::GetParseError_En(parsed.Code())));
  }
  return JsonCost{counter.bytes() + json.size(), counter.records()};
}

absl::Status JsonToProtobufRequest(absl::string_view json, std::string* protobuf,
                                   OtlpSignal signal) {
  // Iterative: a deeply nested document cannot exhaust the stack while it is parsed. Numbers
  // come as their text and are read by NumberReader (see there).
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag |
                              rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseNumbersAsStringsFlag;
  rapidjson::Document document;
  rapidjson::MemoryStream stream(json.data(), json.size());
  rapidjson::ParseResult parsed;
  auto parse = [&](rapidjson::Document& into) {
    NumberReader handler{into};
    parsed = rapidjson::Reader().Parse<kFlags>(stream, handler);
    return !parsed.IsError();
  };
  document.Populate(parse);
  if (parsed.IsError()) {
    return absl::InvalidArgumentError(absl::StrCat("OTLP/JSON: not JSON at byte ", parsed.Offset(),
                                                   ": ",
                                                   rapidjson::GetParseError_En(parsed.Code())));
  }
  google::protobuf::Arena arena;
  google::protobuf::Message* request = nullptr;
  absl::Status status;
  switch (signal) {
    case OtlpSignal::kLogs: {
      auto* logs =
          google::protobuf::Arena::CreateMessage<service::ExportLogsServiceRequest>(&arena);
      status = Decoder().Request(document, logs);
      request = logs;
      break;
    }
    case OtlpSignal::kTraces:
      request = google::protobuf::Arena::CreateMessage<
          opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest>(&arena);
      status = ReflectiveDecoder().Request(document, request);
      break;
    case OtlpSignal::kMetrics:
      request = google::protobuf::Arena::CreateMessage<
          opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest>(&arena);
      status = ReflectiveDecoder().Request(document, request);
      break;
  }
  if (!status.ok()) return status;
  request->AppendToString(protobuf);
  return absl::OkStatus();
}

std::string ResponseToJson(const google::protobuf::Message& response) {
  // Every Export*ServiceResponse: partial_success (1) {rejected_* (1), error_message (2)}.
  const google::protobuf::Reflection* r = response.GetReflection();
  const google::protobuf::FieldDescriptor* partial_field =
      response.GetDescriptor()->FindFieldByNumber(1);
  if (!r->HasField(response, partial_field)) return "{}";
  const google::protobuf::Message& partial = r->GetMessage(response, partial_field);
  const google::protobuf::FieldDescriptor* rejected = partial.GetDescriptor()->FindFieldByNumber(1);
  const google::protobuf::FieldDescriptor* message = partial.GetDescriptor()->FindFieldByNumber(2);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("partialSuccess");
  writer.StartObject();
  WriteString(&writer, rejected->json_name());
  WriteString(&writer, absl::StrCat(partial.GetReflection()->GetInt64(partial, rejected)));
  writer.Key("errorMessage");
  WriteString(&writer, partial.GetReflection()->GetString(partial, message));
  writer.EndObject();
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string StatusBody(const absl::Status& status, bool json) {
  if (!json) {
    google::rpc::Status body;
    body.set_code(static_cast<int>(status.code()));
    body.set_message(std::string(status.message()));
    return body.SerializeAsString();
  }
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("code");
  writer.Int(static_cast<int>(status.code()));
  writer.Key("message");
  WriteString(&writer, status.message());
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace shipper::otlp
