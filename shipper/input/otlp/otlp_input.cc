#include "shipper/input/otlp/otlp_input.h"

#include <utility>

#include "shipper/input/otlp/otlp_exports.h"
#include "shipper/input/otlp/otlp_grpc.h"

namespace shipper {
namespace {

class OtlpInput final : public Input {
 public:
  OtlpInput(const OtlpSettings& settings, const InputContext& context)
      : settings_(settings), context_(context), exports_(context.queue, context.budget, settings) {}

  absl::Status Start() override {
    if (settings_.grpc_enabled) {
      absl::StatusOr<std::unique_ptr<OtlpGrpc>> grpc =
          OtlpGrpc::Start(settings_, context_, &exports_);
      if (!grpc.ok()) return grpc.status();
      grpc_ = *std::move(grpc);
    }
    return absl::OkStatus();
  }

  void Retune(int cpus) override {
    if (grpc_ != nullptr) grpc_->Retune(cpus);
  }
  int threads() const override { return grpc_ == nullptr ? 0 : grpc_->threads(); }

  void StopAccepting() override { exports_.StopAccepting(); }
  void Drained() override { exports_.Drained(); }
  void Stop() override {
    if (grpc_ != nullptr) grpc_->Stop();
  }

 private:
  const OtlpSettings settings_;
  const InputContext context_;
  OtlpExports exports_;
  // After exports_: stopped and destroyed before it.
  std::unique_ptr<OtlpGrpc> grpc_;  // null before Start() or with shipper.otlp.grpc.enabled off
};

}  // namespace

absl::StatusOr<std::unique_ptr<Input>> BuildOtlpInput(const OtlpSettings& settings,
                                                      const InputContext& context) {
  return std::make_unique<OtlpInput>(settings, context);
}

}  // namespace shipper
