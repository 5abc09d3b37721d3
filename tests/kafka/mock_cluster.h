// librdkafka's mock cluster (rdkafka_mock.h) for tests: Kafka-protocol brokers on loopback TCP,
// in the test's own process, with failure injection. Not a real Kafka: it keeps messages in
// memory, and a broker set down keeps leading its partitions until told otherwise.
//
// Thread safety: the mock cluster runs on threads of its own; its fault injection
// (rd_kafka_mock_*) and Consume() may be called from any thread.
#ifndef SHIPPER_TESTS_KAFKA_MOCK_CLUSTER_H_
#define SHIPPER_TESTS_KAFKA_MOCK_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "librdkafka/rdkafka.h"
#include "librdkafka/rdkafka_mock.h"
#include "tests/kafka/kafka_client.h"

namespace shipper::testing {

class MockCluster {
 public:
  // A cluster of `brokers` brokers (ids 1..brokers) on ephemeral loopback ports.
  static absl::StatusOr<std::unique_ptr<MockCluster>> Start(int brokers);
  ~MockCluster();

  // Where clients bootstrap: host:port,host:port,...
  std::string bootstraps() const;
  rd_kafka_mock_cluster_t* get() const { return cluster_; }

  // Creates `topic` with `partitions`, each replicated on every broker, their leaders taking the
  // brokers in turn (partition p: broker p % brokers + 1), so that every broker leads one when
  // partitions >= brokers. The mock's own choice may leave a broker leading none, and librdkafka
  // then never connects to it.
  absl::Status CreateTopic(const std::string& topic, int partitions);

  // Every message of `topic` (with `partitions`), from the beginning up to each partition's
  // high watermark as it is now, read by a librdkafka consumer. With `offsets`, from
  // (*offsets)[p] on (missing ones: 0), and (*offsets)[p] is then where the next read starts.
  // (ConsumeTopic.) The mock keeps only the last 5 MiB (or 100,000 message sets) of each
  // partition, deleting the oldest as Kafka's retention would: DATA_LOSS when some that were
  // never read are gone (then read more often, with `offsets`).
  absl::StatusOr<std::vector<KafkaMessage>> Consume(const std::string& topic, int partitions,
                                                    absl::Duration timeout,
                                                    std::vector<int64_t>* offsets = nullptr);

 private:
  MockCluster(rd_kafka_t* handle, rd_kafka_mock_cluster_t* cluster, int brokers)
      : handle_(handle), cluster_(cluster), brokers_(brokers) {}

  rd_kafka_t* handle_;  // the client the cluster belongs to (librdkafka's requirement)
  rd_kafka_mock_cluster_t* cluster_;
  int brokers_;
};

}  // namespace shipper::testing

#endif  // SHIPPER_TESTS_KAFKA_MOCK_CLUSTER_H_
