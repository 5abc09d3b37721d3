// The Kafka output against a real Apache Kafka (real_kafka.h: one KRaft node, broker and
// controller, in a JVM of its own), where the mock cluster's model of a broker ends: log segments,
// a controller, the idempotent producer's sequence numbers checked by the broker, a process that
// can be killed and frozen. One node serves every test case, each with a topic of its own; a case
// that kills or freezes it leaves it running again.
#include <signal.h>

#include <iostream>
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/kafka/delivery_checks.h"
#include "tests/kafka/real_kafka.h"
#include "tests/outputs/producer_client.h"
#include "tests/testing/shipper_process.h"

namespace shipper::testing {
namespace {

constexpr int kPartitions = 6;

class KafkaRealTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const absl::Time start = absl::Now();
    auto kafka = RealKafka::Start(1, TempDir("kafka"));
    ASSERT_TRUE(kafka.ok()) << kafka.status();
    kafka_ = kafka->release();
    std::cout << "Kafka node serving after " << absl::Now() - start << "\n";
  }
  static void TearDownTestSuite() {
    delete kafka_;
    kafka_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(kafka_, nullptr) << "Kafka did not start"; }

  // A shipper producing into `topic` on the node, with `extra` (each a -E) added and `flags`
  // (shipper flags) before them.
  static absl::StatusOr<ShipperProcess> StartShipper(const std::string& topic,
                                                     const std::vector<std::string>& extra = {},
                                                     const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args = flags;
    for (std::string& arg : KafkaShipperArgs(kafka_->bootstraps(), topic)) args.push_back(arg);
    for (const std::string& e : extra) args.insert(args.end(), {"-E", e});
    return ShipperProcess::Start(args);
  }

  // Waits until `condition` holds, for `timeout` at most; whether it holds.
  static bool Await(const std::function<bool()>& condition,
                    absl::Duration timeout = absl::Seconds(60)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!condition() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
    return condition();
  }

  static RealKafka* kafka_;
};

RealKafka* KafkaRealTest::kafka_ = nullptr;

// Fails unless each partition holds its events in the order they were published (ascending
// test_seq): the idempotent producer's retries neither reorder nor duplicate. Only with one
// output worker: two workers produce their batches side by side, in either order.
void ExpectOrderedPerPartition(const std::vector<KafkaMessage>& messages) {
  std::map<int32_t, int64_t> last;
  int disorders = 0;
  for (const KafkaMessage& m : messages) {
    const int64_t seq = TestSeq(m.value);
    auto [it, first] = last.emplace(m.partition, seq);
    if (!first) {
      if (seq <= it->second && ++disorders <= 5) {
        ADD_FAILURE() << "partition " << m.partition << ": event " << seq << " after "
                      << it->second;
      }
      it->second = seq;
    }
  }
  EXPECT_EQ(disorders, 0);
}

