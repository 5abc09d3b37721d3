#include "tests/load/otlp_shapes.h"

#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;
namespace common = ::opentelemetry::proto::common::v1;
namespace metrics = ::opentelemetry::proto::metrics::v1;
namespace trace = ::opentelemetry::proto::trace::v1;

// 2023-11-14T22:13:20Z, plus a millisecond a record: the times of the trace and metric shapes.
constexpr uint64_t kEpochNanos = 1700000000000000000ULL;
constexpr uint64_t kMilli = 1000000;

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

// service.name "shipper-bench" on a ResourceLogs, ResourceSpans or ResourceMetrics.
template <typename ResourceX>
void SetResource(ResourceX* resource_x) {
  auto* service = resource_x->mutable_resource()->add_attributes();
  service->set_key("service.name");
  service->mutable_value()->set_string_value("shipper-bench");
}

void AddString(google::protobuf::RepeatedPtrField<common::KeyValue>* kvs, absl::string_view key,
               absl::string_view value) {
  common::KeyValue* kv = kvs->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_string_value(std::string(value));
}
void AddInt(google::protobuf::RepeatedPtrField<common::KeyValue>* kvs, absl::string_view key,
            int64_t value) {
  common::KeyValue* kv = kvs->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_int_value(value);
}

// `n` bytes of an id, different for each seq (and for each `salt`).
std::string Id(uint64_t seq, uint64_t salt, int n) {
  std::string id(n, '\0');
  uint64_t x = (seq + 1) * 0x9e3779b97f4a7c15ULL ^ salt;
  for (int i = 0; i < n; ++i) {
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    id[i] = static_cast<char>(x >> 56);
  }
  return id;
}

void MakeLogRecords(EventShape shape, uint64_t first_seq, int records,
                    opentelemetry::proto::logs::v1::ScopeLogs* scope_logs) {
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
}

constexpr const char* kRoutes[] = {"/api/orders/{id}", "/api/cart", "/api/products", "/checkout",
                                   "/healthz"};

void MakeSpan(uint64_t seq, trace::Span* span) {
  const uint64_t start = kEpochNanos + seq * kMilli;
  const char* route = kRoutes[seq % 5];
  span->set_trace_id(Id(seq / 4, 1, 16));  // four spans a trace
  span->set_span_id(Id(seq, 2, 8));
  span->set_parent_span_id(Id(seq / 4, 3, 8));
  span->set_flags(0x101);  // sampled; the parent is remote
  span->set_name(absl::StrCat("GET ", route));
  span->set_kind(trace::Span::SPAN_KIND_SERVER);
  span->set_start_time_unix_nano(start);
  span->set_end_time_unix_nano(start + 1000 + (seq % 997) * 4567);
  auto* attributes = span->mutable_attributes();
  AddString(attributes, "http.request.method", "GET");
  AddString(attributes, "http.route", route);
  AddInt(attributes, "http.response.status_code", seq % 50 == 0 ? 500 : 200);
  AddString(attributes, "url.path", absl::StrCat("/api/orders/", 100000 + seq % 90000));
  AddString(attributes, "url.scheme", "https");
  AddString(attributes, "server.address", "shop.example.com");
  AddInt(attributes, "server.port", 443);
  AddString(attributes, "client.address", absl::StrCat("10.0.", seq % 256, ".", seq % 251));
  AddString(attributes, "user_agent.original",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)");
  common::KeyValue* cache_hit = attributes->Add();
  cache_hit->set_key("shop.cache.hit");
  cache_hit->mutable_value()->set_bool_value(seq % 3 == 0);
  auto* cache = span->add_events();
  cache->set_time_unix_nano(start + 500);
  cache->set_name("cache.lookup");
  AddString(cache->mutable_attributes(), "cache.key", absl::StrCat("order:", seq % 90000));
  auto* query = span->add_events();
  query->set_time_unix_nano(start + 900);
  query->set_name("db.query");
  AddString(query->mutable_attributes(), "db.system", "postgresql");
  common::KeyValue* rows = query->mutable_attributes()->Add();
  rows->set_key("db.rows");
  rows->mutable_value()->set_double_value(static_cast<double>(seq % 40));
  span->mutable_status()->set_code(trace::Status::STATUS_CODE_OK);
}

void MakeGauge(uint64_t seq, metrics::Metric* metric) {
  metric->set_name("system.memory.utilization");
  metric->set_unit("1");
  auto* point = metric->mutable_gauge()->add_data_points();
  point->set_time_unix_nano(kEpochNanos + seq * kMilli);
  point->set_as_double(static_cast<double>(seq % 1000) / 1000);
  AddString(point->mutable_attributes(), "host.name", absl::StrCat("node-", seq % 16));
  AddString(point->mutable_attributes(), "system.memory.state", "used");
  AddInt(point->mutable_attributes(), "system.memory.node", static_cast<int64_t>(seq % 4));
}

