// End to end through the real binary: a C++ gRPC client publishes 100,000 realistic events,
// waits until the shipper reports them persisted, stops it with SIGTERM, and finds every event
// exactly once, intact, in the file output.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/producer.grpc.pb.h"
#include "rapidjson/document.h"
#include "runtime/eventually.h"
#include "shipper/event/event_json.h"
#include "tests/load/event_shapes.h"
#include "tests/testing/shipper_process.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
using elastic::agent::shipper::v1::Producer;

constexpr int kEvents = 100000;
constexpr int kBatch = 500;

pb::Event TestEvent(uint64_t seq) {
  pb::Event event;
  load::MakeEvent(load::EventShape::kFilebeat, seq, &event);
  (*event.mutable_fields()->mutable_data())["test_seq"].set_uint64_value(seq);
  return event;
}

class PublishTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_dir_ = absl::StrCat(getenv("TEST_TMPDIR"), "/out");
    absl::StatusOr<testing::ShipperProcess> process = testing::ShipperProcess::Start(
        {"-E", absl::StrCat("shipper.output.file.path=", out_dir_), "-E",
         "shipper.output.file.rotate_every_kb=1048576", "-E",  // one file to read back
         "shipper.queue.mem.events=8192"});  // small, so partial acceptance happens
    ASSERT_TRUE(process.ok()) << process.status();
    shipper_ = std::make_unique<testing::ShipperProcess>(*std::move(process));
    stub_ = Producer::NewStub(
        grpc::CreateChannel(shipper_->address(), grpc::InsecureChannelCredentials()));
  }

  // Publishes events [first, first + count), resending what a reply did not accept.
  // Returns the highest accepted index.
  uint64_t Publish(uint64_t first, uint64_t count) {
    uint64_t last_index = 0;
    uint64_t next = first;
    while (next < first + count) {
      pb::PublishRequest request;
      request.set_uuid(shipper_->uuid());
      for (uint64_t seq = next; seq < std::min(next + kBatch, first + count); ++seq) {
        *request.add_events() = TestEvent(seq);
      }
      pb::PublishReply reply;
      grpc::ClientContext context;
      grpc::Status status = stub_->PublishEvents(&context, request, &reply);
      EXPECT_TRUE(status.ok()) << status.error_message();
      if (!status.ok()) return last_index;
      EXPECT_EQ(reply.uuid(), shipper_->uuid());
      next += reply.accepted_count();
      if (reply.accepted_count() > 0) last_index = reply.accepted_index();
      partial_replies_ += reply.accepted_count() < static_cast<uint32_t>(request.events_size());
    }
    return last_index;
  }

  // Follows the PersistedIndex stream until it reaches `index`.
  void AwaitPersisted(uint64_t index) {
    pb::PersistedIndexRequest request;
    request.mutable_polling_interval()->set_nanos(10 * 1000 * 1000);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    std::unique_ptr<grpc::ClientReader<pb::PersistedIndexReply>> reader =
        stub_->PersistedIndex(&context, request);
    pb::PersistedIndexReply reply;
    uint64_t last = 0;
    while (reader->Read(&reply)) {
      EXPECT_EQ(reply.uuid(), shipper_->uuid());
      EXPECT_GE(reply.persisted_index(), last) << "the persisted index never goes back";
      last = reply.persisted_index();
      if (last >= index) break;
    }
    context.TryCancel();
    EXPECT_GE(last, index);
  }

  std::string out_dir_;
  std::unique_ptr<testing::ShipperProcess> shipper_;
  std::unique_ptr<Producer::Stub> stub_;
  int partial_replies_ = 0;
};

