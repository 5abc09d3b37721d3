// Every metric Shipper exposes, in one place: the hooks the pipeline updates (ShipperMetrics) and
// Collect(), which names them, gives their help texts and reads the scrape-time gauges (queue
// fill, CPU quota, cgroup throttling, /proc). docs/operations.md "Metrics" lists them.
//
// The hooks are process-wide, like the process metrics beside them: counters count since the
// process started, as Prometheus expects. A process runs one Shipper (tests start the binary).
//
// Thread safety: the hooks may be updated from any thread (see metric.h); Collect() may run on
// any thread while they are, as long as the Sources it reads are alive.
#ifndef SHIPPER_SHIPPER_METRICS_SHIPPER_METRICS_H_
#define SHIPPER_SHIPPER_METRICS_SHIPPER_METRICS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "queue/disk_queue.h"
#include "queue/queue.h"
#include "runtime/cpu_monitor.h"
#include "runtime/memory_budget.h"
#include "runtime/memory_limit.h"
#include "shipper/metrics/metric.h"
#include "shipper/metrics/persist_latency.h"

namespace shipper::metrics {

// What Collect() reads at scrape time. Null / empty members are left out of the page.
struct Sources {
  const queue::Queue* queue = nullptr;
  size_t queue_max_events = 0;
  size_t queue_max_bytes = 0;                    // 0: no byte limit
  std::function<queue::DiskStats()> disk_queue;  // when the queue is the disk queue
  uint64_t disk_max_bytes = 0;
  runtime::MemoryLimit memory_limit;              // as detected at start
  const runtime::MemoryBudget* budget = nullptr;  // shipper.queue.mem.bytes: copies, queued
  size_t max_receive_memory = 0;                  // gRPC's part of the memory budget
  const runtime::CpuMonitor* cpu = nullptr;
  std::function<int()> output_workers;  // live threads of the output pool
  std::function<int()> grpc_workers;    // live threads of the pool serving PublishEvents
  // The active output's own metrics (OutputType::collect), beside the per-output families.
  std::function<void(Collection*)> output_metrics;
  std::string proc_root = "/proc";
};

// Every metric's current value: the hooks below, then what `sources` report now.
std::vector<MetricFamily> Collect(const Sources& sources);

// One output's delivery metrics (label output="<name>").
struct OutputMetrics {
  OutputMetrics();
  Histogram batch_events;   // events of each batch taken from the queue
  Histogram write_seconds;  // each Write() call, failed or not
  Counter errors;           // failed Write() calls
  Counter retries;          // writes of a batch after its first failed
  Counter dead_lettered;    // events rejected for good and written to the dead-letter file
};

// One input's reply-time histogram (label input="<name>").
struct InputMetrics {
  InputMetrics();
  Histogram reply_seconds;  // from a request's arrival to its reply
};

// What became of records (events) a request to an input carried: the outcome label of
// shipper_input_records_total.
enum class RecordOutcome {
  kAccepted,  // queued
  kRetry,     // not taken for now: the client resends them (full, shutting down, rewind)
  kRejected,  // never taken: invalid, too large, partial_success
  kJoined,    // a retry of records still waiting to persist, or persisted just before: not queued
              // again (OTLP with ack: persisted)
};

class ShipperMetrics {
 public:
  // The process's instance.
  static ShipperMetrics& Get();

  // Counts a PublishEvents call of `events` events that ended with `code`, of which the first
  // `accepted` were taken (ending at queue index `last_index` when accepted > 0). The code says
  // why the rest were refused (reason label): OK: queue_full (partial acceptance),
  // FAILED_PRECONDITION: uuid_mismatch, UNAVAILABLE: shutting_down, INVALID_ARGUMENT,
  // RESOURCE_EXHAUSTED and OUT_OF_RANGE: invalid, anything else: other. `start` is when the call
  // began, for the publish → persisted latency.
  void Published(size_t events, size_t accepted, uint64_t last_index, absl::StatusCode code,
                 absl::Time start);
  // A request to the input called `input` ("producer", "otlp_grpc", "otlp_http") was answered
  // with `code`, `since_arrival` after it arrived. `signal`: what the request carried, for the
  // inputs that take several kinds ("logs", "traces", "metrics": the signal label); empty for
  // the others (no label). Locks briefly (a map lookup).
  void InputRequest(absl::string_view input, absl::StatusCode code, absl::Duration since_arrival,
                    absl::string_view signal = {});
  // `count` records of requests to `input` (of `signal`, as above) came to `outcome`. Locks
  // briefly.
  void InputRecords(absl::string_view input, RecordOutcome outcome, uint64_t count,
                    absl::string_view signal = {});
  // The persisted index advanced to `index`.
  void Persisted(uint64_t index) { persist_latency_.Persisted(index); }
  // The CPU monitor resized the pools.
  void Retuned() { cpu_retunes_.Add(); }
  // A connection beyond shipper.server.max_connections was accepted to be refused.
  void ConnectionRefused() { connections_refused_.Add(); }
  // A connection beyond shipper.otlp.http.max_connections was closed as soon as it was accepted.
  void OtlpHttpConnectionRefused() { otlp_http_connections_refused_.Add(); }
  // The delivery metrics of the output called `name` ("file", "redis", ...). Locks: look it up
  // once per output and keep the reference.
  OutputMetrics& Output(absl::string_view name) {
    return outputs_.Get(FormatLabels({{"output", name}}));
  }
  // Requests an output sent its destination, by the answer's status (an HTTP status, or "none"
  // when none came), and the events of them by what became of each (outcome: "created",
  // "duplicate", "retried", "dead_lettered"). Outputs that speak to a server in requests of
  // many events count them here (Elasticsearch), and outputs whose answers say more than
  // written (a Redis channel: "published", "no_subscriber"). Locks: look each child up once, or
  // once per request.
  Counter& OutputRequests(absl::string_view output, absl::string_view status) {
    return output_requests_.Get(FormatLabels({{"output", output}, {"status", status}}));
  }
  Counter& OutputItems(absl::string_view output, absl::string_view outcome) {
    return output_items_.Get(FormatLabels({{"output", output}, {"outcome", outcome}}));
  }
  // The request counter of a gRPC method (full path) and status code. Locks: see GrpcMetrics.
  Counter& GrpcRequests(absl::string_view method, absl::string_view code) {
    return grpc_requests_.Get(FormatLabels({{"method", method}, {"code", code}}));
  }

 private:
  friend std::vector<MetricFamily> Collect(const Sources&);
  ShipperMetrics();

  Counter events_received_;
  Counter events_accepted_;
  std::array<Counter, 5> events_rejected_;  // by RejectReason (shipper_metrics.cc)
  Histogram persist_seconds_;
  PersistLatency persist_latency_{&persist_seconds_};
  Counter cpu_retunes_;
  Counter connections_refused_;
  Counter otlp_http_connections_refused_;
  Family<OutputMetrics> outputs_;
  Family<Counter> output_requests_;
  Family<Counter> output_items_;
  Family<Counter> grpc_requests_;
  Family<InputMetrics> inputs_;
  Family<Counter> input_requests_;
  Family<Counter> input_records_;
};

}  // namespace shipper::metrics

#endif  // SHIPPER_SHIPPER_METRICS_SHIPPER_METRICS_H_
