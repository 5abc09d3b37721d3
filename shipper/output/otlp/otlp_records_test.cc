// What an event becomes over OTLP, the requests it goes in, and what answers mean. The round
// trip goes through the OTLP input's own conversion: a request, converted as the input converts
// it, mapped back, must be the request again.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/messages.pb.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/rpc/status.pb.h"
#include "shipper/input/otlp/otlp_conversion.h"
#include "shipper/output/otlp/otlp_answer.h"
#include "shipper/output/otlp/otlp_record.h"
#include "shipper/output/otlp/otlp_request.h"

namespace shipper {
namespace {

namespace otlp = opentelemetry::proto;
using otlp::collector::logs::v1::ExportLogsServiceRequest;
using otlp::common::v1::AnyValue;
namespace pb = elastic::agent::shipper::v1::messages;

void Put(otlp::common::v1::KeyValue* kv, const std::string& key, const std::string& value) {
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}

// A request with two resources, three scopes, and every kind of value and record field: bytes
// values at every level, schema URLs and dropped counts, flags, a record without its time.
ExportLogsServiceRequest RichRequest() {
  ExportLogsServiceRequest request;
  for (int r = 0; r < 2; ++r) {
    auto* rl = request.add_resource_logs();
    Put(rl->mutable_resource()->add_attributes(), "service.name", r == 0 ? "checkout" : "cart");
    if (r == 0) {
      rl->set_schema_url("https://opentelemetry.io/schemas/1.26.0");
      rl->mutable_resource()->set_dropped_attributes_count(4);
      auto* raw = rl->mutable_resource()->add_attributes();
      raw->set_key("host.raw");
      raw->mutable_value()->set_bytes_value(std::string("\0\xff", 2));
    }
    for (int s = 0; s < (r == 0 ? 2 : 1); ++s) {
      auto* sl = rl->add_scope_logs();
      sl->mutable_scope()->set_name(s == 0 ? "io.app" : "io.lib");
      sl->mutable_scope()->set_version("1.2.3");
      Put(sl->mutable_scope()->add_attributes(), "scope.attr", "x");
      if (s == 1) {
        sl->set_schema_url("https://example.com/scope");
        sl->mutable_scope()->set_dropped_attributes_count(1);
        auto* raw = sl->mutable_scope()->add_attributes();
        raw->set_key("scope.raw");
        raw->mutable_value()->mutable_array_value()->add_values()->set_bytes_value("s");
      }
      for (int i = 0; i < 3; ++i) {
        auto* record = sl->add_log_records();
        if (i != 1) record->set_time_unix_nano(1700000000123456789ULL + i);
        record->set_flags(i);
        record->set_observed_time_unix_nano(1700000000999999999ULL + i);
        record->set_severity_number(otlp::logs::v1::SEVERITY_NUMBER_WARN);
        record->set_severity_text("WARN");
        record->set_event_name("checkout.done");
        record->set_trace_id(
            std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\xff", 16));
        record->set_span_id(std::string("\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8", 8));
        record->set_dropped_attributes_count(2);
        if (i == 0) {
          record->mutable_body()->set_string_value("plain text");
        } else if (i == 1) {
          record->mutable_body()->set_bytes_value(std::string("\x01\x02\x03", 3));
        } else {
          auto* list = record->mutable_body()->mutable_kvlist_value();
          Put(list->add_values(), "k", "v");
          auto* nested = list->add_values();
          nested->set_key("array");
          auto* array = nested->mutable_value()->mutable_array_value();
          array->add_values()->set_int_value(-9223372036854775807LL - 1);
          array->add_values()->set_double_value(0.1);
          array->add_values()->set_bool_value(true);
          array->add_values();  // empty: null
        }
        Put(record->add_attributes(), "http.method", "GET");
        auto* raw = record->add_attributes();
        raw->set_key("raw");
        auto* kv = raw->mutable_value()->mutable_kvlist_value()->add_values();
        kv->set_key("b64 lookalike");  // a string that is valid base64 stays a string
        kv->mutable_value()->set_string_value("AQI=");
        kv = raw->mutable_value()->mutable_kvlist_value()->add_values();
        kv->set_key("empty");
        kv->mutable_value()->set_bytes_value("");
        auto* big = record->add_attributes();
        big->set_key("int");
        big->mutable_value()->set_int_value(9007199254740993LL);  // not a double
      }
    }
  }
  return request;
}

// The events the OTLP input queues for `request`.
std::vector<std::string> Convert(const ExportLogsServiceRequest& request) {
  const std::string bytes = request.SerializeAsString();
  OtlpConversion conversion(OtlpSignal::kLogs);
  EXPECT_TRUE(conversion.Scan(bytes, absl::Now(), 1 << 20, 1 << 20).ok());
  std::string buffer(conversion.bytes(), '\0');
  std::vector<std::string> events;
  conversion.Write(buffer.data(), [&](absl::string_view e) { events.emplace_back(e); });
  return events;
}

ExportLogsServiceRequest MapBack(const std::vector<std::string>& events) {
  std::vector<OtlpRecord> records(events.size());
  std::vector<size_t> all;
  for (size_t i = 0; i < events.size(); ++i) {
    MapEvent(events[i], &records[i]);
    all.push_back(i);
  }
  ExportLogsServiceRequest back;
  EXPECT_TRUE(back.ParseFromString(EncodeRequest(records, all)));
  return back;
}

TEST(OtlpRecord, ARecordThatCameOverOtlpGoesBackAsItWas) {
  const ExportLogsServiceRequest sent = RichRequest();
  const ExportLogsServiceRequest back = MapBack(Convert(sent));
  std::string diff;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(sent, back)) << diff;
}

// Nothing of a record is lost but the later copies of a key sent twice in one list.
TEST(OtlpRecord, OnlyALaterCopyOfAKeyIsLost) {
  ExportLogsServiceRequest sent;
  auto* record = sent.add_resource_logs()->add_scope_logs()->add_log_records();
  Put(record->add_attributes(), "k", "first");
  Put(record->add_attributes(), "k", "second");
  const auto back = MapBack(Convert(sent)).resource_logs(0).scope_logs(0).log_records(0);
  ASSERT_EQ(back.attributes_size(), 1);
  EXPECT_EQ(back.attributes(0).value().string_value(), "first");
}

TEST(OtlpRecord, AProducerEventByTheDocumentedMapping) {
  pb::Event e;
  e.mutable_timestamp()->set_seconds(1700000000);
  e.mutable_timestamp()->set_nanos(5);
  e.mutable_source()->set_input_id("filestream-1");
  e.mutable_data_stream()->set_type("logs");
  e.mutable_data_stream()->set_dataset("nginx.access");
  e.mutable_data_stream()->set_namespace_("prod");
  (*e.mutable_metadata()->mutable_data())["beat"].set_string_value("filebeat");
  auto& fields = *e.mutable_fields()->mutable_data();
  fields["message"].set_string_value("GET / 200");
  fields["u64"].set_uint64_value(18446744073709551615ULL);
  fields["u32"].set_uint32_value(7);
  fields["f32"].set_float32_value(1.5f);
  (*fields["http"].mutable_struct_value()->mutable_data())["status"].set_int32_value(-200);
  fields["list"].mutable_list_value()->add_values()->set_bool_value(true);
  fields["null"].set_null_value(pb::NULL_VALUE);
  fields["when"].mutable_timestamp_value()->set_seconds(1);
  const std::string event = e.SerializeAsString();

  OtlpRecord mapped;
  MapEvent(event, &mapped);
  otlp::logs::v1::LogRecord record;
  otlp::resource::v1::Resource resource;
  ASSERT_TRUE(record.ParseFromString(mapped.record));
  ASSERT_TRUE(resource.ParseFromString(mapped.resource));
  EXPECT_TRUE(mapped.scope.empty());
  EXPECT_EQ(record.time_unix_nano(), 1700000000000000005ULL);
  EXPECT_EQ(record.body().string_value(), "GET / 200");
  std::map<std::string, AnyValue> attributes;
  for (const auto& kv : record.attributes()) attributes[kv.key()] = kv.value();
  EXPECT_EQ(attributes.count("message"), 0u);
  EXPECT_EQ(attributes["u64"].string_value(), "18446744073709551615");
  EXPECT_EQ(attributes["u32"].int_value(), 7);
  EXPECT_EQ(attributes["f32"].double_value(), 1.5);
  ASSERT_EQ(attributes["http"].kvlist_value().values_size(), 1);
  EXPECT_EQ(attributes["http"].kvlist_value().values(0).key(), "status");
  EXPECT_EQ(attributes["http"].kvlist_value().values(0).value().int_value(), -200);
  EXPECT_TRUE(attributes["list"].array_value().values(0).bool_value());
  EXPECT_EQ(attributes["null"].value_case(), AnyValue::VALUE_NOT_SET);
  EXPECT_EQ(attributes["when"].string_value(), "1970-01-01T00:00:01Z");
  std::map<std::string, std::string> res;
  for (const auto& kv : resource.attributes()) res[kv.key()] = kv.value().string_value();
  EXPECT_EQ(res, (std::map<std::string, std::string>{{"source.input_id", "filestream-1"},
                                                     {"data_stream.type", "logs"},
                                                     {"data_stream.dataset", "nginx.access"},
                                                     {"data_stream.namespace", "prod"},
                                                     {"metadata.beat", "filebeat"}}));
}

// Mapping a batch in order, each event after the one before it, makes what mapping each event
// alone makes: the resource is taken from the event before only when it would be the same, whatever
// changes from event to event (source, data_stream, metadata, the mark).
TEST(OtlpRecord, EventsMappedAfterTheOneBeforeMapAsAlone) {
  std::vector<std::string> events;
  const auto add = [&](const std::string& input, const std::string& dataset, int64_t meta,
                       pb::OtelSignal signal) {
    pb::Event e;
    e.set_otel_signal(signal);
    e.mutable_timestamp()->set_seconds(1700000000 + static_cast<int64_t>(events.size()));
    if (!input.empty()) e.mutable_source()->set_input_id(input);
    if (!dataset.empty()) e.mutable_data_stream()->set_dataset(dataset);
    if (meta != 0) (*e.mutable_metadata()->mutable_data())["m"].set_int64_value(meta);
    auto& fields = *e.mutable_fields()->mutable_data();
    fields["message"].set_string_value("line " + std::to_string(events.size()));
    fields["n"].set_int64_value(static_cast<int64_t>(events.size()));
    events.push_back(e.SerializeAsString());
  };
  const auto producer = pb::OTEL_SIGNAL_UNSPECIFIED;
  add("in-1", "app", 1, producer);
  add("in-1", "app", 1, producer);  // the same resource
  add("in-1", "app", 1, producer);
  add("in-2", "app", 1, producer);  // another source
  add("in-2", "web", 1, producer);  // another data stream
  add("in-2", "web", 2, producer);  // other metadata
  add("in-2", "web", 0, producer);  // none
  add("", "", 0, producer);         // nothing of the resource at all
  add("", "", 0, producer);
  add("in-2", "web", 2, pb::OTEL_SIGNAL_LOG);         // marked: its own mapping
  add("in-2", "web", 2, producer);                    // after a marked one
  add("in-2", "web", 2, pb::OTEL_SIGNAL_DATA_POINT);  // not a point: goes as a Producer event
  add("in-2", "web", 2, producer);
  std::vector<OtlpRecord> alone(events.size()), in_order(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    MapEvent(events[i], &alone[i]);
    // A reused record, as the output reuses them from batch to batch.
    MapEvent(events[(i + 1) % events.size()], &in_order[i]);
    const wire::EventParts before(i == 0 ? absl::string_view() : events[i - 1]);
    MapEvent(wire::EventParts(events[i]), &in_order[i], i == 0 ? nullptr : &before,
             i == 0 ? nullptr : &in_order[i - 1]);
  }
  for (size_t i = 0; i < events.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(in_order[i].signal, alone[i].signal);
    EXPECT_EQ(in_order[i].resource, alone[i].resource);
    EXPECT_EQ(in_order[i].scope, alone[i].scope);
    EXPECT_EQ(in_order[i].record, alone[i].record);
    EXPECT_EQ(in_order[i].resource_schema_url, alone[i].resource_schema_url);
    EXPECT_EQ(in_order[i].scope_schema_url, alone[i].scope_schema_url);
    EXPECT_EQ(in_order[i].metric, alone[i].metric);
    EXPECT_EQ(in_order[i].metric_data, alone[i].metric_data);
    EXPECT_EQ(in_order[i].metric_type, alone[i].metric_type);
  }
  EXPECT_EQ(alone[0].resource, alone[2].resource);
  EXPECT_NE(alone[2].resource, alone[3].resource);
  EXPECT_NE(alone[4].resource, alone[5].resource);
  EXPECT_TRUE(alone[7].resource.empty());
}

// The mark, not the shape, decides: an unmarked event shaped like the input's is a Producer
// event, and a Producer event marked a log record (a client may set field 15) makes a valid
// request that keeps every field, what does not fit the log record's shape as attributes.
TEST(OtlpRecord, TheMarkDecidesAndAMarkedProducerEventLosesNothing) {
  ExportLogsServiceRequest request;
  request.add_resource_logs()->add_scope_logs()->add_log_records()->set_severity_text("WARN");
  pb::Event unmarked;
  ASSERT_TRUE(unmarked.ParseFromString(Convert(request)[0]));
  unmarked.clear_otel_signal();
  OtlpRecord mapped;
  MapEvent(unmarked.SerializeAsString(), &mapped);
  otlp::logs::v1::LogRecord record;
  ASSERT_TRUE(record.ParseFromString(mapped.record));
  EXPECT_EQ(record.severity_text(), "");
  ASSERT_EQ(record.attributes_size(), 1);
  EXPECT_EQ(record.attributes(0).key(), "severity_text");

  pb::Event e;
  e.set_otel_signal(pb::OTEL_SIGNAL_LOG);
  e.mutable_timestamp()->set_seconds(-5);  // before 1970: wraps, but stays a fixed64
  e.mutable_source()->set_input_id("in-1");
  (*e.mutable_metadata()->mutable_data())["m"].set_int64_value(1);
  auto& fields = *e.mutable_fields()->mutable_data();
  fields["trace_id"].set_string_value("not hex");
  fields["span_id"].set_string_value("ABCDEF0123456789");  // upper case: not the input's form
  fields["severity_number"].set_int64_value(int64_t{1} << 40);
  fields["dropped_attributes_count"].set_int64_value(-1);
  fields["body"].set_string_value("a string, not {text: ...}");
  (*fields["scope"].mutable_struct_value()->mutable_data())["name"].set_int64_value(3);
  fields["attributes"].set_bool_value(true);
  fields["other"].set_string_value("x");
  fields["severity_text"].set_string_value("INFO");  // this one fits
  MapEvent(e.SerializeAsString(), &mapped);
  ExportLogsServiceRequest back;
  ASSERT_TRUE(back.ParseFromString(EncodeRequest({mapped}, {0})));
  const auto& r = back.resource_logs(0).scope_logs(0).log_records(0);
  EXPECT_EQ(r.severity_text(), "INFO");
  EXPECT_TRUE(r.trace_id().empty());
  EXPECT_TRUE(r.span_id().empty());
  EXPECT_EQ(r.severity_number(), 0);
  EXPECT_EQ(r.dropped_attributes_count(), 0u);
  EXPECT_FALSE(r.has_body());
  std::set<std::string> keys;
  for (const auto& kv : r.attributes()) keys.insert(kv.key());
  EXPECT_EQ(keys, (std::set<std::string>{"trace_id", "span_id", "severity_number",
                                         "dropped_attributes_count", "body", "scope", "attributes",
                                         "other"}));
  std::set<std::string> resource;
  for (const auto& kv : back.resource_logs(0).resource().attributes()) resource.insert(kv.key());
  EXPECT_EQ(resource, (std::set<std::string>{"source.input_id", "metadata.m"}));
  EXPECT_FALSE(back.resource_logs(0).scope_logs(0).has_scope());
}

TEST(OtlpRequest, NoRequestIsLargerThanTheLimitAndEveryRecordIsInOne) {
  std::vector<OtlpRecord> records(200);
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].resource = std::string(10 + i % 7, 'r');  // seven resources
    records[i].scope = std::string(i % 3, 's');
    records[i].record = std::string(50 + (i * 37) % 400, 'x');
  }
  records[17].record = std::string(5000, 'y');  // alone above the limit
  const size_t limit = 2000;
  const RequestPlan plan = PlanRequests(records, limit);
  EXPECT_EQ(plan.too_large, std::vector<size_t>{17});
  std::vector<size_t> seen;
  for (const std::vector<size_t>& which : plan.requests) {
    ASSERT_FALSE(which.empty());
    EXPECT_LE(EncodeRequest(records, which).size(), limit);
    seen.insert(seen.end(), which.begin(), which.end());
  }
  ASSERT_EQ(seen.size(), records.size() - 1);
  for (size_t i = 0, j = 0; i < records.size(); ++i) {
    if (i != 17) {
      EXPECT_EQ(seen[j++], i);
    }
  }
  EXPECT_GT(plan.requests.size(), 20u);
}

