// The Kafka output against three real Apache Kafka nodes (real_kafka.h: three JVMs, each broker
// and controller), where the mock cluster cannot go: a killed broker's partitions move to a new
// leader by the controller's own election, from the in-sync replicas that have every message
// acks=all confirmed.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/kafka/delivery_checks.h"
#include "tests/kafka/real_kafka.h"
#include "tests/outputs/producer_client.h"
#include "tests/testing/shipper_process.h"

namespace shipper::testing {
namespace {

constexpr int kPartitions = 3;

TEST(KafkaRealClusterTest, ThePartitionLeadersBrokerKilledDeliveryGoesOnOnTheNewLeader) {
  constexpr uint64_t kEvents = 60000;
  const std::string topic = "leader-moves";
  const absl::Time start = absl::Now();
  auto kafka = RealKafka::Start(3, TempDir("kafka"));
  ASSERT_TRUE(kafka.ok()) << kafka.status();
  std::cout << "3 Kafka nodes serving after " << absl::Now() - start << "\n";
  ASSERT_TRUE((*kafka)->CreateTopic(topic, kPartitions).ok());
  auto leader = (*kafka)->Leader(topic, 0);
  ASSERT_TRUE(leader.ok()) << leader.status();

  // A 10 s timeout: librdkafka holds partition 0's messages while it has no leader.
  std::vector<std::string> args = KafkaShipperArgs((*kafka)->bootstraps(), topic);
  args.insert(args.end(), {"-E", "shipper.output.kafka.timeout=10s"});
  auto shipper = ShipperProcess::Start(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();

  Stream stream(*shipper, kEvents);
  stream.AwaitPersisted(kEvents / 4);
  (*kafka)->Kill(*leader);
  const uint64_t at_kill = stream.persisted();
  // The controller fences the dead broker (broker.session.timeout.ms, 3 s) and elects a new
  // leader from the in-sync replicas; librdkafka finds it in the metadata.
  const absl::Time killed = absl::Now();
  absl::StatusOr<int> moved = *leader;
  while (absl::Now() < killed + absl::Seconds(60) && (!moved.ok() || *moved == *leader)) {
    absl::SleepFor(absl::Milliseconds(100));
    moved = (*kafka)->Leader(topic, 0);
  }
  ASSERT_TRUE(moved.ok()) << moved.status();
  ASSERT_NE(*moved, *leader) << "partition 0 kept its dead leader";
  std::cout << "partition 0's leader moved from node " << *leader << " to node " << *moved << " in "
            << absl::Now() - killed << "\n";
  // Delivery goes on without the dead node: the index passes where it stood.
  stream.AwaitPersisted(at_kill + 1000);
  EXPECT_GE(stream.persisted(), at_kill + 1000) << shipper->Log();
  ASSERT_NO_FATAL_FAILURE(stream.Finish(*shipper));

  auto messages = (*kafka)->Consume(topic, kPartitions, absl::Seconds(120));
  ASSERT_TRUE(messages.ok()) << messages.status();
  const int duplicates = CheckNothingLost(Copies(*messages), kEvents);
  std::cout << "all " << kEvents << " events in Kafka after node " << *leader
            << " (partition 0's leader) was killed at persisted index " << at_kill << ", "
            << duplicates << " duplicates, in " << absl::Now() - start << " in all\n";
}

}  // namespace
}  // namespace shipper::testing
