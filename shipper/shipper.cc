#include "shipper/shipper.h"

#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "queue/disk_queue.h"
#include "queue/memory_queue.h"
#include "queue/queue.h"
#include "runtime/cpu_monitor.h"
#include "runtime/executor_sizing.h"
#include "runtime/memory_budget.h"
#include "runtime/worker_pool.h"
#include "shipper/input/producer/producer_service.h"
#include "shipper/metrics/exporter.h"
#include "shipper/metrics/grpc_metrics.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/output/delivery.h"
#include "shipper/server/health_server.h"
#include "shipper/server/listener.h"

namespace shipper {
namespace {

std::string NewUuid() {
  absl::BitGen gen;
  uint64_t hi = absl::Uniform<uint64_t>(gen), lo = absl::Uniform<uint64_t>(gen);
  hi = (hi & ~uint64_t{0xF000}) | 0x4000;                      // version 4
  lo = (lo & ~(uint64_t{0xC} << 60)) | (uint64_t{0x8} << 60);  // RFC 4122 variant
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF,
                         lo >> 48, lo & 0xFFFFFFFFFFFF);
}

class ShipperImpl final : public Shipper {
 public:
  explicit ShipperImpl(const Config& config)
      : config_(config),
        uuid_(NewUuid()),
        grpc_quota_("shipper"),
        budget_(config.queue.max_bytes) {}

  ~ShipperImpl() override { Stop(); }