TEST(OtlpRequest, RequestsAreFilledToTheFillBytesAndARecordAboveThemGoesAlone) {
  std::vector<OtlpRecord> records(100);
  for (OtlpRecord& r : records) r.record = std::string(100, 'x');
  records[50].record = std::string(1500, 'y');  // above the fill, below the limit
  records[60].record = std::string(5000, 'z');  // above the limit
  const RequestPlan plan = PlanRequests(records, 2000, 1000);
  EXPECT_EQ(plan.too_large, std::vector<size_t>{60});
  size_t seen = 0;
  for (const std::vector<size_t>& which : plan.requests) {
    const size_t bytes = EncodeRequest(records, which).size();
    seen += which.size();
    if (which == std::vector<size_t>{50}) continue;  // alone
    EXPECT_LE(bytes, 1000u);
    // Full, but the last and the one closed early for record 50.
    if (which.back() != 99 && which.back() != 49) {
      EXPECT_GT(bytes, 500u);
    }
  }
  EXPECT_EQ(seen, 99u);
  // A fill above the limit is the limit.
  EXPECT_EQ(PlanRequests(records, 2000, 1 << 20).requests.size(),
            PlanRequests(records, 2000).requests.size());
}

TEST(OtlpRequest, JsonHasHexIdsAndCamelCaseNames) {
  ExportLogsServiceRequest request;
  auto* record = request.add_resource_logs()->add_scope_logs()->add_log_records();
  record->set_trace_id(std::string(15, '\0') + "\x01");
  record->set_span_id(std::string("\xff\0\0\0\0\0\0\x02", 8));
  record->set_severity_number(otlp::logs::v1::SEVERITY_NUMBER_INFO);
  absl::StatusOr<std::string> json = RequestJson(OtlpSignal::kLogs, request.SerializeAsString());
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_NE(json->find(R"("traceId":"00000000000000000000000000000001")"), std::string::npos)
      << *json;
  EXPECT_NE(json->find(R"("spanId":"ff00000000000002")"), std::string::npos) << *json;
  EXPECT_NE(json->find(R"("severityNumber":9)"), std::string::npos) << *json;
  EXPECT_NE(json->find(R"("resourceLogs")"), std::string::npos) << *json;
}

