// The Kafka output end to end: the real shipper binary producing into librdkafka's mock cluster
// (rdkafka_mock.h: Kafka-protocol brokers on loopback, in this test's process, with failure
// injection), read back by a librdkafka consumer. The mock cluster is not a real Kafka: it keeps
// messages in memory and moves no leaders by itself.
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "proto/producer.grpc.pb.h"
#include "rapidjson/document.h"
#include "shipper/event/event_json.h"
#include "tests/kafka/delivery_checks.h"
#include "tests/kafka/mock_cluster.h"
#include "tests/outputs/producer_client.h"
#include "tests/testing/shipper_process.h"

namespace shipper::testing {
namespace {

constexpr int kPartitions = 6;

std::vector<std::string> ShipperArgs(const MockCluster& cluster, const std::string& topic) {
  return KafkaShipperArgs(cluster.bootstraps(), topic);
}

// A 3-broker mock cluster with `topic` (kPartitions partitions, replicated on every broker).
std::unique_ptr<MockCluster> StartCluster(const std::string& topic) {
  auto cluster = MockCluster::Start(3);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (!cluster.ok()) return nullptr;
  EXPECT_TRUE((*cluster)->CreateTopic(topic, kPartitions).ok());
  return *std::move(cluster);
}

// The document the file output writes for test event `seq` at queue `index`, parsed.
rapidjson::Document Expected(uint64_t seq, uint64_t index) {
  rapidjson::StringBuffer json;
  AppendEventJson(TestEvent(seq).SerializeAsString(), index, &json);
  rapidjson::Document doc;
  doc.Parse(json.GetString(), json.GetSize() - 1);  // without its newline
  return doc;
}

// Ships events [0, count) through a shipper (the usual arguments plus `extra`, each a -E) into
// a new mock cluster's topic "events", in `rounds` equal parts each published once the one
// before is persisted, waits until they are all persisted, and reads the topic.
void ShipAll(const std::vector<std::string>& extra, uint64_t count,
             std::vector<KafkaMessage>* messages, uint64_t rounds = 1) {
  auto cluster = StartCluster("events");
  ASSERT_NE(cluster, nullptr);
  std::vector<std::string> args = ShipperArgs(*cluster, "events");
  for (const std::string& e : extra) args.insert(args.end(), {"-E", e});
  auto shipper = ShipperProcess::Start(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  ProducerClient client(shipper->address());
  const uint64_t part = count / rounds;
  for (uint64_t first = 0; first < count; first += part) {
    ASSERT_EQ(client.Publish(first, part, 100, absl::Now() + absl::Seconds(60)), part);
    ASSERT_EQ(client.AwaitPersisted(client.last_index(), absl::Now() + absl::Seconds(60)),
              client.last_index())
        << shipper->Log();
  }
  auto read = cluster->Consume("events", kPartitions, absl::Seconds(60));
  ASSERT_TRUE(read.ok()) << read.status();
  *messages = *std::move(read);
}

// Expects the dead-letter file at `path` to hold one line: test event `seq`, for a reason
// that names `reason`.
void ExpectOneDeadLetter(const std::string& path, absl::string_view reason, uint64_t seq) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u);
  rapidjson::Document doc;
  doc.Parse(lines[0].c_str());
  ASSERT_FALSE(doc.HasParseError()) << lines[0];
  EXPECT_TRUE(absl::StrContains(doc["reason"].GetString(), reason)) << lines[0];
  EXPECT_EQ(doc["event"]["test_seq"].GetUint64(), seq);
}

TEST(KafkaOutputTest, HundredThousandEventsArriveAsTheFileOutputWritesThem) {
  constexpr uint64_t kEvents = 100000;
  const std::string topic = "logs-nginx.access";
  auto cluster = StartCluster(topic);
  ASSERT_NE(cluster, nullptr);
  auto shipper = ShipperProcess::Start(ShipperArgs(*cluster, "logs-%{[data_stream.dataset]}"));
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  ProducerClient client(shipper->address());
  const absl::Time start = absl::Now();
  ASSERT_EQ(client.Publish(0, kEvents, 500, absl::Now() + absl::Seconds(180)), kEvents);
  ASSERT_EQ(client.AwaitPersisted(client.last_index(), absl::Now() + absl::Seconds(120)),
            client.last_index())
      << shipper->Log();
  std::cout << kEvents << " events published and acknowledged by the mock cluster in "
            << absl::Now() - start << "\n";

  auto messages = cluster->Consume(topic, kPartitions, absl::Seconds(120));
  ASSERT_TRUE(messages.ok()) << messages.status();
  std::map<int64_t, int> copies;
  for (const KafkaMessage& m : *messages) {
    rapidjson::Document doc;
    doc.Parse(m.value.c_str());
    ASSERT_FALSE(doc.HasParseError()) << m.value;
    const uint64_t seq = doc["test_seq"].GetUint64();
    ++copies[static_cast<int64_t>(seq)];
    ASSERT_TRUE(doc == Expected(seq, doc["@metadata"]["index"].GetUint64()))
        << "event " << seq << " changed:\n"
        << m.value;
  }
  const int duplicates = CheckNothingLost(copies, kEvents);
  std::cout << messages->size() << " messages read back, " << duplicates << " duplicates\n";
}

TEST(KafkaOutputTest, InjectedErrorsAndABrokerDownLoseNothingAndTooLargeIsADeadLetter) {
  constexpr uint64_t kEvents = 30000;
  const std::string topic = "events";
  auto cluster = StartCluster(topic);
  ASSERT_NE(cluster, nullptr);
  const std::string dead_letters = absl::StrCat(TempDir("dead"), "/dead.ndjson");
  std::vector<std::string> args = ShipperArgs(*cluster, topic);
  args.insert(args.end(), {"-E", absl::StrCat("shipper.dead_letter.path=", dead_letters), "-E",
                           // At the output's one request in flight per broker: with 5 (now
                           // refused), 3 runs in 10 lost 4 events each, "implicitly acked" after
                           // an injected REQUEST_TIMED_OUT (kafka_settings.cc, AllProperties).
                           "shipper.output.kafka.max_message_bytes=4096"});
  auto shipper = ShipperProcess::Start(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();

  Stream stream(*shipper, kEvents);
  stream.AwaitPersisted(kEvents / 5);
  rd_kafka_mock_push_request_errors(
      cluster->get(), /*Produce=*/0, 6, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
      RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
      RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
      RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
  stream.AwaitPersisted(kEvents / 3);
  rd_kafka_mock_broker_set_down(cluster->get(), 2);
  absl::SleepFor(absl::Seconds(1));
  // Partition 0's leader moves to broker 3 while broker 2 is down.
  rd_kafka_mock_partition_set_leader(cluster->get(), topic.c_str(), 0, 3);
  absl::SleepFor(absl::Seconds(1));
  rd_kafka_mock_broker_set_up(cluster->get(), 2);
  ASSERT_NO_FATAL_FAILURE(stream.Finish(*shipper));
  ProducerClient checker(shipper->address());

  // One event larger than max_message_bytes.
  {
    namespace pb = elastic::agent::shipper::v1::messages;
    auto stub = elastic::agent::shipper::v1::Producer::NewStub(
        grpc::CreateChannel(shipper->address(), grpc::InsecureChannelCredentials()));
    pb::PublishRequest request;
    request.set_uuid(stream.publisher().uuid());
    pb::Event* event = request.add_events();
    *event = TestEvent(kEvents);
    (*event->mutable_fields()->mutable_data())["padding"].set_string_value(std::string(8192, 'x'));
    pb::PublishReply reply;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->PublishEvents(&context, request, &reply).ok());
    ASSERT_EQ(reply.accepted_count(), 1);
    ASSERT_EQ(checker.AwaitPersisted(reply.accepted_index(), absl::Now() + absl::Seconds(60)),
              reply.accepted_index())
        << "a dead letter counts as handed off";
  }

  auto messages = cluster->Consume(topic, kPartitions, absl::Seconds(120));
  ASSERT_TRUE(messages.ok()) << messages.status();
  const std::map<int64_t, int> copies = Copies(*messages);
  const int duplicates = CheckNothingLost(copies, kEvents);
  EXPECT_EQ(copies.count(static_cast<int64_t>(kEvents)), 0u) << "the large event is not sent";
  EXPECT_EQ(copies.count(-1), 0u) << "every message is a test event";
  std::cout << kEvents << " events all in the mock cluster after injected errors, broker 2 down "
            << "and a leader moved: " << messages->size() << " messages, " << duplicates
            << " duplicates\n";

  ExpectOneDeadLetter(dead_letters, "max_message_bytes", kEvents);
  if (HasFailure()) std::cout << shipper->Log();
}

// The output produces through each topic's handle: an event whose topic librdkafka refuses (a
// name over 512 bytes) is a dead letter, and the events on either side of it, in the same batch,
// still reach their topic.
TEST(KafkaOutputTest, ATopicNameTooLongForKafkaIsADeadLetterAndTheEventsAroundItArrive) {
  namespace pb = elastic::agent::shipper::v1::messages;
  const std::string topic = "logs-nginx.access";
  auto cluster = StartCluster(topic);
  ASSERT_NE(cluster, nullptr);
  const std::string dead_letters = absl::StrCat(TempDir("long_topic"), "/dead.ndjson");
  std::vector<std::string> args = ShipperArgs(*cluster, "logs-%{[data_stream.dataset]}");
  args.insert(args.end(), {"-E", absl::StrCat("shipper.dead_letter.path=", dead_letters)});
  auto shipper = ShipperProcess::Start(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();

  ProducerClient client(shipper->address());
  auto stub = elastic::agent::shipper::v1::Producer::NewStub(
      grpc::CreateChannel(shipper->address(), grpc::InsecureChannelCredentials()));
  pb::PublishRequest request;
  for (uint64_t seq = 0; seq < 3; ++seq) *request.add_events() = TestEvent(seq);
  request.mutable_events(1)->mutable_data_stream()->set_dataset(std::string(600, 'x'));
  pb::PublishReply reply;
  grpc::ClientContext context;
  ASSERT_TRUE(stub->PublishEvents(&context, request, &reply).ok());
  ASSERT_EQ(reply.accepted_count(), 3);
  ASSERT_EQ(client.AwaitPersisted(reply.accepted_index(), absl::Now() + absl::Seconds(60)),
            reply.accepted_index())
      << shipper->Log();

  auto messages = cluster->Consume(topic, kPartitions, absl::Seconds(60));
  ASSERT_TRUE(messages.ok()) << messages.status();
  const std::map<int64_t, int> copies = Copies(*messages);
  EXPECT_EQ(copies.count(0), 1u);
  EXPECT_EQ(copies.count(1), 0u) << "its topic cannot exist";
  EXPECT_EQ(copies.count(2), 1u);

  ExpectOneDeadLetter(dead_letters, "_INVALID_ARG", 1);
  if (HasFailure()) std::cout << shipper->Log();
}

TEST(KafkaOutputTest, PersistedIndexHoldsWhileEveryBrokerIsDownThenCatchesUp) {
  constexpr uint64_t kEvents = 30000;
  const std::string topic = "events";
  auto cluster = StartCluster(topic);
  ASSERT_NE(cluster, nullptr);
  auto shipper = ShipperProcess::Start(ShipperArgs(*cluster, topic));
  ASSERT_TRUE(shipper.ok()) << shipper.status();

  Stream stream(*shipper, kEvents);
  stream.AwaitPersisted(kEvents / 4);
  for (int broker = 1; broker <= 3; ++broker) rd_kafka_mock_broker_set_down(cluster->get(), broker);
  // With no broker answering, librdkafka fails each message once shipper.output.kafka.timeout
  // (5 s) has passed, and Shipper produces it again after its backoff. By the first time-out,
  // every acknowledgement from before the outage has reached the index (reports are served every
  // 100 ms); from then on it must stand, while Shipper provably goes on: it retries.
  const auto metric = [&](absl::string_view name, const std::string& labels) {
    return Samples(MetricsPage(*shipper), name)[labels];
  };
  const auto await = [](const std::function<bool()>& condition) {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (!condition() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
    return condition();
  };
  ASSERT_TRUE(await([&] {
    return metric("shipper_kafka_delivery_errors_total", R"({code="_MSG_TIMED_OUT"})") > 0;
  })) << shipper->Log();
  const uint64_t down = stream.persisted();
  const double retries = metric("shipper_output_retries_total", R"({output="kafka"})");
  ASSERT_TRUE(await([&] {
    return metric("shipper_output_retries_total", R"({output="kafka"})") > retries;
  })) << "Shipper retried nothing while no broker answered:\n"
      << shipper->Log();
  EXPECT_EQ(stream.persisted(), down) << "the persisted index moved while no broker answered";
  EXPECT_LT(down, kEvents);
  for (int broker = 1; broker <= 3; ++broker) rd_kafka_mock_broker_set_up(cluster->get(), broker);
  // Delivery resumes: the index moves past where it stood, up to the last event.
  stream.AwaitPersisted(down + 1);
  EXPECT_GT(stream.persisted(), down) << "the index stood once the brokers were back";
  ASSERT_NO_FATAL_FAILURE(stream.Finish(*shipper));

  auto messages = cluster->Consume(topic, kPartitions, absl::Seconds(120));
  ASSERT_TRUE(messages.ok()) << messages.status();
  const int duplicates = CheckNothingLost(Copies(*messages), kEvents);

  const std::string page = MetricsPage(*shipper);
  EXPECT_TRUE(absl::StrContains(page, "\nshipper_kafka_messages_waiting ")) << page;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (absl::StartsWith(line, "shipper_kafka_")) std::cout << line << "\n";
  }
  std::cout << "persisted index " << down << " while every broker was down; all " << kEvents
            << " events in the mock cluster afterwards, " << duplicates << " duplicates\n";
}

TEST(KafkaOutputTest, AFatalProducerErrorReplacesTheProducerAndLosesNothing) {
  constexpr uint64_t kEvents = 20000;
  const std::string topic = "events";
  auto cluster = StartCluster(topic);
  ASSERT_NE(cluster, nullptr);
  auto shipper = ShipperProcess::Start(ShipperArgs(*cluster, topic));
  ASSERT_TRUE(shipper.ok()) << shipper.status();

  Stream stream(*shipper, kEvents);
  stream.AwaitPersisted(kEvents / 4);
  // librdkafka 2.0.2's idempotent producer takes OUT_OF_ORDER_SEQUENCE_NUMBER for its oldest
  // request as a desynchronization it cannot repair: a fatal error, after which that producer
  // refuses every message.
  rd_kafka_mock_push_request_errors(cluster->get(), /*Produce=*/0, 1,
                                    RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
  ASSERT_NO_FATAL_FAILURE(stream.Finish(*shipper));
  const std::string log = shipper->Log();
  EXPECT_TRUE(absl::StrContains(log, "kafka: fatal error OUT_OF_ORDER_SEQUENCE_NUMBER")) << log;
  EXPECT_TRUE(absl::StrContains(log, "a new producer replaces it")) << log;

  auto messages = cluster->Consume(topic, kPartitions, absl::Seconds(120));
  ASSERT_TRUE(messages.ok()) << messages.status();
  const int duplicates = CheckNothingLost(Copies(*messages), kEvents);
  std::cout << kEvents
            << " events all in the mock cluster across a fatal producer error: " << messages->size()
            << " messages, " << duplicates << " duplicates\n";
}

TEST(KafkaOutputTest, ShutdownWithEveryBrokerDownPurgesAndReportsNothingPersisted) {
  constexpr uint64_t kEvents = 500;
  const std::string topic = "events";
  auto cluster = StartCluster(topic);
  ASSERT_NE(cluster, nullptr);
  for (int broker = 1; broker <= 3; ++broker) rd_kafka_mock_broker_set_down(cluster->get(), broker);
  std::vector<std::string> args = ShipperArgs(*cluster, topic);
  // librdkafka would keep trying for 10 minutes: only Cancel() can end the Write() in time.
  args.insert(args.end(),
              {"-E", "shipper.output.kafka.timeout=10m", "-E", "shipper.shutdown_timeout=1s"});
  auto shipper = ShipperProcess::Start(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  ProducerClient client(shipper->address());
  ASSERT_EQ(client.Publish(0, kEvents, 100, absl::Now() + absl::Seconds(30)), kEvents);
  EXPECT_EQ(client.AwaitPersisted(1, absl::Now() + absl::Seconds(2)), 0u)
      << "nothing is persisted while no broker answers";

  shipper->Signal(SIGTERM);
  absl::StatusOr<int> code = shipper->Wait(absl::Seconds(60));
  ASSERT_TRUE(code.ok()) << "the drain deadline passed and Write() still waits\n" << shipper->Log();
  EXPECT_TRUE(absl::StrContains(shipper->Log(), "cancelled at shutdown")) << shipper->Log();
  for (int broker = 1; broker <= 3; ++broker) rd_kafka_mock_broker_set_up(cluster->get(), broker);
  auto messages = cluster->Consume(topic, kPartitions, absl::Seconds(30));
  ASSERT_TRUE(messages.ok()) << messages.status();
  EXPECT_EQ(messages->size(), 0u) << "what was purged never reached the brokers";
}

TEST(KafkaOutputTest, EqualKeysLandInOnePartitionWithHashAndHeadersAreSet) {
  constexpr uint64_t kEvents = 2000;
  std::vector<KafkaMessage> messages;
  ASSERT_NO_FATAL_FAILURE(
      ShipAll({"shipper.output.kafka.key=\"%{[host.name]}\"", "shipper.output.kafka.partition=hash",
               // A list from -E, as YAML writes it: a header's value may hold a comma.
               R"(shipper.output.kafka.headers=[env:prod, "teams:logs,infra"])"},
              kEvents, &messages));
  std::map<std::string, std::set<int32_t>> partitions;  // by key
  std::set<int32_t> used;
  for (const KafkaMessage& m : messages) {
    rapidjson::Document doc;
    doc.Parse(m.value.c_str());
    ASSERT_EQ(m.key, doc["host"]["name"].GetString());
    ASSERT_EQ(m.headers, (std::vector<std::string>{"env:prod", "teams:logs,infra"}));
    partitions[m.key].insert(m.partition);
    used.insert(m.partition);
  }
  EXPECT_GT(partitions.size(), 1u) << "the events have several host names";
  for (const auto& [key, in] : partitions) EXPECT_EQ(in.size(), 1u) << "key " << key;
  EXPECT_GT(used.size(), 1u) << "different keys spread over partitions";
  EXPECT_EQ(CheckNothingLost(Copies(messages), kEvents), 0);
}

TEST(KafkaOutputTest, BrokerStateRoundTripAndBytesSentComeFromLibrdkafkaStatistics) {
  constexpr uint64_t kEvents = 20000;
  const std::string topic = "events";
  auto cluster = StartCluster(topic);
  ASSERT_NE(cluster, nullptr);
  std::vector<std::string> args = ShipperArgs(*cluster, topic);
  args.insert(args.end(), {"-E", "shipper.output.kafka.librdkafka=statistics.interval.ms=200"});
  auto shipper = ShipperProcess::Start(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();

  // Read while events flow, until every broker has been seen up with a round trip.
  Stream stream(*shipper, kEvents);
  std::string page;
  std::map<std::string, double> up, rtt;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    page = MetricsPage(*shipper);
    up = Samples(page, "shipper_kafka_broker_up");
    rtt = Samples(page, "shipper_kafka_broker_rtt_seconds");
    int ready = 0;
    for (const auto& [labels, value] : up) ready += value == 1 ? 1 : 0;
    if (ready == 3 && rtt.size() == 3) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  stream.Join();
  // Statistics of the whole stream: one more interval after the last event.
  absl::SleepFor(absl::Milliseconds(500));
  page = MetricsPage(*shipper);
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (absl::StartsWith(line, "shipper_kafka_")) std::cout << line << "\n";
  }

  ASSERT_EQ(up.size(), 3u) << page;
  for (int id = 1; id <= 3; ++id) {
    const std::string suffix = absl::StrCat("/", id, "\",state=\"UP\"}");
    int found = 0;
    for (const auto& [labels, value] : up) {
      if (absl::EndsWith(labels, suffix) && value == 1) ++found;
    }
    EXPECT_EQ(found, 1) << "broker " << id << " up\n" << page;
  }
  ASSERT_EQ(rtt.size(), 3u) << page;
  for (const auto& [labels, seconds] : rtt) {
    EXPECT_GT(seconds, 0) << labels;
    EXPECT_LT(seconds, 10) << labels << ": a round trip on loopback";
  }
  const double sent = Samples(page, "shipper_kafka_sent_bytes_total")[""];
  const double messages = Samples(page, "shipper_kafka_sent_message_bytes_total")[""];
  EXPECT_GT(messages, kEvents * 100.0) << "every document is over 100 bytes";
  EXPECT_GT(sent, 0);
  EXPECT_LT(sent, messages) << "gzip (the default) makes the requests smaller than the messages";
}

// With a key: librdkafka 2.0.2 calls no partitioner for keyless messages (sticky partitioning).
TEST(KafkaOutputTest, RoundRobinIgnoresTheKeyAndUsesEveryPartitionInTurn) {
  constexpr uint64_t kEvents = 600;
  // Round robin skips a partition whose leader the producer has not taken up yet, which the
  // first events, produced while it starts (several batches at once), may find. The second half
  // is published once the first is confirmed, when the producer serves every partition.
  std::vector<KafkaMessage> messages;
  ASSERT_NO_FATAL_FAILURE(
      ShipAll({"shipper.output.kafka.partition=round_robin", "shipper.output.kafka.key=same"},
              kEvents, &messages, /*rounds=*/2));
  std::map<int32_t, int> per_partition;  // of the second half
  for (const KafkaMessage& m : messages) {
    if (TestSeq(m.value) >= static_cast<int64_t>(kEvents / 2)) ++per_partition[m.partition];
  }
  // One key, yet every partition: the key is ignored.
  EXPECT_EQ(per_partition.size(), static_cast<size_t>(kPartitions)) << "every partition used";
  EXPECT_EQ(CheckNothingLost(Copies(messages), kEvents), 0);
}

}  // namespace
}  // namespace shipper::testing
