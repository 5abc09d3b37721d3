// The outputs the invariant test drives, each with the destination it writes to and the faults
// that destination can suffer, started by the test on loopback: the file output (no destination
// process: its faults are Shipper's own, a file-size limit, failing fdatasyncs and failing
// writes), Redis (a real redis-server, append-only and fsynced always, so that a killed one keeps
// what it acknowledged), Kafka (librdkafka's mock cluster in this process; kafka_real: one real
// Kafka node, tests/kafka/real_kafka.h), Elasticsearch (fake_elasticsearch.py, which follows the
// _bulk API's documentation), forwarding (a second Shipper as aggregator, writing to a file) and
// OTLP (fake_otlp_receiver.py, which answers as the OTLP specification says).
//
// Every destination keeps what it acknowledged across its faults, so what it holds only grows:
// a persisted index read during a fault can be checked against it afterwards. Some events are
// refused for good (Refused): they belong in the dead-letter file, with a reason naming the key
// that refused them, not in the destination.
//
// Thread safety: one thread uses a Sink.
#ifndef SHIPPER_TESTS_INVARIANT_SINKS_H_
#define SHIPPER_TESTS_INVARIANT_SINKS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/messages.pb.h"

namespace shipper::testing {

class Sink {
 public:
  virtual ~Sink() = default;

  // Shipper's -E arguments that enable this output, writing to this destination.
  virtual std::vector<std::string> ShipperArgs() const = 0;
  // The event published as `seq`: it holds test_seq = seq (and whatever the destination's
  // per-event faults read).
  virtual elastic::agent::shipper::v1::messages::Event MakeEvent(uint64_t seq) const;
  // Whether the destination refuses event `seq` for good; then RefusalKey() is the key its
  // dead letter's reason names.
  virtual bool Refused(uint64_t) const { return false; }
  virtual std::string RefusalKey() const { return ""; }
  // Shipper runs as process `pid` (again after each SIGKILL): for faults that act on it.
  virtual void ShipperStarted(pid_t) {}
  // The test_seq of every event the destination holds, one per copy; -1 for what is no test
  // event. Call it every few seconds: Kafka's mock cluster forgets what is older than its last
  // 5 MiB a partition, so its sink reads as it goes. REQUIRES: no fault is on.
  virtual absl::StatusOr<std::vector<int64_t>> Read() = 0;
  // The faults the destination can suffer, by name ("kill", "freeze", ...); none for the file.
  virtual std::vector<std::string> Faults() const = 0;
  // Injects fault `name` (one of Faults()), timed with `rng`, calls `during` while it is on, and
  // heals it.
  virtual absl::Status Inject(absl::string_view name, std::mt19937_64& rng,
                              const std::function<void()>& during) = 0;
};

// The output names StartSink takes.
const std::vector<std::string>& SinkNames();

// Starts the destination of output `name` with its files under `dir`; `seed` picks which events
// meet per-event faults.
absl::StatusOr<std::unique_ptr<Sink>> StartSink(absl::string_view name, const std::string& dir,
                                                uint64_t seed);

}  // namespace shipper::testing

#endif  // SHIPPER_TESTS_INVARIANT_SINKS_H_