std::string RetryInfoDetails(int seconds) {
  google::rpc::Status status;
  google::rpc::RetryInfo info;
  info.mutable_retry_delay()->set_seconds(seconds);
  status.add_details()->PackFrom(info);
  return status.SerializeAsString();
}

TEST(OtlpAnswer, GrpcCodesByTheSpecification) {
  EXPECT_EQ(GrpcAnswer(0, "", "", "").verdict, ExportAnswer::kWritten);
  for (int code : {1, 4, 10, 11, 14, 15}) {
    EXPECT_EQ(GrpcAnswer(code, "m", "", "").verdict, ExportAnswer::kRetry) << code;
  }
  EXPECT_EQ(GrpcAnswer(8, "too big", "", "").verdict, ExportAnswer::kTooLarge);
  const ExportAnswer throttled = GrpcAnswer(8, "slow down", RetryInfoDetails(3), "");
  EXPECT_EQ(throttled.verdict, ExportAnswer::kRetry);
  EXPECT_EQ(throttled.retry_delay, absl::Seconds(3));
  EXPECT_EQ(GrpcAnswer(14, "", RetryInfoDetails(3600), "").retry_delay, kMaxRetryDelay);
  EXPECT_EQ(GrpcAnswer(3, "bad", "", "").verdict, ExportAnswer::kInvalid);
  for (int code : {2, 5, 7, 9, 12, 13, 16}) {
    const ExportAnswer refused = GrpcAnswer(code, "no", "", "");
    EXPECT_EQ(refused.verdict, ExportAnswer::kRefused) << code;
    EXPECT_NE(refused.message.find("no"), std::string::npos);
  }
  EXPECT_EQ(GrpcAnswer(3, "bad", "", "").message, "INVALID_ARGUMENT: bad");

  otlp::collector::logs::v1::ExportLogsServiceResponse response;
  response.mutable_partial_success()->set_rejected_log_records(4);
  response.mutable_partial_success()->set_error_message("4 too old");
  const ExportAnswer partial = GrpcAnswer(0, "", "", response.SerializeAsString());
  EXPECT_EQ(partial.verdict, ExportAnswer::kWritten);
  EXPECT_EQ(partial.rejected, 4);
  EXPECT_EQ(partial.rejected_message, "4 too old");
}

