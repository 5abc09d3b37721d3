#include "shipper/input/otlp/otlp_json.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"
#include "proto/rpc/status.pb.h"

namespace shipper::otlp {
namespace {

using opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest;
using opentelemetry::proto::collector::logs::v1::ExportLogsServiceResponse;
using ::testing::HasSubstr;

ExportLogsServiceRequest Decode(const std::string& json) {
  std::string bytes;
  absl::Status status = JsonToProtobufRequest(json, &bytes);
  EXPECT_TRUE(status.ok()) << status;
  ExportLogsServiceRequest request;
  EXPECT_TRUE(request.ParseFromString(bytes));
  return request;
}

ExportLogsServiceRequest FromText(const std::string& text) {
  ExportLogsServiceRequest request;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &request)) << text;
  return request;
}

void ExpectDecodesTo(const std::string& json, const std::string& text) {
  const ExportLogsServiceRequest got = Decode(json), want = FromText(text);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got, want))
      << "got:\n"
      << got.DebugString() << "want:\n"
      << want.DebugString();
}

std::string ErrorOf(const std::string& json) {
  std::string bytes;
  absl::Status status = JsonToProtobufRequest(json, &bytes);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << json;
  return std::string(status.message());
}

// A record wrapped in a request: {"resourceLogs":[{"scopeLogs":[{"logRecords":[<record>]}]}]}.
std::string WithRecord(const std::string& record) {
  return absl::StrCat(R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[)", record, "]}]}]}");
}
std::string RecordText(const std::string& record) {
  return absl::StrCat("resource_logs { scope_logs { log_records { ", record, " } } }");
}

// What the OpenTelemetry JS SDK's JSON exporter sends (0.223), every field of it.
TEST(JsonToProtobufRequest, DecodesWhatTheJsSdkSends) {
  ExpectDecodesTo(
      R"({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":
          {"stringValue":"svc"}}],"droppedAttributesCount":0},"scopeLogs":[{"scope":
          {"name":"scope","version":"1.2.3"},"logRecords":[{"timeUnixNano":"1700000000000000001",
          "observedTimeUnixNano":"1700000000001000000","severityNumber":9,"severityText":"info",
          "body":{"stringValue":"hello"},"eventName":"ev","attributes":[
          {"key":"max","value":{"intValue":9007199254740991}},
          {"key":"ratio","value":{"doubleValue":0.5}},{"key":"ok","value":{"boolValue":true}},
          {"key":"tags","value":{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":1}]}}},
          {"key":"nested","value":{"kvlistValue":{"values":[{"key":"k","value":
          {"stringValue":"v"}}]}}}],"droppedAttributesCount":0,"flags":1,
          "traceId":"0000000000000000000000000000002A","spanId":"00000000000000ff"}]}]}]})",
      R"(resource_logs {
           resource { attributes { key: "service.name" value { string_value: "svc" } } }
           scope_logs {
             scope { name: "scope" version: "1.2.3" }
             log_records {
               time_unix_nano: 1700000000000000001 observed_time_unix_nano: 1700000000001000000
               severity_number: SEVERITY_NUMBER_INFO severity_text: "info"
               body { string_value: "hello" } event_name: "ev"
               attributes { key: "max" value { int_value: 9007199254740991 } }
               attributes { key: "ratio" value { double_value: 0.5 } }
               attributes { key: "ok" value { bool_value: true } }
               attributes { key: "tags" value { array_value {
                 values { string_value: "a" } values { int_value: 1 } } } }
               attributes { key: "nested" value { kvlist_value {
                 values { key: "k" value { string_value: "v" } } } } }
               flags: 1
               trace_id: "\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\052"
               span_id: "\000\000\000\000\000\000\000\377"
             }
           }
         })");
}