// 20 buckets: 19 bounds, 5 ms to 10 s, as the HTTP semantic conventions' default and more.
constexpr double kBounds[] = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1,
                              1.5,   2,    2.5,   3,    4,     5,   6,    7.5, 10};

void MakeHistogram(uint64_t seq, metrics::Metric* metric) {
  metric->set_name("http.server.request.duration");
  metric->set_unit("s");
  auto* histogram = metric->mutable_histogram();
  histogram->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  auto* point = histogram->add_data_points();
  point->set_start_time_unix_nano(kEpochNanos);
  point->set_time_unix_nano(kEpochNanos + seq * kMilli);
  uint64_t count = 0;
  for (int i = 0; i <= static_cast<int>(std::size(kBounds)); ++i) {
    const uint64_t n = (seq + i * 7) % 50;
    point->add_bucket_counts(n);
    count += n;
  }
  for (double bound : kBounds) point->add_explicit_bounds(bound);
  point->set_count(count);
  point->set_sum(static_cast<double>(count) * 0.37);
  point->set_min(0.001);
  point->set_max(12.5);
  AddString(point->mutable_attributes(), "http.route", kRoutes[seq % 5]);
  AddString(point->mutable_attributes(), "http.request.method", "GET");
}

}  // namespace

absl::string_view OtlpShapeName(const OtlpShape& shape) {
  switch (shape.kind) {
    case OtlpShape::Kind::kLogRecord:
      return EventShapeName(shape.log);
    case OtlpShape::Kind::kSpan:
      return "span";
    case OtlpShape::Kind::kGauge:
      return "gauge";
    case OtlpShape::Kind::kHistogram:
      return "histogram";
  }
  return "";
}

absl::StatusOr<OtlpShape> ParseOtlpShape(absl::string_view name) {
  for (OtlpShape::Kind kind :
       {OtlpShape::Kind::kSpan, OtlpShape::Kind::kGauge, OtlpShape::Kind::kHistogram}) {
    if (name == OtlpShapeName(OtlpShape(kind))) return OtlpShape(kind);
  }
  absl::StatusOr<EventShape> log = ParseEventShape(name);
  if (log.ok()) return OtlpShape(*log);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown OTLP shape \"", name, "\": filebeat, tiny, large, span, gauge or histogram"));
}

OtlpSignal ShapeSignal(const OtlpShape& shape) {
  switch (shape.kind) {
    case OtlpShape::Kind::kLogRecord:
      return OtlpSignal::kLogs;
    case OtlpShape::Kind::kSpan:
      return OtlpSignal::kTraces;
    case OtlpShape::Kind::kGauge:
    case OtlpShape::Kind::kHistogram:
      return OtlpSignal::kMetrics;
  }
  return OtlpSignal::kLogs;
}

std::string MakeOtlpRequest(const OtlpShape& shape, uint64_t first_seq, int records) {
  switch (ShapeSignal(shape)) {
    case OtlpSignal::kLogs: {
      opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest request;
      auto* resource_logs = request.add_resource_logs();
      SetResource(resource_logs);
      auto* scope_logs = resource_logs->add_scope_logs();
      scope_logs->mutable_scope()->set_name("shipper.bench");
      MakeLogRecords(shape.log, first_seq, records, scope_logs);
      return request.SerializeAsString();
    }
    case OtlpSignal::kTraces: {
      opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
      auto* resource_spans = request.add_resource_spans();
      SetResource(resource_spans);
      auto* scope_spans = resource_spans->add_scope_spans();
      scope_spans->mutable_scope()->set_name("shipper.bench");
      for (int i = 0; i < records; ++i) MakeSpan(first_seq + i, scope_spans->add_spans());
      return request.SerializeAsString();
    }
    case OtlpSignal::kMetrics: {
      opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
      auto* resource_metrics = request.add_resource_metrics();
      SetResource(resource_metrics);
      auto* scope_metrics = resource_metrics->add_scope_metrics();
      scope_metrics->mutable_scope()->set_name("shipper.bench");
      for (int i = 0; i < records; ++i) {
        if (shape.kind == OtlpShape::Kind::kGauge) {
          MakeGauge(first_seq + i, scope_metrics->add_metrics());
        } else {
          MakeHistogram(first_seq + i, scope_metrics->add_metrics());
        }
      }
      return request.SerializeAsString();
    }
  }
  return "";
}

}  // namespace shipper::load
