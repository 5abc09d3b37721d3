#include "tests/load/null_server.h"

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/producer.grpc.pb.h"
#include "tests/load/event_shapes.h"

namespace shipper::load {
namespace {

namespace v1 = ::elastic::agent::shipper::v1;
namespace msg = ::elastic::agent::shipper::v1::messages;

using Serving = std::pair<NullServerOptions::Decode, NullServerOptions::Api>;

class NullServerTest : public ::testing::TestWithParam<Serving> {
 protected:
  void SetUp() override {
    NullServerOptions options;
    options.decode = GetParam().first;
    options.api = GetParam().second;
    auto server = NullServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = v1::Producer::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  grpc::Status Publish(const std::string& uuid, int events, msg::PublishReply* reply) {
    msg::PublishRequest request;
    request.set_uuid(uuid);
    for (int i = 0; i < events; ++i) MakeEvent(EventShape::kFilebeat, i, request.add_events());
    grpc::ClientContext context;
    return stub_->PublishEvents(&context, request, reply);
  }

  std::unique_ptr<NullServer> server_;
  std::unique_ptr<v1::Producer::Stub> stub_;
};

TEST_P(NullServerTest, IndexesAscendAcrossCalls) {
  msg::PublishReply reply;
  ASSERT_TRUE(Publish("", 3, &reply).ok());
  EXPECT_EQ(reply.accepted_count(), 3u);
  EXPECT_EQ(reply.accepted_index(), 3u);
  EXPECT_EQ(reply.uuid(), server_->uuid());
  ASSERT_TRUE(Publish(server_->uuid(), 2, &reply).ok());
  EXPECT_EQ(reply.accepted_index(), 5u);
  EXPECT_EQ(server_->events(), 5u);
}

TEST_P(NullServerTest, RefusesAnotherUuidAndEmptyRequests) {
  msg::PublishReply reply;
  grpc::Status s = Publish("not-this-one", 1, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find(server_->uuid()), std::string::npos);
  EXPECT_EQ(Publish("", 0, &reply).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(server_->events(), 0u);
}

TEST_P(NullServerTest, ZeroPollingIntervalGivesOneReply) {
  msg::PublishReply reply;
  ASSERT_TRUE(Publish("", 4, &reply).ok());
  grpc::ClientContext context;
  msg::PersistedIndexRequest request;
  auto reader = stub_->PersistedIndex(&context, request);
  msg::PersistedIndexReply index;
  ASSERT_TRUE(reader->Read(&index));
  EXPECT_EQ(index.persisted_index(), 4u);
  EXPECT_EQ(index.uuid(), server_->uuid());
  EXPECT_FALSE(reader->Read(&index));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_P(NullServerTest, StreamFollowsPublishes) {
  grpc::ClientContext context;
  msg::PersistedIndexRequest request;
  request.mutable_polling_interval()->set_nanos(1000000);
  auto reader = stub_->PersistedIndex(&context, request);
  msg::PersistedIndexReply index;
  ASSERT_TRUE(reader->Read(&index));
  EXPECT_EQ(index.persisted_index(), 0u);
  msg::PublishReply reply;
  ASSERT_TRUE(Publish("", 7, &reply).ok());
  ASSERT_TRUE(reader->Read(&index));
  EXPECT_EQ(index.persisted_index(), 7u);
  context.TryCancel();
}

INSTANTIATE_TEST_SUITE_P(
    Decodes, NullServerTest,
    ::testing::Values(Serving{NullServerOptions::Decode::kFull, NullServerOptions::Api::kAsync},
                      Serving{NullServerOptions::Decode::kFull, NullServerOptions::Api::kCallback},
                      Serving{NullServerOptions::Decode::kScan, NullServerOptions::Api::kCallback},
                      Serving{NullServerOptions::Decode::kEnvelope,
                              NullServerOptions::Api::kCallback}));

}  // namespace
}  // namespace shipper::load
