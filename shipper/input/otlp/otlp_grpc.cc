#include "shipper/input/otlp/otlp_grpc.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "proto/rpc/status.pb.h"
#include "runtime/executor_sizing.h"
#include "runtime/worker_pool.h"
#include "shipper/codec/compression.h"
#include "shipper/input/otlp/otlp_response.h"
#include "shipper/input/otlp/otlp_signals.h"
#include "shipper/server/async_calls.h"
#include "shipper/server/listener.h"

namespace shipper {
namespace {

// The gRPC status of an outcome that is not OK; UNAVAILABLE carries RetryInfo.
grpc::Status StatusOf(const ExportOutcome& outcome) {
  const auto code = static_cast<grpc::StatusCode>(outcome.status.code());
  std::string message(outcome.status.message());
  if (!absl::IsUnavailable(outcome.status)) return grpc::Status(code, message);
  google::rpc::RetryInfo retry;
  const absl::Duration delay = outcome.retry_delay;
  retry.mutable_retry_delay()->set_seconds(absl::ToInt64Seconds(delay));
  retry.mutable_retry_delay()->set_nanos(
      static_cast<int32_t>(absl::ToInt64Nanoseconds(delay % absl::Seconds(1))));
  google::rpc::Status details;
  details.set_code(static_cast<int32_t>(code));
  details.set_message(message);
  details.add_details()->PackFrom(retry);
  return grpc::Status(code, message, details.SerializeAsString());
}

// Whether a method is one of the Export methods, or how to refuse it.
grpc::Status Served(absl::string_view method) {
  if (SignalOfMethod(method)) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, absl::StrCat("unknown method ", method));
}

class OtlpGrpcImpl;

// One Export call (async_calls.h). After the request is handed to OtlpExports, only `done`
// touches it (from whichever thread runs it), until the reply's completion deletes it.
class Call final : public AsyncCall {
 public:
  explicit Call(OtlpGrpcImpl* grpc);

 private:
  // Hands the request to the exports. The call may be deleted (by the reply's completion on
  // another thread) before this returns: nothing after Export() touches `this`.
  void OnRequest(grpc::ByteBuffer& message) override;
  void Answer(const ExportOutcome& outcome);

  OtlpGrpcImpl* const grpc_;
  // Set as the request arrives: the method's signal, and when.
  OtlpSignal signal_ = OtlpSignal::kLogs;
  absl::Time arrival_;
};

class OtlpGrpcImpl final : public OtlpGrpc {
 public:
  OtlpGrpcImpl(const OtlpSettings& settings, const InputContext& context, OtlpExports* exports)
      : settings_(settings),
        exports_(exports),
        budget_(context.budget),
        calls_("OTLP/gRPC",
               PostedCalls(context.server->limits.max_receive_memory, settings.max_message_size),
               Served, [this] { return new Call(this); }) {}

  absl::Status Open(const InputContext& context) {
    ServerSettings server = *context.server;
    server.address = settings_.grpc_address;
    server.ssl = settings_.ssl;
    absl::StatusOr<std::unique_ptr<Listener>> listener =
        Listener::Open(server, ListenerKeys{"shipper.otlp.grpc.server", &OtlpTlsBlock()});
    if (!listener.ok()) return listener.status();
    listener_ = *std::move(listener);
    grpc::ServerBuilder builder;
    if (context.grpc_quota != nullptr) builder.SetResourceQuota(*context.grpc_quota);
    // gRPC refuses a larger message as it receives it; up to that our own limit
    // (max_message_size) names its key, and holds for what a gzip request inflates to.
    builder.SetMaxReceiveMessageSize(ReceiveLimit(settings_.max_message_size));
    // gzip is inflated here, bounded; gRPC would inflate without a bound.
    builder.AddChannelArgument(GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION, 0);
    builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_DEFLATE, false);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               static_cast<int>(context.server->limits.max_concurrent_streams));
    listener_->ServeWith(&builder);
    calls_.RegisterWith(&builder);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) return absl::InternalError("gRPC could not build the OTLP server");
    if (absl::Status started = listener_->Start(); !started.ok()) return started;
    LOG(INFO) << "OTLP/gRPC listening on " << listener_->address();
    calls_.Start();
    workers_ = std::make_unique<runtime::WorkerPool>(
        "otlp-grpc", runtime::GrpcWorkers(context.cpus),
        [this](const runtime::WorkerPool::Worker& self) { calls_.Serve(self); });
    return absl::OkStatus();
  }

  ~OtlpGrpcImpl() override { Stop(); }

  const std::string& address() const override { return listener_->address(); }
  void Retune(int cpus) override { workers_->Resize(runtime::GrpcWorkers(cpus)); }
  int threads() const override { return workers_ == nullptr ? 0 : workers_->live_threads(); }

  void Stop() override {
    if (stopped_) return;
    stopped_ = true;
    if (listener_ != nullptr) listener_->Stop();
    // Calls still open after a second are cancelled; calls_ then waits for the rest to answer
    // (a conversion running, a reply being sent) while the workers still serve them.
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    calls_.Shutdown();
    if (workers_ != nullptr) workers_->Stop();
    calls_.Finish();
  }

 private:
  friend class Call;

  const OtlpSettings settings_;
  OtlpExports* const exports_;
  runtime::MemoryBudget* const budget_;
  std::unique_ptr<Listener> listener_;
  AsyncCalls calls_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<runtime::WorkerPool> workers_;
  bool stopped_ = false;
};

