// OTLP/gRPC: {Logs,Trace,Metrics}Service/Export through gRPC's generic stub, so that the request
// goes out as the bytes EncodeRequest() wrote, never parsed into a message. Calls use the callback
// API: a Send() starts up to max_in_flight of them and waits on a condition variable for their
// ends, which gRPC's own threads report.
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "runtime/mutex.h"
#include "shipper/output/grpc_credentials.h"
#include "shipper/output/otlp/otlp_transport.h"

namespace shipper {
namespace {

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

class GrpcTransport final : public OtlpTransport {
 public:
  GrpcTransport(const OtlpOutputSettings& settings, std::shared_ptr<grpc::Channel> channel)
      : settings_(settings),
        headers_(settings.HeaderPairs()),
        stub_(std::make_unique<grpc::GenericStub>(std::move(channel))) {}

  std::vector<ExportAnswer> Send(std::vector<ExportRequest> requests) override {
    std::vector<ExportAnswer> answers(requests.size());
    // One per request; each is done once its callback ran.
    struct Call {
      grpc::ClientContext context;
      grpc::ByteBuffer request, response;
    };
    std::vector<std::unique_ptr<Call>> calls(requests.size());
    size_t in_flight = 0;  // guarded by mu_ once calls started
    for (size_t i = 0; i < requests.size(); ++i) {
      {
        runtime::MutexLock lock(&mu_);
        while (in_flight >= settings_.max_in_flight) ended_.Wait(&mu_);
        if (cancelled_) {
          for (size_t j = i; j < requests.size(); ++j) {
            answers[j] = GrpcAnswer(grpc::StatusCode::CANCELLED, "shutting down", "", "");
          }
          break;
        }
        ++in_flight;
      }
      calls[i] = std::make_unique<Call>();
      Call& call = *calls[i];
      call.context.set_deadline(absl::ToChronoTime(absl::Now() + settings_.timeout));
      if (settings_.compression == OtlpCompression::kGzip) {
        call.context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
      }
      for (const auto& [name, value] : headers_) call.context.AddMetadata(name, value);
      // The slice owns the body from here: gRPC sends it without a copy and frees it when done.
      auto* body = new std::string(std::move(requests[i].body));
      grpc::Slice slice(
          body->data(), body->size(), [](void* s) { delete static_cast<std::string*>(s); }, body);
      call.request = grpc::ByteBuffer(&slice, 1);
      Register(&call.context);
      stub_->UnaryCall(&call.context, std::string(ExportMethod(requests[i].signal)),
                       grpc::StubOptions(), &call.request, &call.response,
                       [this, &answers, &call, &in_flight, i](grpc::Status status) {
                         answers[i] = GrpcAnswer(status.error_code(), status.error_message(),
                                                 status.error_details(),
                                                 status.ok() ? Flatten(call.response) : "");
                         runtime::MutexLock lock(&mu_);
                         calls_.erase(&call.context);
                         --in_flight;
                         ended_.SignalAll();
                       });
    }
    runtime::MutexLock lock(&mu_);
    while (in_flight > 0) ended_.Wait(&mu_);
    return answers;
  }

  void Cancel() override {
    runtime::MutexLock lock(&mu_);
    cancelled_ = true;
    for (grpc::ClientContext* context : calls_) context->TryCancel();
  }

 private:
  void Register(grpc::ClientContext* context) {
    runtime::MutexLock lock(&mu_);
    calls_.insert(context);
    if (cancelled_) context->TryCancel();
  }

  // Constant after construction.
  const OtlpOutputSettings settings_;
  const std::vector<std::pair<std::string, std::string>> headers_;
  const std::unique_ptr<grpc::GenericStub> stub_;

  runtime::Mutex mu_;
  runtime::CondVar ended_;  // a call ended
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::set<grpc::ClientContext*> calls_ ABSL_GUARDED_BY(mu_);  // in flight, for Cancel()
};

}  // namespace

absl::StatusOr<std::unique_ptr<OtlpTransport>> NewGrpcTransport(
    const OtlpOutputSettings& settings) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ClientCredentials(OtlpOutputTls(), settings.ssl);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args;
  // Reconnect quickly after the receiver restarts: gRPC's default backoff grows to 2 min.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Requests are bounded by max_request_bytes before compression; gRPC's own 4 MiB send limit
  // (none by default for a client, but set it explicitly) must not refuse them first.
  args.SetMaxSendMessageSize(-1);
  return std::make_unique<GrpcTransport>(
      settings, grpc::CreateCustomChannel(settings.endpoint, *credentials, args));
}

}  // namespace shipper
