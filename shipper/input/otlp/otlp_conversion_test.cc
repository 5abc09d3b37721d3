#include "shipper/input/otlp/otlp_conversion.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/messages.pb.h"
#include "proto/otlp/logs_service.pb.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "runtime/memory_budget.h"
#include "shipper/event/event_json.h"
#include "shipper/input/producer/request_validation.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
namespace collector = opentelemetry::proto::collector::logs::v1;
namespace logs = opentelemetry::proto::logs::v1;
namespace common = opentelemetry::proto::common::v1;
using ::testing::HasSubstr;

constexpr int64_t kMaxInt64 = INT64_MAX;
constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;
const absl::Time kArrival = absl::FromUnixNanos(1700000000123456789);

struct Converted {
  absl::Status status;
  std::vector<pb::Event> events;
  std::vector<std::string> wire;  // each event's bytes as queued
  size_t rejected = 0;
};

Converted Convert(const collector::ExportLogsServiceRequest& request,
                  size_t max_record_bytes = 1 << 20, size_t max_records = 1000) {
  const std::string bytes = request.SerializeAsString();
  OtlpConversion conversion(OtlpSignal::kLogs);
  Converted out;
  out.status = conversion.Scan(bytes, kArrival, max_record_bytes, max_records);
  if (!out.status.ok()) return out;
  out.rejected = conversion.rejected();
  auto buffer = std::make_unique<char[]>(conversion.bytes());
  size_t written = 0;
  conversion.Write(buffer.get(), [&](absl::string_view event) {
    EXPECT_EQ(event.data(), buffer.get() + written) << "one buffer, records one after the other";
    written += event.size();
    out.wire.emplace_back(event);
    pb::Event parsed;
    EXPECT_TRUE(parsed.ParseFromString(std::string(event)));
    out.events.push_back(std::move(parsed));
  });
  EXPECT_EQ(written, conversion.bytes());
  EXPECT_EQ(out.events.size(), conversion.records());
  return out;
}

// The request's one record, to fill in.
logs::LogRecord* OneRecord(collector::ExportLogsServiceRequest* request) {
  return request->add_resource_logs()->add_scope_logs()->add_log_records();
}

common::KeyValue* Attribute(google::protobuf::RepeatedPtrField<common::KeyValue>* list,
                            const std::string& key) {
  common::KeyValue* kv = list->Add();
  kv->set_key(key);
  return kv;
}

const pb::Value& FieldOf(const pb::Event& event, const std::string& key) {
  static const pb::Value* absent = new pb::Value;
  auto it = event.fields().data().find(key);
  return it == event.fields().data().end() ? *absent : it->second;
}

const pb::Value& In(const pb::Value& value, const std::string& key) {
  static const pb::Value* absent = new pb::Value;
  auto it = value.struct_value().data().find(key);
  return it == value.struct_value().data().end() ? *absent : it->second;
}

std::string Json(const std::string& event) {
  rapidjson::StringBuffer buffer;
  EventJsonWriter(&buffer, Metadata::kOmit).Append(event, 1);
  return std::string(buffer.GetString(), buffer.GetSize());
}

