#include "shipper/output/kafka/kafka_metrics.h"

#include <map>
#include <string>

namespace shipper {

KafkaMetrics& KafkaMetrics::Get() {
  static KafkaMetrics* metrics = new KafkaMetrics;
  return *metrics;
}

void CollectKafkaMetrics(metrics::Collection* c) {
  using Type = metrics::MetricFamily::Type;
  const KafkaMetrics& kafka = KafkaMetrics::Get();
  if (const int64_t waiting = kafka.waiting.load(); waiting >= 0) {
    c->Add("shipper_kafka_messages_waiting",
           "Messages librdkafka holds for the Kafka output, queued or in flight.", Type::kGauge)
        .Sample(static_cast<double>(waiting));
  }
  c->Add("shipper_kafka_delivery_errors_total",
         "Kafka messages that failed (each is retried or dead-lettered), by librdkafka error code.",
         Type::kCounter);
  kafka.delivery_errors.ForEach([&](const std::string& labels, const metrics::Counter& counter) {
    c->Sample(counter.value(), labels);
  });
  const std::map<std::string, KafkaMetrics::Broker> brokers = kafka.brokers();
  if (brokers.empty()) return;  // no Kafka output, or no statistics yet
  c->Add("shipper_kafka_broker_up",
         "1 while librdkafka's connection to the broker is UP, else 0; state: librdkafka's.",
         Type::kGauge);
  for (const auto& [name, broker] : brokers) {
    c->Sample(broker.state == "UP" ? 1 : 0,
              metrics::FormatLabels({{"broker", name}, {"state", broker.state}}));
  }
  c->Add("shipper_kafka_broker_rtt_seconds",
         "Mean request round trip to the broker over librdkafka's last statistics window.",
         Type::kGauge);
  for (const auto& [name, broker] : brokers) {
    if (broker.rtt) {
      c->Sample(absl::ToDoubleSeconds(*broker.rtt), metrics::FormatLabels({{"broker", name}}));
    }
  }
  // Unsummarized: librdkafka's metadata requests make it grow while Shipper is idle.
  c->Add("shipper_kafka_sent_bytes_total",
         "Bytes of the requests sent to the Kafka brokers, as on the wire (compressed).",
         Type::kCounter)
      .Unsummarized()
      .Sample(kafka.sent_bytes.value());
  c->Add("shipper_kafka_sent_message_bytes_total",
         "Bytes of the Kafka messages sent (value and key), before compression.", Type::kCounter)
      .Sample(kafka.sent_message_bytes.value());
}

}  // namespace shipper
