#include "shipper/input/otlp/otlp_grpc.h"

#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/rpc/status.pb.h"
#include "runtime/executor_sizing.h"
#include "runtime/worker_pool.h"
#include "shipper/input/otlp/otlp_gzip.h"
#include "shipper/server/async_calls.h"
#include "shipper/server/listener.h"

namespace shipper {
namespace {

namespace collector = opentelemetry::proto::collector::logs::v1;

constexpr absl::string_view kLogsExport =
    "/opentelemetry.proto.collector.logs.v1.LogsService/Export";
constexpr absl::string_view kTraceExport =
    "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
constexpr absl::string_view kMetricsExport =
    "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";

grpc::ByteBuffer Serialized(const collector::ExportLogsServiceResponse& response) {
  grpc::ByteBuffer bytes;
  bool own_buffer;
  const grpc::Status serialized =
      grpc::SerializationTraits<collector::ExportLogsServiceResponse>::Serialize(response, &bytes,
                                                                                 &own_buffer);
  CHECK(serialized.ok());
  return bytes;
}

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

class OtlpGrpcImpl;

// One call, from waiting for it to its reply sent. Its address is its tag on the completion
// queue. After the request is handed to OtlpExports, only `done` touches it (from whichever
// thread runs it), until the reply's completion deletes it.
class Call final {
 public:
  explicit Call(OtlpGrpcImpl* grpc);
  void Proceed(bool ok);

 private:
  enum class State { kArriving, kReading, kFinishing };

  // Hands the request to the exports. The call may be deleted (by the reply's completion on
  // another thread) before this returns: nothing after Export() touches `this`.
  void Export();
  void Reply(const ExportOutcome& outcome);
  void Refuse(const grpc::Status& status);
  // Asks gRPC for the call after this one, unless the transport is stopping.
  void PostNext();

  OtlpGrpcImpl* const grpc_;
  grpc::GenericServerContext context_;
  grpc::GenericServerAsyncReaderWriter stream_;
  grpc::ByteBuffer bytes_;
  State state_ = State::kArriving;
};

class OtlpGrpcImpl final : public OtlpGrpc {
 public:
  OtlpGrpcImpl(const OtlpSettings& settings, const InputContext& context, OtlpExports* exports)
      : settings_(settings),
        exports_(exports),
        budget_(context.budget),
        waiting_calls_(
            PostedCalls(context.server->limits.max_receive_memory, settings.max_message_size)) {}

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
    // Our own limit (max_message_size), which names its key and holds for inflated requests.
    builder.SetMaxReceiveMessageSize(-1);
    // gzip is inflated here, bounded; gRPC would inflate without a bound.
    builder.AddChannelArgument(GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION, 0);
    builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_DEFLATE, false);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               static_cast<int>(context.server->limits.max_concurrent_streams));
    listener_->ServeWith(&builder);
    builder.RegisterAsyncGenericService(&generic_);
    cq_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) return absl::InternalError("gRPC could not build the OTLP server");
    if (absl::Status started = listener_->Start(); !started.ok()) return started;
    LOG(INFO) << "OTLP/gRPC listening on " << listener_->address();
    for (int i = 0; i < waiting_calls_; ++i) new Call(this);
    workers_ = std::make_unique<runtime::WorkerPool>(
        "otlp-grpc", runtime::GrpcWorkers(context.cpus),
        [this](const runtime::WorkerPool::Worker& self) { Serve(self); });
    return absl::OkStatus();
  }

  ~OtlpGrpcImpl() override { Stop(); }

  const std::string& address() const override { return listener_->address(); }
  void Retune(int cpus) override { workers_->Resize(runtime::GrpcWorkers(cpus)); }
  int threads() const override { return workers_ == nullptr ? 0 : workers_->live_threads(); }

  void Stop() override {
    if (stopped_) return;
    stopped_ = true;
    // No call is posted from now on: gRPC asserts on one requested of a shut-down queue.
    stopping_.store(true);
    if (listener_ != nullptr) listener_->Stop();
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    if (cq_ != nullptr) cq_->Shutdown();
    if (workers_ != nullptr) workers_->Stop();
    if (cq_ != nullptr) FinishCalls<Call>(cq_.get());
  }

 private:
  friend class Call;

  void Serve(const runtime::WorkerPool::Worker& worker) { ServeCalls<Call>(cq_.get(), worker); }

  const OtlpSettings settings_;
  OtlpExports* const exports_;
  runtime::MemoryBudget* const budget_;
  const int waiting_calls_;
  std::unique_ptr<Listener> listener_;
  grpc::AsyncGenericService generic_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<runtime::WorkerPool> workers_;
  bool stopped_ = false;
  std::atomic<bool> stopping_{false};  // set by Stop(), read by the serving threads
};