TEST_F(KafkaRealTest, TwoHundredThousandEventsArriveExactlyOnceInOrderPerPartition) {
  constexpr uint64_t kEvents = 200000;
  const std::string topic = "exactly-once";
  ASSERT_TRUE(kafka_->CreateTopic(topic, kPartitions).ok());
  // One output worker (pools sized for one CPU): the order of the batches is the queue's.
  auto shipper = StartShipper(topic, {}, {"--cpus=1"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  ProducerClient client(shipper->address());
  const absl::Time start = absl::Now();
  ASSERT_EQ(client.Publish(0, kEvents, 500, absl::Now() + absl::Seconds(180)), kEvents);
  ASSERT_EQ(client.AwaitPersisted(kEvents, absl::Now() + absl::Seconds(180)), kEvents)
      << shipper->Log();
  const absl::Duration shipped = absl::Now() - start;

  auto messages = kafka_->Consume(topic, kPartitions, absl::Seconds(120));
  ASSERT_TRUE(messages.ok()) << messages.status();
  EXPECT_EQ(messages->size(), kEvents);
  EXPECT_EQ(CheckNothingLost(Copies(*messages), kEvents), 0) << "duplicates";
  ExpectOrderedPerPartition(*messages);
  std::cout << kEvents << " events persisted by Kafka (acks=all, idempotent) in " << shipped
            << ", read back exactly once\n";
}

TEST_F(KafkaRealTest, BrokerKilledAndRestartedMidStreamLosesNothingPersisted) {
  constexpr uint64_t kEvents = 60000;
  const std::string topic = "killed";
  ASSERT_TRUE(kafka_->CreateTopic(topic, kPartitions).ok());
  auto shipper = StartShipper(topic);
  ASSERT_TRUE(shipper.ok()) << shipper.status();

  Stream stream(*shipper, kEvents);
  stream.AwaitPersisted(kEvents / 4);
  kafka_->Kill(1);
  // Nothing is acknowledged by a dead broker: once the reports in flight have reached the index
  // (they are served every 100 ms), what it says persisted must all be in Kafka's log.
  const uint64_t at_kill = stream.persisted();
  ASSERT_TRUE(Await([&] { return absl::StrContains(shipper->Log(), "kafka:"); }))
      << "the shipper said nothing of the broker's death:\n"
      << shipper->Log();
  const uint64_t down = stream.persisted();
  ASSERT_LT(down, kEvents);
  const absl::Time restart = absl::Now();
  ASSERT_TRUE(kafka_->Restart(1).ok()) << kafka_->Log(1);
  std::cout << "Kafka node back after " << absl::Now() - restart << "\n";
  {
    // Read before the shipper catches up: every event at or below the index is there.
    auto messages = kafka_->Consume(topic, kPartitions, absl::Seconds(60));
    ASSERT_TRUE(messages.ok()) << messages.status();
    const auto copies = Copies(*messages);
    int missing = 0;
    for (uint64_t seq = 0; seq < down; ++seq) missing += copies.count(seq) == 0;
    EXPECT_EQ(missing, 0) << "of the " << down << " events persisted when the broker died ("
                          << at_kill << " at the kill)";
  }
  // The output recovers by itself: no shipper restart.
  ASSERT_NO_FATAL_FAILURE(stream.Finish(*shipper));
  auto messages = kafka_->Consume(topic, kPartitions, absl::Seconds(120));
  ASSERT_TRUE(messages.ok()) << messages.status();
  const int duplicates = CheckNothingLost(Copies(*messages), kEvents);
  std::cout << "persisted index " << down << " when the broker was killed; all " << kEvents
            << " events in Kafka after its restart, " << duplicates << " duplicates\n";
}

TEST_F(KafkaRealTest, BrokerFrozenPastTheTimeoutHoldsTheIndexThenCatchesUp) {
  constexpr uint64_t kEvents = 40000;
  const std::string topic = "frozen";
  ASSERT_TRUE(kafka_->CreateTopic(topic, kPartitions).ok());
  auto shipper = StartShipper(topic, {"shipper.output.kafka.timeout=2s"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  const auto metric = [&](absl::string_view name, const std::string& labels) {
    return Samples(MetricsPage(*shipper), name)[labels];
  };

  Stream stream(*shipper, kEvents);
  stream.AwaitPersisted(kEvents / 4);
  kafka_->Freeze(1);
  // A frozen broker keeps its connections open and answers nothing: librdkafka fails each
  // message once shipper.output.kafka.timeout has passed, and Shipper produces it again.
  const bool timed_out = Await([&] {
    return metric("shipper_kafka_delivery_errors_total", R"({code="_MSG_TIMED_OUT"})") > 0;
  });
  const uint64_t frozen = stream.persisted();
  const double retries = metric("shipper_output_retries_total", R"({output="kafka"})");
  const bool retried = Await(
      [&] { return metric("shipper_output_retries_total", R"({output="kafka"})") > retries; });
  const uint64_t still = stream.persisted();
  kafka_->Thaw(1);
  ASSERT_TRUE(timed_out) << shipper->Log();
  ASSERT_TRUE(retried) << "Shipper retried nothing while the broker was frozen:\n"
                       << shipper->Log();
  EXPECT_EQ(still, frozen) << "the persisted index moved while the broker was frozen";
  EXPECT_LT(frozen, kEvents);

  ASSERT_NO_FATAL_FAILURE(stream.Finish(*shipper));
  auto messages = kafka_->Consume(topic, kPartitions, absl::Seconds(120));
  ASSERT_TRUE(messages.ok()) << messages.status();
  const int duplicates = CheckNothingLost(Copies(*messages), kEvents);
  std::cout << "persisted index " << frozen << " while the broker was frozen; all " << kEvents
            << " events in Kafka after it thawed, " << duplicates << " duplicates\n";
}

// librdkafka 2.0 holds a message for a topic the cluster does not have until
// shipper.output.kafka.timeout and then says only "Message timed out": the output asks the
// brokers about the topic, and its retry log line names the topic and the key that sets it.
TEST_F(KafkaRealTest, AMissingTopicIsAClearErrorNamingTheTopicAndTheKey) {
  constexpr uint64_t kEvents = 10;
  auto shipper = StartShipper("no-such-topic");
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  ProducerClient client(shipper->address());
  ASSERT_EQ(client.Publish(0, kEvents, 10, absl::Now() + absl::Seconds(30)), kEvents);
  // The broker does not create topics (auto.create.topics.enable=false): the shipper must say
  // which topic is missing and which setting names it, and persist nothing.
  const bool said = Await(
      [&] {
        const std::string log = shipper->Log();
        return absl::StrContains(log, "no-such-topic") &&
               absl::StrContains(log, "shipper.output.kafka.topic");
      },
      absl::Seconds(30));
  EXPECT_TRUE(said) << shipper->Log();
  EXPECT_EQ(client.AwaitPersisted(kEvents, absl::Now() + absl::Seconds(1)), 0u);
}

}  // namespace
}  // namespace shipper::testing
