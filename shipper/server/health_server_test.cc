#include "shipper/server/health_server.h"

#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/health.grpc.pb.h"
#include "proto/producer.grpc.pb.h"

namespace shipper {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

class HealthServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As Shipper's main server does: the plugin then applies to every server built later.
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    absl::StatusOr<std::unique_ptr<HealthServer>> server = HealthServer::Start("127.0.0.1:0");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  }

  grpc::Status Check(HealthCheckResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return grpc::health::v1::Health::NewStub(channel_)->Check(&context, HealthCheckRequest(),
                                                              response);
  }

  std::unique_ptr<HealthServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(HealthServerTest, ServingUntilToldOtherwise) {
  EXPECT_NE(server_->address(), "127.0.0.1:0");
  HealthCheckResponse response;
  ASSERT_TRUE(Check(&response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);

  server_->SetServing(false);
  ASSERT_TRUE(Check(&response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
}

TEST_F(HealthServerTest, UnknownServiceIsNotFound) {
  grpc::ClientContext context;
  HealthCheckRequest request;
  request.set_service("elastic.agent.shipper.v1.Producer");
  HealthCheckResponse response;
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  ASSERT_TRUE(stub->Check(&context, request, &response).ok());
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  grpc::ClientContext other;
  request.set_service("no.such.Service");
  EXPECT_EQ(stub->Check(&other, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(HealthServerTest, OffersNoProducerApi) {
  grpc::ClientContext context;
  elastic::agent::shipper::v1::messages::PublishRequest request;
  request.add_events();
  elastic::agent::shipper::v1::messages::PublishReply reply;
  grpc::Status status = elastic::agent::shipper::v1::Producer::NewStub(channel_)->PublishEvents(
      &context, request, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << status.error_message();
}

TEST_F(HealthServerTest, AddressInUseNamesTheKey) {
  absl::StatusOr<std::unique_ptr<HealthServer>> second = HealthServer::Start(server_->address());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("shipper.server.health.address"), std::string::npos)
      << second.status();
}

TEST_F(HealthServerTest, ShutdownIsIdempotent) {
  server_->Shutdown();
  server_->Shutdown();
  HealthCheckResponse response;
  EXPECT_FALSE(Check(&response).ok());
}

}  // namespace
}  // namespace shipper
