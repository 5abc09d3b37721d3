#include "shipper/server/health_server.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "grpcpp/ext/health_check_service_server_builder_option.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "proto/health.grpc.pb.h"
#include "shipper/config/address.h"

namespace shipper {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

// Builder plugins (proto reflection, once anyone in the process enabled it) add services to
// every server built afterwards; this server must offer nothing but health.
class WithoutPlugins final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->clear();
  }
};

}  // namespace

// gRPC's built-in health service cannot be the only service of a server (gRPC 1.51 refuses to
// build a server without a method of its own), so this one answers Check itself.
class HealthServer::Service final : public grpc::health::v1::Health::CallbackService {
 public:
  explicit Service(const std::atomic<bool>* serving) : serving_(serving) {}

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                  const HealthCheckRequest* request,
                                  HealthCheckResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (!request->service().empty() && request->service() != "elastic.agent.shipper.v1.Producer") {
      reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                   absl::StrCat("no service '", request->service(),
                                                "' here; ask about \"\" (the whole server)")));
      return reactor;
    }
    response->set_status(serving_->load() ? HealthCheckResponse::SERVING
                                          : HealthCheckResponse::NOT_SERVING);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const std::atomic<bool>* const serving_;
};

HealthServer::HealthServer() : service_(std::make_unique<Service>(&serving_)) {}

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(const std::string& address) {
  std::unique_ptr<HealthServer> health(new HealthServer());
  grpc::ServerBuilder builder;
  builder.SetOption(std::make_unique<WithoutPlugins>());
  // No built-in health service beside ours, even when the process enabled it for its main server.
  builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
  // gRPC sets SO_REUSEPORT by default: a second Shipper on the same port (hostNetwork) would
  // silently answer half of the probes.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(health->service_.get());
  health->server_ = builder.BuildAndStart();
  if (health->server_ == nullptr || port == 0) {
    health->shut_down_ = true;
    return absl::UnavailableError(
        absl::StrCat("cannot serve health checks on '", address,
                     "' (address in use or not host:port): change shipper.server.health.address"));
  }
  absl::StatusOr<Address> bound = ParseAddress(address, {/*unix_socket=*/false, /*listen=*/true});
  CHECK(bound.ok()) << "gRPC listens on it: " << bound.status();
  bound->port = port;
  health->address_ = bound->ToString();
  // Not "listening on": tools read that phrase as the Producer API's address.
  LOG(INFO) << "gRPC health service (only) on " << health->address_;
  return health;
}

HealthServer::~HealthServer() { Shutdown(); }

void HealthServer::SetServing(bool serving) { serving_.store(serving); }

void HealthServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  server_->Wait();
}

}  // namespace shipper
