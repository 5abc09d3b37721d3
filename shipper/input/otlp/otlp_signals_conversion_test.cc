// Spans and data points into events, as otlp_signals.h states the mapping. Each test prints the
// JSON document of what it converts, as the file output writes it (the docs show these).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "proto/messages.pb.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/event/event_json.h"
#include "shipper/input/otlp/otlp_conversion.h"
#include "shipper/input/producer/request_validation.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
namespace common = opentelemetry::proto::common::v1;
namespace trace = opentelemetry::proto::trace::v1;
namespace metrics = opentelemetry::proto::metrics::v1;
using TraceRequest = opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using MetricsRequest = opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kArrival = absl::FromUnixNanos(1700000000123456789);
constexpr uint64_t kStart = 1700000000000000000;  // 2023-11-14T22:13:20Z

struct Converted {
  absl::Status status;
  std::vector<pb::Event> events;
  std::vector<std::string> wire;  // each event's bytes as queued
  size_t rejected = 0;
};

Converted Convert(OtlpSignal signal, const std::string& request,
                  size_t max_record_bytes = 1 << 20) {
  OtlpConversion conversion(signal);
  Converted out;
  out.status = conversion.Scan(request, kArrival, max_record_bytes, 1000);
  if (!out.status.ok()) return out;
  out.rejected = conversion.rejected();
  auto buffer = std::make_unique<char[]>(conversion.bytes());
  conversion.Write(buffer.get(), [&](absl::string_view event) {
    out.wire.emplace_back(event);
    pb::Event parsed;
    EXPECT_TRUE(parsed.ParseFromString(std::string(event)));
    out.events.push_back(std::move(parsed));
  });
  EXPECT_EQ(out.events.size(), conversion.records());
  // Canonical, as the Producer API queues its events: its scan leaves every one as it is.
  std::string publish;
  {
    google::protobuf::io::StringOutputStream stream(&publish);
    google::protobuf::io::CodedOutputStream coded(&stream);
    for (const std::string& wire : out.wire) {
      coded.WriteTag(2 << 3 | 2);  // PublishRequest.events
      coded.WriteVarint32(static_cast<uint32_t>(wire.size()));
      coded.WriteString(wire);
    }
  }
  ScannedRequest scanned;
  EXPECT_TRUE(ScanPublishRequest(publish, RequestLimits(), &scanned).ok());
  EXPECT_TRUE(scanned.rewritten.empty()) << "not canonical: the scan rewrote an event";
  return out;
}

Converted Convert(const TraceRequest& request) {
  return Convert(OtlpSignal::kTraces, request.SerializeAsString());
}
Converted Convert(const MetricsRequest& request) {
  return Convert(OtlpSignal::kMetrics, request.SerializeAsString());
}

std::string Json(const std::string& event) {
  rapidjson::StringBuffer buffer;
  EventJsonWriter(&buffer, Metadata::kOmit).Append(event, 1);
  return std::string(buffer.GetString(), buffer.GetSize());
}

const pb::Value& Absent() {
  static const pb::Value* absent = new pb::Value;
  return *absent;
}
const pb::Value& FieldOf(const pb::Event& event, const std::string& key) {
  auto it = event.fields().data().find(key);
  return it == event.fields().data().end() ? Absent() : it->second;
}
const pb::Value& In(const pb::Value& value, const std::string& key) {
  auto it = value.struct_value().data().find(key);
  return it == value.struct_value().data().end() ? Absent() : it->second;
}

void Set(google::protobuf::RepeatedPtrField<common::KeyValue>* list, const std::string& key,
         const std::string& value) {
  common::KeyValue* kv = list->Add();
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}

std::vector<int64_t> Ints(const pb::Value& list) {
  std::vector<int64_t> out;
  for (const pb::Value& v : list.list_value().values()) {
    out.push_back(v.kind_case() == pb::Value::kUint64Value ? static_cast<int64_t>(v.uint64_value())
                                                           : v.int64_value());
  }
  return out;
}
std::vector<double> Doubles(const pb::Value& list) {
  std::vector<double> out;
  for (const pb::Value& v : list.list_value().values()) out.push_back(v.float64_value());
  return out;
}