TEST(JsonToProtobufRequest, TakesSixtyFourBitIntegersAsStringsAndNumbersExactly) {
  ExpectDecodesTo(WithRecord(R"({"timeUnixNano":"18446744073709551615","attributes":[
                      {"key":"a","value":{"intValue":"9223372036854775807"}},
                      {"key":"b","value":{"intValue":-9223372036854775808}},
                      {"key":"c","value":{"intValue":9223372036854775807}},
                      {"key":"d","value":{"intValue":"-9223372036854775808"}},
                      {"key":"e","value":{"intValue":1e3}}]})"),
                  RecordText(R"(time_unix_nano: 18446744073709551615
                      attributes { key: "a" value { int_value: 9223372036854775807 } }
                      attributes { key: "b" value { int_value: -9223372036854775808 } }
                      attributes { key: "c" value { int_value: 9223372036854775807 } }
                      attributes { key: "d" value { int_value: -9223372036854775808 } }
                      attributes { key: "e" value { int_value: 1000 } })"));
  ExpectDecodesTo(WithRecord(R"({"observedTimeUnixNano":18446744073709551615})"),
                  RecordText("observed_time_unix_nano: 18446744073709551615"));
}

TEST(JsonToProtobufRequest, RefusesIntegersOutOfRangeOrNotIntegers) {
  EXPECT_THAT(ErrorOf(WithRecord(R"({"attributes":[{"key":"a","value":
                                   {"intValue":"9223372036854775808"}}]})")),
              HasSubstr("resourceLogs[0].scopeLogs[0].logRecords[0].attributes[0].value.intValue: "
                        "expected an integer from -9223372036854775808 to 9223372036854775807"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"timeUnixNano":-1})")), HasSubstr("timeUnixNano"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"timeUnixNano":"12x"})")), HasSubstr("timeUnixNano"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"flags":1.5})")), HasSubstr("flags"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"droppedAttributesCount":4294967296})")),
              HasSubstr("droppedAttributesCount: expected an integer from 0 to 4294967295"));
}

TEST(JsonToProtobufRequest, TakesIdsAsHexOfEitherCaseNotBase64) {
  ExpectDecodesTo(
      WithRecord(R"({"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"eee19b7ec3c1b174"})"),
      RecordText(R"(trace_id: "\x5b\x8e\xff\xf7\x98\x03\x81\x03\xd2\x69\xb6\x33\x81\x3f\xc6\x0c"
                    span_id: "\xee\xe1\x9b\x7e\xc3\xc1\xb1\x74")"));
  ExpectDecodesTo(WithRecord(R"({"traceId":"","spanId":null})"), RecordText(""));
  // The base64 of 16 bytes, as protobuf's own JSON mapping would write it.
  EXPECT_THAT(ErrorOf(WithRecord(R"({"traceId":"W47/95gDgQPSabYzgT/GDA=="})")),
              HasSubstr("logRecords[0].traceId: expected 32 hex digits or \"\" (OTLP/JSON ids are "
                        "hex, not base64)"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"spanId":"eee19b7ec3c1b17"})")),
              HasSubstr("spanId: expected 16 hex digits"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"spanId":"eee19b7ec3c1b17g"})")), HasSubstr("spanId"));
}

TEST(JsonToProtobufRequest, IgnoresUnknownFieldsWhereverTheyAre) {
  ExpectDecodesTo(
      R"({"future":{"a":[1,{"b":null}]},"resourceLogs":[{"entityRefs":[{"type":"x"}],
          "resource":{"x":1},"scopeLogs":[{"scope":{"name":"s","y":[]},"logRecords":[
          {"newField":"z","body":{"stringValue":"b","otherValue":3}}]}]}]})",
      R"(resource_logs { resource {} scope_logs { scope { name: "s" }
           log_records { body { string_value: "b" } } } })");
}

TEST(JsonToProtobufRequest, TakesTheProtoNamesAndNullsAndEnumNames) {
  ExpectDecodesTo(
      R"({"resource_logs":[{"schema_url":"u","scope_logs":[{"log_records":[
          {"time_unix_nano":"5","severity_number":"SEVERITY_NUMBER_WARN","severity_text":null,
           "trace_id":"0102030405060708090a0b0c0d0e0f10","body":{"string_value":"s"}}]}]}]})",
      R"(resource_logs { schema_url: "u" scope_logs { log_records {
           time_unix_nano: 5 severity_number: SEVERITY_NUMBER_WARN body { string_value: "s" }
           trace_id: "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10" } } })");
}

