#include "tests/kafka/kafka_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shipper::testing {

absl::StatusOr<KafkaHandle> NewKafkaClient(
    rd_kafka_type_t type, const std::vector<std::pair<std::string, std::string>>& props) {
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
  return KafkaHandle(rk);
}

absl::StatusOr<std::vector<KafkaMessage>> ConsumeTopic(const std::string& bootstraps,
                                                       const std::string& topic, int partitions,
                                                       absl::Duration timeout,
                                                       std::vector<int64_t>* offsets) {
  std::vector<int64_t> from(partitions);
  if (offsets != nullptr) {
    offsets->resize(partitions);
    from = *offsets;
  }
  absl::StatusOr<KafkaHandle> consumer =
      NewKafkaClient(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstraps},
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
    // Right after a broker was restarted or frozen, a new client may not know the partition or
    // its leader yet ("Unknown partition"): ask again until the timeout.
    const absl::Time until = absl::Now() + timeout;
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &low, &high[p],
                                                   timeout_ms)) != RD_KAFKA_RESP_ERR_NO_ERROR &&
           absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_topic_partition_list_destroy(assignment);
      return absl::UnavailableError(
          absl::StrCat("watermarks of ", topic, "/", p, ": ", rd_kafka_err2str(err)));
    }
    if (low > from[p]) {
      rd_kafka_topic_partition_list_destroy(assignment);
      return absl::DataLossError(absl::StrCat("offsets ", from[p], " to ", low - 1, " of ", topic,
                                              "/", p, " were deleted before they were read"));
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

namespace {

// The leaders of `topic`'s partitions (-1: none) as `rk`'s metadata request says now.
absl::StatusOr<std::vector<int32_t>> Leaders(rd_kafka_t* rk, const std::string& topic,
                                             int timeout_ms) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
  rd_kafka_topic_destroy(rkt);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::UnavailableError(absl::StrCat("metadata of ", topic, ": ", rd_kafka_err2str(err)));
  }
  std::vector<int32_t> leaders;
  if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    const rd_kafka_metadata_topic_t& t = md->topics[0];
    leaders.assign(t.partition_cnt, -1);
    for (int i = 0; i < t.partition_cnt; ++i) {
      if (t.partitions[i].id < t.partition_cnt && t.partitions[i].err == RD_KAFKA_RESP_ERR_NO_ERROR)
        leaders[t.partitions[i].id] = t.partitions[i].leader;
    }
  }
  rd_kafka_metadata_destroy(md);
  return leaders;
}

}  // namespace

absl::Status CreateKafkaTopic(const std::string& bootstraps, const std::string& topic,
                              int partitions, int replicas, absl::Duration timeout) {
  absl::StatusOr<KafkaHandle> admin =
      NewKafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstraps}, {"log_level", "3"}});
  if (!admin.ok()) return admin.status();
  rd_kafka_t* rk = admin->get();
  const absl::Time deadline = absl::Now() + timeout;
  const int timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  char error[512];
  rd_kafka_NewTopic_t* new_topic =
      rd_kafka_NewTopic_new(topic.c_str(), partitions, replicas, error, sizeof(error));
  if (new_topic == nullptr) return absl::InvalidArgumentError(error);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(options, timeout_ms, error, sizeof(error));
  rd_kafka_CreateTopics(rk, &new_topic, 1, options, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, timeout_ms);
  absl::Status status;
  if (event == nullptr) {
    status = absl::DeadlineExceededError(absl::StrCat("creating topic ", topic));
  } else if (rd_kafka_event_error(event) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    status = absl::UnavailableError(
        absl::StrCat("creating topic ", topic, ": ", rd_kafka_event_error_string(event)));
  } else {
    size_t count = 0;
    const rd_kafka_topic_result_t** results =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(event), &count);
    for (size_t i = 0; i < count; ++i) {
      if (rd_kafka_topic_result_error(results[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        status = absl::UnavailableError(absl::StrCat(
            "creating topic ", topic, ": ", rd_kafka_topic_result_error_string(results[i])));
      }
    }
  }
  if (event != nullptr) rd_kafka_event_destroy(event);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(new_topic);
  if (!status.ok()) return status;
  // The controller answers once the topic is in its metadata log; the brokers learn of it
  // (and elect leaders) a moment later.
  while (true) {
    absl::StatusOr<std::vector<int32_t>> leaders = Leaders(rk, topic, timeout_ms);
    if (leaders.ok() && static_cast<int>(leaders->size()) == partitions &&
        std::count(leaders->begin(), leaders->end(), -1) == 0) {
      return absl::OkStatus();
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("topic ", topic, " has no leaders yet"));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

absl::StatusOr<int32_t> KafkaPartitionLeader(const std::string& bootstraps,
                                             const std::string& topic, int partition,
                                             absl::Duration timeout) {
  absl::StatusOr<KafkaHandle> client =
      NewKafkaClient(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstraps}, {"log_level", "3"}});
  if (!client.ok()) return client.status();
  absl::StatusOr<std::vector<int32_t>> leaders =
      Leaders(client->get(), topic, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
  if (!leaders.ok()) return leaders.status();
  if (partition >= static_cast<int>(leaders->size()) || (*leaders)[partition] < 0) {
    return absl::NotFoundError(absl::StrCat(topic, "/", partition, " has no leader"));
  }
  return (*leaders)[partition];
}

}  // namespace shipper::testing
