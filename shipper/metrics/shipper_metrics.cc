#include "shipper/metrics/shipper_metrics.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "shipper/metrics/proc_stats.h"
#include "shipper/version.h"

namespace shipper::metrics {
namespace {

using Type = MetricFamily::Type;

constexpr uint64_t kMicrosecond = 1000;
constexpr uint64_t kMillisecond = 1000 * kMicrosecond;
constexpr uint64_t kSecond = 1000 * kMillisecond;

// From a fast local write (~100 µs) to a remote output backing off for tens of seconds.
std::vector<uint64_t> LatencyBounds() {
  return {100 * kMicrosecond,  250 * kMicrosecond,  500 * kMicrosecond, 1 * kMillisecond,
          2500 * kMicrosecond, 5 * kMillisecond,    10 * kMillisecond,  25 * kMillisecond,
          50 * kMillisecond,   100 * kMillisecond,  250 * kMillisecond, 500 * kMillisecond,
          1 * kSecond,         2500 * kMillisecond, 5 * kSecond,        10 * kSecond,
          30 * kSecond};
}

// Batches run from 1 event to shipper.output.batch_max_events (4096 by default).
std::vector<uint64_t> BatchSizeBounds() { return {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536}; }

constexpr double kNanosecondsToSeconds = 1e-9;

// Why events of a publish call were not accepted: the rejected counter's reason label.
enum RejectReason { kQueueFull, kUuidMismatch, kShuttingDown, kInvalid, kOther, kReasons };
constexpr const char* kReasonLabels[kReasons] = {"queue_full", "uuid_mismatch", "shutting_down",
                                                 "invalid", "other"};

RejectReason ReasonFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return kQueueFull;  // the client resends the rest
    case absl::StatusCode::kFailedPrecondition:
      return kUuidMismatch;  // the client rewinds to its persisted index
    case absl::StatusCode::kUnavailable:
      return kShuttingDown;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kOutOfRange:
      return kInvalid;
    default:
      return kOther;
  }
}

void CollectOutputs(const Family<OutputMetrics>& outputs, Collection* c) {
  c->Add("shipper_output_batch_events", "Events in each batch an output worker took.",
         Type::kHistogram);
  outputs.ForEach([&](const std::string& labels, const OutputMetrics& m) {
    c->Histogram(m.batch_events, labels);
  });
  c->Add("shipper_output_write_duration_seconds",
         "Time each write of a batch took in the output, failed or not: its Write() and "
         "what the output left to finish it (a flush, a broker's acks).",
         Type::kHistogram);
  outputs.ForEach([&](const std::string& labels, const OutputMetrics& m) {
    c->Histogram(m.write_seconds, labels);
  });
  c->Add("shipper_output_errors_total", "Output writes that failed (each is retried).",
         Type::kCounter);
  outputs.ForEach([&](const std::string& labels, const OutputMetrics& m) {
    c->Sample(m.errors.value(), labels);
  });
  c->Add("shipper_output_retries_total", "Output writes that retried a batch after a failure.",
         Type::kCounter);
  outputs.ForEach([&](const std::string& labels, const OutputMetrics& m) {
    c->Sample(m.retries.value(), labels);
  });
  c->Add("shipper_events_dead_lettered_total",
         "Events an output rejected for good, written to the dead-letter file instead.",
         Type::kCounter);
  outputs.ForEach([&](const std::string& labels, const OutputMetrics& m) {
    c->Sample(m.dead_lettered.value(), labels);
  });
}

void CollectMemory(const Sources& sources, Collection* c) {
  if (sources.memory_limit.limited()) {
    c->Add("shipper_memory_limit_bytes",
           "The container's memory limit found at start (cgroup2 memory.max or cgroup1 "
           "memory.limit_in_bytes, the tightest up the hierarchy); absent without one.",
           Type::kGauge)
        .Sample(static_cast<double>(sources.memory_limit.bytes),
                FormatLabels({{"source", sources.memory_limit.source}}));
  }
  if (sources.budget == nullptr) return;
  c->Add("shipper_memory_budget_bytes",
         "The memory budgets: part=\"requests\" what Shipper may hold for requests it copied and "
         "the events queued from them (shipper.queue.mem.bytes, 0: none), part=\"receive\" what "
         "gRPC may hold for requests on their way in (shipper.server.max_receive_memory).",
         Type::kGauge)
      .Sample(sources.budget->capacity(), FormatLabels({{"part", "requests"}}));
  c->Sample(sources.max_receive_memory, FormatLabels({{"part", "receive"}}));
  c->Add("shipper_memory_budget_in_use_bytes",
         "What of the requests budget is held now: request copies, from before they are copied "
         "until their last event is acknowledged.",
         Type::kGauge)
      .Sample(sources.budget->in_use(), FormatLabels({{"part", "requests"}}));
}

