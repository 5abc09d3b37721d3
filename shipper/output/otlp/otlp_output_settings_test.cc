// The OTLP output's settings: which URL (or gRPC method) each signal's requests go to and name in
// messages, and the https-needs-TLS check over every URL the output uses.
#include "shipper/output/otlp/otlp_output_settings.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shipper {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

OtlpOutputSettings Http(const std::string& endpoint, const std::string& logs_endpoint) {
  OtlpOutputSettings s;
  s.enabled = true;
  s.protocol = OtlpProtocol::kHttpProtobuf;
  s.endpoint = endpoint;
  s.logs_endpoint = logs_endpoint;
  return s;
}

std::vector<std::string> ProblemsOf(const OtlpOutputSettings& s) {
  Problems problems;
  s.Validate(&problems);
  return problems.all();
}

TEST(OtlpOutputSettingsTest, EachSignalNamesItsOwnUrl) {
  const OtlpOutputSettings s = Http("http://collector:4318/", "");
  EXPECT_EQ(s.Target(OtlpSignal::kLogs), "http://collector:4318/v1/logs");
  EXPECT_EQ(s.Target(OtlpSignal::kTraces), "http://collector:4318/v1/traces");
  EXPECT_EQ(s.Target(OtlpSignal::kMetrics), "http://collector:4318/v1/metrics");
}

TEST(OtlpOutputSettingsTest, DerivedUrlsAreNamedAndNoneIsTheProtocol) {
  const OtlpOutputSettings derived = Http("", "http://es:9200/_otlp/v1/logs");
  EXPECT_EQ(derived.Target(OtlpSignal::kTraces), "http://es:9200/_otlp/v1/traces");
  EXPECT_EQ(derived.UrlKey(OtlpSignal::kTraces), "logs_endpoint");
  const OtlpOutputSettings none = Http("", "http://vendor/intake");
  EXPECT_EQ(none.Target(OtlpSignal::kLogs), "http://vendor/intake");
  EXPECT_EQ(none.Target(OtlpSignal::kMetrics), "http/protobuf");
  const OtlpOutputSettings both = Http("http://collector:4318", "http://vendor/logs");
  EXPECT_EQ(both.UrlKey(OtlpSignal::kLogs), "logs_endpoint");
  EXPECT_EQ(both.UrlKey(OtlpSignal::kTraces), "endpoint");
}

TEST(OtlpOutputSettingsTest, GrpcNamesTheSignalsMethod) {
  OtlpOutputSettings s;
  s.enabled = true;
  s.endpoint = "collector:4317";
  EXPECT_EQ(s.Target(OtlpSignal::kTraces),
            "collector:4317/opentelemetry.proto.collector.trace.v1.TraceService/Export");
  EXPECT_EQ(s.Target(OtlpSignal::kMetrics),
            "collector:4317/opentelemetry.proto.collector.metrics.v1.MetricsService/Export");
}

TEST(OtlpOutputSettingsTest, HttpsWithoutTlsIsRefusedForEveryUrlNamingItsKey) {
  // Only logs_endpoint, https: its derived siblings too, one problem.
  EXPECT_THAT(ProblemsOf(Http("", "https://es/_otlp/v1/logs")),
              ElementsAre(HasSubstr("shipper.output.otlp.logs_endpoint: 'https://es/_otlp/v1/logs' "
                                    "(log records) needs TLS, but shipper.output.otlp.ssl.enabled "
                                    "is false")));
  // Logs over http, traces and metrics over https: endpoint is named.
  EXPECT_THAT(ProblemsOf(Http("https://collector:4318", "http://vendor/logs")),
              ElementsAre(HasSubstr("shipper.output.otlp.endpoint: "
                                    "'https://collector:4318/v1/traces' (spans) needs TLS")));
  // Both keys https: both named.
  EXPECT_EQ(ProblemsOf(Http("https://collector:4318", "https://vendor/logs")).size(), 2u);
  EXPECT_THAT(ProblemsOf(Http("http://collector:4318", "")), IsEmpty());
  OtlpOutputSettings tls = Http("https://collector:4318", "https://vendor/logs");
  tls.ssl.enabled = true;
  EXPECT_THAT(ProblemsOf(tls), IsEmpty());
  EXPECT_TRUE(tls.AnyHttps());
  EXPECT_TRUE(Http("http://collector:4318", "https://vendor/logs").AnyHttps());
  EXPECT_FALSE(Http("http://collector:4318", "").AnyHttps());
}

TEST(OtlpOutputSettingsTest, MaxRequestBytesTakesUnits) {
  const auto set = [](const std::string& value, OtlpOutputSettings* s) {
    for (const Key<OtlpOutputSettings>& key : OtlpOutputKeys()) {
      if (key.name == "shipper.output.otlp.max_request_bytes") return key.set(value, *s);
    }
    return absl::NotFoundError("no max_request_bytes key");
  };
  OtlpOutputSettings s;
  ASSERT_TRUE(set("1MiB", &s).ok());
  EXPECT_EQ(s.max_request_bytes, 1u << 20);
  ASSERT_TRUE(set("4MiB", &s).ok());  // the documented example
  EXPECT_EQ(s.max_request_bytes, 4u << 20);
  ASSERT_TRUE(set("2KiB", &s).ok());
  EXPECT_EQ(s.max_request_bytes, 2048u);
  EXPECT_FALSE(set("1000", &s).ok());  // below the least, 1024 bytes
  EXPECT_FALSE(set("0KiB", &s).ok());
}

}  // namespace
}  // namespace shipper