trace::ResourceSpans* Resource(TraceRequest* request) {
  trace::ResourceSpans* rs = request->add_resource_spans();
  Set(rs->mutable_resource()->mutable_attributes(), "service.name", "checkout");
  return rs;
}

TEST(OtlpSignalsConversionTest, ASpanKeepsEveryField) {
  TraceRequest request;
  trace::ResourceSpans* rs = Resource(&request);
  rs->set_schema_url("https://opentelemetry.io/schemas/1.21.0");
  trace::ScopeSpans* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name("io.example.tracer");
  ss->mutable_scope()->set_version("1.2.3");
  trace::Span* span = ss->add_spans();
  span->set_trace_id(
      std::string("\x0a\xf7\x65\x19\x16\xcd\x43\xdd\x84\x48\xeb\x21\x1c\x80\x31\x9c", 16));
  span->set_span_id(std::string("\xb7\xad\x6b\x71\x69\x20\x33\x31", 8));
  span->set_parent_span_id(std::string("\x00\x00\x00\x00\x00\x00\x00\x01", 8));
  span->set_trace_state("vendor=1");
  span->set_flags(0x301);
  span->set_name("GET /cart");
  span->set_kind(trace::Span::SPAN_KIND_SERVER);
  span->set_start_time_unix_nano(kStart + 123456789);
  span->set_end_time_unix_nano(kStart + 123456789 + 2500000);
  Set(span->mutable_attributes(), "http.request.method", "GET");
  span->set_dropped_attributes_count(1);
  span->set_dropped_events_count(2);
  span->set_dropped_links_count(3);
  trace::Span::Event* event = span->add_events();
  event->set_time_unix_nano(kStart + 200000000);
  event->set_name("exception");
  Set(event->mutable_attributes(), "exception.type", "IOError");
  event->set_dropped_attributes_count(4);
  span->add_events()->set_name("second");
  trace::Span::Link* link = span->add_links();
  link->set_trace_id(std::string(16, '\x11'));
  link->set_span_id(std::string(8, '\x22'));
  link->set_trace_state("k=v");
  link->set_flags(1);
  Set(link->mutable_attributes(), "link.kind", "follows");
  span->mutable_status()->set_code(trace::Status::STATUS_CODE_ERROR);
  span->mutable_status()->set_message("boom");

  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 1);
  const pb::Event& e = c.events[0];
  std::cout << Json(c.wire[0]);
  EXPECT_EQ(e.otel_signal(), pb::OTEL_SIGNAL_SPAN);
  EXPECT_EQ(e.data_stream().type(), "traces");
  EXPECT_EQ(e.data_stream().dataset(), "generic.otel");
  EXPECT_EQ(e.data_stream().namespace_(), "default");
  EXPECT_EQ(e.timestamp().seconds(), 1700000000);
  EXPECT_EQ(e.timestamp().nanos(), 123456789);
  EXPECT_EQ(FieldOf(e, "trace_id").string_value(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(FieldOf(e, "span_id").string_value(), "b7ad6b7169203331");
  EXPECT_EQ(FieldOf(e, "parent_span_id").string_value(), "0000000000000001");
  EXPECT_EQ(FieldOf(e, "trace_state").string_value(), "vendor=1");
  EXPECT_EQ(FieldOf(e, "flags").int64_value(), 0x301);
  EXPECT_EQ(FieldOf(e, "name").string_value(), "GET /cart");
  EXPECT_EQ(FieldOf(e, "kind").string_value(), "Server");
  EXPECT_EQ(FieldOf(e, "duration").uint64_value(), 2500000u);
  EXPECT_EQ(In(FieldOf(e, "attributes"), "http.request.method").string_value(), "GET");
  EXPECT_EQ(FieldOf(e, "dropped_attributes_count").int64_value(), 1);
  EXPECT_EQ(FieldOf(e, "dropped_events_count").int64_value(), 2);
  EXPECT_EQ(FieldOf(e, "dropped_links_count").int64_value(), 3);
  const pb::ListValue& events = FieldOf(e, "events").list_value();
  ASSERT_EQ(events.values_size(), 2);
  EXPECT_EQ(In(events.values(0), "name").string_value(), "exception");
  EXPECT_EQ(In(events.values(0), "timestamp").timestamp_value().nanos(), 200000000);
  EXPECT_EQ(In(In(events.values(0), "attributes"), "exception.type").string_value(), "IOError");
  EXPECT_EQ(In(events.values(0), "dropped_attributes_count").int64_value(), 4);
  EXPECT_EQ(In(events.values(1), "name").string_value(), "second");
  EXPECT_EQ(In(events.values(1), "timestamp").kind_case(), pb::Value::kTimestampValue);
  EXPECT_EQ(In(events.values(1), "attributes").kind_case(), pb::Value::KIND_NOT_SET);
  const pb::ListValue& links = FieldOf(e, "links").list_value();
  ASSERT_EQ(links.values_size(), 1);
  EXPECT_EQ(In(links.values(0), "trace_id").string_value(), std::string(32, '1'));
  EXPECT_EQ(In(links.values(0), "span_id").string_value(), std::string(16, '2'));
  EXPECT_EQ(In(links.values(0), "trace_state").string_value(), "k=v");
  EXPECT_EQ(In(links.values(0), "flags").int64_value(), 1);
  EXPECT_EQ(In(In(links.values(0), "attributes"), "link.kind").string_value(), "follows");
  EXPECT_EQ(In(FieldOf(e, "status"), "code").string_value(), "Error");
  EXPECT_EQ(In(FieldOf(e, "status"), "message").string_value(), "boom");
  const pb::Value& resource = FieldOf(e, "resource");
  EXPECT_EQ(In(In(resource, "attributes"), "service.name").string_value(), "checkout");
  EXPECT_EQ(In(resource, "schema_url").string_value(), "https://opentelemetry.io/schemas/1.21.0");
  EXPECT_EQ(In(FieldOf(e, "scope"), "name").string_value(), "io.example.tracer");
  EXPECT_EQ(In(FieldOf(e, "scope"), "version").string_value(), "1.2.3");

  const std::string json = Json(c.wire[0]);
  EXPECT_THAT(json, HasSubstr("\"@timestamp\":\"2023-11-14T22:13:20.123456789Z\""));
  EXPECT_THAT(json, HasSubstr("\"status\":{\"code\":\"Error\",\"message\":\"boom\"}"));
}

TEST(OtlpSignalsConversionTest, ASpanSetsOnlyWhatIsSetAndKeepsTheEndExactly) {
  TraceRequest request;
  trace::Span* span = request.add_resource_spans()->add_scope_spans()->add_spans();
  span->set_start_time_unix_nano(kStart + 10);
  span->set_end_time_unix_nano(kStart);  // ends before it starts: the duration wraps
  span->set_kind(static_cast<trace::Span::SpanKind>(9));
  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 1);
  const pb::Event& e = c.events[0];
  std::vector<std::string> keys;
  for (const auto& [key, value] : e.fields().data()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  EXPECT_THAT(keys, ElementsAre("duration", "kind", "status"));
  EXPECT_EQ(kStart + 10 + FieldOf(e, "duration").uint64_value(), kStart);
  EXPECT_EQ(FieldOf(e, "kind").int64_value(), 9);
  EXPECT_EQ(In(FieldOf(e, "status"), "code").string_value(), "Unset");
}

TEST(OtlpSignalsConversionTest, DataStreamFromTheSpanThenScopeThenResource) {
  TraceRequest request;
  trace::ResourceSpans* rs = Resource(&request);
  Set(rs->mutable_resource()->mutable_attributes(), "data_stream.namespace", "prod");
  trace::ScopeSpans* ss = rs->add_scope_spans();
  Set(ss->mutable_scope()->mutable_attributes(), "data_stream.dataset", "cart");
  ss->add_spans()->set_name("a");
  Set(ss->add_spans()->mutable_attributes(), "data_stream.dataset", "own");
  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 2);
  EXPECT_EQ(c.events[0].data_stream().type(), "traces");
  EXPECT_EQ(c.events[0].data_stream().dataset(), "cart.otel");
  EXPECT_EQ(c.events[0].data_stream().namespace_(), "prod");
  EXPECT_EQ(c.events[1].data_stream().dataset(), "own.otel");
  EXPECT_EQ(c.events[1].data_stream().namespace_(), "prod");
}