TEST(JsonToProtobufRequest, TakesEveryValueKind) {
  const ExportLogsServiceRequest request = Decode(WithRecord(R"({"attributes":[
      {"key":"bytes","value":{"bytesValue":"AAH/"}},
      {"key":"websafe","value":{"bytesValue":"AAH_"}},
      {"key":"nan","value":{"doubleValue":"NaN"}},
      {"key":"inf","value":{"doubleValue":"-Infinity"}},
      {"key":"exact","value":{"doubleValue":0.1}},
      {"key":"empty","value":{}},
      {"key":"utf8","value":{"stringValue":"日本 \ud83d\ude00 \"q\""}}]})"));
  const auto& a = request.resource_logs(0).scope_logs(0).log_records(0).attributes();
  ASSERT_EQ(a.size(), 7);
  EXPECT_EQ(a[0].value().bytes_value(), std::string("\x00\x01\xff", 3));
  EXPECT_EQ(a[1].value().bytes_value(), std::string("\x00\x01\xff", 3));
  EXPECT_TRUE(std::isnan(a[2].value().double_value()));
  EXPECT_EQ(a[3].value().double_value(), -INFINITY);
  EXPECT_EQ(a[4].value().double_value(), 0.1);
  EXPECT_TRUE(a[5].has_value());
  EXPECT_EQ(a[5].value().value_case(), a[5].value().VALUE_NOT_SET);
  EXPECT_EQ(a[6].value().string_value(), "日本 \xF0\x9F\x98\x80 \"q\"");
}

TEST(JsonToProtobufRequest, SaysWhatIsWrongAndWhere) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("OTLP/JSON: not JSON at byte 0"));
  EXPECT_THAT(ErrorOf(R"({"resourceLogs":[}")"), HasSubstr("not JSON at byte 17"));
  EXPECT_THAT(ErrorOf("[]"), HasSubstr("request: expected an object"));
  EXPECT_THAT(ErrorOf(R"({"resourceLogs":{}})"),
              HasSubstr("request.resourceLogs: expected a list"));
  EXPECT_THAT(ErrorOf(R"({"resourceLogs":[{"scopeLogs":[{},{"scope":{"name":7}}]}]})"),
              HasSubstr("request.resourceLogs[0].scopeLogs[1].scope.name: expected a string"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"body":{"stringValue":"a","intValue":1}})")),
              HasSubstr("logRecords[0].body: holds more than one value"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"body":{"bytesValue":"a"}})")),
              HasSubstr("body.bytesValue: not base64"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"body":{"boolValue":"true"}})")),
              HasSubstr("body.boolValue: expected true or false"));
  EXPECT_THAT(ErrorOf(WithRecord(R"({"severityNumber":"LOUD"})")),
              HasSubstr("severityNumber: expected an integer or a SeverityNumber name"));
  // Invalid UTF-8 in a string is refused by the parser, as protobuf refuses it in a string field.
  EXPECT_THAT(ErrorOf(WithRecord("{\"body\":{\"stringValue\":\"\xC3\x28\"}}")),
              HasSubstr("not JSON at byte"));
}

TEST(JsonToProtobufRequest, RefusesNestingDeeperThanProtobufParses) {
  // A body of n arrays, each one element deep: two messages (AnyValue, ArrayValue) per level.
  const auto nested = [](int n) {
    std::string body;
    for (int i = 0; i < n; ++i) body += R"({"arrayValue":{"values":[)";
    body += R"({"intValue":1})";
    for (int i = 0; i < n; ++i) body += "]}}";
    return WithRecord(absl::StrCat(R"({"body":)", body, "}"));
  };
  std::string bytes;
  ASSERT_TRUE(JsonToProtobufRequest(nested(40), &bytes).ok());
  ExportLogsServiceRequest request;
  EXPECT_TRUE(request.ParseFromString(bytes));
  EXPECT_THAT(ErrorOf(nested(100)), HasSubstr("nested deeper than 100 messages"));
  // Far deeper than any stack would take recursively: refused, not a crash.
  EXPECT_THAT(ErrorOf(nested(200000)), HasSubstr("nested deeper than 100 messages"));
}

