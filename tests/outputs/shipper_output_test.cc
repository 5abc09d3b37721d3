// Two real Shipper processes chained: a sidecar with the shipper output forwards to an
// aggregator with the file output. The aggregator is killed with SIGKILL mid-stream and restarted
// on the same port: nothing is lost end to end, because the sidecar acknowledges only what the
// aggregator reports persisted and resends what the dead instance had not persisted. And the
// two over mTLS, with certificates openssl makes for the test: a sidecar forwards only to an
// aggregator whose certificate chains to the CA it trusts.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/outputs/producer_client.h"
#include "tests/outputs/redis_server.h"
#include "tests/testing/shipper_process.h"

namespace shipper::testing {
namespace {

TEST(ForwardTest, AggregatorKilledAndRestartedLosesNothingEndToEnd) {
  constexpr uint64_t kEvents = 50000;
  const std::string out = absl::StrCat(getenv("TEST_TMPDIR"), "/aggregator");
  std::filesystem::remove_all(out);
  const std::string aggregator_address = absl::StrCat("127.0.0.1:", FreePort());
  const std::vector<std::string> aggregator_args = {
      "-E", absl::StrCat("shipper.server.server=", aggregator_address), "-E",
      absl::StrCat("shipper.output.file.path=", out), "-E",
      "shipper.output.file.rotate_every_kb=1048576",  // one file: nothing rotates away
      // Batches wait up to 300 ms in the aggregator's queue, so the kill finds events it
      // accepted but never wrote: the sidecar must resend them to the new instance.
      "-E", "shipper.queue.mem.flush.min_events=8192", "-E",
      "shipper.queue.mem.flush.timeout=300ms", "-E", "http.port=0"};
  auto first = ShipperProcess::Start(aggregator_args);
  ASSERT_TRUE(first.ok()) << first.status();
  auto aggregator = std::make_unique<ShipperProcess>(*std::move(first));
  auto sidecar = ShipperProcess::Start(
      {"-E", "shipper.output.shipper.enabled=true", "-E",
       absl::StrCat("shipper.output.shipper.server=", aggregator_address), "-E",
       "shipper.output.shipper.timeout=2s", "-E", "shipper.output.backoff.init=50ms", "-E",
       "shipper.output.backoff.max=500ms", "-E", "shipper.queue.mem.events=16384", "-E",
       "http.port=0"});
  ASSERT_TRUE(sidecar.ok()) << sidecar.status();

  std::atomic<uint64_t> persisted{0};
  ProducerClient publisher(sidecar->address());
  std::thread publish([&] {
    EXPECT_EQ(publisher.Publish(0, kEvents, 500, absl::Now() + absl::Seconds(120)), kEvents);
  });
  std::thread watch([&] {
    ProducerClient watcher(sidecar->address());
    // One publisher, one process: the events get indexes 1..kEvents.
    watcher.AwaitPersisted(kEvents, absl::Now() + absl::Seconds(180), &persisted);
  });
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (persisted < kEvents / 4 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  aggregator->Signal(SIGKILL);
  ASSERT_TRUE(aggregator->Wait(absl::Seconds(10)).ok());
  const uint64_t at_kill = persisted;
  absl::SleepFor(absl::Seconds(1));
  auto restarted = ShipperProcess::Start(aggregator_args);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  aggregator = std::make_unique<ShipperProcess>(*std::move(restarted));

  publish.join();
  ProducerClient checker(sidecar->address());
  EXPECT_EQ(checker.AwaitPersisted(publisher.last_index(), absl::Now() + absl::Seconds(60)),
            publisher.last_index())
      << sidecar->Log();
  watch.join();

  std::map<int64_t, int> copies;
  std::ifstream in(out + "/shipper.ndjson");
  for (std::string line; std::getline(in, line);) ++copies[TestSeq(line)];
  EXPECT_EQ(copies.count(-1), 0u) << "every line is a whole test event";
  int duplicates = 0;
  for (uint64_t seq = 0; seq < kEvents; ++seq) {
    ASSERT_GE(copies[static_cast<int64_t>(seq)], 1) << "event " << seq << " lost";
    duplicates += copies[static_cast<int64_t>(seq)] - 1;
  }
  // Attempts the sidecar retried: batches cut off by the kill, or accepted by the killed
  // aggregator and not persisted (those fail once the new uuid appears).
  const std::string log = sidecar->Log();
  int resent = 0;
  for (size_t at = log.find("output failed, retrying"); at != std::string::npos;
       at = log.find("output failed, retrying", at + 1)) {
    ++resent;
  }
  std::cout << "sidecar persisted index at the kill: " << at_kill << "; " << resent
            << " batch attempts retried; all " << kEvents << " events in the aggregator's file, "
            << duplicates << " duplicates\n";
  EXPECT_NE(log.find("restarted: uuid"), std::string::npos) << "the sidecar saw the new uuid:\n"
                                                            << log;
  EXPECT_GT(resent, 0) << log;
}

// The glog thread ids of the sidecar's "output failed, retrying" lines in `log` from `from` on.
std::set<std::string> RetryingThreads(const std::string& log, size_t from) {
  std::set<std::string> threads;
  for (absl::string_view line : absl::StrSplit(absl::string_view(log).substr(from), '\n')) {
    if (!absl::StrContains(line, "output failed, retrying")) continue;
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() > 2) threads.insert(std::string(words[2]));  // W0101 12:00:00.0 <tid> ...
  }
  return threads;
}

// Every test_seq in the aggregator's file `path`.
std::set<int64_t> Seqs(const std::string& path) {
  std::set<int64_t> seqs;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) seqs.insert(TestSeq(line));
  return seqs;
}

// The aggregator refuses for good what it will never take: here an event larger than its
// shipper.server.max_message_size. The sidecar sends the refused requests again in halves,
// forwards every other event and records that one alone as a dead letter, so that its persisted
// index passes it instead of standing behind it for good.
TEST(ForwardTest, AnEventTheAggregatorRefusesForGoodIsADeadLetterAndTheRestIsForwarded) {
  const std::string out = absl::StrCat(getenv("TEST_TMPDIR"), "/refusing");
  std::filesystem::remove_all(out);
  const std::string dead_letters = out + "/dead.ndjson";
  auto aggregator =
      ShipperProcess::Start({"-E", absl::StrCat("shipper.output.file.path=", out), "-E",
                             "shipper.server.max_message_size=65536", "-E", "http.port=0"});
  ASSERT_TRUE(aggregator.ok()) << aggregator.status();
  auto sidecar =
      ShipperProcess::Start({"-E", "shipper.output.shipper.enabled=true", "-E",
                             absl::StrCat("shipper.output.shipper.server=", aggregator->address()),
                             "-E", absl::StrCat("shipper.dead_letter.path=", dead_letters), "-E",
                             "shipper.output.backoff.init=50ms", "-E",
                             "shipper.output.backoff.max=200ms", "-E", "http.port=0"});
  ASSERT_TRUE(sidecar.ok()) << sidecar.status();

  ProducerClient publisher(sidecar->address());
  ASSERT_EQ(publisher.Publish(0, 100, 100, absl::Now() + absl::Seconds(30)), 100u);
  // Event 100, larger than the aggregator takes: index 101 (one publisher, one process).
  auto stub = elastic::agent::shipper::v1::Producer::NewStub(
      grpc::CreateChannel(sidecar->address(), grpc::InsecureChannelCredentials()));
  elastic::agent::shipper::v1::messages::PublishRequest request;
  request.set_uuid(publisher.uuid());
  *request.add_events() = TestEvent(100);
  (*request.mutable_events(0)->mutable_fields()->mutable_data())["big"].set_string_value(
      std::string(100000, 'x'));
  elastic::agent::shipper::v1::messages::PublishReply reply;
  grpc::ClientContext context;
  ASSERT_TRUE(stub->PublishEvents(&context, request, &reply).ok());
  ASSERT_EQ(reply.accepted_index(), 101u);
  ProducerClient more(sidecar->address());
  ASSERT_EQ(more.Publish(101, 99, 100, absl::Now() + absl::Seconds(30)), 99u);

  ProducerClient checker(sidecar->address());
  EXPECT_EQ(checker.AwaitPersisted(200, absl::Now() + absl::Seconds(60)), 200u) << sidecar->Log();
  std::set<int64_t> want;
  for (int64_t seq = 0; seq < 200; ++seq) {
    if (seq != 100) want.insert(seq);
  }
  EXPECT_EQ(Seqs(out + "/shipper.ndjson"), want);
  std::ifstream in(dead_letters);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(absl::StrContains(lines[0], "max_message_size")) << lines[0];
  const size_t event = lines[0].find("\"event\":");
  ASSERT_NE(event, std::string::npos) << lines[0];
  EXPECT_EQ(TestSeq(lines[0].substr(event + 8, lines[0].size() - event - 9)), 100) << lines[0];
}

// The aggregator frozen (SIGSTOP: its connections stay open, nothing answers) for longer than
// shipper.output.shipper.timeout: the sidecar's persisted index stands, and what it reported
// persisted is in the aggregator's file; no output worker hangs (each fails and retries, again and
// again); once the aggregator runs on (SIGCONT), delivery resumes and nothing is lost.
TEST(ForwardTest, AFrozenAggregatorHangsNoWorkerAndDeliveryResumes) {
  constexpr uint64_t kEvents = 40000;
  constexpr int kWorkers = 2;
  const absl::Duration timeout = absl::Seconds(2);
  const std::string out = absl::StrCat(getenv("TEST_TMPDIR"), "/frozen");
  std::filesystem::remove_all(out);
  auto aggregator =
      ShipperProcess::Start({"-E", absl::StrCat("shipper.output.file.path=", out), "-E",
                             "shipper.output.file.rotate_every_kb=1048576", "-E", "http.port=0"});
  ASSERT_TRUE(aggregator.ok()) << aggregator.status();
  auto sidecar = ShipperProcess::Start(
      {absl::StrCat("--cpus=", kWorkers), "-E", "shipper.output.shipper.enabled=true", "-E",
       absl::StrCat("shipper.output.shipper.server=", aggregator->address()), "-E",
       absl::StrCat("shipper.output.shipper.timeout=", absl::FormatDuration(timeout)), "-E",
       "shipper.output.backoff.init=50ms", "-E", "shipper.output.backoff.max=200ms", "-E",
       "shipper.output.batch_max_events=1000", "-E", "shipper.queue.mem.events=8192", "-E",
       "http.port=0"});
  ASSERT_TRUE(sidecar.ok()) << sidecar.status();

  std::atomic<uint64_t> persisted{0};
  ProducerClient publisher(sidecar->address());
  std::thread publish([&] {
    EXPECT_EQ(publisher.Publish(0, kEvents, 500, absl::Now() + absl::Seconds(120)), kEvents);
  });
  std::thread watch([&] {
    ProducerClient watcher(sidecar->address());
    watcher.AwaitPersisted(kEvents, absl::Now() + absl::Seconds(180), &persisted);
  });
  absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (persisted < kEvents / 4 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_GE(persisted, kEvents / 4) << sidecar->Log();

  aggregator->Signal(SIGSTOP);
  const absl::Time frozen = absl::Now();
  // Each worker's Write() ends within the deadline (a call's, or the keepalive's) and is retried:
  // twice for each worker, the second time after the index was read.
  size_t mark = sidecar->Log().size();
  deadline = absl::Now() + absl::Seconds(30);
  while (RetryingThreads(sidecar->Log(), mark).size() < kWorkers && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(RetryingThreads(sidecar->Log(), mark).size(), kWorkers)
      << "a worker hangs on the frozen aggregator:\n"
      << sidecar->Log();
  const uint64_t stood = persisted;
  // What the sidecar reported persisted, the frozen aggregator has written (index i is event
  // i - 1: one publisher, one process).
  const std::set<int64_t> written = Seqs(out + "/shipper.ndjson");
  uint64_t missing = 0;
  for (uint64_t seq = 0; seq < stood; ++seq) missing += written.count(seq) == 0;
  EXPECT_EQ(missing, 0u) << "of the " << stood << " events reported persisted";
  mark = sidecar->Log().size();
  deadline = absl::Now() + absl::Seconds(30);
  while (RetryingThreads(sidecar->Log(), mark).size() < kWorkers && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(RetryingThreads(sidecar->Log(), mark).size(), kWorkers) << sidecar->Log();
  EXPECT_EQ(persisted, stood) << "the index moved while the aggregator was frozen";
  EXPECT_LT(stood, kEvents);
  const absl::Duration frozen_for = absl::Now() - frozen;
  EXPECT_GT(frozen_for, timeout);

  aggregator->Signal(SIGCONT);
  publish.join();
  ProducerClient checker(sidecar->address());
  EXPECT_EQ(checker.AwaitPersisted(publisher.last_index(), absl::Now() + absl::Seconds(60)),
            publisher.last_index())
      << sidecar->Log();
  watch.join();
  const std::set<int64_t> delivered = Seqs(out + "/shipper.ndjson");
  for (uint64_t seq = 0; seq < kEvents; ++seq) {
    ASSERT_EQ(delivered.count(seq), 1u) << "event " << seq << " lost";
  }
  const std::string log = sidecar->Log();
  int deadlines = 0, lost_streams = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StrContains(line, "output failed, retrying")) continue;
    deadlines += absl::StrContains(line, "Deadline Exceeded");
    lost_streams += absl::StrContains(line, "lost the PersistedIndex stream");
  }
  std::cout << "aggregator frozen for " << frozen_for << " (timeout " << timeout
            << "); the sidecar's persisted index stood at " << stood << "; its Write() calls "
            << "failed " << deadlines << " times on a call's deadline, " << lost_streams
            << " times on the PersistedIndex stream lost (keepalive); all " << kEvents
            << " events delivered after SIGCONT\n";
}

// Certificates that openssl makes in `dir`: ca, aggregator (localhost, 127.0.0.1), client and
// misnamed (for elsewhere.invalid alone) from it, and other_ca, which signed none.
void MakePki(const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/san.ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  std::ofstream(dir + "/misnamed.ext") << "subjectAltName=DNS:elsewhere.invalid\n";
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  auto run = [](const std::string& command) {
    ASSERT_EQ(std::system((command + " 2>/dev/null").c_str()), 0) << command;
  };
  for (const std::string ca : {"ca", "other_ca"}) {
    run(absl::StrCat("openssl req -x509", ec, " -keyout ", dir, "/", ca, ".key -out ", dir, "/", ca,
                     ".crt -days 1 -subj /CN=", ca));
  }
  for (const std::string name : {"aggregator", "client", "misnamed"}) {
    run(absl::StrCat("openssl req", ec, " -keyout ", dir, "/", name, ".key -out ", dir, "/", name,
                     ".csr -subj /CN=", name));
    run(absl::StrCat("openssl x509 -req -in ", dir, "/", name, ".csr -CA ", dir, "/ca.crt -CAkey ",
                     dir, "/ca.key -CAcreateserial -days 1 -extfile ", dir, "/",
                     name == "misnamed" ? "misnamed" : "san", ".ext -out ", dir, "/", name,
                     ".crt"));
  }
}

TEST(ForwardTest, ForwardsOverMutualTlsOnlyToAnAggregatorItTrusts) {
  const std::string pki = absl::StrCat(getenv("TEST_TMPDIR"), "/pki");
  MakePki(pki);
  auto aggregator = ShipperProcess::Start(
      {"-E", "shipper.output.discard.enabled=true", "-E",
       absl::StrCat("shipper.server.ssl.certificate=", pki, "/aggregator.crt"), "-E",
       absl::StrCat("shipper.server.ssl.key=", pki, "/aggregator.key"), "-E",
       absl::StrCat("shipper.server.ssl.certificate_authorities=", pki, "/ca.crt"), "-E",
       "shipper.server.ssl.client_authentication=required", "-E", "http.port=0"});
  ASSERT_TRUE(aggregator.ok()) << aggregator.status();
  auto sidecar_trusting = [&](const std::string& ca) {
    return ShipperProcess::Start(
        {"-E", "shipper.output.shipper.enabled=true", "-E",
         absl::StrCat("shipper.output.shipper.server=", aggregator->address()), "-E",
         "shipper.output.shipper.ssl.enabled=true", "-E",
         absl::StrCat("shipper.output.shipper.ssl.certificate_authorities=", pki, "/", ca), "-E",
         absl::StrCat("shipper.output.shipper.ssl.certificate=", pki, "/client.crt"), "-E",
         absl::StrCat("shipper.output.shipper.ssl.key=", pki, "/client.key"), "-E",
         "shipper.output.backoff.init=50ms", "-E", "shipper.output.backoff.max=200ms", "-E",
         "http.port=0"});
  };

  auto sidecar = sidecar_trusting("ca.crt");
  ASSERT_TRUE(sidecar.ok()) << sidecar.status();
  ProducerClient publisher(sidecar->address());
  ASSERT_EQ(publisher.Publish(0, 1000, 100, absl::Now() + absl::Seconds(30)), 1000u);
  EXPECT_EQ(publisher.AwaitPersisted(1000, absl::Now() + absl::Seconds(30)), 1000u)
      << sidecar->Log() << aggregator->Log();

  auto doubting = sidecar_trusting("other_ca.crt");
  ASSERT_TRUE(doubting.ok()) << doubting.status();
  ProducerClient doubting_publisher(doubting->address());
  ASSERT_EQ(doubting_publisher.Publish(0, 10, 10, absl::Now() + absl::Seconds(10)), 10u);
  EXPECT_EQ(doubting_publisher.AwaitPersisted(10, absl::Now() + absl::Seconds(3)), 0u)
      << "nothing is persisted through an aggregator whose certificate the sidecar doubts";
  EXPECT_NE(doubting->Log().find("output failed, retrying"), std::string::npos) << doubting->Log();
}

// The aggregator's certificate names another host: verification_mode full refuses it, certificate
// checks the chain alone (so the CA must still be trusted), none checks nothing.
TEST(ForwardTest, VerificationModeSaysHowMuchOfTheAggregatorsCertificateIsChecked) {
  const std::string pki = absl::StrCat(getenv("TEST_TMPDIR"), "/pki-modes");
  MakePki(pki);
  auto aggregator = ShipperProcess::Start(
      {"-E", "shipper.output.discard.enabled=true", "-E",
       absl::StrCat("shipper.server.ssl.certificate=", pki, "/misnamed.crt"), "-E",
       absl::StrCat("shipper.server.ssl.key=", pki, "/misnamed.key"), "-E", "http.port=0"});
  ASSERT_TRUE(aggregator.ok()) << aggregator.status();
  // Whether a sidecar trusting `ca` with `mode` gets 10 events persisted through the aggregator;
  // one that does not has retried at least once.
  const auto delivers = [&](const std::string& ca, const std::string& mode) {
    auto sidecar = ShipperProcess::Start(
        {"-E", "shipper.output.shipper.enabled=true", "-E",
         absl::StrCat("shipper.output.shipper.server=", aggregator->address()), "-E",
         "shipper.output.shipper.ssl.enabled=true", "-E",
         absl::StrCat("shipper.output.shipper.ssl.certificate_authorities=", pki, "/", ca), "-E",
         absl::StrCat("shipper.output.shipper.ssl.verification_mode=", mode), "-E",
         "shipper.output.backoff.init=50ms", "-E", "shipper.output.backoff.max=200ms", "-E",
         "http.port=0"});
    EXPECT_TRUE(sidecar.ok()) << sidecar.status();
    if (!sidecar.ok()) return false;
    ProducerClient publisher(sidecar->address());
    EXPECT_EQ(publisher.Publish(0, 10, 10, absl::Now() + absl::Seconds(10)), 10u);
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    uint64_t persisted = 0;
    bool failed = false;
    while (persisted < 10 && !failed && absl::Now() < deadline) {
      persisted = publisher.AwaitPersisted(10, absl::Now() + absl::Milliseconds(200));
      failed = sidecar->Log().find("output failed, retrying") != std::string::npos;
    }
    EXPECT_NE(failed, persisted == 10) << sidecar->Log();
    return persisted == 10;
  };
  EXPECT_FALSE(delivers("ca.crt", "full")) << "the certificate names another host";
  EXPECT_TRUE(delivers("ca.crt", "certificate"));
  EXPECT_FALSE(delivers("other_ca.crt", "certificate")) << "the chain is still checked";
  EXPECT_TRUE(delivers("other_ca.crt", "none"));
}

}  // namespace
}  // namespace shipper::testing
