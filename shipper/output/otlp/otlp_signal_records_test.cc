// Spans and data points over OTLP: a request, converted as the OTLP input converts it
// (otlp_signals.h), mapped back (otlp_record.h) and regrouped (otlp_request.h), must be the request
// again; requests never mix signals.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/util/field_comparator.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/messages.pb.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"
#include "shipper/input/otlp/otlp_conversion.h"
#include "shipper/output/otlp/otlp_answer.h"
#include "shipper/output/otlp/otlp_record.h"
#include "shipper/output/otlp/otlp_request.h"

namespace shipper {
namespace {

namespace otlp = opentelemetry::proto;
namespace pb = elastic::agent::shipper::v1::messages;
using google::protobuf::util::MessageDifferencer;
using otlp::collector::logs::v1::ExportLogsServiceRequest;
using otlp::collector::metrics::v1::ExportMetricsServiceRequest;
using otlp::collector::trace::v1::ExportTraceServiceRequest;

constexpr uint64_t kStart = 1700000000000000000;

void Put(otlp::common::v1::KeyValue* kv, const std::string& key, const std::string& value) {
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}
void PutInt(otlp::common::v1::KeyValue* kv, const std::string& key, int64_t value) {
  kv->set_key(key);
  kv->mutable_value()->set_int_value(value);
}

// The events the OTLP input makes of `request`, each as queued.
std::vector<std::string> Convert(OtlpSignal signal, const std::string& request) {
  OtlpConversion conversion(signal);
  EXPECT_TRUE(conversion.Scan(request, absl::FromUnixNanos(kStart), 1 << 20, 1000).ok());
  auto buffer = std::make_unique<char[]>(conversion.bytes());
  std::vector<std::string> events;
  conversion.Write(buffer.get(), [&](absl::string_view event) { events.emplace_back(event); });
  return events;
}

std::vector<OtlpRecord> Map(const std::vector<std::string>& events) {
  std::vector<OtlpRecord> records(events.size());
  for (size_t i = 0; i < events.size(); ++i) MapEvent(events[i], &records[i]);
  return records;
}

// Input conversion, then the output's mapping and one request of everything.
template <typename Request>
void ExpectRoundTrip(OtlpSignal signal, const Request& request) {
  const std::vector<OtlpRecord> records = Map(Convert(signal, request.SerializeAsString()));
  ASSERT_FALSE(records.empty());
  const RequestPlan plan = PlanRequests(records, 4 << 20);
  ASSERT_EQ(plan.requests.size(), 1u);
  EXPECT_TRUE(plan.too_large.empty());
  for (const OtlpRecord& r : records) EXPECT_EQ(r.signal, signal);
  const std::string encoded = EncodeRequest(records, plan.requests[0]);
  Request back;
  ASSERT_TRUE(back.ParseFromString(encoded));
  std::string diff;
  MessageDifferencer differencer;
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);  // the bits are copied: a NaN stays the NaN it was
  differencer.set_field_comparator(&comparator);
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(request, back)) << diff;
  // The OTLP/JSON form has the signal's names and ids as hex.
  absl::StatusOr<std::string> json = RequestJson(signal, encoded);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_NE(json->find(signal == OtlpSignal::kTraces ? "\"resourceSpans\"" : "\"resourceMetrics\""),
            std::string::npos)
      << *json;
}

