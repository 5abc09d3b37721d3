#include "shipper/metrics/exporter.h"

#include <utility>

#include "glog/logging.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/output/registry.h"

namespace shipper::metrics {

absl::StatusOr<std::unique_ptr<Exporter>> Exporter::Start(
    const Config& config, const queue::Queue* queue, const queue::DiskQueue* disk_queue,
    const runtime::MemoryBudget* budget, const runtime::CpuMonitor* cpu,
    const runtime::WorkerPool* output_workers, std::function<int()> input_threads) {
  Sources sources;
  sources.queue = queue;
  if (disk_queue != nullptr) {
    sources.disk_queue = [disk_queue] { return disk_queue->disk_stats(); };
    sources.disk_max_bytes = config.disk.max_size;
  } else {
    sources.queue_max_events = config.queue.max_events;
    sources.queue_max_bytes = config.queue.max_bytes;
  }
  sources.memory_limit = config.memory_limit;
  sources.budget = budget;
  sources.max_receive_memory = config.server.limits.max_receive_memory;
  sources.cpu = cpu;
  sources.output_workers = [output_workers] { return output_workers->live_threads(); };
  sources.grpc_workers = std::move(input_threads);
  for (const OutputType& type : Outputs()) {
    if (type.name == config.output) sources.output_metrics = type.collect;
  }
  auto collect = [sources] { return Collect(sources); };

  std::unique_ptr<Exporter> exporter(new Exporter());
  if (config.http.enabled) {
    absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
        config.http.host, config.http.port, [collect] { return ToText(collect()); },
        [serving = &exporter->serving_] { return serving->load(); });
    if (!http.ok()) return http.status();
    exporter->http_ = *std::move(http);
    LOG(INFO) << "metrics on http://" << config.http.host << ":" << exporter->http_->port()
              << "/metrics";
  }
  if (config.metrics_log.enabled && config.metrics_log.period > absl::ZeroDuration()) {
    exporter->summary_ = std::make_unique<Summary>(config.metrics_log.period, collect);
  }
  return exporter;
}

}  // namespace shipper::metrics
