// librdkafka clients the Kafka tests read and administer a cluster with, mock or real: a
// consumer that reads a topic back to its high watermarks, and topic creation through the Admin
// API.
//
// Thread safety: the functions are thread-safe; each makes and destroys clients of its own.
#ifndef SHIPPER_TESTS_KAFKA_KAFKA_CLIENT_H_
#define SHIPPER_TESTS_KAFKA_KAFKA_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "librdkafka/rdkafka.h"

namespace shipper::testing {

// One message as a consumer reads it back.
struct KafkaMessage {
  int32_t partition;
  std::string key;
  std::string value;
  std::vector<std::string> headers;  // name:value
};

struct KafkaHandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaHandleDeleter>;

// A librdkafka client of `type` with the properties `props`; INVALID_ARGUMENT names a property
// librdkafka refused.
absl::StatusOr<KafkaHandle> NewKafkaClient(
    rd_kafka_type_t type, const std::vector<std::pair<std::string, std::string>>& props);

// Every message of `topic` (with `partitions`) on the cluster at `bootstraps`, from the beginning
// up to each partition's high watermark as it is now, in offset order within each partition.
// With `offsets`, from (*offsets)[p] on (missing ones: 0), and (*offsets)[p] is then where the
// next read starts. DATA_LOSS when retention deleted some that were never read.
absl::StatusOr<std::vector<KafkaMessage>> ConsumeTopic(const std::string& bootstraps,
                                                       const std::string& topic, int partitions,
                                                       absl::Duration timeout,
                                                       std::vector<int64_t>* offsets = nullptr);

// Creates `topic` with `partitions`, each on `replicas` brokers, through the Admin API, and
// waits until every partition has a leader.
absl::Status CreateKafkaTopic(const std::string& bootstraps, const std::string& topic,
                              int partitions, int replicas, absl::Duration timeout);

// The broker id leading `topic`/`partition` as the cluster's metadata says now; NOT_FOUND while
// it has none.
absl::StatusOr<int32_t> KafkaPartitionLeader(const std::string& bootstraps,
                                             const std::string& topic, int partition,
                                             absl::Duration timeout);

}  // namespace shipper::testing

#endif  // SHIPPER_TESTS_KAFKA_KAFKA_CLIENT_H_