TEST(OtlpConversionTest, EveryValueKindMapsToItsOwn) {
  collector::ExportLogsServiceRequest request;
  logs::LogRecord* record = OneRecord(&request);
  auto* attrs = record->mutable_attributes();
  Attribute(attrs, "str")->mutable_value()->set_string_value("héllo");
  Attribute(attrs, "yes")->mutable_value()->set_bool_value(true);
  Attribute(attrs, "max")->mutable_value()->set_int_value(kMaxInt64);
  Attribute(attrs, "safe")->mutable_value()->set_int_value(kMaxSafeInteger);
  Attribute(attrs, "neg")->mutable_value()->set_int_value(-1);
  Attribute(attrs, "pi")->mutable_value()->set_double_value(3.25);
  Attribute(attrs, "b1")->mutable_value()->set_bytes_value("\x01");
  Attribute(attrs, "b2")->mutable_value()->set_bytes_value("\x01\x02");
  Attribute(attrs, "b3")->mutable_value()->set_bytes_value("\xff\xfe\xfd");
  Attribute(attrs, "empty")->mutable_value();
  Attribute(attrs, "absent");
  auto* array = Attribute(attrs, "list")->mutable_value()->mutable_array_value();
  array->add_values()->set_int_value(1);
  array->add_values()->set_string_value("two");
  array->add_values();
  auto* kvlist = Attribute(attrs, "map")->mutable_value()->mutable_kvlist_value();
  Attribute(kvlist->mutable_values(), "inner")->mutable_value()->set_bool_value(false);
  Attribute(kvlist->mutable_values(), "http.method")->mutable_value()->set_string_value("GET");

  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 1);
  const pb::Value& a = FieldOf(c.events[0], "attributes");
  EXPECT_EQ(In(a, "str").string_value(), "héllo");
  EXPECT_TRUE(In(a, "yes").bool_value());
  EXPECT_EQ(In(a, "max").int64_value(), kMaxInt64);
  EXPECT_EQ(In(a, "safe").int64_value(), kMaxSafeInteger);
  EXPECT_EQ(In(a, "neg").int64_value(), -1);
  EXPECT_EQ(In(a, "pi").float64_value(), 3.25);
  EXPECT_EQ(In(a, "b1").string_value(), absl::Base64Escape("\x01"));
  EXPECT_EQ(In(a, "b2").string_value(), absl::Base64Escape("\x01\x02"));
  EXPECT_EQ(In(a, "b3").string_value(), "//79");
  EXPECT_EQ(In(a, "empty").kind_case(), pb::Value::kNullValue);
  EXPECT_EQ(In(a, "absent").kind_case(), pb::Value::kNullValue);
  const pb::ListValue& list = In(a, "list").list_value();
  ASSERT_EQ(list.values_size(), 3);
  EXPECT_EQ(list.values(0).int64_value(), 1);
  EXPECT_EQ(list.values(1).string_value(), "two");
  EXPECT_EQ(list.values(2).kind_case(), pb::Value::kNullValue);
  EXPECT_FALSE(In(In(a, "map"), "inner").bool_value());
  EXPECT_EQ(In(In(a, "map"), "inner").kind_case(), pb::Value::kBoolValue);
  EXPECT_EQ(In(In(a, "map"), "http.method").string_value(), "GET");

  // The JSON document keeps every integer exact.
  const std::string json = Json(c.wire[0]);
  EXPECT_THAT(json, HasSubstr("\"max\":9223372036854775807"));
  EXPECT_THAT(json, HasSubstr("\"safe\":9007199254740991"));
  EXPECT_THAT(json, HasSubstr("\"http.method\":\"GET\""));
}

TEST(OtlpConversionTest, EventsAreCanonicalAsTheProducerApiQueuesThem) {
  collector::ExportLogsServiceRequest request;
  logs::LogRecord* record = OneRecord(&request);
  record->mutable_body()->mutable_kvlist_value();
  Attribute(record->mutable_attributes(), "k")->mutable_value()->set_string_value("v");
  Attribute(record->mutable_attributes(), "k")->mutable_value()->set_string_value("w");
  record->set_trace_id(std::string(16, '\x0a'));
  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  pb::PublishRequest publish;
  for (const std::string& wire : c.wire) ASSERT_TRUE(publish.add_events()->ParseFromString(wire));
  const std::string publish_bytes = [&] {
    // The events exactly as converted, not as protobuf would encode them again.
    std::string out;
    for (const std::string& wire : c.wire) {
      out += '\x12';
      std::string len;
      for (uint64_t n = wire.size();; n >>= 7) {
        if (n < 0x80) {
          len += static_cast<char>(n);
          break;
        }
        len += static_cast<char>(n | 0x80);
      }
      out += len + wire;
    }
    return out;
  }();
  ScannedRequest scanned;
  ASSERT_TRUE(ScanPublishRequest(publish_bytes, RequestLimits(), &scanned).ok());
  EXPECT_TRUE(scanned.rewritten.empty()) << "not canonical: the scan rewrote an event";
  ASSERT_EQ(scanned.events.size(), 1);
  // The duplicate key went before protobuf could keep the last of two.
  EXPECT_EQ(In(FieldOf(publish.events(0), "attributes"), "k").string_value(), "v");
}