TEST_F(PublishTest, EveryEventArrivesOnceAndIntact) {
  const uint64_t last_index = Publish(0, kEvents);
  ASSERT_EQ(last_index, static_cast<uint64_t>(kEvents)) << "indexes start at 1 and ascend";
  AwaitPersisted(last_index);
  shipper_->Signal(SIGTERM);
  absl::StatusOr<int> code = shipper_->Wait(absl::Seconds(30));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << shipper_->Log();

  std::ifstream in(out_dir_ + "/shipper.ndjson");
  std::map<uint64_t, uint64_t> index_by_seq;
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    ASSERT_FALSE(doc.HasParseError()) << line;
    const uint64_t seq = doc["test_seq"].GetUint64();
    const uint64_t index = doc["@metadata"]["index"].GetUint64();
    ASSERT_TRUE(index_by_seq.emplace(seq, index).second) << "event " << seq << " twice";
    // The document must be exactly what the encoder makes of the event that was sent.
    rapidjson::StringBuffer expected_json;
    AppendEventJson(TestEvent(seq).SerializeAsString(), index, &expected_json);
    rapidjson::Document expected;
    expected.Parse(expected_json.GetString(), expected_json.GetSize() - 1);
    ASSERT_TRUE(doc == expected) << "event " << seq << " changed:\n" << line;
  }
  EXPECT_EQ(lines, kEvents);
  ASSERT_EQ(index_by_seq.size(), static_cast<size_t>(kEvents));
  EXPECT_EQ(index_by_seq.begin()->first, 0u);
  EXPECT_EQ(index_by_seq.rbegin()->first, static_cast<uint64_t>(kEvents - 1));
  std::cout << partial_replies_ << " replies accepted only part of their batch\n";
}

TEST_F(PublishTest, BadRequestsGetClearErrorsAndTheServerStaysUp) {
  pb::PublishRequest request;
  pb::PublishReply reply;
  {
    grpc::ClientContext context;
    grpc::Status status = stub_->PublishEvents(&context, request, &reply);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("no events"), std::string::npos);
  }
  *request.add_events() = TestEvent(1);
  request.set_uuid("not-the-uuid");
  {
    grpc::ClientContext context;
    grpc::Status status = stub_->PublishEvents(&context, request, &reply);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(status.error_message().find(shipper_->uuid()), std::string::npos)
        << "the refusal names the server's uuid: " << status.error_message();
  }
  request.clear_uuid();  // empty uuid: first contact, accepted
  {
    grpc::ClientContext context;
    grpc::Status status = stub_->PublishEvents(&context, request, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(reply.accepted_count(), 1u);
    EXPECT_EQ(reply.accepted_index(), 1u);
    EXPECT_EQ(reply.uuid(), shipper_->uuid());
  }
}

TEST_F(PublishTest, ZeroPollingIntervalGetsOneReply) {
  const uint64_t last = Publish(0, 10);
  AwaitPersisted(last);
  pb::PersistedIndexRequest request;  // no interval
  grpc::ClientContext context;
  auto reader = stub_->PersistedIndex(&context, request);
  pb::PersistedIndexReply reply;
  ASSERT_TRUE(reader->Read(&reply));
  EXPECT_EQ(reply.persisted_index(), last);
  EXPECT_FALSE(reader->Read(&reply)) << "the stream ends after one reply";
  EXPECT_TRUE(reader->Finish().ok());
}

// /dev/full refuses every write: the queue fills, replies accept a prefix and then nothing, the
// persisted index never claims an event, and SIGTERM still ends the process in time, saying how
// many events were left for the clients to resend.
TEST(DeadOutputTest, FullQueueAcceptsAPrefixAndNothingIsReportedPersisted) {
  absl::StatusOr<testing::ShipperProcess> shipper = testing::ShipperProcess::Start(
      {"-E", "shipper.output.file.path=/dev", "-E", "shipper.output.file.filename=full", "-E",
       "shipper.queue.mem.events=1000", "-E", "shipper.shutdown_timeout=1s"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  auto stub = Producer::NewStub(
      grpc::CreateChannel(shipper->address(), grpc::InsecureChannelCredentials()));
  pb::PublishRequest request;
  for (int seq = 0; seq < 1500; ++seq) *request.add_events() = TestEvent(seq);
  pb::PublishReply reply;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->PublishEvents(&context, request, &reply).ok());
    EXPECT_EQ(reply.accepted_count(), 1000u);
    EXPECT_EQ(reply.accepted_index(), 1000u);
  }
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->PublishEvents(&context, request, &reply).ok());
    EXPECT_EQ(reply.accepted_count(), 0u) << "full: nothing more fits";
    EXPECT_EQ(reply.accepted_index(), 1000u) << "none accepted: the highest index so far";
  }
  {
    pb::PersistedIndexRequest index_request;
    grpc::ClientContext context;
    pb::PersistedIndexReply index_reply;
    ASSERT_TRUE(stub->PersistedIndex(&context, index_request)->Read(&index_reply));
    EXPECT_EQ(index_reply.persisted_index(), 0u) << "no event reached the output";
  }
  shipper->Signal(SIGTERM);
  absl::StatusOr<int> code = shipper->Wait(absl::Seconds(15));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << shipper->Log();
  EXPECT_NE(shipper->Log().find("0 events delivered, 1000 left undelivered"), std::string::npos)
      << shipper->Log();
}

