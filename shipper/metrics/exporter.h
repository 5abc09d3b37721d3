// What a running Shipper exposes about itself: the HTTP endpoint (/metrics, /healthz) when
// http.enabled, and the periodic summary line (logging.metrics.*). Start()
// logs "metrics on http://HOST:PORT/metrics" with the real port.
//
// Thread safety: SetServing() from any thread. The endpoint reads the queue, the memory budget,
// the CPU monitor and the pools on its own threads: destroy the Exporter before any of them.
#ifndef SHIPPER_SHIPPER_METRICS_EXPORTER_H_
#define SHIPPER_SHIPPER_METRICS_EXPORTER_H_

#include <atomic>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "queue/disk_queue.h"
#include "queue/queue.h"
#include "runtime/cpu_monitor.h"
#include "runtime/memory_budget.h"
#include "runtime/worker_pool.h"
#include "shipper/config/config.h"
#include "shipper/metrics/http_server.h"
#include "shipper/metrics/summary.h"

namespace shipper::metrics {

class Exporter {
 public:
  // UNAVAILABLE when the endpoint cannot listen (the message names the keys to change).
  static absl::StatusOr<std::unique_ptr<Exporter>> Start(
      const Config& config, const queue::Queue* queue, const queue::DiskQueue* disk_queue,
      const runtime::MemoryBudget* budget, const runtime::CpuMonitor* cpu,
      const runtime::WorkerPool* output_workers, std::function<int()> input_threads);

  // /healthz answers 503 from now on: Shipper is shutting down.
  void SetServing(bool serving) { serving_.store(serving); }

 private:
  Exporter() = default;

  std::atomic<bool> serving_{true};
  // Both read the sources Start() was given; the summary is stopped first.
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Summary> summary_;
};

}  // namespace shipper::metrics

#endif  // SHIPPER_SHIPPER_METRICS_EXPORTER_H_
