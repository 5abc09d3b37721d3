// The Kafka output's settings through the real binary's --check_config: the one validation path
// start runs too.
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/shipper_process.h"

namespace shipper::testing {
namespace {

std::pair<int, std::string> Check(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--check_config", "-E", "shipper.output.kafka.enabled=true",
                                   "-E", "shipper.output.kafka.topic=events"};
  for (std::string& e : extra) {
    args.push_back("-E");
    args.push_back(std::move(e));
  }
  return RunShipper(args);
}

TEST(KafkaConfigTest, ValidSettingsPass) {
  auto [code, out] =
      Check({"shipper.output.kafka.hosts=a:9092,b:9092",
             "shipper.output.kafka.key=\"%{[host.name]}\"", "shipper.output.kafka.compression=zstd",
             "shipper.output.kafka.compression_level=3", "shipper.output.kafka.headers=env:prod",
             "shipper.output.kafka.librdkafka=linger.ms=20,socket.nagle.disable=true"});
  EXPECT_EQ(code, 0) << out;
}

// librdkafka takes the properties SASL over TLS sets (security.protocol=sasl_ssl and the rest).
TEST(KafkaConfigTest, SaslOverTlsPasses) {
  auto [code, out] = Check({"shipper.output.kafka.ssl.enabled=true",
                            "shipper.output.kafka.ssl.verification_mode=certificate",
                            "shipper.output.kafka.sasl.mechanism=SCRAM-SHA-256",
                            "shipper.output.kafka.sasl.username=shipper",
                            "shipper.output.kafka.sasl.password=s3cret"});
  EXPECT_EQ(code, 0) << out;
}

TEST(KafkaConfigTest, RequiredAcksZeroIsRefusedWithAReason) {
  auto [code, out] = Check({"shipper.output.kafka.required_acks=0"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.required_acks: 0 is refused")) << out;
  EXPECT_TRUE(absl::StrContains(out, "confirm delivery")) << out;
}

TEST(KafkaConfigTest, UnknownCompressionIsRefused) {
  auto [code, out] = Check({"shipper.output.kafka.compression=brotli"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.compression")) << out;
  EXPECT_TRUE(absl::StrContains(out, "brotli")) << out;
}

TEST(KafkaConfigTest, CompressionLevelOutOfRangeForTheCodec) {
  auto [code, out] =
      Check({"shipper.output.kafka.compression=gzip", "shipper.output.kafka.compression_level=11"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.compression_level: 11")) << out;
}

// The default level (gzip's 1) must not make the codecs without levels fail.
TEST(KafkaConfigTest, CodecsWithoutLevelsPassWithTheDefaultLevel) {
  for (const char* codec : {"none", "snappy"}) {
    auto [code, out] = Check({absl::StrCat("shipper.output.kafka.compression=", codec)});
    EXPECT_EQ(code, 0) << codec << ": " << out;
  }
}

TEST(KafkaConfigTest, PropertyLibrdkafkaRefusesIsNamed) {
  auto [code, out] = Check({"shipper.output.kafka.librdkafka=no.such.property=1,linger.ms=-5"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "librdkafka refuses no.such.property=1")) << out;
  EXPECT_TRUE(absl::StrContains(out, "librdkafka refuses linger.ms=-5")) << out;
}

TEST(KafkaConfigTest, PropertiesShipperSetsCannotBeOverridden) {
  auto [code, out] =
      Check({"shipper.output.kafka.librdkafka=enable.idempotence=false,"
             "request.required.acks=0"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(
      absl::StrContains(out, "enable.idempotence is set by shipper.output.kafka.required_acks"))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "request.required.acks is set by")) << out;
}

TEST(KafkaConfigTest, EveryProblemAtOnce) {
  auto [code, out] = Check({"shipper.output.kafka.hosts=nohost", "shipper.output.kafka.headers=x",
                            "shipper.output.kafka.sasl.mechanism=PLAIN",
                            "shipper.output.kafka.ssl.certificate=/c.pem"});
  EXPECT_NE(code, 0);
  for (const char* expected :
       {"'nohost' is not host:port", "'x' is not key:value", "sasl.mechanism: needs sasl.username",
        "files are set but TLS is off", "ssl.certificate and ssl.key go together"}) {
    EXPECT_TRUE(absl::StrContains(out, expected)) << expected << "\n" << out;
  }
}

TEST(KafkaConfigTest, TlsFilesMustBeReadablePem) {
  auto [code, out] =
      Check({"shipper.output.kafka.ssl.enabled=true",
             "shipper.output.kafka.ssl.certificate_authorities=/nonexistent/ca.pem",
             "shipper.output.kafka.sasl.mechanism=SCRAM-SHA-512",
             "shipper.output.kafka.sasl.username=u", "shipper.output.kafka.sasl.password=p"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.ssl.certificate_authorities")) << out;
  EXPECT_FALSE(absl::StrContains(out, "sasl")) << "SASL over TLS is valid:\n" << out;
}

TEST(KafkaConfigTest, UnknownSaslMechanismIsRefused) {
  auto [code, out] = Check({"shipper.output.kafka.sasl.mechanism=GSSAPI"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.sasl.mechanism")) << out;
}

TEST(KafkaConfigTest, TopicIsRequired) {
  auto [code, out] = RunShipper({"--check_config", "-E", "shipper.output.kafka.enabled=true"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.topic")) << out;
}

}  // namespace
}  // namespace shipper::testing
