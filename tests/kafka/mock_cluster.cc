#include "tests/kafka/mock_cluster.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shipper::testing {
namespace {

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using Handle = std::unique_ptr<rd_kafka_t, HandleDeleter>;

absl::StatusOr<Handle> NewClient(rd_kafka_type_t type,
                                 const std::vector<std::pair<std::string, std::string>>& props) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char error[512];
  for (const auto& [name, value] : props) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), error, sizeof(error)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", error));
    }
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, error, sizeof(error));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InternalError(error);
  }
  return Handle(rk);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MockCluster>> MockCluster::Start(int brokers) {
  absl::StatusOr<Handle> handle = NewClient(RD_KAFKA_PRODUCER, {{"log_level", "3"}});
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
  std::vector<int64_t> from(partitions);
  if (offsets != nullptr) {
    offsets->resize(partitions);
    from = *offsets;
  }
  absl::StatusOr<Handle> consumer =
      NewClient(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstraps()},
                                    {"group.id", "shipper-test"},
                                    {"enable.auto.commit", "false"},
                                    {"enable.partition.eof", "true"},
                                    {"log_level", "3"}});
  if (!consumer.ok()) return consumer.status();
  rd_kafka_t* rk = consumer->get();
  const int timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  rd_kafka_topic_partition_list_t* assignment = rd_kafka_topic_partition_list_new(partitions);
  std::vector<int64_t> high(partitions);
  int remaining = 0;  // partitions not read to their high watermark yet
  for (int p = 0; p < partitions; ++p) {
    int64_t low = 0;
    const rd_kafka_resp_err_t err =
        rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &low, &high[p], timeout_ms);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_topic_partition_list_destroy(assignment);
      return absl::UnavailableError(
          absl::StrCat("watermarks of ", topic, "/", p, ": ", rd_kafka_err2str(err)));
    }
    if (low > from[p]) {
      rd_kafka_topic_partition_list_destroy(assignment);
      return absl::DataLossError(
          absl::StrCat("the mock cluster deleted offsets ", from[p], " to ", low - 1, " of ", topic,
                       "/", p, " before they were read (it keeps 5 MiB a partition)"));
    }
    if (high[p] > from[p]) {
      rd_kafka_topic_partition_list_add(assignment, topic.c_str(), p)->offset = from[p];
      ++remaining;
    }
  }
  rd_kafka_assign(rk, assignment);
  rd_kafka_topic_partition_list_destroy(assignment);

  std::vector<KafkaMessage> messages;
  const absl::Time deadline = absl::Now() + timeout;
  while (remaining > 0) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(remaining, " partitions not read to the end; ", messages.size(), " read"));
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->offset >= high[m->partition]) {
      // Produced since the watermarks were read: the next read's.
    } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      messages.push_back({m->partition,
                          m->key ? std::string(static_cast<const char*>(m->key), m->key_len) : "",
                          std::string(static_cast<const char*>(m->payload), m->len)});
      rd_kafka_headers_t* headers = nullptr;
      if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name;
        const void* value;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) ==
                           RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
          messages.back().headers.push_back(
              absl::StrCat(name, ":", absl::string_view(static_cast<const char*>(value), size)));
        }
      }
      if (m->offset + 1 == high[m->partition]) --remaining;
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      const std::string error = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      return absl::UnavailableError(error);
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  if (offsets != nullptr) {
    for (int p = 0; p < partitions; ++p) (*offsets)[p] = std::max(high[p], from[p]);
  }
  return messages;
}

}  // namespace shipper::testing