TEST(JsonToProtobufRequest, RefusesAFieldGivenTwiceInEitherSpelling) {
  for (const char* json : {
           R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{}]}]}],)"
           R"("resource_logs":[{"scopeLogs":[{"logRecords":[{}]}]}]})",
           R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{},"body":{}}]}]}]})",
       }) {
    std::string bytes;
    absl::Status status = JsonToProtobufRequest(json, &bytes);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(status.message(), HasSubstr("given twice")) << json;
  }
}

TEST(JsonToProtobufRequest, AppendsToWhatTheBufferHolds) {
  std::string bytes = "x";
  ASSERT_TRUE(JsonToProtobufRequest(R"({"resourceLogs":[{}]})", &bytes).ok());
  ExportLogsServiceRequest request;
  ASSERT_TRUE(request.ParseFromString(bytes.substr(1)));
  EXPECT_EQ(request.resource_logs_size(), 1);
}

// `n` empty records in one scope, in either spelling of the lists' names.
std::string EmptyRecords(int n, bool snake = false) {
  std::string records;
  for (int i = 0; i < n; ++i) absl::StrAppend(&records, i > 0 ? "," : "", "{}");
  return snake
             ? absl::StrCat(R"({"resource_logs":[{"scope_logs":[{"log_records":[)", records,
                            "]}]}]}")
             : absl::StrCat(R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[)", records, "]}]}]}");
}

TEST(JsonDecodingCost, CountsTheRecordsAndWhatDecodingHoldsBeforeItIsBuilt) {
  for (bool snake : {false, true}) {
    const std::string json = EmptyRecords(1000, snake);
    absl::StatusOr<JsonCost> cost = JsonDecodingCost(json, 1000);
    ASSERT_TRUE(cost.ok()) << cost.status();
    EXPECT_EQ(cost->records, 1000);
    // `{}` is 3 bytes of JSON and a document value, a LogRecord and its slot once decoded.
    EXPECT_GT(cost->bytes, 1000 * 200);
  }
  // Lists of that name elsewhere are not records.
  absl::StatusOr<JsonCost> elsewhere =
      JsonDecodingCost(R"({"logRecords":[{},{}],"resourceLogs":[{"logRecords":[{}]}]})", 1);
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_EQ(elsewhere->records, 0);
}

TEST(JsonDecodingCost, RefusesTooManyRecordsOrTooDeepWhileReading) {
  absl::StatusOr<JsonCost> many = JsonDecodingCost(EmptyRecords(1001), 1000);
  EXPECT_EQ(many.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(many.status().message(), HasSubstr("more than 1000 log records"));
  // A million lists deep: refused at the depth the decoder takes, its reader's stack no deeper.
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  absl::StatusOr<JsonCost> nested = JsonDecodingCost(deep, 1000);
  EXPECT_EQ(nested.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nested.status().message(), HasSubstr("nested deeper"));
  EXPECT_EQ(JsonDecodingCost("{", 1000).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ResponseToJson, IsEmptyOnFullSuccessAndCarriesAPartialSuccess) {
  ExportLogsServiceResponse response;
  EXPECT_EQ(ResponseToJson(response), "{}");
  response.mutable_partial_success()->set_rejected_log_records(2);
  response.mutable_partial_success()->set_error_message("2 records \"too\" large");
  EXPECT_EQ(
      ResponseToJson(response),
      R"({"partialSuccess":{"rejectedLogRecords":"2","errorMessage":"2 records \"too\" large"}})");
}

// A request of traces or metrics, decoded and compared with `text` (text format).
template <typename Request>
void ExpectSignalDecodesTo(OtlpSignal signal, const std::string& json, const std::string& text) {
  std::string bytes;
  const absl::Status status = JsonToProtobufRequest(json, &bytes, signal);
  ASSERT_TRUE(status.ok()) << status;
  Request got, want;
  ASSERT_TRUE(got.ParseFromString(bytes));
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &want)) << text;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got, want))
      << "got:\n"
      << got.DebugString() << "want:\n"
      << want.DebugString();
}