TEST(OtlpSignalsConversionTest, RefusesASpanThatCannotBeCanonicalNamingIt) {
  TraceRequest request;
  trace::ScopeSpans* ss = request.add_resource_spans()->add_scope_spans();
  ss->add_spans()->set_name("fine");
  std::string bytes = request.SerializeAsString();
  // A second span whose name is not UTF-8 (protobuf would not serialize one).
  trace::ScopeSpans bad;
  bad.add_spans()->set_name("\xff");
  TraceRequest second;
  *second.add_resource_spans()->add_scope_spans() = bad;
  Converted c = Convert(OtlpSignal::kTraces, bytes + second.SerializePartialAsString());
  EXPECT_EQ(c.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status.message(), HasSubstr("resource_spans[1].scope_spans[0].spans[0]"));
  EXPECT_THAT(c.status.message(), HasSubstr("not UTF-8"));
}

metrics::Metric* AddMetric(MetricsRequest* request, const std::string& name) {
  metrics::ResourceMetrics* rm = request->resource_metrics_size() > 0
                                     ? request->mutable_resource_metrics(0)
                                     : request->add_resource_metrics();
  metrics::ScopeMetrics* sm =
      rm->scope_metrics_size() > 0 ? rm->mutable_scope_metrics(0) : rm->add_scope_metrics();
  metrics::Metric* m = sm->add_metrics();
  m->set_name(name);
  return m;
}

