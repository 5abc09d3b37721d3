// otlp_null_server: OTLP/gRPC with no queue and no output, the limit the OTLP benchmarks
// divide Shipper's figure by (./dev bench otlp), as null_server is the Producer API's.
//
// The three Export methods (logs, traces, metrics) are served as Shipper's OTLP/gRPC transport
// serves them (the async generic API on one completion queue, --threads threads, the same
// channel arguments), and each request is decoded as its method's signal
// as Shipper decodes it (flattened, then OtlpConversion::Scan over its wire bytes: every record
// checked and measured), then answered OK at once. --decode=protobuf parses it into protobuf
// messages instead (what a server built on the generated classes pays).
//
//   otlp_null_server --listen=127.0.0.1:0
//
// Logs "OTLP null server listening on HOST:PORT" to stderr once serving; stops on SIGINT or
// SIGTERM and logs what it took.
#include <signal.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/clock.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"
#include "shipper/input/otlp/otlp_conversion.h"
#include "shipper/input/otlp/otlp_signals.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "HOST:PORT to serve on; port 0 picks a free one");
ABSL_FLAG(int, threads, 0, "completion-queue threads (0: one per core)");
ABSL_FLAG(std::string, decode, "scan",
          "scan: as Shipper decodes (OtlpConversion::Scan on the wire bytes); protobuf: parse "
          "into protobuf messages");

namespace {

namespace collector = opentelemetry::proto::collector;

std::atomic<uint64_t> records{0}, exports{0}, refused{0};
bool parse_protobuf = false;

// One Export call: arrives, is read, is answered.
class Call {
 public:
  Call(grpc::AsyncGenericService* service, grpc::ServerCompletionQueue* cq)
      : service_(service), cq_(cq), stream_(&context_) {
    service_->RequestCall(&context_, &stream_, cq_, cq_, this);
  }

  void Proceed(bool ok) {
    switch (state_) {
      case State::kArriving:
        if (!ok) break;  // shutting down
        new Call(service_, cq_);
        state_ = State::kReading;
        stream_.Read(&request_, this);
        return;
      case State::kReading:
        state_ = State::kFinishing;
        if (!ok) {
          stream_.Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no message"), this);
          return;
        }
        if (!Decode(shipper::SignalOfMethod(context_.method()))) {
          refused.fetch_add(1, std::memory_order_relaxed);
          stream_.Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "undecodable"), this);
          return;
        }
        exports.fetch_add(1, std::memory_order_relaxed);
        stream_.WriteAndFinish(grpc::ByteBuffer(), grpc::WriteOptions(), grpc::Status::OK, this);
        return;
      case State::kFinishing:
        break;
    }
    delete this;
  }

 private:
  enum class State { kArriving, kReading, kFinishing };

  // Records the request holds, in a protobuf message of its signal's.
  static uint64_t Parsed(const collector::logs::v1::ExportLogsServiceRequest& request) {
    uint64_t n = 0;
    for (const auto& resource : request.resource_logs()) {
      for (const auto& scope : resource.scope_logs()) n += scope.log_records_size();
    }
    return n;
  }
  static uint64_t Parsed(const collector::trace::v1::ExportTraceServiceRequest& request) {
    uint64_t n = 0;
    for (const auto& resource : request.resource_spans()) {
      for (const auto& scope : resource.scope_spans()) n += scope.spans_size();
    }
    return n;
  }
  static uint64_t Parsed(const collector::metrics::v1::ExportMetricsServiceRequest& request) {
    uint64_t n = 0;
    for (const auto& resource : request.resource_metrics()) {
      for (const auto& scope : resource.scope_metrics()) {
        for (const auto& m : scope.metrics()) {
          n += m.gauge().data_points_size() + m.sum().data_points_size() +
               m.histogram().data_points_size() + m.exponential_histogram().data_points_size() +
               m.summary().data_points_size();
        }
      }
    }
    return n;
  }
  template <typename Request>
  static bool Parse(absl::string_view bytes) {
    Request parsed;
    if (!parsed.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
    records.fetch_add(Parsed(parsed), std::memory_order_relaxed);
    return true;
  }

  bool Decode(std::optional<shipper::OtlpSignal> signal) {
    if (!signal) return false;  // not an Export method
    grpc::Slice flat;
    if (!request_.TrySingleSlice(&flat).ok() && !request_.DumpToSingleSlice(&flat).ok()) {
      return false;
    }
    const absl::string_view bytes(reinterpret_cast<const char*>(flat.begin()), flat.size());
    if (parse_protobuf) {
      switch (*signal) {
        case shipper::OtlpSignal::kLogs:
          return Parse<collector::logs::v1::ExportLogsServiceRequest>(bytes);
        case shipper::OtlpSignal::kTraces:
          return Parse<collector::trace::v1::ExportTraceServiceRequest>(bytes);
        case shipper::OtlpSignal::kMetrics:
          return Parse<collector::metrics::v1::ExportMetricsServiceRequest>(bytes);
      }
    }
    shipper::OtlpConversion conversion(*signal);
    if (!conversion.Scan(bytes, absl::Now(), /*max_record_bytes=*/64 << 20, /*max_records=*/65536)
             .ok()) {
      return false;
    }
    records.fetch_add(conversion.records(), std::memory_order_relaxed);
    return true;
  }

  grpc::AsyncGenericService* const service_;
  grpc::ServerCompletionQueue* const cq_;
  grpc::GenericServerContext context_;
  grpc::GenericServerAsyncReaderWriter stream_;
  grpc::ByteBuffer request_;
  State state_ = State::kArriving;
};

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "An OTLP/gRPC server that decodes every export (logs, traces, metrics) and drops it.");
  absl::ParseCommandLine(argc, argv);
  const std::string decode = absl::GetFlag(FLAGS_decode);
  if (decode != "scan" && decode != "protobuf") {
    std::cerr << "otlp_null_server: --decode must be scan or protobuf\n";
    return 1;
  }
  parse_protobuf = decode == "protobuf";
  // Block the stop signals before gRPC starts its threads, so only sigwait below sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  grpc::AsyncGenericService service;
  int port = 0;
  const std::string listen = absl::GetFlag(FLAGS_listen);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  // As Shipper's OTLP/gRPC transport sets them (otlp_grpc.cc).
  builder.SetMaxReceiveMessageSize(-1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.RegisterAsyncGenericService(&service);
  std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::cerr << "otlp_null_server: cannot listen on " << listen << "\n";
    return 1;
  }
  int threads = absl::GetFlag(FLAGS_threads);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i < threads; ++i) new Call(&service, cq.get());
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&cq] {
      void* tag;
      bool ok;
      while (cq->Next(&tag, &ok)) static_cast<Call*>(tag)->Proceed(ok);
    });
  }
  std::cerr << "OTLP null server listening on " << listen.substr(0, listen.rfind(':')) << ":"
            << port << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  cq->Shutdown();
  for (std::thread& worker : workers) worker.join();
  std::cerr << "otlp_null_server: " << records.load() << " records in " << exports.load()
            << " exports, " << refused.load() << " refused" << std::endl;
  return 0;
}
