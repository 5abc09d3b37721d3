#include "tests/load/otlp_shapes.h"

#include "proto/otlp/logs_service.pb.h"

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;
namespace common = ::opentelemetry::proto::common::v1;

void ToAnyValue(const msg::Value& in, common::AnyValue* out) {
  switch (in.kind_case()) {
    case msg::Value::kFloat64Value:
      out->set_double_value(in.float64_value());
      break;
    case msg::Value::kFloat32Value:
      out->set_double_value(in.float32_value());
      break;
    case msg::Value::kInt32Value:
      out->set_int_value(in.int32_value());
      break;
    case msg::Value::kInt64Value:
      out->set_int_value(in.int64_value());
      break;
    case msg::Value::kUint32Value:
      out->set_int_value(in.uint32_value());
      break;
    case msg::Value::kUint64Value:
      out->set_int_value(static_cast<int64_t>(in.uint64_value()));
      break;
    case msg::Value::kStringValue:
      out->set_string_value(in.string_value());
      break;
    case msg::Value::kBoolValue:
      out->set_bool_value(in.bool_value());
      break;
    case msg::Value::kStructValue:
      for (const auto& [key, value] : in.struct_value().data()) {
        common::KeyValue* kv = out->mutable_kvlist_value()->add_values();
        kv->set_key(key);
        ToAnyValue(value, kv->mutable_value());
      }
      break;
    case msg::Value::kListValue:
      for (const msg::Value& value : in.list_value().values()) {
        ToAnyValue(value, out->mutable_array_value()->add_values());
      }
      break;
    case msg::Value::kTimestampValue:
      out->set_int_value(in.timestamp_value().seconds() * 1000000000 +
                         in.timestamp_value().nanos());
      break;
    case msg::Value::kNullValue:
    case msg::Value::KIND_NOT_SET:
      break;  // the empty AnyValue
  }
}

}  // namespace

std::string MakeOtlpRequest(EventShape shape, uint64_t first_seq, int records) {
  opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest request;
  auto* resource_logs = request.add_resource_logs();
  auto* service = resource_logs->mutable_resource()->add_attributes();
  service->set_key("service.name");
  service->mutable_value()->set_string_value("shipper-bench");
  auto* scope_logs = resource_logs->add_scope_logs();
  scope_logs->mutable_scope()->set_name("shipper.bench");
  msg::Event event;
  for (int i = 0; i < records; ++i) {
    MakeEvent(shape, first_seq + i, &event);
    auto* record = scope_logs->add_log_records();
    record->set_time_unix_nano(event.timestamp().seconds() * 1000000000ULL +
                               event.timestamp().nanos());
    record->set_severity_number(opentelemetry::proto::logs::v1::SEVERITY_NUMBER_INFO);
    for (const auto& [key, value] : event.fields().data()) {
      if (key == "message" && value.kind_case() == msg::Value::kStringValue) {
        record->mutable_body()->set_string_value(value.string_value());
        continue;
      }
      common::KeyValue* kv = record->add_attributes();
      kv->set_key(key);
      ToAnyValue(value, kv->mutable_value());
    }
  }
  return request.SerializeAsString();
}

}  // namespace shipper::load