TEST(OtlpSignalsConversionTest, GaugeAndSumPointsKeepTheirNumbersAndExemplars) {
  MetricsRequest request;
  metrics::Metric* gauge = AddMetric(&request, "system.cpu.utilization");
  gauge->set_unit("1");
  gauge->set_description("CPU in use");
  metrics::NumberDataPoint* g = gauge->mutable_gauge()->add_data_points();
  g->set_time_unix_nano(kStart);
  g->set_as_double(0.25);
  Set(g->mutable_attributes(), "cpu", "0");
  gauge->mutable_gauge()->add_data_points()->set_as_int(-7);
  gauge->mutable_gauge()->add_data_points();  // no value: null

  metrics::Metric* sum = AddMetric(&request, "http.server.requests");
  sum->mutable_sum()->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  sum->mutable_sum()->set_is_monotonic(true);
  common::KeyValue* meta = sum->add_metadata();
  meta->set_key("prometheus.type");
  meta->mutable_value()->set_string_value("counter");
  metrics::NumberDataPoint* s = sum->mutable_sum()->add_data_points();
  s->set_start_time_unix_nano(kStart - 60000000000);
  s->set_time_unix_nano(kStart);
  s->set_as_int(INT64_MAX);
  s->set_flags(1);
  metrics::Exemplar* x = s->add_exemplars();
  x->set_time_unix_nano(kStart - 5);
  x->set_as_double(12.5);
  x->set_trace_id(std::string(16, '\x01'));
  x->set_span_id(std::string(8, '\x02'));
  Set(x->mutable_filtered_attributes(), "user", "u1");

  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 4);
  for (const std::string& wire : c.wire) std::cout << Json(wire);
  const pb::Event& e0 = c.events[0];
  EXPECT_EQ(e0.otel_signal(), pb::OTEL_SIGNAL_DATA_POINT);
  EXPECT_EQ(e0.data_stream().type(), "metrics");
  EXPECT_EQ(e0.data_stream().dataset(), "generic.otel");
  EXPECT_EQ(e0.timestamp().seconds(), 1700000000);
  EXPECT_EQ(In(FieldOf(e0, "metrics"), "system.cpu.utilization").float64_value(), 0.25);
  EXPECT_EQ(FieldOf(e0, "unit").string_value(), "1");
  EXPECT_EQ(In(FieldOf(e0, "attributes"), "cpu").string_value(), "0");
  EXPECT_EQ(In(FieldOf(e0, "metric"), "type").string_value(), "gauge");
  EXPECT_EQ(In(FieldOf(e0, "metric"), "description").string_value(), "CPU in use");
  EXPECT_EQ(In(FieldOf(e0, "metric"), "temporality").kind_case(), pb::Value::KIND_NOT_SET);
  EXPECT_EQ(In(FieldOf(e0, "metric"), "monotonic").kind_case(), pb::Value::KIND_NOT_SET);
  EXPECT_EQ(FieldOf(e0, "start_timestamp").kind_case(), pb::Value::KIND_NOT_SET);
  EXPECT_EQ(In(FieldOf(c.events[1], "metrics"), "system.cpu.utilization").int64_value(), -7);
  EXPECT_EQ(In(FieldOf(c.events[2], "metrics"), "system.cpu.utilization").kind_case(),
            pb::Value::kNullValue);

  const pb::Event& e3 = c.events[3];
  EXPECT_EQ(In(FieldOf(e3, "metrics"), "http.server.requests").int64_value(), INT64_MAX);
  EXPECT_EQ(FieldOf(e3, "start_timestamp").timestamp_value().seconds(), 1700000000 - 60);
  const pb::Value& metric = FieldOf(e3, "metric");
  EXPECT_EQ(In(metric, "type").string_value(), "sum");
  EXPECT_EQ(In(metric, "temporality").string_value(), "cumulative");
  EXPECT_TRUE(In(metric, "monotonic").bool_value());
  EXPECT_EQ(In(In(metric, "metadata"), "prometheus.type").string_value(), "counter");
  const pb::Value& point = FieldOf(e3, "data_point");
  EXPECT_EQ(In(point, "flags").int64_value(), 1);
  const pb::ListValue& exemplars = In(point, "exemplars").list_value();
  ASSERT_EQ(exemplars.values_size(), 1);
  EXPECT_EQ(In(exemplars.values(0), "value").float64_value(), 12.5);
  EXPECT_EQ(In(exemplars.values(0), "trace_id").string_value(),
            "0101010101010101"
            "0101010101010101");
  EXPECT_EQ(In(exemplars.values(0), "span_id").string_value(), "0202020202020202");
  EXPECT_EQ(In(exemplars.values(0), "timestamp").timestamp_value().nanos(), 999999995);
  EXPECT_EQ(In(In(exemplars.values(0), "filtered_attributes"), "user").string_value(), "u1");
  EXPECT_THAT(Json(c.wire[3]),
              HasSubstr("\"metrics\":{\"http.server.requests\":9223372036854775807}"));
}