TEST(OtlpAnswer, HttpStatusesByTheSpecification) {
  EXPECT_EQ(HttpAnswer(200, "", "application/x-protobuf", "", "").verdict, ExportAnswer::kWritten);
  EXPECT_EQ(HttpAnswer(0, "connection refused", "", "", "").verdict, ExportAnswer::kRetry);
  for (long status : {429, 502, 503, 504}) {
    EXPECT_EQ(HttpAnswer(status, "", "", "", "").verdict, ExportAnswer::kRetry) << status;
  }
  EXPECT_EQ(HttpAnswer(503, "", "", "7", "").retry_delay, absl::Seconds(7));
  EXPECT_EQ(HttpAnswer(429, "", "", "100000", "").retry_delay, kMaxRetryDelay);
  EXPECT_EQ(HttpAnswer(413, "", "", "", "").verdict, ExportAnswer::kTooLarge);
  EXPECT_EQ(HttpAnswer(400, "", "", "", "").verdict, ExportAnswer::kInvalid);
  for (long status : {401, 403, 404, 500}) {
    EXPECT_EQ(HttpAnswer(status, "", "", "", "").verdict, ExportAnswer::kRefused) << status;
  }
  google::rpc::Status error;
  error.set_message("bad record");
  EXPECT_EQ(HttpAnswer(400, "", "application/x-protobuf", "", error.SerializeAsString()).message,
            "400: bad record");
  EXPECT_EQ(
      HttpAnswer(400, "", "application/json", "", R"({"code":3,"message":"bad json"})").message,
      "400: bad json");
  const ExportAnswer partial =
      HttpAnswer(200, "", "application/json", "",
                 R"({"partialSuccess":{"rejectedLogRecords":"2","errorMessage":"dropped"}})");
  EXPECT_EQ(partial.rejected, 2);
  EXPECT_EQ(partial.rejected_message, "dropped");
}

}  // namespace
}  // namespace shipper