void CollectRuntime(const Sources& sources, const Counter& retunes, Collection* c) {
  CollectMemory(sources, c);
  if (sources.cpu != nullptr) {
    const runtime::CpuQuota quota = sources.cpu->current();
    c->Add("shipper_cpu_effective",
           "CPUs the thread pools are sized for, and where that number came from "
           "(cgroup2, cgroup1, cpuset, override or none).",
           Type::kGauge)
        .Sample(quota.effective_cpus, FormatLabels({{"source", quota.source}}));
    c->Add("shipper_cpu_quota", "CPUs the cgroup's CFS quota grants (quota/period); 0: no quota.",
           Type::kGauge)
        .Sample(quota.quota_cpus());
    c->Add("shipper_cpu_host", "Online CPUs of the host.", Type::kGauge).Sample(quota.host_cpus);
    if (!quota.cgroup_dir.empty()) {
      absl::StatusOr<CpuThrottling> throttling = ReadCpuThrottling(quota.cgroup_dir);
      if (throttling.ok()) {
        c->Add("shipper_cgroup_cpu_periods_total",
               "CFS enforcement periods of the cgroup whose quota binds (cpu.stat nr_periods).",
               Type::kCounter)
            .Unsummarized()
            .Sample(throttling->periods);
        c->Add("shipper_cgroup_cpu_throttled_periods_total",
               "Periods in which that cgroup used up its quota (cpu.stat nr_throttled).",
               Type::kCounter)
            .Sample(throttling->throttled_periods);
        c->Add("shipper_cgroup_cpu_throttled_seconds_total",
               "Time that cgroup's threads were held back by its quota (cpu.stat throttled time).",
               Type::kCounter)
            .Sample(throttling->throttled_seconds);
      } else {
        LOG_EVERY_N(WARNING, 100) << "metrics: " << throttling.status().message();
      }
    }
  }
  c->Add("shipper_cpu_retunes_total", "Times a changed CPU quota resized the thread pools.",
         Type::kCounter)
      .Sample(retunes.value());
  if (sources.output_workers || sources.grpc_workers) {
    c->Add("shipper_executor_threads",
           "Live threads of each pool Shipper sizes from the CPU quota: output workers, and the "
           "workers serving PublishEvents.",
           Type::kGauge);
    if (sources.output_workers) c->Sample(sources.output_workers(), R"({pool="output"})");
    if (sources.grpc_workers) c->Sample(sources.grpc_workers(), R"({pool="grpc"})");
  }
}

void CollectDiskQueue(const Sources& sources, Collection* c) {
  const queue::DiskStats disk = sources.disk_queue();
  c->Add("shipper_queue_disk_bytes", "Bytes in the disk queue's segment files.", Type::kGauge)
      .Sample(disk.bytes);
  c->Add("shipper_queue_disk_max_bytes", "shipper.queue.disk.max_size.", Type::kGauge)
      .Sample(sources.disk_max_bytes);
  c->Add("shipper_queue_disk_segments", "Segment files of the disk queue.", Type::kGauge)
      .Sample(disk.segments);
  c->Add("shipper_queue_disk_oldest_event_age_seconds",
         "Since the oldest undelivered event was published; 0 when none is.", Type::kGauge)
      .Sample(absl::ToDoubleSeconds(disk.oldest_age));
  c->Add("shipper_queue_disk_syncs_total", "fdatasyncs of segment files (group commits).",
         Type::kCounter)
      .Sample(disk.syncs);
  c->Add("shipper_queue_disk_sync_seconds_total", "Time those fdatasyncs took, in all.",
         Type::kCounter)
      .Sample(absl::ToDoubleSeconds(disk.sync_time));
  c->Add("shipper_queue_disk_damaged_frames_total",
         "Damaged frames stepped over (each logged with its file and offset).", Type::kCounter)
      .Sample(disk.damaged_frames);
  c->Add("shipper_queue_disk_write_failing",
         "1 while the disk queue cannot write (disk full, I/O error): publishes get partial "
         "acceptance until it can.",
         Type::kGauge)
      .Sample(disk.last_error.ok() ? 0 : 1);
}