TEST(OtlpSignalsConversionTest, AHistogramPointAsTheExporterWritesItAndExactly) {
  MetricsRequest request;
  metrics::Metric* m = AddMetric(&request, "http.server.duration");
  m->set_unit("ms");
  m->mutable_histogram()->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_DELTA);
  metrics::HistogramDataPoint* p = m->mutable_histogram()->add_data_points();
  p->set_time_unix_nano(kStart);
  p->set_count(10);
  p->set_sum(123.5);
  p->set_min(0.5);
  p->set_max(300);
  for (double b : {10.0, 20.0, 40.0}) p->add_explicit_bounds(b);
  for (uint64_t n : {1, 0, 6, 3}) p->add_bucket_counts(n);
  // No bounds: one bucket, the mean; no min or max.
  metrics::HistogramDataPoint* q = m->mutable_histogram()->add_data_points();
  q->set_count(4);
  q->set_sum(10);

  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 2);
  std::cout << Json(c.wire[0]);
  const pb::Event& e = c.events[0];
  const pb::Value& value = In(FieldOf(e, "metrics"), "http.server.duration");
  EXPECT_THAT(Ints(In(value, "counts")), ElementsAre(1, 6, 3));
  EXPECT_THAT(Doubles(In(value, "values")), ElementsAre(5.0, 30.0, 40.0));
  EXPECT_EQ(FieldOf(e, "_doc_count").int64_value(), 10);
  EXPECT_EQ(In(FieldOf(e, "metric"), "type").string_value(), "histogram");
  EXPECT_EQ(In(FieldOf(e, "metric"), "temporality").string_value(), "delta");
  const pb::Value& point = FieldOf(e, "data_point");
  EXPECT_EQ(In(point, "count").uint64_value(), 10u);
  EXPECT_EQ(In(point, "sum").float64_value(), 123.5);
  EXPECT_EQ(In(point, "min").float64_value(), 0.5);
  EXPECT_EQ(In(point, "max").float64_value(), 300);
  EXPECT_THAT(Ints(In(point, "bucket_counts")), ElementsAre(1, 0, 6, 3));
  EXPECT_THAT(Doubles(In(point, "explicit_bounds")), ElementsAre(10.0, 20.0, 40.0));

  const pb::Value& mean = In(FieldOf(c.events[1], "metrics"), "http.server.duration");
  EXPECT_THAT(Ints(In(mean, "counts")), ElementsAre(4));
  EXPECT_THAT(Doubles(In(mean, "values")), ElementsAre(2.5));
  EXPECT_EQ(In(FieldOf(c.events[1], "data_point"), "min").kind_case(), pb::Value::KIND_NOT_SET);
  EXPECT_EQ(In(FieldOf(c.events[1], "data_point"), "sum").float64_value(), 10);
}

