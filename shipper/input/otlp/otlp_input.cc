#include "shipper/input/otlp/otlp_input.h"

#include <atomic>
#include <utility>

#include "shipper/input/otlp/otlp_exports.h"
#include "shipper/input/otlp/otlp_grpc.h"
#include "shipper/input/otlp/otlp_http_server.h"

namespace shipper {
namespace {

class OtlpInput final : public Input {
 public:
  OtlpInput(const OtlpSettings& settings, const InputContext& context)
      : settings_(settings), context_(context), exports_(context.queue, context.budget, settings) {}
  // Answers what still waits while the transports can still reply (when the pipeline never got
  // to Drained(), its start having failed), before they go.
  ~OtlpInput() override { exports_.Drained(); }

  absl::Status Start() override {
    if (settings_.grpc_enabled) {
      absl::StatusOr<std::unique_ptr<OtlpGrpc>> grpc =
          OtlpGrpc::Start(settings_, context_, &exports_);
      if (!grpc.ok()) return grpc.status();
      grpc_ = *std::move(grpc);
      grpc_threads_.store(grpc_.get(), std::memory_order_release);
    }
    if (settings_.http_enabled) {
      absl::StatusOr<std::unique_ptr<OtlpHttpServer>> http =
          OtlpHttpServer::Start(settings_, &exports_);
      if (!http.ok()) return http.status();
      http_ = *std::move(http);
      http_threads_.store(OtlpHttpServer::kThreads, std::memory_order_relaxed);
    }
    return absl::OkStatus();
  }

  void Retune(int cpus) override {
    if (grpc_ != nullptr) grpc_->Retune(cpus);
  }
  // From any thread, also while Start() or Stop() runs: it reads only the atomics below.
  int threads() const override {
    const OtlpGrpc* grpc = grpc_threads_.load(std::memory_order_acquire);
    return (grpc == nullptr ? 0 : grpc->threads()) + http_threads_.load(std::memory_order_relaxed);
  }

  void StopAccepting() override { exports_.StopAccepting(); }
  void Drained() override { exports_.Drained(); }
  // Drained() answered every export still waiting, so both transports' calls can finish.
  void Stop() override {
    if (grpc_ != nullptr) grpc_->Stop();
    http_threads_.store(0, std::memory_order_relaxed);
    http_.reset();
  }

 private:
  const OtlpSettings settings_;
  const InputContext context_;
  OtlpExports exports_;
  // After exports_: stopped and destroyed before it.
  std::unique_ptr<OtlpGrpc> grpc_;  // null before Start() or with shipper.otlp.grpc.enabled off
  std::unique_ptr<OtlpHttpServer> http_;  // null before Start() or with .http.enabled off
  // What threads() reads, which the steps above change under it: grpc_ once started (it lives
  // as long as the input), and the HTTP server's threads while it runs.
  std::atomic<const OtlpGrpc*> grpc_threads_{nullptr};
  std::atomic<int> http_threads_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<Input>> BuildOtlpInput(const OtlpSettings& settings,
                                                      const InputContext& context) {
  return std::make_unique<OtlpInput>(settings, context);
}

}  // namespace shipper
