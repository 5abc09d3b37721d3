// A Producer server with no queue and no output: the transport-and-decoding limit.
//
// PublishEvents decodes the request (by default as Shipper does, see Decode), checks the uuid
// like Shipper does, gives the events the next indexes and replies at once; every accepted
// event counts as persisted immediately, and PersistedIndex streams report it as Shipper would
// (one reply at once, then on each change, at most once per polling_interval; a zero interval
// gives one reply).
// Benchmarks divide Shipper's throughput by this server's, measured in the same run.
//
// Thread safety: Start/Shutdown from one thread; the accessors from any thread.
#ifndef SHIPPER_TESTS_LOAD_NULL_SERVER_H_
#define SHIPPER_TESTS_LOAD_NULL_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shipper::load {

struct NullServerOptions {
  std::string listen_address = "127.0.0.1:0";
  // Accept at most this many events per call (0: no limit), to exercise clients' resending of
  // partially accepted requests.
  uint32_t max_accept_per_call = 0;
  // Parse requests into a per-call arena (what a tuned server would do).
  bool use_arena = true;
  // kScan checks every event on its wire bytes with Shipper's own ScanPublishRequest (the
  // transport-and-decoding limit, the benchmarks' baseline); kFull parses every event into
  // protobuf messages (what a server decoding with protobuf pays); kEnvelope only reads the uuid
  // and counts events (the transport limit alone).
  enum class Decode { kScan, kFull, kEnvelope };
  Decode decode = Decode::kScan;
  // How full decoding is served: the callback API (gRPC's threads) or the async API with
  // async_threads completion-queue threads (0: one per core), as Shipper serves PublishEvents.
  enum class Api { kCallback, kAsync };
  Api api = Api::kAsync;
  int async_threads = 0;
};

class NullServer {
 public:
  // Starts serving; the address it listens on (with the real port) is in address().
  static absl::StatusOr<std::unique_ptr<NullServer>> Start(const NullServerOptions& options);

  virtual ~NullServer() = default;  // shuts down if still running

  // "127.0.0.1:PORT".
  virtual const std::string& address() const = 0;
  virtual const std::string& uuid() const = 0;
  // Events accepted so far (== the highest index).
  virtual uint64_t events() const = 0;
  virtual uint64_t calls() const = 0;

  // Cancels open streams and stops serving. Idempotent.
  virtual void Shutdown() = 0;
};

}  // namespace shipper::load

#endif  // SHIPPER_TESTS_LOAD_NULL_SERVER_H_
