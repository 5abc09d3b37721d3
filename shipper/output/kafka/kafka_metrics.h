// The Kafka output's own metrics, beside the per-output families every output has
// (shipper/metrics/shipper_metrics.h): the output updates them, and CollectKafkaMetrics, which its
// OutputType carries (output.h), names them and reads them at scrape time.
//
// Thread safety: update and read from any thread (metric.h).
#ifndef SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_METRICS_H_
#define SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "runtime/mutex.h"
#include "shipper/metrics/metric.h"

namespace shipper {

struct KafkaMetrics {
  // The process's instance.
  static KafkaMetrics& Get();

  // Messages librdkafka holds, queued or in flight (rd_kafka_outq_len), as last sampled; -1
  // while no Kafka output runs, which leaves it off the page.
  std::atomic<int64_t> waiting{-1};
  // Messages that failed, by librdkafka error code name.
  metrics::Family<metrics::Counter> delivery_errors;

  // From librdkafka's statistics (statistics.interval.ms), every producer the output had summed.
  metrics::Counter sent_bytes;          // requests to the brokers, as on the wire (compressed)
  metrics::Counter sent_message_bytes;  // the messages in them, before compression

  // Each broker as the last statistics saw it, by name (host:port/id).
  struct Broker {
    std::string state;  // librdkafka's: UP, DOWN, INIT, CONNECT...
    // Mean round trip of the last window that had responses; nullopt until one had.
    std::optional<absl::Duration> rtt;
  };
  void SetBrokers(std::map<std::string, Broker> brokers) ABSL_LOCKS_EXCLUDED(mu_) {
    runtime::MutexLock lock(&mu_);
    brokers_ = std::move(brokers);
  }
  std::map<std::string, Broker> brokers() const ABSL_LOCKS_EXCLUDED(mu_) {
    runtime::MutexLock lock(&mu_);
    return brokers_;
  }

 private:
  mutable runtime::Mutex mu_;
  std::map<std::string, Broker> brokers_ ABSL_GUARDED_BY(mu_);
};

// Adds the families of KafkaMetrics::Get(): the Kafka output's OutputType::collect.
void CollectKafkaMetrics(metrics::Collection* c);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_METRICS_H_
