// The Kafka output (librdkafka): each event's document (exactly the file output's line without
// its newline) becomes one message of `topic`, keyed by `key`, both format strings
// (field_format.h).
//
// An event counts as written only once librdkafka reports the message delivered, which with
// required_acks -1 means every in-sync replica has it. One idempotent producer (acks=all,
// enable.idempotence) serves every worker, so librdkafka's own retries neither duplicate nor
// reorder within a partition. Write() produces; its finish (Outcome::finish) awaits the reports,
// so that a worker produces its next batch while the brokers confirm the last. Per message, the
// delivery report decides:
//   - delivered: written;
//   - refused for good (message too large, invalid or corrupt record, topic authorization, an
//     invalid topic name): rejected, with librdkafka's error text, to the dead-letter file;
//   - anything else (no leader, timeouts, brokers down past `timeout`): failed for now, and only
//     those events are produced again after the backoff.
// Events whose topic or key names a missing field, or whose document is larger than
// max_message_bytes, are rejected before they are produced.
//
// librdkafka gets one produce request in flight per broker unless shipper.output.kafka.librdkafka
// says otherwise: with more, it may report a message delivered that a failed request never wrote
// ("implicit ack"; kafka_output.cc says when). After a fatal error (rd_kafka_fatal_error, e.g. the
// idempotent producer's sequence numbers out of step with a broker's), which leaves a producer
// refusing everything, a new producer replaces it (logged at ERROR); what the old one held is
// purged, failed for now and produced again, never reported written.
//
// Cancel() purges what librdkafka still holds (queued or in flight) and makes Write() and its
// finish return an error: whatever was not confirmed is never reported written.
//
// Thread safety: Write() from several threads at once; Cancel() from any thread. Delivery
// reports, statistics and errors are served, and a failed producer replaced, on a thread of the
// output's own.
#ifndef SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_OUTPUT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
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
  struct Ssl {
    bool enabled = false;
    std::string certificate_authorities;  // PEM file; empty: the system's
    std::string certificate;              // PEM client certificate, with key
    std::string key;
    std::string verification_mode = "full";  // full, certificate or none
  } ssl;
  std::vector<std::string> librdkafka;  // name=value: more librdkafka properties

  void Validate(Problems* problems) const override;
  // Every librdkafka property set on a configuration as Build() does, connecting to nothing;
  // the PEM files readable.
  void Preflight(Problems* problems) const override;
  // Starts the producer; brokers may come up later.
  absl::StatusOr<std::unique_ptr<Output>> Build() const override;
  std::string Destination() const override;
};

// The registry's entry (registry.cc).
OutputType KafkaOutputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_OUTPUT_H_
