// The load generator behind shipper_load: N channels x M in-flight PublishEvents calls against one
// Producer server, with publish -> persisted latency from the PersistedIndex stream.
//
// Requests are serialized once, up front: a pool of distinct events (see event_shapes.h) is encoded
// as PublishRequest.events entries, and every call sends a slice of that pool behind the current
// uuid, with no per-call protobuf work. The client thus spends its CPU on gRPC alone, which matters
// when client and server share a small machine.
//
// Partially accepted calls are resent from the first unaccepted event, at once (after 1 ms when
// nothing was accepted, after 10 ms on an error), until the whole batch is in.
//
// Thread safety: RunLoad may be called from any thread; it blocks until the run is over.
#ifndef SHIPPER_TESTS_LOAD_LOAD_GENERATOR_H_
#define SHIPPER_TESTS_LOAD_LOAD_GENERATOR_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/load/event_shapes.h"
#include "tests/load/latency_tracker.h"

namespace shipper::load {

// About once a second while the run is on: figures over the last interval.
struct LoadProgress {
  absl::Duration elapsed;
  double accepted_per_sec = 0;
  double persisted_per_sec = 0;
  uint64_t lag_events = 0;  // highest accepted index - persisted index
  LatencySummary window;    // latencies of calls persisted during the interval
  uint64_t errors = 0;
};

struct LoadOptions {
  std::string target;  // HOST:PORT
  int channels = 4;    // distinct TCP connections
  int inflight = 4;    // calls in flight per channel
  int batch = 500;     // events per call
  EventShape shape = EventShape::kFilebeat;
  double rate = 0;  // events/s over all channels; 0: as fast as possible
  // Stop after `events` accepted events, or when `duration` has passed; at least one must be set.
  uint64_t events = 0;
  absl::Duration duration = absl::ZeroDuration();
  int threads = 1;         // completion-queue threads, channels spread over them
  int pool_events = 4096;  // distinct events in the pre-serialized pool
  absl::Duration poll_interval = absl::Milliseconds(1);  // PersistedIndexRequest.polling_interval
  absl::Duration call_timeout = absl::Seconds(10);
  absl::Duration connect_timeout = absl::Seconds(10);
  // After the last accepted call, wait this long at most for everything to be persisted.
  absl::Duration drain_timeout = absl::Seconds(30);
  // Connect every channel and follow PersistedIndex for `duration`, publishing nothing (to
  // measure a server's idle cost with clients attached).
  bool idle = false;
  uint64_t max_errors = 1000;  // give up (error result) after this many failed calls
  // At the end of `duration`, drop what is not accepted yet instead of resending it until it is:
  // a flood against a server that cannot take it (its output down) ends on time.
  bool drop_at_end = false;
  std::function<void(const LoadProgress&)> on_progress;  // optional; called from its own thread
};

struct LoadResult {
  uint64_t events_accepted = 0;
  uint64_t events_persisted = 0;
  uint64_t calls = 0;            // successful calls, partial ones included
  uint64_t partial_replies = 0;  // calls that accepted fewer events than sent
  uint64_t resent_events = 0;    // events sent again after a partial reply or an error
  uint64_t errors = 0;           // calls that failed
  std::string first_error;
  double event_bytes = 0;       // mean serialized size of one event entry
  absl::Duration accept_time;   // start -> last accepted reply
  absl::Duration persist_time;  // start -> last persisted event
  double accepted_per_sec = 0;
  double persisted_per_sec = 0;
  bool drained = false;          // every accepted event was persisted before drain_timeout
  LatencySummary latency;        // publish -> persisted, per call
  LatencySummary reply_latency;  // publish -> reply, per successful call
  double client_cpu_sec = 0;     // this process's user + system CPU during the run
  std::string server_uuid;
};

// Runs the load and returns its figures; UNAVAILABLE if the target cannot be reached, ABORTED
// after max_errors failed calls, INVALID_ARGUMENT for bad options.
absl::StatusOr<LoadResult> RunLoad(const LoadOptions& options);

// One JSON object on one line (no newline), with the options that shaped the run.
std::string LoadResultJson(const LoadOptions& options, const LoadResult& result);

// One line for a terminal: "12.0s accepted 512.3k/s persisted 510.1k/s lag 2000 p50 ...".
std::string FormatProgress(const LoadProgress& progress);

}  // namespace shipper::load

#endif  // SHIPPER_TESTS_LOAD_LOAD_GENERATOR_H_