void CollectProcess(const Sources& sources, Collection* c) {
  absl::StatusOr<ProcessStats> stats = ReadProcessStats(sources.proc_root);
  if (!stats.ok()) {
    LOG_EVERY_N(WARNING, 100) << "metrics: " << stats.status().message();
    return;
  }
  c->Add("process_resident_memory_bytes", "Resident memory size.", Type::kGauge)
      .Sample(stats->resident_bytes);
  c->Add("process_open_fds", "Open file descriptors.", Type::kGauge).Sample(stats->open_fds);
  c->Add("process_threads", "Threads of the process.", Type::kGauge).Sample(stats->threads);
  c->Add("process_cpu_seconds_total", "User and system CPU time spent.", Type::kCounter)
      .Unsummarized()
      .Sample(stats->cpu_seconds);
  c->Add("process_start_time_seconds", "Start time of the process since the Unix epoch.",
         Type::kGauge)
      .Sample(stats->start_time_seconds);
  c->Add("shipper_uptime_seconds", "Time since the process started.", Type::kGauge)
      .Sample(absl::ToDoubleSeconds(absl::Now() - absl::FromUnixSeconds(0)) -
              stats->start_time_seconds);
}

}  // namespace

OutputMetrics::OutputMetrics()
    : batch_events(BatchSizeBounds(), 1), write_seconds(LatencyBounds(), kNanosecondsToSeconds) {}

InputMetrics::InputMetrics() : reply_seconds(LatencyBounds(), kNanosecondsToSeconds) {}

ShipperMetrics::ShipperMetrics() : persist_seconds_(LatencyBounds(), kNanosecondsToSeconds) {}

ShipperMetrics& ShipperMetrics::Get() {
  static ShipperMetrics* metrics = new ShipperMetrics();
  return *metrics;
}

void ShipperMetrics::Published(size_t events, size_t accepted, uint64_t last_index,
                               absl::StatusCode code, absl::Time start) {
  static_assert(std::tuple_size_v<decltype(events_rejected_)> == kReasons);
  events_received_.Add(events);
  events_accepted_.Add(accepted);
  if (accepted < events) events_rejected_[ReasonFor(code)].Add(events - accepted);
  if (accepted > 0) persist_latency_.Accepted(last_index, start);
}

namespace {

// The labels `labels` (not empty), and signal="<signal>" last when `signal` is not empty (one
// of a few fixed names: nothing to escape).
std::string WithSignal(
    std::initializer_list<std::pair<absl::string_view, absl::string_view>> labels,
    absl::string_view signal) {
  std::string out = FormatLabels(labels);
  if (!signal.empty()) {
    out.pop_back();
    absl::StrAppend(&out, ",signal=\"", signal, "\"}");
  }
  return out;
}

}  // namespace

void ShipperMetrics::InputRequest(absl::string_view input, absl::StatusCode code,
                                  absl::Duration since_arrival, absl::string_view signal) {
  input_requests_
      .Get(WithSignal({{"input", input}, {"code", absl::StatusCodeToString(code)}}, signal))
      .Add();
  inputs_.Get(WithSignal({{"input", input}}, signal)).reply_seconds.ObserveDuration(since_arrival);
}

void ShipperMetrics::InputRecords(absl::string_view input, RecordOutcome outcome, uint64_t count,
                                  absl::string_view signal) {
  if (count == 0) return;
  const absl::string_view label = outcome == RecordOutcome::kAccepted ? "accepted"
                                  : outcome == RecordOutcome::kRetry  ? "retry"
                                  : outcome == RecordOutcome::kJoined ? "joined"
                                                                      : "rejected";
  input_records_.Get(WithSignal({{"input", input}, {"outcome", label}}, signal)).Add(count);
}