ExportTraceServiceRequest Spans() {
  ExportTraceServiceRequest request;
  for (int r = 0; r < 2; ++r) {
    auto* rs = request.add_resource_spans();
    Put(rs->mutable_resource()->add_attributes(), "service.name", r == 0 ? "checkout" : "cart");
    if (r == 0) {
      rs->set_schema_url("https://opentelemetry.io/schemas/1.26.0");
      rs->mutable_resource()->set_dropped_attributes_count(2);
    }
    for (int s = 0; s < (r == 0 ? 2 : 1); ++s) {
      auto* ss = rs->add_scope_spans();
      ss->mutable_scope()->set_name(s == 0 ? "io.app" : "io.lib");
      ss->mutable_scope()->set_version("1.0");
      if (s == 1) ss->set_schema_url("https://example.com/scope");
      for (int k = 0; k < 3; ++k) {
        auto* span = ss->add_spans();
        span->set_trace_id(std::string(16, static_cast<char>(0xa0 + k)));
        span->set_span_id(std::string(8, static_cast<char>(0x10 + k)));
        span->set_name(k == 0 ? "GET /cart" : "query");
        span->set_kind(static_cast<otlp::trace::v1::Span::SpanKind>(k * 2));  // 0, 2, 4
        span->set_start_time_unix_nano(kStart + k);
        span->set_end_time_unix_nano(kStart + 1500000 + k);
        if (k == 0) {
          // Everything a span has.
          span->set_trace_state("vendor=1");
          span->set_parent_span_id(std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
          span->set_flags(0x301);
          PutInt(span->add_attributes(), "http.status_code", std::numeric_limits<int64_t>::max());
          Put(span->add_attributes(), "http.method", "GET");
          auto* nested = span->add_attributes();
          nested->set_key("nested");
          auto* list = nested->mutable_value()->mutable_kvlist_value()->add_values();
          list->set_key("a");
          list->mutable_value()->mutable_array_value()->add_values()->set_double_value(0.5);
          span->set_dropped_attributes_count(1);
          span->set_dropped_events_count(2);
          span->set_dropped_links_count(3);
          for (int e = 0; e < 2; ++e) {
            auto* event = span->add_events();
            event->set_time_unix_nano(kStart + 100 + e);
            event->set_name(e == 0 ? "exception" : "retry");
            if (e == 0) {
              Put(event->add_attributes(), "exception.type", "IOError");
              event->set_dropped_attributes_count(4);
            }
          }
          span->add_events();  // an empty event: its timestamp 0 stays
          auto* link = span->add_links();
          link->set_trace_id(std::string(16, '\x7f'));
          link->set_span_id(std::string(8, '\x01'));
          link->set_trace_state("k=v");
          link->set_flags(0x100);
          link->set_dropped_attributes_count(5);
          PutInt(link->add_attributes(), "link.n", -7);
          span->add_links()->set_span_id(std::string(8, '\x02'));
          span->mutable_status()->set_code(otlp::trace::v1::Status::STATUS_CODE_ERROR);
          span->mutable_status()->set_message("broken pipe");
        } else if (k == 1) {
          span->mutable_status()->set_code(otlp::trace::v1::Status::STATUS_CODE_OK);
        } else {
          span->set_kind(static_cast<otlp::trace::v1::Span::SpanKind>(17));  // unknown kind
          span->mutable_status()->set_message("only a message");
        }
      }
    }
  }
  return request;
}

TEST(OtlpSignalRecordsTest, SpansComeBackAsTheyWere) {
  ExpectRoundTrip(OtlpSignal::kTraces, Spans());
}

otlp::metrics::v1::Exemplar* AddExemplar(
    google::protobuf::RepeatedPtrField<otlp::metrics::v1::Exemplar>* exemplars, bool as_int) {
  auto* e = exemplars->Add();
  e->set_time_unix_nano(kStart + 7);
  if (as_int) {
    e->set_as_int(-3);
  } else {
    e->set_as_double(2.25);
  }
  e->set_trace_id(std::string(16, '\x33'));
  e->set_span_id(std::string(8, '\x44'));
  Put(e->add_filtered_attributes(), "user", "u1");
  return e;
}

ExportMetricsServiceRequest Points() {
  ExportMetricsServiceRequest request;
  auto* rm = request.add_resource_metrics();
  Put(rm->mutable_resource()->add_attributes(), "service.name", "checkout");
  rm->set_schema_url("https://opentelemetry.io/schemas/1.26.0");
  auto* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("io.meter");
  sm->set_schema_url("https://example.com/scope");

  auto* gauge = sm->add_metrics();
  gauge->set_name("queue.depth");
  gauge->set_unit("{item}");
  gauge->set_description("items waiting");
  Put(gauge->add_metadata(), "origin", "sdk");
  for (int i = 0; i < 3; ++i) {
    auto* p = gauge->mutable_gauge()->add_data_points();
    p->set_time_unix_nano(kStart + i);
    if (i == 0) p->set_as_int(42);
    if (i == 1) {
      p->set_as_double(std::nan(""));
      p->set_start_time_unix_nano(kStart - 10);
      p->set_flags(1);
      PutInt(p->add_attributes(), "shard", 3);
      AddExemplar(p->mutable_exemplars(), true);
      AddExemplar(p->mutable_exemplars(), false)->clear_trace_id();
    }
    // i == 2: no value at all
  }

  auto* sum = sm->add_metrics();
  sum->set_name("http.requests");
  sum->mutable_sum()->set_aggregation_temporality(
      otlp::metrics::v1::AGGREGATION_TEMPORALITY_CUMULATIVE);
  sum->mutable_sum()->set_is_monotonic(true);
  for (int i = 0; i < 2; ++i) {
    auto* p = sum->mutable_sum()->add_data_points();
    p->set_time_unix_nano(kStart + i);
    p->set_as_double(1.5 * i);
    Put(p->add_attributes(), "route", i == 0 ? "/a" : "/b");
  }

  auto* histogram = sm->add_metrics();
  histogram->set_name("http.duration");
  histogram->set_unit("ms");
  histogram->mutable_histogram()->set_aggregation_temporality(
      otlp::metrics::v1::AGGREGATION_TEMPORALITY_DELTA);
  {
    auto* p = histogram->mutable_histogram()->add_data_points();
    p->set_time_unix_nano(kStart);
    p->set_start_time_unix_nano(kStart - 1000);
    p->set_count(10);
    p->set_sum(123.5);
    p->set_min(0.5);
    p->set_max(60);
    for (uint64_t c : {1, 0, 6, 3}) p->add_bucket_counts(c);
    for (double b : {1.0, 5.0, 50.0}) p->add_explicit_bounds(b);
    AddExemplar(p->mutable_exemplars(), false);
    auto* bare = histogram->mutable_histogram()->add_data_points();  // no buckets, no sum
    bare->set_time_unix_nano(kStart + 1);
    bare->set_count(0);
  }

  auto* exponential = sm->add_metrics();
  exponential->set_name("latency");
  exponential->mutable_exponential_histogram()->set_aggregation_temporality(
      otlp::metrics::v1::AGGREGATION_TEMPORALITY_CUMULATIVE);
  {
    auto* p = exponential->mutable_exponential_histogram()->add_data_points();
    p->set_time_unix_nano(kStart);
    p->set_count(9);
    p->set_sum(-4);
    p->set_scale(-2);
    p->set_zero_count(2);
    p->set_zero_threshold(0.001);
    p->mutable_positive()->set_offset(-3);
    for (uint64_t c : {1, 2, 300}) p->mutable_positive()->add_bucket_counts(c);
    p->mutable_negative()->set_offset(0);  // present, empty
    p->set_min(-1);
    p->set_max(1000);
    p->set_flags(1);
    AddExemplar(p->mutable_exemplars(), true);
  }

  auto* summary = sm->add_metrics();
  summary->set_name("rpc.size");
  {
    auto* p = summary->mutable_summary()->add_data_points();
    p->set_time_unix_nano(kStart);
    p->set_count(4);
    p->set_sum(400);
    Put(p->add_attributes(), "rpc", "get");
    for (double q : {0.0, 0.5, 1.0}) {
      auto* v = p->add_quantile_values();
      v->set_quantile(q);
      v->set_value(q * 200);
    }
  }
  return request;
}

TEST(OtlpSignalRecordsTest, EveryKindOfDataPointComesBackAsItWas) {
  ExpectRoundTrip(OtlpSignal::kMetrics, Points());
}

void PutBytes(otlp::common::v1::KeyValue* kv, const std::string& key, const std::string& value) {
  kv->set_key(key);
  kv->mutable_value()->set_bytes_value(value);
}

// A bytes value at every place a span and a point have attributes, and inside arrays and kvlists:
// each goes back as bytes, never as the base64 string the queued form holds (nor as the string
// a bytes value of another place would make of it).
TEST(OtlpSignalRecordsTest, BytesValuesOfSpansAndPointsComeBackAsBytes) {
  const std::string raw("\x00\xff\x10 bytes", 9);
  ExportTraceServiceRequest traces;
  auto* rs = traces.add_resource_spans();
  PutBytes(rs->mutable_resource()->add_attributes(), "resource.raw", raw);
  auto* ss = rs->add_scope_spans();
  PutBytes(ss->mutable_scope()->add_attributes(), "scope.raw", raw);
  auto* span = ss->add_spans();
  span->set_start_time_unix_nano(kStart);
  span->set_end_time_unix_nano(kStart + 5);
  PutBytes(span->add_attributes(), "span.raw", raw);
  Put(span->add_attributes(), "span.text", "c3RyaW5n");  // base64-looking, a string still
  auto* nested = span->add_attributes();
  nested->set_key("nested");
  auto* array = nested->mutable_value()->mutable_array_value();
  array->add_values()->set_string_value("AAAA");
  array->add_values()->set_bytes_value(raw);
  for (int e = 0; e < 2; ++e) {
    auto* event = span->add_events();
    event->set_time_unix_nano(kStart + e);
    (e == 1 ? PutBytes : Put)(event->add_attributes(), "event.raw", "AAAA");
  }
  span->add_links()->set_span_id(std::string(8, '\x02'));
  PutBytes(span->add_links()->add_attributes(), "link.raw", raw);
  ExpectRoundTrip(OtlpSignal::kTraces, traces);

  ExportMetricsServiceRequest metrics;
  auto* rm = metrics.add_resource_metrics();
  PutBytes(rm->mutable_resource()->add_attributes(), "resource.raw", raw);
  auto* sm = rm->add_scope_metrics();
  PutBytes(sm->mutable_scope()->add_attributes(), "scope.raw", raw);
  auto* gauge = sm->add_metrics();
  gauge->set_name("g");
  PutBytes(gauge->add_metadata(), "metadata.raw", raw);
  auto* p = gauge->mutable_gauge()->add_data_points();
  p->set_time_unix_nano(kStart);
  p->set_as_int(1);
  PutBytes(p->add_attributes(), "point.raw", raw);
  AddExemplar(p->mutable_exemplars(), true);
  PutBytes(AddExemplar(p->mutable_exemplars(), false)->add_filtered_attributes(), "exemplar.raw",
           raw);
  auto* histogram = sm->add_metrics();
  histogram->set_name("h");
  auto* hp = histogram->mutable_histogram()->add_data_points();
  hp->set_time_unix_nano(kStart);
  hp->set_count(1);
  PutBytes(AddExemplar(hp->mutable_exemplars(), true)->add_filtered_attributes(), "exemplar.raw",
           raw);
  ExpectRoundTrip(OtlpSignal::kMetrics, metrics);
}

TEST(OtlpSignalRecordsTest, PointsOfOneMetricButAnotherUnitOrTemporalityAreTwoMetrics) {
  ExportMetricsServiceRequest request;
  auto* sm = request.add_resource_metrics()->add_scope_metrics();
  for (int i = 0; i < 3; ++i) {
    auto* m = sm->add_metrics();
    m->set_name("same.name");
    m->set_unit(i == 1 ? "s" : "ms");
    m->mutable_sum()->set_aggregation_temporality(
        i == 2 ? otlp::metrics::v1::AGGREGATION_TEMPORALITY_DELTA
               : otlp::metrics::v1::AGGREGATION_TEMPORALITY_CUMULATIVE);
    m->mutable_sum()->add_data_points()->set_as_int(i);
  }
  ExpectRoundTrip(OtlpSignal::kMetrics, request);
}

TEST(OtlpSignalRecordsTest, RequestsNeverMixSignals) {
  std::vector<std::string> events = Convert(OtlpSignal::kTraces, Spans().SerializeAsString());
  const size_t spans = events.size();
  for (std::string& e : Convert(OtlpSignal::kMetrics, Points().SerializeAsString())) {
    events.push_back(std::move(e));
  }
  ExportLogsServiceRequest logs;
  logs.add_resource_logs()->add_scope_logs()->add_log_records()->mutable_body()->set_string_value(
      "hello");
  // Interleaved: a log record between the spans and the points.
  const std::vector<std::string> log_events = Convert(OtlpSignal::kLogs, logs.SerializeAsString());
  events.insert(events.begin() + 1, log_events[0]);
  const std::vector<OtlpRecord> records = Map(events);
  const RequestPlan plan = PlanRequests(records, 4 << 20);
  ASSERT_EQ(plan.requests.size(), 3u);
  EXPECT_EQ(plan.requests[0], std::vector<size_t>{1});  // the logs' first
  EXPECT_EQ(plan.requests[1].size(), spans);
  EXPECT_EQ(plan.requests[2].size(), events.size() - spans - 1);
  for (const std::vector<size_t>& request : plan.requests) {
    for (size_t i : request) EXPECT_EQ(records[i].signal, records[request[0]].signal);
  }
  // Small requests: each request still one signal, every record in one request.
  const RequestPlan small = PlanRequests(records, 600);
  size_t planned = small.too_large.size();
  for (const std::vector<size_t>& request : small.requests) {
    planned += request.size();
    for (size_t i : request) EXPECT_EQ(records[i].signal, records[request[0]].signal);
    EXPECT_LE(EncodeRequest(records, request).size(), 600u);
  }
  EXPECT_EQ(planned, records.size());
}

// A Producer API client may mark its event as a span or a data point: what it holds beyond the
// shape never makes an invalid request and is never dropped.
TEST(OtlpSignalRecordsTest, MarkedEventsNotOfTheShapeStaySendable) {
  pb::Event span;
  span.set_otel_signal(pb::OTEL_SIGNAL_SPAN);
  auto& fields = *span.mutable_fields()->mutable_data();
  fields["name"].set_string_value("op");
  fields["trace_id"].set_string_value("not hex");
  fields["kind"].set_float64_value(2.5);
  fields["status"].set_string_value("fine");
  OtlpRecord record;
  MapEvent(span.SerializeAsString(), &record);
  ASSERT_EQ(record.signal, OtlpSignal::kTraces);
  otlp::trace::v1::Span sent;
  ASSERT_TRUE(sent.ParseFromString(record.record));
  EXPECT_EQ(sent.name(), "op");
  EXPECT_TRUE(sent.trace_id().empty());
  std::vector<std::string> keys;
  for (const auto& kv : sent.attributes()) keys.push_back(kv.key());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"kind", "status", "trace_id"}));

  pb::Event point;
  point.set_otel_signal(pb::OTEL_SIGNAL_DATA_POINT);
  (*point.mutable_fields()->mutable_data())["message"].set_string_value("no metric here");
  MapEvent(point.SerializeAsString(), &record);
  EXPECT_EQ(record.signal, OtlpSignal::kLogs);  // not a point: a log record by the Producer mapping
  otlp::logs::v1::LogRecord log;
  ASSERT_TRUE(log.ParseFromString(record.record));
  EXPECT_EQ(log.body().string_value(), "no metric here");
}

TEST(OtlpSignalRecordsTest, PartialSuccessOfEverySignalIsCounted) {
  for (const char* name : {"rejectedLogRecords", "rejectedSpans", "rejectedDataPoints"}) {
    const ExportAnswer answer =
        HttpAnswer(200, "", "application/json", "",
                   absl::StrCat(R"({"partialSuccess":{")", name, R"(":"3","errorMessage":"x"}})"));
    EXPECT_EQ(answer.verdict, ExportAnswer::kWritten);
    EXPECT_EQ(answer.rejected, 3) << name;
    EXPECT_EQ(answer.rejected_message, "x");
  }
}

}  // namespace
}  // namespace shipper
