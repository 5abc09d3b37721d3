// The Kafka output's own metrics, beside the per-output ones (shipper_metrics.h): the output
// (shipper/output/kafka/) updates them, Collect() reads them. In a header of their own so that
// ShipperMetrics does not grow a member per output.
//
// Thread safety: update and read from any thread (metric.h).
#ifndef SHIPPER_SHIPPER_METRICS_KAFKA_METRICS_H_
#define SHIPPER_SHIPPER_METRICS_KAFKA_METRICS_H_

#include <atomic>
#include <cstdint>

#include "shipper/metrics/metric.h"

namespace shipper::metrics {

struct KafkaMetrics {
  // The process's instance.
  static KafkaMetrics& Get();

  // Messages librdkafka holds, queued or in flight (rd_kafka_outq_len), as last sampled; -1
  // while no Kafka output runs, which leaves it off the page.
  std::atomic<int64_t> waiting{-1};
  Family<Counter> delivery_errors;  // messages that failed, by librdkafka error code name
};

}  // namespace shipper::metrics

#endif  // SHIPPER_SHIPPER_METRICS_KAFKA_METRICS_H_
