// The Redis output against a real redis-server started here: bulk delivery, Redis dying and
// coming back mid-stream, and WRONGTYPE replies going to the dead-letter file.
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "rapidjson/document.h"
#include "shipper/event/event_json.h"
#include "tests/outputs/producer_client.h"
#include "tests/outputs/redis_server.h"
#include "tests/testing/shipper_process.h"

namespace shipper::testing {
namespace {

std::string TempDir(absl::string_view name) {
  std::string dir = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> ShipperArgs(int redis_port, const std::string& key) {
  return {"-E", "shipper.output.redis.enabled=true",
          "-E", absl::StrCat("shipper.output.redis.hosts=127.0.0.1:", redis_port),
          "-E", absl::StrCat("shipper.output.redis.key=", key),
          "-E", "shipper.output.redis.timeout=1s",
          "-E", "shipper.output.backoff.init=50ms",
          "-E", "shipper.output.backoff.max=500ms",
          "-E", "shipper.queue.mem.events=16384",
          "-E", "http.port=0"};
}

// Starts a shipper with `args`, publishes events [0, count) and waits until it reports them
// all persisted.
void PublishAllAndWait(const std::vector<std::string>& args, uint64_t count) {
  auto shipper = ShipperProcess::Start(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  ProducerClient client(shipper->address());
  ASSERT_EQ(client.Publish(0, count, 100, absl::Now() + absl::Seconds(30)), count);
  ASSERT_EQ(client.AwaitPersisted(client.last_index(), absl::Now() + absl::Seconds(30)),
            client.last_index())
      << shipper->Log();
}

TEST(RedisOutputTest, TwoHundredThousandEventsArriveIntact) {
  constexpr uint64_t kEvents = 200000;
  auto redis = RedisServer::Start(FreePort(), TempDir("bulk"), /*append_only=*/false);
  ASSERT_TRUE(redis.ok()) << redis.status();
  auto shipper =
      ShipperProcess::Start(ShipperArgs((*redis)->port(), "logs-%{[data_stream.dataset]}"));
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  ProducerClient client(shipper->address());
  const absl::Time start = absl::Now();
  ASSERT_EQ(client.Publish(0, kEvents, 500, absl::Now() + absl::Seconds(120)), kEvents);
  ASSERT_EQ(client.AwaitPersisted(client.last_index(), absl::Now() + absl::Seconds(60)),
            client.last_index())
      << shipper->Log();
  std::cout << kEvents << " events published and persisted in Redis in " << absl::Now() - start
            << "\n";

  std::vector<std::string> items = (*redis)->ReadList("logs-nginx.access");
  ASSERT_EQ(items.size(), kEvents) << "the key takes data_stream.dataset from each event";
  std::set<uint64_t> seqs;
  for (const std::string& item : items) {
    rapidjson::Document doc;
    doc.Parse(item.c_str());
    ASSERT_FALSE(doc.HasParseError()) << item;
    const uint64_t seq = doc["test_seq"].GetUint64();
    ASSERT_TRUE(seqs.insert(seq).second) << "event " << seq << " twice";
    // Exactly the document the file output writes for this event.
    rapidjson::StringBuffer expected_json;
    AppendEventJson(TestEvent(seq).SerializeAsString(), doc["@metadata"]["index"].GetUint64(),
                    &expected_json);
    rapidjson::Document expected;
    expected.Parse(expected_json.GetString(), expected_json.GetSize() - 1);
    ASSERT_TRUE(doc == expected) << "event " << seq << " changed:\n" << item;
  }
  EXPECT_EQ(*seqs.rbegin(), kEvents - 1);
}

// The indexes in the documents of the list at `key`.
std::set<uint64_t> Indexes(const std::vector<std::string>& items) {
  std::set<uint64_t> indexes;
  for (const std::string& item : items) {
    rapidjson::Document doc;
    doc.Parse(item.c_str());
    if (!doc.HasParseError()) indexes.insert(doc["@metadata"]["index"].GetUint64());
  }
  return indexes;
}

TEST(RedisOutputTest, RedisKilledAndRestartedLosesNothingAndNothingIsReportedEarly) {
  constexpr uint64_t kEvents = 50000;
  const int port = FreePort();
  const std::string dir = TempDir("fault");
  auto redis = RedisServer::Start(port, dir, /*append_only=*/true);
  ASSERT_TRUE(redis.ok()) << redis.status();
  auto shipper = ShipperProcess::Start(ShipperArgs(port, "events"));
  ASSERT_TRUE(shipper.ok()) << shipper.status();

  std::atomic<uint64_t> persisted{0};
  std::atomic<bool> published{false};
  ProducerClient publisher(shipper->address());
  std::thread publish([&] {
    EXPECT_EQ(publisher.Publish(0, kEvents, 500, absl::Now() + absl::Seconds(120)), kEvents);
    published = true;
  });
  std::thread watch([&] {
    ProducerClient watcher(shipper->address());
    // One publisher, one process: the events get indexes 1..kEvents.
    watcher.AwaitPersisted(kEvents, absl::Now() + absl::Seconds(180), &persisted);
  });

  const absl::Time start = absl::Now();
  while (persisted < kEvents / 4 && absl::Now() < start + absl::Seconds(60)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  (*redis)->Kill();
  const absl::Time killed_at = absl::Now();
  const uint64_t at_kill = persisted;
  // What the killed Redis had, to compare with what Shipper claimed in the meantime.
  const std::string snapshot = TempDir("fault-snapshot");
  std::filesystem::copy(
      dir, snapshot,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  absl::SleepFor(absl::Seconds(2));
  const uint64_t before_restart = persisted;
  EXPECT_FALSE(published) << "Redis died mid-stream";
  redis = RedisServer::Start(port, dir, /*append_only=*/true);
  ASSERT_TRUE(redis.ok()) << redis.status();

  publish.join();
  ProducerClient checker(shipper->address());
  EXPECT_EQ(checker.AwaitPersisted(publisher.last_index(), absl::Now() + absl::Seconds(60)),
            publisher.last_index());
  std::cout << "Redis killed " << killed_at - start << " after the start; all persisted "
            << absl::Now() - killed_at << " after the kill\n";
  watch.join();

  std::map<int64_t, int> copies;
  for (const std::string& item : (*redis)->ReadList("events")) ++copies[TestSeq(item)];
  int duplicates = 0;
  for (uint64_t seq = 0; seq < kEvents; ++seq) {
    ASSERT_GE(copies[static_cast<int64_t>(seq)], 1) << "event " << seq << " lost";
    duplicates += copies[static_cast<int64_t>(seq)] - 1;
  }
  EXPECT_EQ(copies.count(-1), 0u) << "every item is a test event";
  std::cout << "persisted index at the kill: " << at_kill << ", 2 s later: " << before_restart
            << "; " << kEvents << " events all in Redis, " << duplicates
            << " duplicates (batches resent after the kill)\n";

  // Everything reported persisted while Redis was down was in Redis when it died.
  auto killed = RedisServer::Start(FreePort(), snapshot, /*append_only=*/true);
  ASSERT_TRUE(killed.ok()) << killed.status();
  const std::set<uint64_t> had = Indexes((*killed)->ReadList("events"));
  uint64_t missing = 0;
  for (uint64_t index = 1; index <= before_restart; ++index) missing += had.count(index) == 0;
  EXPECT_EQ(missing, 0u) << "of the " << before_restart
                         << " events reported persisted, these were not in Redis";
  EXPECT_GE(had.size(), at_kill);
}

TEST(RedisOutputTest, WrongTypeRepliesGoToTheDeadLetterFileWhileTheRestFlow) {
  constexpr uint64_t kEvents = 1000;
  auto redis = RedisServer::Start(FreePort(), TempDir("wrongtype"), /*append_only=*/false);
  ASSERT_TRUE(redis.ok()) << redis.status();
  // Two keys already hold strings: RPUSH onto them fails with WRONGTYPE.
  for (const char* key : {"seq-7", "seq-123"}) {
    auto reply = (*redis)->Command({"SET", key, "not a list"});
    ASSERT_NE(reply, nullptr);
  }
  const std::string dead_letters = absl::StrCat(TempDir("dead"), "/dead.ndjson");
  std::vector<std::string> args = ShipperArgs((*redis)->port(), "seq-%{[test_seq]}");
  args.insert(args.end(), {"-E", absl::StrCat("shipper.dead_letter.path=", dead_letters)});
  // Dead letters count as handed off: every event is reported persisted.
  ASSERT_NO_FATAL_FAILURE(PublishAllAndWait(args, kEvents));

  for (uint64_t seq = 0; seq < kEvents; ++seq) {
    if (seq == 7 || seq == 123) continue;
    std::vector<std::string> items = (*redis)->ReadList(absl::StrCat("seq-", seq));
    ASSERT_EQ(items.size(), 1u) << "event " << seq;
    EXPECT_EQ(TestSeq(items[0]), static_cast<int64_t>(seq));
  }
  std::ifstream in(dead_letters);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u);
  std::set<uint64_t> dead;
  for (const std::string& line : lines) {
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    ASSERT_FALSE(doc.HasParseError()) << line;
    EXPECT_TRUE(absl::StrContains(doc["reason"].GetString(), "WRONGTYPE")) << line;
    dead.insert(doc["event"]["test_seq"].GetUint64());
  }
  EXPECT_EQ(dead, (std::set<uint64_t>{7, 123}));
}

// A command Redis refuses for now fails only its own event: that one is retried alone, and the
// batch's other commands, which Redis executed, are not written again. The refusal here is an
// ACL (NOPERM) on the keys of every tenth event, lifted after a few retries.
TEST(RedisOutputTest, OnlyTheCommandsThatFailedAreRetried) {
  constexpr uint64_t kEvents = 300;
  auto redis = RedisServer::Start(FreePort(), TempDir("partial"), /*append_only=*/false);
  ASSERT_TRUE(redis.ok()) << redis.status();
  ASSERT_NE((*redis)->Command({"ACL", "SETUSER", "admin", "on", ">adminpw", "~*", "&*", "+@all"}),
            nullptr);
  auto admin = (*redis)->Connect();
  ASSERT_NE(admin, nullptr);
  auto command = [&](const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> argvlen;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      argvlen.push_back(a.size());
    }
    std::unique_ptr<redisReply, void (*)(void*)> reply(
        static_cast<redisReply*>(redisCommandArgv(admin.get(), static_cast<int>(args.size()),
                                                  argv.data(), argvlen.data())),
        freeReplyObject);
    EXPECT_NE(reply, nullptr);
    if (reply != nullptr) {
      EXPECT_NE(reply->type, REDIS_REPLY_ERROR) << reply->str;
    }
    return reply;
  };
  command({"AUTH", "admin", "adminpw"});
  // The shipper (the default user) may not write the keys of events 9, 19, 29, ...
  command({"ACL", "SETUSER", "default", "resetkeys", "~seq-*[0-8]"});

  auto shipper = ShipperProcess::Start(ShipperArgs((*redis)->port(), "seq-%{[test_seq]}"));
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  ProducerClient client(shipper->address());
  ASSERT_EQ(client.Publish(0, kEvents, 100, absl::Now() + absl::Seconds(30)), kEvents);
  auto retries = [&] {
    const std::string log = shipper->Log();
    int n = 0;
    for (size_t at = log.find("output failed, retrying"); at != std::string::npos;
         at = log.find("output failed, retrying", at + 1)) {
      ++n;
    }
    return n;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (retries() < 5 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_GE(retries(), 5) << shipper->Log();
  command({"ACL", "SETUSER", "default", "allkeys"});
  ASSERT_EQ(client.AwaitPersisted(client.last_index(), absl::Now() + absl::Seconds(30)),
            client.last_index())
      << shipper->Log();

  for (uint64_t seq = 0; seq < kEvents; ++seq) {
    auto items = command({"LRANGE", absl::StrCat("seq-", seq), "0", "-1"});
    ASSERT_NE(items, nullptr);
    EXPECT_EQ(items->elements, 1u) << "event " << seq << " written once";
  }
}

TEST(RedisOutputTest, StreamWithPasswordAndDb) {
  constexpr uint64_t kEvents = 300;
  auto redis = RedisServer::Start(FreePort(), TempDir("stream"), /*append_only=*/false, "s3cret");
  ASSERT_TRUE(redis.ok()) << redis.status();
  std::vector<std::string> args = ShipperArgs((*redis)->port(), "events");
  args.insert(args.end(),
              {"-E", "shipper.output.redis.datatype=stream", "-E",
               "shipper.output.redis.password=s3cret", "-E", "shipper.output.redis.db=3"});
  ASSERT_NO_FATAL_FAILURE(PublishAllAndWait(args, kEvents));
  auto c = (*redis)->Connect();  // one connection: SELECT holds for its later commands
  ASSERT_NE(c, nullptr);
  freeReplyObject(redisCommand(c.get(), "SELECT 3"));
  std::unique_ptr<redisReply, void (*)(void*)> entries(
      static_cast<redisReply*>(redisCommand(c.get(), "XRANGE events - +")), freeReplyObject);
  ASSERT_NE(entries, nullptr);
  ASSERT_EQ(entries->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(entries->elements, kEvents) << "XADD events * event <document>, in db 3";
  // Every event once. Not in order: the output workers write their batches side by side.
  std::set<int64_t> seqs;
  for (size_t i = 0; i < entries->elements; ++i) {
    const redisReply* fields = entries->element[i]->element[1];
    ASSERT_EQ(fields->elements, 2u);
    EXPECT_EQ(std::string(fields->element[0]->str), "event");
    seqs.insert(TestSeq(fields->element[1]->str));
  }
  EXPECT_EQ(seqs.size(), kEvents);
  EXPECT_EQ(*seqs.begin(), 0);
  EXPECT_EQ(*seqs.rbegin(), static_cast<int64_t>(kEvents) - 1);
  auto db0 = (*redis)->Command({"EXISTS", "events"});
  ASSERT_NE(db0, nullptr);
  EXPECT_EQ(db0->integer, 0) << "nothing in db 0";
}

TEST(RedisOutputTest, ChannelReachesSubscribers) {
  constexpr uint64_t kEvents = 300;
  auto redis = RedisServer::Start(FreePort(), TempDir("channel"), /*append_only=*/false);
  ASSERT_TRUE(redis.ok()) << redis.status();
  auto subscriber = (*redis)->Connect();
  ASSERT_NE(subscriber, nullptr);
  freeReplyObject(redisCommand(subscriber.get(), "SUBSCRIBE logs-nginx.access"));
  std::vector<std::string> args = ShipperArgs((*redis)->port(), "logs-%{[data_stream.dataset]}");
  args.insert(args.end(), {"-E", "shipper.output.redis.datatype=channel"});
  auto shipper = ShipperProcess::Start(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  ProducerClient client(shipper->address());
  ASSERT_EQ(client.Publish(0, kEvents, 100, absl::Now() + absl::Seconds(20)), kEvents);
  std::set<int64_t> received;
  while (received.size() < kEvents) {
    void* raw = nullptr;
    ASSERT_EQ(redisGetReply(subscriber.get(), &raw), REDIS_OK) << "message timeout";
    std::unique_ptr<redisReply, void (*)(void*)> message(static_cast<redisReply*>(raw),
                                                         freeReplyObject);
    ASSERT_EQ(message->elements, 3u);  // "message", channel, payload
    received.insert(TestSeq(message->element[2]->str));
  }
  EXPECT_EQ(*received.begin(), 0);
  EXPECT_EQ(*received.rbegin(), static_cast<int64_t>(kEvents - 1));
}

// The value of `sample` (name and labels) on the shipper's /metrics page; 0 when it is absent.
double Metric(const ShipperProcess& shipper, const std::string& sample) {
  const std::string& address = shipper.metrics_address();
  httplib::Client http(address.substr(0, address.rfind(':')),
                       std::stoi(address.substr(address.rfind(':') + 1)));
  httplib::Result page = http.Get("/metrics");
  if (!page) return -1;
  for (absl::string_view line : absl::StrSplit(page->body, '\n')) {
    if (absl::ConsumePrefix(&line, sample) && absl::ConsumePrefix(&line, " ")) {
      return std::stod(std::string(line));
    }
  }
  return 0;
}

// A PUBLISH that reached no subscriber counts as written (as in Beats: Redis keeps nothing of it),
// and is counted apart from those that reached one.
TEST(RedisOutputTest, AChannelWithoutSubscribersCountsAsWrittenAndIsCounted) {
  auto redis = RedisServer::Start(FreePort(), TempDir("unheard"), /*append_only=*/false);
  ASSERT_TRUE(redis.ok()) << redis.status();
  std::vector<std::string> args = ShipperArgs((*redis)->port(), "events");
  args.insert(args.end(), {"-E", "shipper.output.redis.datatype=channel"});
  auto shipper = ShipperProcess::Start(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  const std::string unheard =
      R"(shipper_output_items_total{output="redis",outcome="no_subscriber"})";
  const std::string heard = R"(shipper_output_items_total{output="redis",outcome="published"})";

  ProducerClient client(shipper->address());
  ASSERT_EQ(client.Publish(0, 300, 100, absl::Now() + absl::Seconds(20)), 300u);
  ASSERT_EQ(client.AwaitPersisted(client.last_index(), absl::Now() + absl::Seconds(20)),
            client.last_index())
      << shipper->Log();
  EXPECT_EQ(Metric(*shipper, unheard), 300);
  EXPECT_EQ(Metric(*shipper, heard), 0);

  auto subscriber = (*redis)->Connect();
  ASSERT_NE(subscriber, nullptr);
  freeReplyObject(redisCommand(subscriber.get(), "SUBSCRIBE events"));
  ASSERT_EQ(client.Publish(300, 200, 100, absl::Now() + absl::Seconds(20)), 200u);
  ASSERT_EQ(client.AwaitPersisted(client.last_index(), absl::Now() + absl::Seconds(20)),
            client.last_index());
  EXPECT_EQ(Metric(*shipper, unheard), 300);
  EXPECT_EQ(Metric(*shipper, heard), 200);
}

}  // namespace
}  // namespace shipper::testing
