// The load generator behind otlp_load: exports OTLP logs, spans or data points (otlp_shapes.h) to
// an OTLP server (Shipper's OTLP input, otlp_null_server) as a Collector's otlp/otlphttp exporter
// does, to the shape's signal's service (LogsService, TraceService, MetricsService) or path.
//
// `inflight` exports are in flight at once (the Collector's sending_queue.num_consumers, 10 by
// default): over gRPC on one channel, as the Collector multiplexes them on one connection; over
// HTTP (protobuf, POST /v1/logs, /v1/traces or /v1/metrics) on one kept-alive connection each.
// Requests are serialized once, up front (a pool of `pool_requests` distinct ones, otlp_shapes.h),
// so that the client spends its CPU on the transport alone. An export answered UNAVAILABLE (HTTP
// 503) is sent again after `retry_after`, as a sender honouring Retry-After would, sooner.
//
// Thread safety: RunOtlpLoad may be called from any thread; it blocks until the run is over.
#ifndef SHIPPER_TESTS_LOAD_OTLP_LOAD_GENERATOR_H_
#define SHIPPER_TESTS_LOAD_OTLP_LOAD_GENERATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/load/otlp_shapes.h"

namespace shipper::load {

enum class OtlpTransport { kGrpc, kHttp };

struct OtlpLoadOptions {
  std::string target;  // HOST:PORT
  OtlpTransport transport = OtlpTransport::kGrpc;
  OtlpShape shape = EventShape::kFilebeat;
  int batch = 500;    // records (log records, spans or data points) per export
  int inflight = 10;  // exports in flight
  // Stop after `events` records answered OK (rounded up to whole exports), or once `duration`
  // has passed (exports in flight then end by their reply or their timeout); at least one set.
  uint64_t events = 0;
  absl::Duration duration = absl::ZeroDuration();
  int pool_requests = 16;
  absl::Duration retry_after = absl::Milliseconds(1);
  absl::Duration call_timeout = absl::Seconds(30);
  uint64_t max_errors = 10;  // give up after this many failed exports (timeouts included)
};

struct OtlpLoadResult {
  uint64_t exports = 0;  // answered OK
  uint64_t events = 0;   // records of those
  uint64_t retries = 0;  // UNAVAILABLE / 503 answers, each sent again
  uint64_t errors = 0;   // failed otherwise
  std::string first_error;
  double request_bytes = 0;  // of one export
  absl::Duration elapsed;    // first export -> last reply
  double events_per_sec = 0;
  double p50_ms = 0, p99_ms = 0;  // first send -> OK, retries included
  double client_cpu_sec = 0;
};

// Runs the load; INVALID_ARGUMENT for bad options. Ignores SIGPIPE from then on, process-wide.
absl::StatusOr<OtlpLoadResult> RunOtlpLoad(const OtlpLoadOptions& options);

// One JSON object on one line (no newline), with the options that shaped the run.
std::string OtlpLoadResultJson(const OtlpLoadOptions& options, const OtlpLoadResult& result);

}  // namespace shipper::load

#endif  // SHIPPER_TESTS_LOAD_OTLP_LOAD_GENERATOR_H_