// Field `number` holding `body`, as the wire format writes a message field.
std::string Wrap(uint32_t number, const std::string& body) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteTag(number << 3 | 2);
  coded.WriteVarint32(static_cast<uint32_t>(body.size()));
  coded.WriteString(body);
  return out;
}

TEST(OtlpSignalsConversionTest, HistogramCountsArePackedOrNot) {
  MetricsRequest request;
  metrics::HistogramDataPoint* p = AddMetric(&request, "h")->mutable_histogram()->add_data_points();
  p->set_count(3);
  p->add_explicit_bounds(1);
  p->add_bucket_counts(1);
  p->add_bucket_counts(2);
  // The same point with one field per count and bound, as a sender may write them unpacked.
  std::string point;
  {
    google::protobuf::io::StringOutputStream stream(&point);
    google::protobuf::io::CodedOutputStream out(&stream);
    const double bound = 1;
    uint64_t bound_bits;
    std::memcpy(&bound_bits, &bound, 8);
    for (auto [number, bits] :
         std::vector<std::pair<uint32_t, uint64_t>>{{4, 3}, {6, 1}, {6, 2}, {7, bound_bits}}) {
      out.WriteTag(number << 3 | 1);
      out.WriteLittleEndian64(bits);
    }
  }
  // ExportMetricsServiceRequest.resource_metrics.scope_metrics.metrics{name, histogram}.
  const std::string unpacked = Wrap(1, Wrap(2, Wrap(2, Wrap(1, "h") + Wrap(9, Wrap(1, point)))));
  Converted a = Convert(request);
  Converted b = Convert(OtlpSignal::kMetrics, unpacked);
  ASSERT_TRUE(a.status.ok()) << a.status;
  ASSERT_TRUE(b.status.ok()) << b.status;
  EXPECT_EQ(a.wire, b.wire);
  EXPECT_THAT(Ints(In(FieldOf(b.events[0], "data_point"), "bucket_counts")), ElementsAre(1, 2));
}