  absl::Status Init() {
    if (config_.disk_queue) {
      absl::StatusOr<std::unique_ptr<queue::DiskQueue>> disk =
          queue::DiskQueue::Create(config_.disk);
      if (!disk.ok()) return disk.status();
      disk_queue_ = disk->get();
      queue_ = *std::move(disk);
    } else {
      absl::StatusOr<std::unique_ptr<queue::Queue>> queue =
          queue::MemoryQueue::Create(config_.queue);
      if (!queue.ok()) return queue.status();
      queue_ = *std::move(queue);
    }
    absl::StatusOr<std::unique_ptr<Output>> output = config_.output_settings->Build();
    if (!output.ok()) return output.status();
    absl::StatusOr<std::unique_ptr<DeadLetters>> dead_letters =
        DeadLetters::Open(config_.dead_letter_path);
    if (!dead_letters.ok()) return dead_letters.status();
    Delivery::Options delivery;
    delivery.batch_max_events = config_.batch_max_events;
    delivery.backoff_init = config_.backoff_init;
    delivery.backoff_max = config_.backoff_max;
    delivery.name = config_.output;
    delivery_ = std::make_unique<Delivery>(queue_.get(), *std::move(output),
                                           *std::move(dead_letters), delivery);

    runtime::CpuQuotaOptions cpu_options;
    cpu_options.rounding = config_.cpu.rounding;
    cpu_options.override_cpus = config_.cpu.override_cpus;
    cpu_ = std::make_unique<runtime::CpuMonitor>(cpu_options, config_.cpu.retune_interval);
    const int cpus = cpu_->effective_cpus();
    grpc_quota_.SetMaxThreads(runtime::GrpcSyncServerMaxThreads(cpus));
    workers_ = std::make_unique<runtime::WorkerPool>(
        "output", runtime::OutputWorkers(cpus),
        [this](const runtime::WorkerPool::Worker&) { delivery_->Run(); });

    InputContext context;
    context.queue = queue_.get();
    context.budget = &budget_;
    context.uuid = uuid_;
    context.server = &config_.server;
    context.grpc_quota = &grpc_quota_;
    context.cpus = cpus;
    for (const auto& [name, settings] : config_.inputs) {
      if (!settings->enabled) continue;
      absl::StatusOr<std::unique_ptr<Input>> input = settings->Build(context);
      if (!input.ok()) return input.status();
      inputs_.push_back(*std::move(input));
    }
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    absl::StatusOr<std::unique_ptr<Listener>> listener = Listener::Open(config_.server);
    if (!listener.ok()) return listener.status();
    listener_ = *std::move(listener);
    grpc::ServerBuilder builder;
    // gRPC 1.51 reads a whole message into memory before it checks its size against its own
    // limit, and inflates a compressed one without any bound. So its quota bounds the memory of
    // messages on their way in; the size limit is ours (ReceivedRequest), which can name its
    // key; and compressed requests are refused (Beats' shipper output never compresses).
    const ServerLimits& limits = config_.server.limits;
    grpc_quota_.Resize(limits.max_receive_memory);
    builder.SetResourceQuota(grpc_quota_);
    builder.SetMaxReceiveMessageSize(-1);
    builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_DEFLATE, false);
    builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, false);
    // A stream waiting for a PublishEvents call holds what its HTTP/2 window let in
    // (producer_service.cc): without the bandwidth-delay probe, which grows windows to
    // megabytes, that is the default 64KiB.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    // Below INT_MAX: the config refuses more.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               static_cast<int>(limits.max_concurrent_streams));
    listener_->ServeWith(&builder);
    for (const std::unique_ptr<Input>& input : inputs_) input->RegisterWith(&builder);
    metrics::AddGrpcMetrics(&builder);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) return absl::InternalError("gRPC could not build the server");
    if (absl::Status started = listener_->Start(); !started.ok()) return started;
    for (const std::unique_ptr<Input>& input : inputs_) {
      if (absl::Status started = input->Start(); !started.ok()) return started;
    }
    cpu_->AddListener([this](int, int now) {
      grpc_quota_.SetMaxThreads(runtime::GrpcSyncServerMaxThreads(now));
      for (const std::unique_ptr<Input>& input : inputs_) input->Retune(now);
      workers_->Resize(runtime::OutputWorkers(now));
      metrics::ShipperMetrics::Get().Retuned();
    });
    if (!config_.server.health_address.empty()) {
      absl::StatusOr<std::unique_ptr<HealthServer>> health =
          HealthServer::Start(config_.server.health_address);
      if (!health.ok()) return health.status();
      health_ = *std::move(health);
    }
    absl::StatusOr<std::unique_ptr<metrics::Exporter>> exporter = metrics::Exporter::Start(
        config_, queue_.get(), disk_queue_, &budget_, cpu_.get(), workers_.get(), [this] {
          int threads = 0;
          for (const auto& input : inputs_) threads += input->threads();
          return threads;
        });
    if (!exporter.ok()) return exporter.status();
    exporter_ = *std::move(exporter);
    return absl::OkStatus();
  }

  const std::string& address() const override { return listener_->address(); }
  const std::string& uuid() const override { return uuid_; }

  StopReport Stop() override {
    absl::MutexLock lock(&stop_mu_);
    if (stopped_) return report_;
    stopped_ = true;
    if (server_ == nullptr) return report_;  // Init failed before serving
    server_->GetHealthCheckService()->SetServingStatus(false);
    if (exporter_ != nullptr) exporter_->SetServing(false);
    if (health_ != nullptr) health_->SetServing(false);
    for (const std::unique_ptr<Input>& input : inputs_) input->StopAccepting();
    queue_->Close();
    // Not done, of all accepted: those persisted stay in the disk queue's files (the memory
    // queue's persisted ones are its done ones), the others are resent by their clients.
    const uint64_t undone = queue_->Drain(absl::Now() + config_.shutdown_timeout);
    const uint64_t published = queue_->published_index();
    report_.delivered = published - undone;
    report_.kept = queue_->persisted_index() - report_.delivered;
    report_.left = published - queue_->persisted_index();
    delivery_->GiveUp();
    workers_->Stop();
    for (const std::unique_ptr<Input>& input : inputs_) input->Drained();
    listener_->Stop();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    for (const std::unique_ptr<Input>& input : inputs_) input->Stop();
    return report_;
  }

 private:
  const Config config_;
  const std::string uuid_;
  grpc::ResourceQuota grpc_quota_;
  // Request copies, and so every queued event (shipper.queue.mem.bytes). Before the queue and
  // the service: what they hold gives its bytes back when it is freed.
  runtime::MemoryBudget budget_;
  std::unique_ptr<queue::Queue> queue_;
  const queue::DiskQueue* disk_queue_ = nullptr;  // queue_, when it is the disk queue
  std::unique_ptr<Delivery> delivery_;            // the output, its retries and dead letters
  std::unique_ptr<runtime::WorkerPool> workers_;  // output workers
  std::vector<std::unique_ptr<Input>> inputs_;    // the enabled ones
  std::unique_ptr<grpc::Server> server_;          // shipper.server.server: the inputs' services
  std::unique_ptr<Listener> listener_;            // hands connections to server_
  std::unique_ptr<HealthServer> health_;          // null without shipper.server.health.address
  // After the pools: destroyed before them, its listener resizes them.
  std::unique_ptr<runtime::CpuMonitor> cpu_;
  // Destroyed first: its threads read the queue, the CPU monitor and the pools.
  std::unique_ptr<metrics::Exporter> exporter_;

  absl::Mutex stop_mu_;
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
  StopReport report_ ABSL_GUARDED_BY(stop_mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<Shipper>> Shipper::Start(const Config& config) {
  auto shipper = std::make_unique<ShipperImpl>(config);
  absl::Status status = shipper->Init();
  if (!status.ok()) return status;
  return shipper;
}

}  // namespace shipper
