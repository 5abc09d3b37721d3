// librdkafka's statistics (the JSON of its stats callback, statistics.interval.ms; fields in
// librdkafka's STATISTICS.md), reduced to what the Kafka output exposes as metrics.
//
// Thread safety: a pure function.
#ifndef SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_STATISTICS_H_
#define SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_STATISTICS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace shipper {

struct KafkaStatistics {
  struct Broker {
    std::string name;   // host:port/id ("/bootstrap" until metadata names the broker's id)
    std::string state;  // librdkafka's: UP, DOWN, INIT, CONNECT, TRY_CONNECT, AUTH...
    // Mean request round trip over the last statistics window; nullopt when the window saw no
    // response.
    std::optional<absl::Duration> rtt;
  };
  // The brokers the producer talks to; librdkafka's internal and logical ones left out.
  std::vector<Broker> brokers;
  uint64_t tx_bytes = 0;     // bytes of every request sent to the brokers, as on the wire
  uint64_t txmsg_bytes = 0;  // bytes of the messages sent, before compression
};

// INVALID_ARGUMENT when `json` is not an object; fields that are missing or of another type are
// left at their defaults, so that another librdkafka version's statistics still parse.
absl::StatusOr<KafkaStatistics> ParseKafkaStatistics(absl::string_view json);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_STATISTICS_H_