// Calls waiting for room in a full queue are parked, not run on a serving thread: with one
// serving thread (--cpus=1) and clients whose calls keep waiting, a wrong-uuid request, which
// needs no room, is refused at once (it waited behind every parked call's 500 ms before).
TEST(DeadOutputTest, ARequestThatNeedsNoRoomIsAnsweredWhileCallsWaitForRoom) {
  absl::StatusOr<testing::ShipperProcess> shipper = testing::ShipperProcess::Start(
      {"--cpus=1", "-E", "shipper.output.file.path=/dev", "-E", "shipper.output.file.filename=full",
       "-E", "shipper.queue.mem.events=100", "-E", "shipper.shutdown_timeout=1s"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  auto stub = Producer::NewStub(
      grpc::CreateChannel(shipper->address(), grpc::InsecureChannelCredentials()));
  {
    pb::PublishRequest fill;
    fill.set_uuid(shipper->uuid());
    for (int seq = 0; seq < 100; ++seq) *fill.add_events() = TestEvent(seq);
    pb::PublishReply reply;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->PublishEvents(&context, fill, &reply).ok());
    ASSERT_EQ(reply.accepted_count(), 100u) << "the queue is full";
  }
  constexpr int kWaiters = 4;
  std::atomic<bool> stop{false};
  std::vector<std::atomic<int>> refused(kWaiters);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      auto own = Producer::NewStub(
          grpc::CreateChannel(shipper->address(), grpc::InsecureChannelCredentials()));
      pb::PublishRequest request;
      request.set_uuid(shipper->uuid());
      for (int seq = 0; seq < 10; ++seq) *request.add_events() = TestEvent(seq);
      while (!stop.load()) {
        pb::PublishReply reply;
        grpc::ClientContext context;
        if (own->PublishEvents(&context, request, &reply).ok() && reply.accepted_count() == 0) {
          ++refused[i];
        }
      }
    });
  }
  // Every client has waited its 500 ms at least once and is waiting again.
  EXPECT_TRUE(runtime::Eventually([&] {
    for (const std::atomic<int>& n : refused) {
      if (n.load() == 0) return false;
    }
    return true;
  }));
  pb::PublishRequest wrong;
  wrong.set_uuid("not-this-shippers-uuid");
  *wrong.add_events() = TestEvent(0);
  absl::Duration slowest;
  for (int i = 0; i < 5; ++i) {
    pb::PublishReply reply;
    grpc::ClientContext context;
    const absl::Time start = absl::Now();
    const grpc::Status status = stub->PublishEvents(&context, wrong, &reply);
    slowest = std::max(slowest, absl::Now() - start);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
  }
  std::cerr << "slowest wrong-uuid refusal: " << slowest << "\n";
  // Not behind the parked calls' 500 ms; a loaded machine under ASan may still take tens of ms.
  EXPECT_LT(slowest, absl::Milliseconds(250));
  stop.store(true);
  for (std::thread& waiter : waiters) waiter.join();
  shipper->Signal(SIGTERM);
  absl::StatusOr<int> code = shipper->Wait(absl::Seconds(15));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << shipper->Log();
}

