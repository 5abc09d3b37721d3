#include "shipper/metrics/kafka_metrics.h"

namespace shipper::metrics {

KafkaMetrics& KafkaMetrics::Get() {
  static KafkaMetrics* metrics = new KafkaMetrics;
  return *metrics;
}

}  // namespace shipper::metrics
