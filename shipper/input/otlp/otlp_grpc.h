// OTLP/gRPC: opentelemetry.proto.collector.logs.v1.LogsService/Export, trace.v1.TraceService/Export
// and metrics.v1.MetricsService/Export on a gRPC server of its own (shipper.otlp.grpc.server;
// unix:// allowed), each request handed to OtlpExports (otlp_exports.h) with its signal and
// answered with its outcome:
//   OK                  the signal's Export*ServiceResponse (otlp_response.h), partial_success
//                       set only when some records were rejected
//   UNAVAILABLE         with google.rpc.RetryInfo (retry_delay) in grpc-status-details-bin: the
//                       OTLP exporters retry after it
//   RESOURCE_EXHAUSTED  too large (no RetryInfo: the exporters drop it); INVALID_ARGUMENT
//
// It listens through shipper/server/'s Listener (TLS and mTLS from shipper.otlp.ssl, the
// connection limit shipper.server.max_connections) and shares the shared server's resource
// quota (shipper.server.max_receive_memory) and max_concurrent_streams. Requests are taken as raw
// bytes through the call plumbing PublishEvents uses too (shipper/server/async_calls.h: gRPC
// reads a message only once a call was posted for it, at most max_receive_memory /
// max_message_size calls). gRPC refuses a message larger than shipper.otlp.max_message_size
// plus what compression may add (ReceiveLimit) as it receives it; gzip requests are accepted and
// inflated here, bounded by shipper.otlp.max_message_size (named in the error) and charged to
// the memory budget as they grow (gRPC 1.51 inflates without a bound); deflate is refused.
//
// Calls are served with the async API from a WorkerPool sized from the CPU quota, as the
// Producer API's (runtime/executor_sizing.h GrpcWorkers).
//
// Thread safety: Start, Retune, Stop from the pipeline's thread; threads() from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_GRPC_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_GRPC_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shipper/input/input.h"
#include "shipper/input/otlp/otlp_exports.h"
#include "shipper/input/otlp/otlp_settings.h"

namespace shipper {

class OtlpGrpc {
 public:
  virtual ~OtlpGrpc() = default;

  // Binds shipper.otlp.grpc.server and serves. `exports` outlives the transport.
  static absl::StatusOr<std::unique_ptr<OtlpGrpc>> Start(const OtlpSettings& settings,
                                                         const InputContext& context,
                                                         OtlpExports* exports);

  // host:port as bound (port 0 resolved), or the unix: address.
  virtual const std::string& address() const = 0;
  virtual void Retune(int cpus) = 0;
  virtual int threads() const = 0;
  // Stops listening; calls still open a second later are cancelled; waits until every call
  // ended (a conversion running finishes and answers), then stops serving. Call after
  // OtlpExports::Drained(), so that every waiting export was answered.
  virtual void Stop() = 0;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_GRPC_H_