TEST(OtlpSignalsConversionTest, AHistogramWhoseCountsDoNotFitItsBoundsIsRefused) {
  MetricsRequest request;
  metrics::HistogramDataPoint* p = AddMetric(&request, "h")->mutable_histogram()->add_data_points();
  p->add_explicit_bounds(1);
  p->add_bucket_counts(1);
  Converted c = Convert(request);
  EXPECT_EQ(c.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status.message(),
              HasSubstr("resource_metrics[0].scope_metrics[0].metrics[0].data_points[0]"));
  EXPECT_THAT(c.status.message(), HasSubstr("1 bucket_counts and 1 explicit_bounds"));
}

TEST(OtlpSignalsConversionTest, AnExponentialHistogramPointAsTheExporterWritesItAndExactly) {
  MetricsRequest request;
  metrics::Metric* m = AddMetric(&request, "latency");
  m->mutable_exponential_histogram()->set_aggregation_temporality(
      metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  metrics::ExponentialHistogramDataPoint* p = m->mutable_exponential_histogram()->add_data_points();
  p->set_time_unix_nano(kStart);
  p->set_count(7);
  p->set_sum(20);
  p->set_scale(0);  // buckets (2^i, 2^(i+1)]
  p->set_zero_count(1);
  p->set_zero_threshold(0.001);
  p->mutable_positive()->set_offset(1);
  for (uint64_t n : {2, 0, 3}) p->mutable_positive()->add_bucket_counts(n);
  p->mutable_negative()->set_offset(0);
  p->mutable_negative()->add_bucket_counts(1);

  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 1);
  std::cout << Json(c.wire[0]);
  const pb::Event& e = c.events[0];
  const pb::Value& value = In(FieldOf(e, "metrics"), "latency");
  EXPECT_THAT(Ints(In(value, "counts")), ElementsAre(1, 1, 2, 3));
  // Negative (-2, -1]: -1.5; zero; positive (2, 4]: 3, (8, 16]: 12.
  EXPECT_THAT(Doubles(In(value, "values")), ElementsAre(-1.5, 0.0, 3.0, 12.0));
  EXPECT_EQ(FieldOf(e, "_doc_count").int64_value(), 7);
  EXPECT_EQ(In(FieldOf(e, "metric"), "type").string_value(), "exponential_histogram");
  const pb::Value& point = FieldOf(e, "data_point");
  EXPECT_EQ(In(point, "scale").int64_value(), 0);
  EXPECT_EQ(In(point, "zero_count").uint64_value(), 1u);
  EXPECT_EQ(In(point, "zero_threshold").float64_value(), 0.001);
  EXPECT_EQ(In(In(point, "positive"), "offset").int64_value(), 1);
  EXPECT_THAT(Ints(In(In(point, "positive"), "bucket_counts")), ElementsAre(2, 0, 3));
  EXPECT_EQ(In(In(point, "negative"), "offset").int64_value(), 0);
  EXPECT_THAT(Ints(In(In(point, "negative"), "bucket_counts")), ElementsAre(1));

  // A negative scale and offset: base 4, bucket -1 is (1/4, 1].
  MetricsRequest coarse;
  metrics::ExponentialHistogramDataPoint* q =
      AddMetric(&coarse, "l")->mutable_exponential_histogram()->add_data_points();
  q->set_scale(-1);
  q->mutable_positive()->set_offset(-1);
  q->mutable_positive()->add_bucket_counts(5);
  Converted d = Convert(coarse);
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_THAT(Doubles(In(In(FieldOf(d.events[0], "metrics"), "l"), "values")), ElementsAre(0.625));
  EXPECT_EQ(In(FieldOf(d.events[0], "data_point"), "scale").int64_value(), -1);
}

