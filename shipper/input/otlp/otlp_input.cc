#include "shipper/input/otlp/otlp_input.h"

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
    }
    if (settings_.http_enabled) {
      absl::StatusOr<std::unique_ptr<OtlpHttpServer>> http =
          OtlpHttpServer::Start(settings_, &exports_);
      if (!http.ok()) return http.status();
      http_ = *std::move(http);
    }
    return absl::OkStatus();
  }

  void Retune(int cpus) override {
    if (grpc_ != nullptr) grpc_->Retune(cpus);
  }
  int threads() const override {
    return (grpc_ == nullptr ? 0 : grpc_->threads()) +
           (http_ == nullptr ? 0 : OtlpHttpServer::kThreads);
  }

  void StopAccepting() override { exports_.StopAccepting(); }
  void Drained() override { exports_.Drained(); }
  // Drained() answered every export still waiting, so both transports' calls can finish.
  void Stop() override {
    if (grpc_ != nullptr) grpc_->Stop();
    http_.reset();
  }

 private:
  const OtlpSettings settings_;
  const InputContext context_;
  OtlpExports exports_;
  // After exports_: stopped and destroyed before it.
  std::unique_ptr<OtlpGrpc> grpc_;  // null before Start() or with shipper.otlp.grpc.enabled off
  std::unique_ptr<OtlpHttpServer> http_;  // null before Start() or with .http.enabled off
};

}  // namespace

absl::StatusOr<std::unique_ptr<Input>> BuildOtlpInput(const OtlpSettings& settings,
                                                      const InputContext& context) {
  return std::make_unique<OtlpInput>(settings, context);
}

}  // namespace shipper