// A request the memory budget cannot take is answered like a full queue's: none accepted, with
// the index of the last event accepted so far (the wire API's accepted_index), not the persisted
// index.
TEST(DeadOutputTest, ABudgetRefusalCarriesTheLastAcceptedIndex) {
  pb::PublishRequest request;
  for (int seq = 0; seq < 20; ++seq) *request.add_events() = TestEvent(seq);
  const size_t request_bytes = request.ByteSizeLong() + 100;  // with the uuid
  absl::StatusOr<testing::ShipperProcess> shipper = testing::ShipperProcess::Start(
      {"-E", "shipper.output.file.path=/dev", "-E", "shipper.output.file.filename=full", "-E",
       absl::StrCat("shipper.queue.mem.bytes=", request_bytes * 3 / 2), "-E",
       "shipper.shutdown_timeout=1s"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  request.set_uuid(shipper->uuid());
  auto stub = Producer::NewStub(
      grpc::CreateChannel(shipper->address(), grpc::InsecureChannelCredentials()));
  pb::PublishReply reply;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->PublishEvents(&context, request, &reply).ok());
    ASSERT_EQ(reply.accepted_count(), 20u);
    ASSERT_EQ(reply.accepted_index(), 20u);
  }
  {
    grpc::ClientContext context;
    const grpc::Status status = stub->PublishEvents(&context, request, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(reply.accepted_count(), 0u) << "the budget holds the first request";
    EXPECT_EQ(reply.accepted_index(), 20u) << "the last accepted index, not the persisted (0)";
  }
  shipper->Signal(SIGTERM);
  absl::StatusOr<int> code = shipper->Wait(absl::Seconds(15));
  ASSERT_TRUE(code.ok()) << code.status();
}

// With the disk queue, persisted means synced, not delivered: the stop line counted every synced
// event as delivered, and as left undelivered too.
TEST(DeadOutputTest, TheDiskQueueKeepsWhatItPersistedAndTheStopLineSaysSo) {
  absl::StatusOr<testing::ShipperProcess> shipper = testing::ShipperProcess::Start(
      {"-E", "shipper.output.file.path=/dev", "-E", "shipper.output.file.filename=full", "-E",
       "shipper.queue.disk.enabled=true", "-E",
       absl::StrCat("shipper.queue.disk.path=", getenv("TEST_TMPDIR"), "/disk-queue"), "-E",
       "shipper.shutdown_timeout=1s"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  auto stub = Producer::NewStub(
      grpc::CreateChannel(shipper->address(), grpc::InsecureChannelCredentials()));
  pb::PublishRequest request;
  for (int seq = 0; seq < 1000; ++seq) *request.add_events() = TestEvent(seq);
  {
    pb::PublishReply reply;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->PublishEvents(&context, request, &reply).ok());
    ASSERT_EQ(reply.accepted_count(), 1000u);
  }
  {
    pb::PersistedIndexRequest index_request;
    index_request.mutable_polling_interval()->set_nanos(1000 * 1000);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto reader = stub->PersistedIndex(&context, index_request);
    pb::PersistedIndexReply index_reply;
    while (reader->Read(&index_reply) && index_reply.persisted_index() < 1000) {
    }
    EXPECT_EQ(index_reply.persisted_index(), 1000u) << "synced, though the output is down";
    context.TryCancel();
  }
  shipper->Signal(SIGTERM);
  absl::StatusOr<int> code = shipper->Wait(absl::Seconds(15));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << shipper->Log();
  EXPECT_NE(shipper->Log().find("0 events delivered, 0 left undelivered (never reported "
                                "persisted; clients resend them), 1000 kept in the disk queue"),
            std::string::npos)
      << shipper->Log();
}

TEST(ShipperBinaryTest, ASecondShipperOnTheSameAddressFailsToStart) {
  absl::StatusOr<testing::ShipperProcess> first = testing::ShipperProcess::Start({});
  ASSERT_TRUE(first.ok()) << first.status();
  auto [code, output] = testing::RunShipper(
      {"-E", absl::StrCat("shipper.server.server=", first->address()), "-E", "http.port=0"});
  EXPECT_EQ(code, 1) << output;
  EXPECT_NE(output.find("cannot listen on '" + first->address() + "'"), std::string::npos)
      << output;
}

TEST(ShipperBinaryTest, BadConfigIsRefusedWithTheReason) {
  auto [code, output] = testing::RunShipper({"-E", "shipper.queue.mem.events=lots"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(output.find("'shipper.queue.mem.events': expected a whole number"), std::string::npos)
      << output;
  std::tie(code, output) = testing::RunShipper({"-c", "/nonexistent.yml"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(output.find("cannot be read"), std::string::npos) << output;
  std::tie(code, output) = testing::RunShipper({"--check_config"});
  EXPECT_EQ(code, 0) << output;
  EXPECT_NE(output.find("config OK"), std::string::npos) << output;
}

TEST(ShipperBinaryTest, HelpExplainsFlagsAndKeysAndVersionPrints) {
  auto [code, output] = testing::RunShipper({"--help"});
  EXPECT_NE(output.find("-E key=value"), std::string::npos) << output;
  EXPECT_NE(output.find("--check_config"), std::string::npos) << output;
  EXPECT_NE(output.find("shipper.queue.mem.events"), std::string::npos) << output;
  std::tie(code, output) = testing::RunShipper({"--version"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(output.find("shipper 0."), std::string::npos) << output;
}

}  // namespace
}  // namespace shipper
