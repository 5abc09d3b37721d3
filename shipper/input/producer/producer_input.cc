#include "shipper/input/producer/producer_input.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/executor_sizing.h"
#include "runtime/worker_pool.h"
#include "shipper/input/producer/producer_service.h"

namespace shipper {
namespace {

// Requests are checked by recursing once per level (request_validation.h): this bounds the
// stack that takes.
constexpr size_t kMaxNestingDepthCeiling = 1000;

class ProducerInput final : public Input {
 public:
  ProducerInput(const InputContext& context, const RequestLimits& limits)
      : service_(context.queue, context.budget, context.uuid, limits,
                 context.server->limits.max_receive_memory),
        cpus_(context.cpus) {}

  void RegisterWith(grpc::ServerBuilder* builder) override { service_.RegisterWith(builder); }

  absl::Status Start() override {
    service_.StartServing();
    workers_ = std::make_unique<runtime::WorkerPool>(
        "grpc", runtime::GrpcWorkers(cpus_),
        [this](const runtime::WorkerPool::Worker& self) { service_.Serve(self); });
    return absl::OkStatus();
  }

  void Retune(int cpus) override {
    if (workers_ != nullptr) workers_->Resize(runtime::GrpcWorkers(cpus));
  }
  int threads() const override { return workers_ == nullptr ? 0 : workers_->live_threads(); }

  void StopAccepting() override { service_.StopAccepting(); }
  void Drained() override { service_.EndStreams(); }
  // The workers serve until every call ended: ShutdownServing() waits for that.
  void Stop() override {
    service_.ShutdownServing();
    if (workers_ != nullptr) workers_->Stop();
    service_.FinishServing();
  }

 private:
  ProducerService service_;
  const int cpus_;
  std::unique_ptr<runtime::WorkerPool> workers_;  // serve PublishEvents; null before Start()
};

}  // namespace

void ProducerSettings::Validate(Problems* problems) const {
  if (limits.max_nesting_depth > kMaxNestingDepthCeiling) {
    problems->Add(absl::StrCat("config: shipper.server.max_nesting_depth must be at most ",
                               kMaxNestingDepthCeiling,
                               " (every level costs stack while a request is checked)"));
  }
}

absl::StatusOr<std::unique_ptr<Input>> ProducerSettings::Build(const InputContext& context) const {
  RequestLimits request_limits = limits;
  request_limits.max_message_size = context.server->limits.max_message_size;
  return std::make_unique<ProducerInput>(context, request_limits);
}

std::string ProducerSettings::Source(const ServerSettings& server) const {
  return absl::StrCat("Producer API on ", server.address);
}

InputType ProducerInputType() {
  using K = KeysOf<ProducerSettings>;
  const auto limit = [](auto member) {
    return [member](ProducerSettings & s) -> auto& { return s.limits.*member; };
  };
  return MakeInputType<ProducerSettings>(
      "producer",
      {
          K::Size("shipper.server.max_events_per_request",
                  "most events one PublishEvents may carry", 1, false,
                  limit(&RequestLimits::max_events_per_request)),
          K::Size("shipper.server.max_nesting_depth",
                  "deepest Struct/ListValue nesting in an event's fields or metadata", 1, false,
                  limit(&RequestLimits::max_nesting_depth)),
          K::Bool("shipper.strict_mode",
                  "refuse events without a timestamp, a source.input_id and a full data_stream, "
                  "as the archived Go shipper's strict mode did",
                  limit(&RequestLimits::strict_mode)),
      });
}

}  // namespace shipper
