// otlp_null_server: OTLP/gRPC logs with no queue and no output, the limit the OTLP benchmarks
// divide Shipper's figure by (./dev bench otlp). Export parses each request into protobuf
// messages (what any OTLP server must decode), counts its records and replies OK at once.
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

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "grpcpp/grpcpp.h"
#include "proto/otlp/logs_service.grpc.pb.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "HOST:PORT to serve on; port 0 picks a free one");

namespace {

namespace logs = opentelemetry::proto::collector::logs::v1;

class NullLogsService final : public logs::LogsService::CallbackService {
 public:
  grpc::ServerUnaryReactor* Export(grpc::CallbackServerContext* context,
                                   const logs::ExportLogsServiceRequest* request,
                                   logs::ExportLogsServiceResponse*) override {
    uint64_t n = 0;
    for (const auto& resource : request->resource_logs()) {
      for (const auto& scope : resource.scope_logs()) n += scope.log_records_size();
    }
    records_.fetch_add(n, std::memory_order_relaxed);
    exports_.fetch_add(1, std::memory_order_relaxed);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  uint64_t records() const { return records_.load(); }
  uint64_t exports() const { return exports_.load(); }

 private:
  std::atomic<uint64_t> records_{0}, exports_{0};
};

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("An OTLP/gRPC logs server that decodes every export and drops it.");
  absl::ParseCommandLine(argc, argv);
  // Block the stop signals before gRPC starts its threads, so only sigwait below sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  NullLogsService service;
  int port = 0;
  const std::string listen = absl::GetFlag(FLAGS_listen);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(64 << 20);  // shipper.otlp.max_message_size's default
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::cerr << "otlp_null_server: cannot listen on " << listen << "\n";
    return 1;
  }
  std::cerr << "OTLP null server listening on " << listen.substr(0, listen.rfind(':')) << ":"
            << port << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  server->Shutdown();
  std::cerr << "otlp_null_server: " << service.records() << " records in " << service.exports()
            << " exports" << std::endl;
  return 0;
}
