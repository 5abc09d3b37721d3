#include "shipper/output/kafka/kafka_statistics.h"

#include "gtest/gtest.h"

namespace shipper {
namespace {

// Trimmed from a librdkafka 2.0.2 producer's statistics against the mock cluster.
constexpr char kStatistics[] = R"({
  "name": "rdkafka#producer-1", "type": "producer", "tx": 8, "tx_bytes": 488,
  "txmsgs": 11, "txmsg_bytes": 301,
  "brokers": {
    "127.0.0.1:34627/3": {"name": "127.0.0.1:34627/3", "nodeid": 3, "source": "configured",
                          "state": "UP", "txbytes": 361,
                          "rtt": {"min": 80, "max": 900, "avg": 250, "cnt": 4}},
    "127.0.0.1:34899/2": {"name": "127.0.0.1:34899/2", "nodeid": 2, "source": "learned",
                          "state": "INIT", "rtt": {"min": 0, "max": 0, "avg": 0, "cnt": 0}},
    ":0/internal": {"name": ":0/internal", "nodeid": -1, "source": "internal", "state": "UP"}
  },
  "topics": {}
})";

TEST(KafkaStatisticsTest, BrokersAndBytes) {
  absl::StatusOr<KafkaStatistics> stats = ParseKafkaStatistics(kStatistics);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->tx_bytes, 488u);
  EXPECT_EQ(stats->txmsg_bytes, 301u);
  ASSERT_EQ(stats->brokers.size(), 2u) << "the internal broker is left out";
  EXPECT_EQ(stats->brokers[0].name, "127.0.0.1:34627/3");
  EXPECT_EQ(stats->brokers[0].state, "UP");
  EXPECT_EQ(stats->brokers[0].rtt, absl::Microseconds(250));
  EXPECT_EQ(stats->brokers[1].state, "INIT");
  EXPECT_EQ(stats->brokers[1].rtt, std::nullopt) << "no response in the window";
}

TEST(KafkaStatisticsTest, MissingOrOddFieldsKeepTheirDefaults) {
  absl::StatusOr<KafkaStatistics> stats =
      ParseKafkaStatistics(R"({"tx_bytes": "many", "brokers": {"b:1/1": {"rtt": 3}}})");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->tx_bytes, 0u);
  ASSERT_EQ(stats->brokers.size(), 1u);
  EXPECT_EQ(stats->brokers[0].state, "");
  EXPECT_EQ(stats->brokers[0].rtt, std::nullopt);
}

TEST(KafkaStatisticsTest, NotAnObjectIsAnError) {
  EXPECT_FALSE(ParseKafkaStatistics("[1, 2]").ok());
  EXPECT_FALSE(ParseKafkaStatistics("{\"tx_bytes\": ").ok());
}

}  // namespace
}  // namespace shipper