// As the JS SDK's JSON trace exporter writes a span: ids in hex, enums as integers, times as
// strings; a link and an event.
TEST(JsonToProtobufRequest, DecodesSpans) {
  using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
  ExpectSignalDecodesTo<ExportTraceServiceRequest>(
      OtlpSignal::kTraces,
      R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":
      {"stringValue":"cart"}}],"droppedAttributesCount":0},"scopeSpans":[{"scope":{"name":"t",
      "version":"1"},"spans":[{"traceId":"0AF7651916CD43DD8448EB211C80319C","spanId":
      "b7ad6b7169203331","parentSpanId":"","traceState":"k=v","name":"GET","kind":2,
      "startTimeUnixNano":"1700000000000000000","endTimeUnixNano":1700000000000000005,
      "attributes":[{"key":"n","value":{"intValue":"7"}}],"droppedAttributesCount":0,
      "events":[{"timeUnixNano":"1700000000000000001","name":"e","attributes":[],
      "droppedAttributesCount":1}],"droppedEventsCount":0,"links":[{"traceId":
      "00000000000000000000000000000001","spanId":"0000000000000002","attributes":[],
      "droppedAttributesCount":0,"flags":257}],"droppedLinksCount":0,"status":{"code":
      "STATUS_CODE_ERROR","message":"m"},"flags":1,"unknown":{"x":1}}]}]}]})",
      R"(resource_spans { resource { attributes { key: "service.name" value { string_value: "cart" } } }
         scope_spans { scope { name: "t" version: "1" }
         spans { trace_id: "\x0a\xf7\x65\x19\x16\xcd\x43\xdd\x84\x48\xeb\x21\x1c\x80\x31\x9c"
                 span_id: "\xb7\xad\x6b\x71\x69\x20\x33\x31" trace_state: "k=v" name: "GET"
                 kind: SPAN_KIND_SERVER start_time_unix_nano: 1700000000000000000
                 end_time_unix_nano: 1700000000000000005
                 attributes { key: "n" value { int_value: 7 } }
                 events { time_unix_nano: 1700000000000000001 name: "e" dropped_attributes_count: 1 }
                 links { trace_id: "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01"
                         span_id: "\0\0\0\0\0\0\0\x02" flags: 257 }
                 status { code: STATUS_CODE_ERROR message: "m" } flags: 1 } } })");
}

// Every kind of data point as the JS SDK's JSON metric exporter writes them.
TEST(JsonToProtobufRequest, DecodesEveryKindOfDataPoint) {
  using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
  ExpectSignalDecodesTo<ExportMetricsServiceRequest>(
      OtlpSignal::kMetrics,
      R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[
      {"name":"g","unit":"1","gauge":{"dataPoints":[{"asDouble":0.5,"timeUnixNano":"3",
        "exemplars":[{"asInt":"9","spanId":"0000000000000002","traceId":
        "00000000000000000000000000000001","filteredAttributes":[]}]}]}},
      {"name":"s","sum":{"aggregationTemporality":2,"isMonotonic":true,"dataPoints":[
        {"asInt":"-4","startTimeUnixNano":"1","timeUnixNano":"2"}]}},
      {"name":"h","histogram":{"aggregationTemporality":1,"dataPoints":[{"count":"3","sum":6,
        "min":1,"max":"Infinity","bucketCounts":["1","2"],"explicitBounds":[2.5]}]}},
      {"name":"e","exponential_histogram":{"dataPoints":[{"count":"2","scale":-3,"zeroCount":"1",
        "positive":{"offset":-2,"bucketCounts":["1"]},"negative":{}}]}},
      {"name":"q","summary":{"dataPoints":[{"count":"2","sum":1,"quantileValues":[
        {"quantile":0.5,"value":0.4}]}]}}]}]}]})",
      R"(resource_metrics { scope_metrics {
         metrics { name: "g" unit: "1" gauge { data_points { as_double: 0.5 time_unix_nano: 3
           exemplars { as_int: 9 span_id: "\0\0\0\0\0\0\0\x02"
                       trace_id: "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01" } } } }
         metrics { name: "s" sum { aggregation_temporality: AGGREGATION_TEMPORALITY_CUMULATIVE
           is_monotonic: true data_points { as_int: -4 start_time_unix_nano: 1 time_unix_nano: 2 } } }
         metrics { name: "h" histogram { aggregation_temporality: AGGREGATION_TEMPORALITY_DELTA
           data_points { count: 3 sum: 6 min: 1 max: inf bucket_counts: [1, 2]
                         explicit_bounds: [2.5] } } }
         metrics { name: "e" exponential_histogram { data_points { count: 2 scale: -3 zero_count: 1
           positive { offset: -2 bucket_counts: [1] } negative { } } } }
         metrics { name: "q" summary { data_points { count: 2 sum: 1
           quantile_values { quantile: 0.5 value: 0.4 } } } } } })");
}