TEST(OtlpSignalsConversionTest, ASummaryPointAsTheExporterWritesItAndExactly) {
  MetricsRequest request;
  metrics::SummaryDataPoint* p =
      AddMetric(&request, "rpc.latency")->mutable_summary()->add_data_points();
  p->set_time_unix_nano(kStart);
  p->set_count(5);
  p->set_sum(2.5);
  metrics::SummaryDataPoint::ValueAtQuantile* q = p->add_quantile_values();
  q->set_quantile(0.5);
  q->set_value(0.4);
  q = p->add_quantile_values();
  q->set_quantile(0.99);
  q->set_value(1.2);
  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 1);
  std::cout << Json(c.wire[0]);
  const pb::Event& e = c.events[0];
  const pb::Value& value = In(FieldOf(e, "metrics"), "rpc.latency");
  EXPECT_EQ(In(value, "sum").float64_value(), 2.5);
  EXPECT_EQ(In(value, "value_count").int64_value(), 5);
  EXPECT_EQ(In(FieldOf(e, "metric"), "type").string_value(), "summary");
  const pb::Value& point = FieldOf(e, "data_point");
  EXPECT_EQ(In(point, "count").uint64_value(), 5u);
  EXPECT_EQ(In(point, "sum").float64_value(), 2.5);
  const pb::ListValue& quantiles = In(point, "quantile_values").list_value();
  ASSERT_EQ(quantiles.values_size(), 2);
  EXPECT_EQ(In(quantiles.values(1), "quantile").float64_value(), 0.99);
  EXPECT_EQ(In(quantiles.values(1), "value").float64_value(), 1.2);
}

TEST(OtlpSignalsConversionTest, EveryPointOfEveryMetricInOrderAndNoneWithoutData) {
  MetricsRequest request;
  AddMetric(&request, "empty");  // no data: no point
  metrics::Metric* a = AddMetric(&request, "a");
  for (int i = 0; i < 3; ++i) a->mutable_gauge()->add_data_points()->set_as_int(i);
  AddMetric(&request, "b")->mutable_sum()->add_data_points()->set_as_int(3);
  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 4);
  std::vector<int64_t> values;
  for (const pb::Event& e : c.events) {
    const auto& entries = FieldOf(e, "metrics").struct_value().data();
    ASSERT_EQ(entries.size(), 1u);
    values.push_back(entries.begin()->second.int64_value());
  }
  EXPECT_THAT(values, ElementsAre(0, 1, 2, 3));
}

TEST(OtlpSignalsConversionTest, APointTooLargeIsRejectedAndTheRestTaken) {
  MetricsRequest request;
  metrics::Metric* m = AddMetric(&request, "h");
  m->mutable_gauge()->add_data_points()->set_as_int(1);
  metrics::NumberDataPoint* big = m->mutable_gauge()->add_data_points();
  Set(big->mutable_attributes(), "blob", std::string(4096, 'x'));
  Converted c = Convert(OtlpSignal::kMetrics, request.SerializeAsString(), 1024);
  ASSERT_TRUE(c.status.ok()) << c.status;
  EXPECT_EQ(c.events.size(), 1);
  EXPECT_EQ(c.rejected, 1);
}

TEST(OtlpSignalsConversionTest, TooManyPointsAreRefusedNamingThem) {
  MetricsRequest request;
  metrics::Metric* m = AddMetric(&request, "g");
  for (int i = 0; i < 3; ++i) m->mutable_gauge()->add_data_points();
  OtlpConversion conversion(OtlpSignal::kMetrics);
  const absl::Status s = conversion.Scan(request.SerializeAsString(), kArrival, 1 << 20, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("more than 2 data points"));
}

}  // namespace
}  // namespace shipper