// What a receiver sees beyond the document: in the metadata, which the Elasticsearch document
// leaves out; the resource's and scope's schema URLs and dropped counts in the document, where the
// Collector's Elasticsearch exporter writes them.
TEST(OtlpConversionTest, FlagsAMissingTimeAndBytesInTheMetadata) {
  collector::ExportLogsServiceRequest request;
  auto* rl = request.add_resource_logs();
  rl->set_schema_url("https://r");
  rl->mutable_resource()->set_dropped_attributes_count(2);
  auto* sl = rl->add_scope_logs();
  sl->set_schema_url("https://s");
  sl->mutable_scope()->set_dropped_attributes_count(3);
  Attribute(sl->mutable_scope()->mutable_attributes(), "sb")->mutable_value()->set_bytes_value("x");
  logs::LogRecord* record = sl->add_log_records();
  record->set_flags(0x101);
  record->set_observed_time_unix_nano(1700000000000000007);
  record->mutable_body()->set_bytes_value(std::string("\x01\x02", 2));
  auto* list = Attribute(record->mutable_attributes(), "list")->mutable_value();
  list->mutable_array_value()->add_values()->set_string_value("s");
  list->mutable_array_value()->add_values()->set_bytes_value("b");
  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  const auto& metadata = c.events[0].metadata().data();
  EXPECT_EQ(metadata.at("otlp.flags").int64_value(), 0x101);
  EXPECT_TRUE(metadata.at("otlp.time_unix_nano_unset").bool_value());
  std::vector<std::string> paths;
  for (const pb::Value& path : metadata.at("otlp.bytes").list_value().values()) {
    std::string p;
    for (const pb::Value& step : path.list_value().values()) {
      absl::StrAppend(
          &p, "/",
          step.has_string_value() ? step.string_value() : absl::StrCat(step.int64_value()));
    }
    paths.push_back(p);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"/body/structured", "/attributes/list/1",
                                             "/scope/attributes/sb"}));
  EXPECT_EQ(c.events[0].timestamp().nanos(), 7);
  const std::string json = Json(c.wire[0]);
  EXPECT_THAT(json,
              HasSubstr(R"("resource":{"dropped_attributes_count":2,"schema_url":"https://r"})"));
  EXPECT_THAT(json, HasSubstr(R"("scope":{"attributes":{"sb":"eA=="},)"
                              R"("dropped_attributes_count":3,"schema_url":"https://s"})"));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("otlp.")));

  // A record with its time and no flags or bytes has no metadata.
  collector::ExportLogsServiceRequest plain;
  OneRecord(&plain)->set_time_unix_nano(1);
  Converted p = Convert(plain);
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_FALSE(p.events[0].has_metadata());
}

TEST(OtlpConversionTest, EveryEventIsMarkedALogRecord) {
  collector::ExportLogsServiceRequest request;
  OneRecord(&request);
  OneRecord(&request)->mutable_body()->set_string_value("b");
  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 2u);
  for (const pb::Event& event : c.events) EXPECT_EQ(event.otel_signal(), pb::OTEL_SIGNAL_LOG);
}

TEST(OtlpConversionTest, ADuplicateKeyKeepsItsFirstValue) {
  collector::ExportLogsServiceRequest request;
  logs::LogRecord* record = OneRecord(&request);
  auto* attrs = record->mutable_attributes();
  Attribute(attrs, "dup")->mutable_value()->set_string_value("first");
  Attribute(attrs, "other")->mutable_value()->set_int_value(1);
  Attribute(attrs, "dup")->mutable_value()->set_string_value("second");
  // Long lists (past the linear scan) too.
  for (int i = 0; i < 40; ++i) {
    Attribute(attrs, "k" + std::to_string(i))->mutable_value()->set_int_value(i);
  }
  for (int i = 0; i < 40; ++i) {
    Attribute(attrs, "k" + std::to_string(i))->mutable_value()->set_int_value(-i);
  }
  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  const pb::Value& a = FieldOf(c.events[0], "attributes");
  EXPECT_EQ(a.struct_value().data().size(), 42);
  EXPECT_EQ(In(a, "dup").string_value(), "first");
  EXPECT_EQ(In(a, "k39").int64_value(), 39);
  // The wire holds each key once (protobuf's parse would keep the last of two).
  const std::string json = Json(c.wire[0]);
  EXPECT_EQ(json.find("\"second\""), std::string::npos) << json;
}

TEST(OtlpConversionTest, TimestampsToTheNanosecond) {
  collector::ExportLogsServiceRequest request;
  auto* scope = request.add_resource_logs()->add_scope_logs();
  scope->add_log_records()->set_time_unix_nano(1700000000987654321);
  logs::LogRecord* observed_only = scope->add_log_records();
  observed_only->set_observed_time_unix_nano(1600000000000000001);
  scope->add_log_records();  // neither: the arrival time
  logs::LogRecord* both = scope->add_log_records();
  both->set_time_unix_nano(5);
  both->set_observed_time_unix_nano(6);
  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 4);
  EXPECT_EQ(c.events[0].timestamp().seconds(), 1700000000);
  EXPECT_EQ(c.events[0].timestamp().nanos(), 987654321);
  EXPECT_EQ(FieldOf(c.events[0], "observed_timestamp").kind_case(), pb::Value::KIND_NOT_SET);
  EXPECT_EQ(c.events[1].timestamp().seconds(), 1600000000);
  EXPECT_EQ(c.events[1].timestamp().nanos(), 1);
  EXPECT_EQ(FieldOf(c.events[1], "observed_timestamp").timestamp_value().nanos(), 1);
  EXPECT_EQ(c.events[2].timestamp().seconds(), 1700000000);
  EXPECT_EQ(c.events[2].timestamp().nanos(), 123456789);
  EXPECT_EQ(c.events[3].timestamp().nanos(), 5);
  EXPECT_EQ(FieldOf(c.events[3], "observed_timestamp").timestamp_value().nanos(), 6);
  EXPECT_THAT(Json(c.wire[0]), HasSubstr("\"@timestamp\":\"2023-11-14T22:13:20.987654321Z\""));
}

TEST(OtlpConversionTest, RecordFieldsAndIdsAsLowercaseHex) {
  collector::ExportLogsServiceRequest request;
  logs::ResourceLogs* rl = request.add_resource_logs();
  Attribute(rl->mutable_resource()->mutable_attributes(), "service.name")
      ->mutable_value()
      ->set_string_value("checkout");
  logs::ScopeLogs* sl = rl->add_scope_logs();
  sl->mutable_scope()->set_name("io.example.logger");
  sl->mutable_scope()->set_version("1.2.3");
  Attribute(sl->mutable_scope()->mutable_attributes(), "scope.attr")
      ->mutable_value()
      ->set_int_value(7);
  logs::LogRecord* record = sl->add_log_records();
  record->mutable_body()->set_string_value("payment failed");
  record->set_severity_text("ERROR");
  record->set_severity_number(logs::SEVERITY_NUMBER_ERROR);
  record->set_event_name("payment.failure");
  record->set_trace_id(absl::HexStringToBytes("0af7651916cd43dd8448eb211c80319c"));
  record->set_span_id(absl::HexStringToBytes("B7AD6B7169203331"));
  record->set_dropped_attributes_count(3);
  logs::LogRecord* structured = sl->add_log_records();
  structured->mutable_body()->set_int_value(42);

  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 2);
  const pb::Event& e = c.events[0];
  EXPECT_EQ(In(FieldOf(e, "body"), "text").string_value(), "payment failed");
  EXPECT_EQ(FieldOf(e, "severity_text").string_value(), "ERROR");
  EXPECT_EQ(FieldOf(e, "severity_number").int64_value(), 17);
  EXPECT_EQ(FieldOf(e, "event_name").string_value(), "payment.failure");
  EXPECT_EQ(FieldOf(e, "trace_id").string_value(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(FieldOf(e, "span_id").string_value(), "b7ad6b7169203331");
  EXPECT_EQ(FieldOf(e, "dropped_attributes_count").int64_value(), 3);
  EXPECT_EQ(FieldOf(e, "attributes").kind_case(), pb::Value::KIND_NOT_SET);
  EXPECT_EQ(In(In(FieldOf(e, "resource"), "attributes"), "service.name").string_value(),
            "checkout");
  EXPECT_EQ(In(FieldOf(e, "scope"), "name").string_value(), "io.example.logger");
  EXPECT_EQ(In(FieldOf(e, "scope"), "version").string_value(), "1.2.3");
  EXPECT_EQ(In(In(FieldOf(e, "scope"), "attributes"), "scope.attr").int64_value(), 7);
  // Both records carry the resource and the scope.
  EXPECT_EQ(In(In(FieldOf(c.events[1], "resource"), "attributes"), "service.name").string_value(),
            "checkout");
  EXPECT_EQ(In(FieldOf(c.events[1], "body"), "structured").int64_value(), 42);
  EXPECT_EQ(FieldOf(c.events[1], "severity_text").kind_case(), pb::Value::KIND_NOT_SET);
  EXPECT_EQ(FieldOf(c.events[1], "trace_id").kind_case(), pb::Value::KIND_NOT_SET);
  std::cout << Json(c.wire[0]);  // the README's example
}

TEST(OtlpConversionTest, DataStreamFromRecordThenScopeThenResource) {
  collector::ExportLogsServiceRequest request;
  logs::ResourceLogs* rl = request.add_resource_logs();
  auto* resource = rl->mutable_resource()->mutable_attributes();
  Attribute(resource, "data_stream.dataset")->mutable_value()->set_string_value("res");
  Attribute(resource, "data_stream.namespace")->mutable_value()->set_string_value("prod");
  logs::ScopeLogs* sl = rl->add_scope_logs();
  Attribute(sl->mutable_scope()->mutable_attributes(), "data_stream.dataset")
      ->mutable_value()
      ->set_string_value("scope.otel");
  logs::LogRecord* record = sl->add_log_records();
  Attribute(record->mutable_attributes(), "data_stream.type")
      ->mutable_value()
      ->set_string_value("metrics");
  sl->add_log_records();
  // Without any: the defaults; a dataset that is not a string counts as unset.
  logs::LogRecord* bare = request.add_resource_logs()->add_scope_logs()->add_log_records();
  Attribute(bare->mutable_attributes(), "data_stream.dataset")->mutable_value()->set_int_value(1);

  Converted c = Convert(request);
  ASSERT_TRUE(c.status.ok()) << c.status;
  ASSERT_EQ(c.events.size(), 3);
  EXPECT_EQ(c.events[0].data_stream().type(), "metrics");
  EXPECT_EQ(c.events[0].data_stream().dataset(), "scope.otel");  // not scope.otel.otel
  EXPECT_EQ(c.events[0].data_stream().namespace_(), "prod");
  EXPECT_EQ(c.events[1].data_stream().type(), "logs");
  EXPECT_EQ(c.events[2].data_stream().type(), "logs");
  EXPECT_EQ(c.events[2].data_stream().dataset(), "generic.otel");
  EXPECT_EQ(c.events[2].data_stream().namespace_(), "default");

  collector::ExportLogsServiceRequest resource_only;
  auto* r = resource_only.add_resource_logs();
  Attribute(r->mutable_resource()->mutable_attributes(), "data_stream.dataset")
      ->mutable_value()
      ->set_string_value("nginx.access");
  r->add_scope_logs()->add_log_records();
  c = Convert(resource_only);
  ASSERT_TRUE(c.status.ok()) << c.status;
  EXPECT_EQ(c.events[0].data_stream().dataset(), "nginx.access.otel");
}

// Field `number` of a message, length-delimited, as the wire writes it.
std::string Length(uint32_t number, const std::string& bytes) {
  std::string out;
  for (uint64_t v : {uint64_t{number} << 3 | 2, uint64_t{bytes.size()}}) {
    for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>(v | 0x80));
    out.push_back(static_cast<char>(v));
  }
  return out + bytes;
}

// The hostile shapes of a request within every limit whose work used to grow with records ×
// attributes: a scope or resource with a million empty attributes (2 bytes each) over 60,000
// empty records, the data_stream attribute last. Each record costs its own bytes now; before,
// every record read the whole list three times (about 10^11 reads, minutes: this test's timeout).
TEST(OtlpConversionTest, ManyRecordsUnderManyAttributesCostTheirOwnBytes) {
  constexpr int kAttributes = 1000000, kRecords = 60000;
  // KeyValue{key: data_stream.dataset, value: AnyValue{string_value: hostile}}
  const std::string dataset = Length(1, "data_stream.dataset") + Length(2, Length(1, "hostile"));
  std::string records;
  for (int i = 0; i < kRecords; ++i) records += Length(2, "");  // ScopeLogs.log_records
  for (bool in_scope : {false, true}) {
    SCOPED_TRACE(in_scope ? "scope attributes" : "resource attributes");
    const uint32_t field = in_scope ? 3 : 1;  // Scope.attributes, Resource.attributes
    std::string holder;
    holder.reserve(2 * kAttributes + 64);
    for (int i = 0; i < kAttributes; ++i) holder += Length(field, "");
    holder += Length(field, dataset);
    const std::string scope_logs =
        Length(2, (in_scope ? Length(1, holder) : std::string()) + records);
    const std::string request =
        Length(1, (in_scope ? std::string() : Length(1, holder)) + scope_logs);
    OtlpConversion conversion(OtlpSignal::kLogs);
    const absl::Status status = conversion.Scan(request, kArrival, 1 << 20, kRecords);
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ(conversion.records(), kRecords);
    auto buffer = std::make_unique<char[]>(conversion.bytes());
    size_t n = 0;
    pb::Event last;
    conversion.Write(buffer.get(), [&](absl::string_view event) {
      if (++n == kRecords) {
        ASSERT_TRUE(last.ParseFromString(std::string(event)));
      }
    });
    EXPECT_EQ(n, kRecords);
    EXPECT_EQ(last.data_stream().dataset(), "hostile.otel");
  }
}

TEST(OtlpConversionTest, ARecordTooLargeIsRejectedAndTheRestTaken) {
  collector::ExportLogsServiceRequest request;
  auto* sl = request.add_resource_logs()->add_scope_logs();
  sl->add_log_records()->mutable_body()->set_string_value("small");
  sl->add_log_records()->mutable_body()->set_string_value(std::string(5000, 'x'));
  sl->add_log_records()->mutable_body()->set_string_value("small too");
  Converted c = Convert(request, /*max_record_bytes=*/1000);
  ASSERT_TRUE(c.status.ok()) << c.status;
  EXPECT_EQ(c.rejected, 1);
  ASSERT_EQ(c.events.size(), 2);
  EXPECT_EQ(In(FieldOf(c.events[1], "body"), "text").string_value(), "small too");
}

// The bookkeeping (every nested message's size) is charged to the budget as it grows and given
// back with the conversion; past max_held, or without room in the budget, nothing more of it is
// kept and what the whole request needs is still known. Records whose messages span many blocks
// of it (and one rejected after it grew) come out whole.
TEST(OtlpConversionTest, TheBookkeepingIsChargedAsItGrowsAndBounded) {
  collector::ExportLogsServiceRequest request;
  auto* sl = request.add_resource_logs()->add_scope_logs();
  // Each value an empty AnyValue, a message of its own: 4 bytes of bookkeeping per 2 bytes.
  auto* rejected = sl->add_log_records()->mutable_body()->mutable_array_value();
  for (int i = 0; i < 300000; ++i) rejected->add_values();
  auto* taken = sl->add_log_records()->mutable_body()->mutable_array_value();
  for (int i = 0; i < 200000; ++i) taken->add_values();
  for (int i = 0; i < 3; ++i) sl->add_log_records()->mutable_body()->set_string_value("small");
  const std::string bytes = request.SerializeAsString();
  const size_t max_record_bytes = 1 << 20;  // the first record's event is larger

  runtime::MemoryBudget unlimited(0);  // counts what is charged
  size_t needs;
  {
    OtlpConversion conversion(OtlpSignal::kLogs, &unlimited);
    ASSERT_TRUE(conversion.Scan(bytes, kArrival, max_record_bytes, 1000).ok());
    EXPECT_EQ(conversion.rejected(), 1);
    ASSERT_EQ(conversion.records(), 4);
    ASSERT_TRUE(conversion.kept());
    needs = conversion.bookkeeping_bytes();
    EXPECT_GE(needs, 300000 * sizeof(uint32_t));
    EXPECT_LE(needs, 2 * bytes.size()) << "about twice the request's size at most";
    EXPECT_EQ(unlimited.in_use(), needs);
    auto buffer = std::make_unique<char[]>(conversion.bytes());
    std::vector<pb::Event> events;
    conversion.Write(buffer.get(), [&](absl::string_view event) {
      events.emplace_back();
      EXPECT_TRUE(events.back().ParseFromString(std::string(event)));
    });
    ASSERT_EQ(events.size(), 4);
    EXPECT_EQ(In(FieldOf(events[0], "body"), "structured").list_value().values_size(), 200000);
    EXPECT_EQ(In(FieldOf(events[3], "body"), "text").string_value(), "small");
  }
  EXPECT_EQ(unlimited.in_use(), 0) << "given back with the conversion";

  runtime::MemoryBudget small(64 << 10);
  for (const bool by_max_held : {true, false}) {
    SCOPED_TRACE(by_max_held ? "bounded by max_held" : "no room in the budget");
    OtlpConversion conversion(OtlpSignal::kLogs, by_max_held ? &unlimited : &small);
    ASSERT_TRUE(
        conversion.Scan(bytes, kArrival, max_record_bytes, 1000, by_max_held ? 64 << 10 : SIZE_MAX)
            .ok());
    EXPECT_FALSE(conversion.kept());
    EXPECT_EQ(conversion.bookkeeping_bytes(), needs);
    EXPECT_EQ(conversion.records(), 4);
    EXPECT_LE(unlimited.in_use() + small.in_use(), 64 << 10);
  }
  EXPECT_EQ(unlimited.in_use() + small.in_use(), 0);
}

TEST(OtlpConversionTest, RefusesWhatCannotBeCanonical) {
  collector::ExportLogsServiceRequest request;
  OneRecord(&request)->mutable_body()->set_string_value("ok");
  std::string bytes = request.SerializeAsString();
  // Invalid UTF-8 in a string value (protobuf's serializer only logs it).
  collector::ExportLogsServiceRequest bad;
  Attribute(OneRecord(&bad)->mutable_attributes(), "k")->mutable_value()->set_string_value("\xc3");
  OtlpConversion conversion(OtlpSignal::kLogs);
  absl::Status s = conversion.Scan(bad.SerializeAsString(), kArrival, 1 << 20, 100);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("resource_logs[0].scope_logs[0].log_records[0]"));
  EXPECT_THAT(s.message(), HasSubstr("UTF-8"));

  // Truncated.
  OtlpConversion truncated(OtlpSignal::kLogs);
  EXPECT_EQ(truncated.Scan(bytes.substr(0, bytes.size() - 1), kArrival, 1 << 20, 100).code(),
            absl::StatusCode::kInvalidArgument);
  OtlpConversion garbage(OtlpSignal::kLogs);
  EXPECT_EQ(garbage.Scan("\xff\xff\xff", kArrival, 1 << 20, 100).code(),
            absl::StatusCode::kInvalidArgument);

  // Too deep.
  collector::ExportLogsServiceRequest deep;
  common::AnyValue* v = OneRecord(&deep)->mutable_body();
  for (size_t i = 0; i <= kMaxValueDepth; ++i) v = v->mutable_array_value()->add_values();
  OtlpConversion deep_conversion(OtlpSignal::kLogs);
  s = deep_conversion.Scan(deep.SerializeAsString(), kArrival, 1 << 20, 100);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("deeper"));

  // Too many records.
  collector::ExportLogsServiceRequest many;
  auto* sl = many.add_resource_logs()->add_scope_logs();
  for (int i = 0; i < 11; ++i) sl->add_log_records();
  OtlpConversion many_conversion(OtlpSignal::kLogs);
  EXPECT_EQ(many_conversion.Scan(many.SerializeAsString(), kArrival, 1 << 20, 10).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(OtlpConversionTest, AnEmptyRequestHasNoRecords) {
  OtlpConversion conversion(OtlpSignal::kLogs);
  ASSERT_TRUE(conversion.Scan("", kArrival, 1 << 20, 10).ok());
  EXPECT_EQ(conversion.records(), 0);
  EXPECT_EQ(conversion.bytes(), 0);
}

}  // namespace
}  // namespace shipper