Call::Call(OtlpGrpcImpl* grpc) : AsyncCall(&grpc->calls_), grpc_(grpc) {}

void Call::OnRequest(grpc::ByteBuffer& message) {
  // Only now the next call takes our place: the number of calls bounds what gRPC reads.
  PostNext();
  const absl::Time arrival = absl::Now();
  arrival_ = arrival;
  signal_ = *SignalOfMethod(context().method());  // method_check let only these through
  const OtlpSignal signal = signal_;
  OtlpExports* const exports = grpc_->exports_;
  runtime::MemoryBudget* const budget = grpc_->budget_;
  const size_t max = grpc_->settings_.max_message_size;
  auto done = [this](const ExportOutcome& outcome) { Answer(outcome); };

  // What this thread holds while the exports convert the request: the message flattened (when
  // gRPC's buffer is in pieces) or inflated, charged to the budget; freed once Export returns.
  grpc::ByteBuffer received = std::move(message);
  size_t charged = 0;
  struct Charge {
    runtime::MemoryBudget* budget;
    size_t* bytes;
    ~Charge() { budget->Release(*bytes); }
  } give_back{budget, &charged};
  const auto charge = [&](size_t n) {
    if (!budget->TryAcquire(n)) return false;
    charged += n;
    return true;
  };
  if (received.Length() > max) {
    return done(exports->TooLarge(received.Length()));
  }
  grpc::Slice flat;
  if (!received.TrySingleSlice(&flat).ok()) {
    if (!charge(received.Length())) {
      return done(exports->Unavailable(
          "the memory budget (shipper.queue.mem.bytes) has no room for the request now"));
    }
    CHECK(received.DumpToSingleSlice(&flat).ok());
  }
  received.Clear();
  const absl::string_view bytes(reinterpret_cast<const char*>(flat.begin()), flat.size());
  if (!LooksLikeGzip(bytes)) {
    return exports->Export(OtlpTransport::kGrpc, signal, bytes, arrival, done, charged);
  }
  std::string inflated;
  const absl::Status status = Decode(ContentCoding::kGzip, bytes, max,
                                     "shipper.otlp.max_message_size", budget, charge, &inflated);
  if (!status.ok()) return done(exports->Refused(status));
  exports->Export(OtlpTransport::kGrpc, signal, inflated, arrival, done, charged);
}

// Every request's one answer, whatever decided it: where it is counted.
void Call::Answer(const ExportOutcome& outcome) {
  OtlpExports::CountAnswer(OtlpTransport::kGrpc, signal_, arrival_, outcome);
  if (!outcome.status.ok()) return Fail(StatusOf(outcome));
  Reply(*ExportResponse(signal_, outcome));
}

}  // namespace

absl::StatusOr<std::unique_ptr<OtlpGrpc>> OtlpGrpc::Start(const OtlpSettings& settings,
                                                          const InputContext& context,
                                                          OtlpExports* exports) {
  auto grpc = std::make_unique<OtlpGrpcImpl>(settings, context, exports);
  if (absl::Status opened = grpc->Open(context); !opened.ok()) return opened;
  return grpc;
}

}  // namespace shipper