std::vector<MetricFamily> Collect(const Sources& sources) {
  const ShipperMetrics& m = ShipperMetrics::Get();
  Collection c;
  c.Add("shipper_build_info", "Shipper's version; the value is always 1.", Type::kGauge)
      .Sample(1, FormatLabels({{"version", kVersion}}));

  c.Add("shipper_events_received_total", "Events in PublishEvents requests.", Type::kCounter)
      .Sample(m.events_received_.value());
  c.Add("shipper_events_accepted_total", "Events the queue accepted.", Type::kCounter)
      .Sample(m.events_accepted_.value());
  c.Add("shipper_events_rejected_total",
        "Events not accepted, by reason: the client resends them (queue_full, shutting_down), "
        "rewinds (uuid_mismatch) or must fix them (invalid).",
        Type::kCounter);
  for (size_t r = 0; r < kReasons; ++r) {
    c.Sample(m.events_rejected_[r].value(), FormatLabels({{"reason", kReasonLabels[r]}}));
  }
  if (sources.queue != nullptr) {
    c.Add("shipper_events_persisted_total",
          "Events handed off for good (written, or dead-lettered): the persisted index.",
          Type::kCounter)
        .Sample(sources.queue->persisted_index());
    const queue::Queue::Stats stats = sources.queue->stats();
    c.Add("shipper_queue_events", "Events in the queue: accepted and not yet persisted.",
          Type::kGauge)
        .Sample(stats.events);
    c.Add("shipper_queue_bytes", "Bytes of decoded events in the queue.", Type::kGauge)
        .Sample(stats.bytes);
    if (sources.queue_max_events > 0) {
      c.Add("shipper_queue_max_events", "The queue's capacity in events.", Type::kGauge)
          .Sample(sources.queue_max_events);
    }
    if (sources.queue_max_bytes > 0) {
      c.Add("shipper_queue_max_bytes", "The queue's capacity in bytes.", Type::kGauge)
          .Sample(sources.queue_max_bytes);
    }
  }
  if (sources.disk_queue) CollectDiskQueue(sources, &c);
  c.Add("shipper_persist_duration_seconds",
        "Per publish call: from its start until the persisted index covers its last accepted "
        "event.",
        Type::kHistogram)
      .Histogram(m.persist_seconds_);
  CollectOutputs(m.outputs_, &c);
  c.Add("shipper_output_requests_total",
        "Requests an output sent its destination, by the answer's status (none: no answer).",
        Type::kCounter);
  m.output_requests_.ForEach([&](const std::string& labels, const Counter& counter) {
    c.Sample(counter.value(), labels);
  });
  c.Add("shipper_output_items_total",
        "Events an output wrote, by outcome: Elasticsearch's created, duplicate (already "
        "there), retried, dead_lettered; a Redis channel's published, no_subscriber (written, "
        "heard by no one); an OTLP receiver's rejected_by_receiver (partial success: answered "
        "written, dropped by the receiver).",
        Type::kCounter);
  m.output_items_.ForEach([&](const std::string& labels, const Counter& counter) {
    c.Sample(counter.value(), labels);
  });
  if (sources.output_metrics) sources.output_metrics(&c);

  c.Add("shipper_connections_refused_total",
        "Connections beyond shipper.server.max_connections, whose calls were all refused.",
        Type::kCounter)
      .Sample(m.connections_refused_.value());
  c.Add("shipper_otlp_http_connections_refused_total",
        "OTLP/HTTP connections beyond shipper.otlp.http.max_connections, closed as soon as "
        "accepted.",
        Type::kCounter)
      .Sample(m.otlp_http_connections_refused_.value());
  c.Add("shipper_grpc_requests_total", "gRPC calls finished, by method and status code.",
        Type::kCounter);
  m.grpc_requests_.ForEach([&](const std::string& labels, const Counter& counter) {
    c.Sample(counter.value(), labels);
  });

  c.Add("shipper_input_requests_total",
        "Requests to each input (producer, otlp_grpc, otlp_http), by the status code answered.",
        Type::kCounter);
  m.input_requests_.ForEach([&](const std::string& labels, const Counter& counter) {
    c.Sample(counter.value(), labels);
  });
  c.Add("shipper_input_records_total",
        "Records (events) of requests to each input, by outcome: accepted (queued), retry (not "
        "taken for now; the client resends them), rejected (never taken: invalid, too large), "
        "joined (an OTLP retry answered with its export waiting to persist, or persisted "
        "within shipper.otlp.retry_window: not queued again).",
        Type::kCounter);
  m.input_records_.ForEach([&](const std::string& labels, const Counter& counter) {
    c.Sample(counter.value(), labels);
  });
  c.Add("shipper_input_reply_duration_seconds",
        "Per request to each input: from its arrival until its reply (with OTLP's ack: "
        "persisted, until its records are persisted).",
        Type::kHistogram);
  m.inputs_.ForEach([&](const std::string& labels, const InputMetrics& input) {
    c.Histogram(input.reply_seconds, labels);
  });

  CollectRuntime(sources, m.cpu_retunes_, &c);
  CollectProcess(sources, &c);
  return c.Take();
}

}  // namespace shipper::metrics