Call::Call(OtlpGrpcImpl* grpc) : grpc_(grpc), stream_(&context_) {
  grpc->generic_.RequestCall(&context_, &stream_, grpc->cq_.get(), grpc->cq_.get(), this);
}

void Call::Proceed(bool ok) {
  switch (state_) {
    case State::kArriving:
      if (!ok) break;  // shutting down
      if (context_.method() == kTraceExport || context_.method() == kMetricsExport) {
        return Refuse(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                   "Shipper takes logs only (LogsService/Export): send traces "
                                   "and metrics to a receiver that takes them"));
      }
      if (context_.method() != kLogsExport) {
        return Refuse(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                   absl::StrCat("unknown method ", context_.method())));
      }
      state_ = State::kReading;
      stream_.Read(&bytes_, this);
      return;
    case State::kReading:
      // Only now the next call takes our place: the number of calls bounds what gRPC reads.
      PostNext();
      if (!ok) {
        state_ = State::kFinishing;
        stream_.Finish(
            grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Export: no request message"), this);
        return;
      }
      return Export();
    case State::kFinishing:
      break;
  }
  delete this;
}

void Call::Export() {
  const absl::Time arrival = absl::Now();
  OtlpExports* const exports = grpc_->exports_;
  runtime::MemoryBudget* const budget = grpc_->budget_;
  const size_t max = grpc_->settings_.max_message_size;
  state_ = State::kFinishing;  // before the reply can be sent, from any thread
  auto done = [this](const ExportOutcome& outcome) { Reply(outcome); };

  // What this thread holds while the exports convert the request: the message flattened (when
  // gRPC's buffer is in pieces) or inflated, charged to the budget; freed once Export returns.
  grpc::ByteBuffer received = std::move(bytes_);
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
    return done(exports->TooLarge(OtlpTransport::kGrpc, received.Length(), arrival));
  }
  grpc::Slice flat;
  if (!received.TrySingleSlice(&flat).ok()) {
    if (!charge(received.Length())) {
      return done(exports->Unavailable(OtlpTransport::kGrpc,
                                       "the memory budget (shipper.queue.mem.bytes) has no room "
                                       "for the request now",
                                       arrival));
    }
    CHECK(received.DumpToSingleSlice(&flat).ok());
  }
  received.Clear();
  const absl::string_view bytes(reinterpret_cast<const char*>(flat.begin()), flat.size());
  if (!LooksLikeGzip(bytes)) {
    return exports->Export(OtlpTransport::kGrpc, bytes, arrival, done, charged);
  }
  std::string inflated;
  const absl::Status status =
      Gunzip(bytes, max, "shipper.otlp.max_message_size", charge, &inflated);
  if (!status.ok()) return done(exports->Refused(OtlpTransport::kGrpc, status, arrival));
  exports->Export(OtlpTransport::kGrpc, inflated, arrival, done, charged);
}

void Call::Reply(const ExportOutcome& outcome) {
  if (!outcome.status.ok()) return stream_.Finish(StatusOf(outcome), this);
  collector::ExportLogsServiceResponse response;
  if (outcome.rejected_log_records > 0) {
    response.mutable_partial_success()->set_rejected_log_records(outcome.rejected_log_records);
    response.mutable_partial_success()->set_error_message(outcome.error_message);
  }
  stream_.WriteAndFinish(Serialized(response), grpc::WriteOptions(), grpc::Status::OK, this);
}

void Call::PostNext() {
  if (!grpc_->stopping_.load()) new Call(grpc_);
}

void Call::Refuse(const grpc::Status& status) {
  PostNext();
  state_ = State::kFinishing;
  stream_.Finish(status, this);
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
