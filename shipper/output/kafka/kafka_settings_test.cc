// The Kafka output's settings as --check_config takes them: each key set from its scalar and
// Validate() run, then, when neither found a problem, Preflight() (as config.cc runs them).
#include "shipper/output/kafka/kafka_settings.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "shipper/config/loader.h"

namespace shipper {
namespace {

// Sets each "name=value" on enabled settings as -E does (the value read as YAML); 0 and nothing
// when the settings pass, else 1 and every problem, one per line (what --check_config exits with
// and prints).
std::pair<int, std::string> CheckSettings(KafkaSettings settings,
                                          const std::vector<std::string>& items) {
  settings.enabled = true;
  ConfigLoader loader(Bind(KafkaKeys(), &settings), {});
  for (const std::string& item : items) loader.LoadOverride(item);
  Problems& problems = loader.problems();
  settings.Validate(&problems);
  if (problems.empty()) settings.Preflight(&problems);
  return {problems.empty() ? 0 : 1, absl::StrJoin(problems.all(), "\n")};
}

std::pair<int, std::string> Check(std::vector<std::string> extra) {
  KafkaSettings settings;
  settings.topic = "events";
  return CheckSettings(std::move(settings), extra);
}

TEST(KafkaSettingsTest, ValidSettingsPass) {
  auto [code, out] =
      Check({"shipper.output.kafka.hosts=a:9092,b:9092",
             "shipper.output.kafka.key=\"%{[host.name]}\"", "shipper.output.kafka.compression=zstd",
             "shipper.output.kafka.compression_level=3", "shipper.output.kafka.headers=env:prod",
             "shipper.output.kafka.librdkafka=[linger.ms=20, socket.nagle.disable=true]"});
  EXPECT_EQ(code, 0) << out;
}

// librdkafka takes the properties SASL over TLS sets (security.protocol=sasl_ssl and the rest).
TEST(KafkaSettingsTest, SaslOverTlsPasses) {
  auto [code, out] = Check({"shipper.output.kafka.ssl.enabled=true",
                            "shipper.output.kafka.ssl.verification_mode=certificate",
                            "shipper.output.kafka.sasl.mechanism=SCRAM-SHA-256",
                            "shipper.output.kafka.sasl.username=shipper",
                            "shipper.output.kafka.sasl.password=s3cret"});
  EXPECT_EQ(code, 0) << out;
}

TEST(KafkaSettingsTest, RequiredAcksZeroIsRefusedWithAReason) {
  auto [code, out] = Check({"shipper.output.kafka.required_acks=0"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.required_acks: 0 is refused")) << out;
  EXPECT_TRUE(absl::StrContains(out, "confirm delivery")) << out;
}

TEST(KafkaSettingsTest, UnknownCompressionIsRefused) {
  auto [code, out] = Check({"shipper.output.kafka.compression=brotli"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.compression")) << out;
  EXPECT_TRUE(absl::StrContains(out, "brotli")) << out;
}

TEST(KafkaSettingsTest, CompressionLevelOutOfRangeForTheCodec) {
  auto [code, out] =
      Check({"shipper.output.kafka.compression=gzip", "shipper.output.kafka.compression_level=11"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.compression_level: 11")) << out;
}

// The default level (gzip's 1) must not make the codecs without levels fail.
TEST(KafkaSettingsTest, CodecsWithoutLevelsPassWithTheDefaultLevel) {
  for (const char* codec : {"none", "snappy"}) {
    auto [code, out] = Check({absl::StrCat("shipper.output.kafka.compression=", codec)});
    EXPECT_EQ(code, 0) << codec << ": " << out;
  }
}

TEST(KafkaSettingsTest, PropertyLibrdkafkaRefusesIsNamed) {
  auto [code, out] = Check({"shipper.output.kafka.librdkafka=[no.such.property=1, linger.ms=-5]"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "librdkafka refuses no.such.property=1")) << out;
  EXPECT_TRUE(absl::StrContains(out, "librdkafka refuses linger.ms=-5")) << out;
}

TEST(KafkaSettingsTest, PropertiesShipperSetsCannotBeOverridden) {
  auto [code, out] = Check(
      {"shipper.output.kafka.librdkafka=[enable.idempotence=false, request.required.acks=0]"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(
      absl::StrContains(out, "enable.idempotence is set by shipper.output.kafka.required_acks"))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "request.required.acks is set by")) << out;
}

// Each pass-through property that would weaken at-least-once delivery or the order within a
// partition, or keep a Write() from ever ending, is refused, naming what governs it (librdkafka
// 2.0.2's CONFIGURATION.md describes each; aliases and the topic. prefix set them too).
TEST(KafkaSettingsTest, PropertiesThatWeakenDeliveryOrOrderAreRefused) {
  const std::pair<const char*, const char*> refused[] = {
      {"max.in.flight=5", "max.in.flight is Shipper's to set: one produce request in flight"},
      {"max.in.flight.requests.per.connection=2", "one produce request in flight"},
      {"acks=all", "acks is set by shipper.output.kafka.required_acks"},
      {"topic.acks=0", "topic.acks is set by shipper.output.kafka.required_acks"},
      {"request.required.acks=1", "is set by shipper.output.kafka.required_acks"},
      {"enable.idempotence=false", "is set by shipper.output.kafka.required_acks"},
      {"enable.gapless.guarantee=false", "enable.gapless.guarantee is Shipper's to set"},
      {"message.timeout.ms=0", "message.timeout.ms is set by shipper.output.kafka.timeout"},
      {"delivery.timeout.ms=0", "is set by shipper.output.kafka.timeout"},
      {"topic.message.timeout.ms=0", "is set by shipper.output.kafka.timeout"},
      {"retries=0", "until shipper.output.kafka.timeout"},
      {"message.send.max.retries=3", "until shipper.output.kafka.timeout"},
      {"queuing.strategy=lifo", "reorders"},
      {"delivery.report.only.error=true", "delivery report"},
      {"dr_msg_cb=x", "delivery report"},
      {"enabled_events=1", "callbacks"},
      {"transactional.id=shipper", "not transactional"},
      {"socket.max.fails=0", "desynchronize"},
      {"partitioner=murmur2", "partitioner is set by shipper.output.kafka.partition"},
      {"queue.buffering.max.kbytes=64", "would never be queued"},
  };
  for (const auto& [property, why] : refused) {
    auto [code, out] = Check({absl::StrCat("shipper.output.kafka.librdkafka=", property)});
    EXPECT_NE(code, 0) << property;
    EXPECT_TRUE(absl::StrContains(out, why)) << property << ": " << out;
    EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.librdkafka: ")) << out;
  }
  auto [code, out] = Check({"shipper.output.kafka.partition=round_robin",
                            "shipper.output.kafka.librdkafka=partitioner=random"});
  EXPECT_TRUE(absl::StrContains(out, "set by shipper.output.kafka.partition")) << out;
  // What weakens nothing passes: batching, buffers that hold a message, statistics, a deprecated
  // property librdkafka ignores.
  std::tie(code, out) =
      Check({"shipper.output.kafka.librdkafka=[linger.ms=50, batch.num.messages=500, "
             "queue.buffering.max.kbytes=65536, queue.buffering.max.messages=1000, "
             "statistics.interval.ms=1000, produce.offset.report=true, socket.timeout.ms=5000]"});
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = Check({"shipper.output.kafka.max_message_bytes=10000",
                               "shipper.output.kafka.librdkafka=queue.buffering.max.kbytes=80"});
  EXPECT_EQ(code, 0) << "room for one message of 10000 bytes and its headroom: " << out;
}

TEST(KafkaSettingsTest, EveryProblemAtOnce) {
  auto [code, out] = Check({"shipper.output.kafka.hosts=nohost", "shipper.output.kafka.headers=x",
                            "shipper.output.kafka.sasl.mechanism=PLAIN",
                            "shipper.output.kafka.ssl.certificate=/c.pem"});
  EXPECT_NE(code, 0);
  for (const char* expected :
       {"'nohost' is not host:port", "'x' is not key:value", "sasl.mechanism: needs sasl.username",
        "files are set but TLS is off",
        "ssl.certificate and shipper.output.kafka.ssl.key go together"}) {
    EXPECT_TRUE(absl::StrContains(out, expected)) << expected << "\n" << out;
  }
}

TEST(KafkaSettingsTest, TlsFilesMustBeReadablePem) {
  auto [code, out] =
      Check({"shipper.output.kafka.ssl.enabled=true",
             "shipper.output.kafka.ssl.certificate_authorities=/nonexistent/ca.pem",
             "shipper.output.kafka.sasl.mechanism=SCRAM-SHA-512",
             "shipper.output.kafka.sasl.username=u", "shipper.output.kafka.sasl.password=p"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.ssl.certificate_authorities")) << out;
  EXPECT_FALSE(absl::StrContains(out, "sasl")) << "SASL over TLS is valid:\n" << out;
}

TEST(KafkaSettingsTest, UnknownSaslMechanismIsRefused) {
  auto [code, out] = Check({"shipper.output.kafka.sasl.mechanism=GSSAPI"});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.sasl.mechanism")) << out;
}

TEST(KafkaSettingsTest, TopicIsRequired) {
  auto [code, out] = CheckSettings(KafkaSettings(), {});
  EXPECT_NE(code, 0);
  EXPECT_TRUE(absl::StrContains(out, "shipper.output.kafka.topic")) << out;
}

}  // namespace
}  // namespace shipper
