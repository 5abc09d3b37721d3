// health_probe: asks a gRPC health service whether it is SERVING, for container HEALTHCHECKs.
//
//   health_probe --address=127.0.0.1:50052
//
// Exit status 0 when the answer is SERVING, 1 otherwise (NOT_SERVING, no answer in --timeout,
// unreachable), 2 on bad flags; one line on stdout or stderr says which. Docker keeps it in
// `docker inspect` (State.Health.Log).
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/health.grpc.pb.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50052",
          "host:port or unix:///path of a server with the gRPC health service "
          "(Shipper's shipper.server.health.address)");
ABSL_FLAG(std::string, service, "", "service name to ask about; empty: the server as a whole");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(2), "deadline of the check, connecting included");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "exits 0 when the gRPC health service at --address reports SERVING, 1 otherwise");
  absl::ParseCommandLine(argc, argv);
  const std::string address = absl::GetFlag(FLAGS_address);
  if (address.empty()) {
    std::cerr << "health_probe: --address is empty: give host:port or unix:///path\n";
    return 2;
  }
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_timeout)));
  context.set_wait_for_ready(true);  // wait out a server that is still starting, up to --timeout
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    std::cerr << "health_probe: " << address << ": no answer: " << status.error_message()
              << " (gRPC code " << status.error_code() << ")\n";
    return 1;
  }
  const std::string name =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    std::cerr << "health_probe: " << address << ": " << name << "\n";
    return 1;
  }
  std::cout << "health_probe: " << address << ": " << name << "\n";
  return 0;
}