TEST(JsonToProtobufRequest, SaysWhatIsWrongInASpanOrPointAndWhere) {
  std::string bytes;
  absl::Status id = JsonToProtobufRequest(
      R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"parentSpanId":"abc"}]}]}]})", &bytes,
      OtlpSignal::kTraces);
  EXPECT_EQ(id.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(id.message(), HasSubstr("resourceSpans[0].scopeSpans[0].spans[0].parentSpanId"));
  EXPECT_THAT(id.message(), HasSubstr("16 hex digits"));
  absl::Status twice = JsonToProtobufRequest(
      R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"a","name":"b"}]}]}]})", &bytes,
      OtlpSignal::kMetrics);
  EXPECT_THAT(twice.message(), HasSubstr("metrics[0].name: given twice"));
  absl::Status kind = JsonToProtobufRequest(
      R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"SIDEWAYS"}]}]}]})", &bytes,
      OtlpSignal::kTraces);
  EXPECT_THAT(kind.message(), HasSubstr("spans[0].kind: expected an integer or a name"));
}

TEST(JsonDecodingCost, CountsSpansAndDataPoints) {
  absl::StatusOr<JsonCost> spans =
      JsonDecodingCost(R"({"resourceSpans":[{"scopeSpans":[{"spans":[{},{},{"events":[{}]}]}]}]})",
                       100, OtlpSignal::kTraces);
  ASSERT_TRUE(spans.ok()) << spans.status();
  EXPECT_EQ(spans->records, 3);
  const std::string points =
      R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"gauge":{"dataPoints":[{},{}]}},)"
      R"({"exponentialHistogram":{"dataPoints":[{}]}},{"summary":{"data_points":[{}]}}]}]}]})";
  absl::StatusOr<JsonCost> counted = JsonDecodingCost(points, 100, OtlpSignal::kMetrics);
  ASSERT_TRUE(counted.ok()) << counted.status();
  EXPECT_EQ(counted->records, 4);
  absl::StatusOr<JsonCost> many = JsonDecodingCost(points, 3, OtlpSignal::kMetrics);
  EXPECT_EQ(many.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(many.status().message(), HasSubstr("more than 3 data points"));
}

TEST(ResponseToJson, NamesEachSignalsRejectedCount) {
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse spans;
  spans.mutable_partial_success()->set_rejected_spans(3);
  EXPECT_EQ(ResponseToJson(spans), R"({"partialSuccess":{"rejectedSpans":"3","errorMessage":""}})");
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse points;
  EXPECT_EQ(ResponseToJson(points), "{}");
  points.mutable_partial_success()->set_rejected_data_points(1);
  EXPECT_THAT(ResponseToJson(points), HasSubstr(R"("rejectedDataPoints":"1")"));
}

TEST(StatusBody, IsAGoogleRpcStatusInEitherEncoding) {
  const absl::Status status = absl::InvalidArgumentError("bad \"thing\"");
  google::rpc::Status decoded;
  ASSERT_TRUE(decoded.ParseFromString(StatusBody(status, /*json=*/false)));
  EXPECT_EQ(decoded.code(), 3);
  EXPECT_EQ(decoded.message(), "bad \"thing\"");
  EXPECT_EQ(StatusBody(status, /*json=*/true), R"({"code":3,"message":"bad \"thing\""})");
}

}  // namespace
}  // namespace shipper::otlp
