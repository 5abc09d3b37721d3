#include "tests/load/load_generator.h"

#include "gtest/gtest.h"
#include "tests/load/null_server.h"

namespace shipper::load {
namespace {

std::unique_ptr<NullServer> StartServer(uint32_t max_accept_per_call = 0) {
  NullServerOptions options;
  options.max_accept_per_call = max_accept_per_call;
  auto server = NullServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return std::move(*server);
}

LoadOptions SmallRun(const std::string& target) {
  LoadOptions o;
  o.target = target;
  o.channels = 2;
  o.inflight = 2;
  o.batch = 100;
  o.events = 20000;
  o.pool_events = 256;
  return o;
}

TEST(LoadGeneratorTest, SendsExactlyTheRequestedEventsAndSeesThemPersisted) {
  auto server = StartServer();
  auto r = RunLoad(SmallRun(server->address()));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->events_accepted, 20000u);
  EXPECT_EQ(r->events_persisted, 20000u);
  EXPECT_TRUE(r->drained);
  EXPECT_EQ(r->errors, 0u);
  EXPECT_EQ(r->calls, 200u);
  EXPECT_EQ(server->events(), 20000u);
  EXPECT_EQ(r->server_uuid, server->uuid());
  EXPECT_EQ(r->latency.count, 200u);
  EXPECT_GT(r->persisted_per_sec, 0);
}

TEST(LoadGeneratorTest, ResendsWhatAPartialReplyLeftOut) {
  auto server = StartServer(/*max_accept_per_call=*/30);
  LoadOptions o = SmallRun(server->address());
  o.events = 1000;
  o.shape = EventShape::kTiny;
  auto r = RunLoad(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->events_accepted, 1000u);
  EXPECT_EQ(server->events(), 1000u);  // nothing sent twice once accepted
  EXPECT_EQ(r->events_persisted, 1000u);
  EXPECT_EQ(r->partial_replies, 30u);  // 10 batches of 100: 30+30+30+10, 3 partial each
  EXPECT_GT(r->resent_events, 0u);
}

TEST(LoadGeneratorTest, FixedRateTakesAboutTheExpectedTime) {
  auto server = StartServer();
  LoadOptions o = SmallRun(server->address());
  o.events = 5000;
  o.rate = 10000;  // 0.5 s
  auto r = RunLoad(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->events_persisted, 5000u);
  EXPECT_GT(r->persist_time, absl::Milliseconds(400));
  EXPECT_LT(r->persist_time, absl::Milliseconds(1500));
}

TEST(LoadGeneratorTest, DurationEndsTheRun) {
  auto server = StartServer();
  LoadOptions o = SmallRun(server->address());
  o.events = 0;
  o.duration = absl::Milliseconds(300);
  auto r = RunLoad(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->events_persisted, 0u);
  EXPECT_EQ(r->events_persisted, r->events_accepted);
  EXPECT_LT(r->persist_time, absl::Seconds(2));
}

TEST(LoadGeneratorTest, EnvelopeDecodingServerCountsTheSameEvents) {
  NullServerOptions options;
  options.decode = NullServerOptions::Decode::kEnvelope;
  auto server = NullServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  LoadOptions o = SmallRun((*server)->address());
  o.shape = EventShape::kLarge;
  o.events = 2000;
  auto r = RunLoad(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->events_persisted, 2000u);
  EXPECT_EQ((*server)->events(), 2000u);
  EXPECT_EQ(r->server_uuid, (*server)->uuid());
}

TEST(LoadGeneratorTest, UnreachableTargetIsUnavailable) {
  LoadOptions o = SmallRun("127.0.0.1:1");
  o.connect_timeout = absl::Milliseconds(300);
  auto r = RunLoad(o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace shipper::load
