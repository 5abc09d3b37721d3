#include "tests/kafka/mock_cluster.h"

#include <memory>

namespace shipper::testing {

absl::StatusOr<std::unique_ptr<MockCluster>> MockCluster::Start(int brokers) {
  absl::StatusOr<KafkaHandle> handle = NewKafkaClient(RD_KAFKA_PRODUCER, {{"log_level", "3"}});
  if (!handle.ok()) return handle.status();
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(handle->get(), brokers);
  if (cluster == nullptr) return absl::InternalError("rd_kafka_mock_cluster_new failed");
  return std::unique_ptr<MockCluster>(new MockCluster(handle->release(), cluster, brokers));
}

MockCluster::~MockCluster() {
  rd_kafka_mock_cluster_destroy(cluster_);
  rd_kafka_destroy(handle_);
}

std::string MockCluster::bootstraps() const { return rd_kafka_mock_cluster_bootstraps(cluster_); }

absl::Status MockCluster::CreateTopic(const std::string& topic, int partitions) {
  const rd_kafka_resp_err_t err =
      rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, brokers_);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return absl::InternalError(rd_kafka_err2str(err));
  for (int p = 0; p < partitions; ++p) {
    const rd_kafka_resp_err_t led =
        rd_kafka_mock_partition_set_leader(cluster_, topic.c_str(), p, p % brokers_ + 1);
    if (led != RD_KAFKA_RESP_ERR_NO_ERROR) return absl::InternalError(rd_kafka_err2str(led));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<KafkaMessage>> MockCluster::Consume(const std::string& topic,
                                                               int partitions,
                                                               absl::Duration timeout,
                                                               std::vector<int64_t>* offsets) {
  return ConsumeTopic(bootstraps(), topic, partitions, timeout, offsets);
}

}  // namespace shipper::testing
