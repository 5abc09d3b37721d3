// shipper.output.kafka.*: the Kafka output's settings, their keys and checks, and the librdkafka
// configuration they make.
//
// Each setting becomes one or more librdkafka properties; Validate() refuses the extras of
// shipper.output.kafka.librdkafka that would override one of them, and NewKafkaConf() names the
// key that set each property librdkafka refuses. Everything here is pure but Preflight(), which
// reads the PEM files, and Build() (kafka_output.cc), which starts the producer.
//
// Thread safety: the settings are immutable once built; use them from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_SETTINGS_H_
#define SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_SETTINGS_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "librdkafka/rdkafka.h"
#include "shipper/config/key.h"
#include "shipper/config/problems.h"
#include "shipper/config/tls.h"
#include "shipper/event/field_format.h"
#include "shipper/output/output.h"

namespace shipper {

// How messages are spread over a topic's partitions.
enum class KafkaPartitioner {
  kHash,    // by key (FNV-1a, as Beats places them); random when there is no key
  kRandom,  // ignoring the key
  // One available partition after the other, ignoring the key. librdkafka 2.0.2 never calls a
  // partitioner for messages without a key: those stick to a random partition per batch.
  kRoundRobin,
};

enum class KafkaCompression { kNone, kGzip, kSnappy, kLz4, kZstd };

// shipper.output.kafka.*
struct KafkaSettings final : OutputSettings {
  std::vector<std::string> hosts = {"127.0.0.1:9092"};  // bootstrap brokers, host:port
  std::string topic;  // required; may hold %{[field.path]} or %{[field.path]:default}
  std::string key;    // empty: messages without key
  KafkaPartitioner partition = KafkaPartitioner::kHash;
  int required_acks = -1;  // -1: every in-sync replica; 1: the leader alone; 0 is refused
  KafkaCompression compression = KafkaCompression::kGzip;
  int compression_level = 1;  // -1: the codec's default; 1: measured, see README
  size_t max_message_bytes = 1000000;
  std::string client_id = "shipper";
  absl::Duration timeout = absl::Seconds(30);         // per message, librdkafka's retries included
  absl::Duration broker_timeout = absl::Seconds(10);  // a broker's wait for required_acks
  std::vector<std::string> headers;                   // key:value, on every message
  struct Sasl {
    std::string mechanism;  // empty: no SASL; PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
    std::string username;
    std::string password;
  } sasl;
  // TLS to the brokers (a client's shipper.output.kafka.ssl block, tls.h); librdkafka takes one
  // CA file (empty: the system's).
  TlsSettings ssl;
  std::vector<std::string> librdkafka;  // name=value: more librdkafka properties

  void Validate(Problems* problems) const override;
  // Every librdkafka property set on a configuration as Build() does, connecting to nothing;
  // the PEM files readable.
  void Preflight(Problems* problems) const override;
  // Starts the producer (kafka_output.cc); brokers may come up later.
  absl::StatusOr<std::unique_ptr<Output>> Build() const override;
  std::string Destination() const override;

  // The formats of `topic` and `key` (nullopt: messages without key).
  // REQUIRES: Validate() found no problem.
  FieldFormat TopicFormat() const;
  std::optional<FieldFormat> KeyFormat() const;
};

// Every shipper.output.kafka.* key but `enabled`.
std::vector<Key<KafkaSettings>> KafkaKeys();

struct KafkaConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
using KafkaConf = std::unique_ptr<rd_kafka_conf_t, KafkaConfDeleter>;

// A librdkafka configuration with every property `settings` make, callbacks not yet set; each
// property librdkafka refuses is a problem naming the key that set it.
KafkaConf NewKafkaConf(const KafkaSettings& settings, Problems* problems);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_SETTINGS_H_
