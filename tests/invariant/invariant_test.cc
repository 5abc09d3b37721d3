// The promise that sets Shipper apart, checked as stated for every output: an event at or below
// the persisted index a client read is safe.
//
// Each case runs one output against its destination (sinks.h) with the memory or the disk queue,
// while a client that follows the wire API publishes events with unique seqs (publisher.h).
// For `--duration` it does, at random moments and in random order: read the persisted index and
// then the destination, and require every event at or below that index to be there; inject one
// of the destination's own faults (kill and restart, freeze, injected errors; per-event failures
// ride in the events), reading the persisted index while it is on; SIGKILL Shipper and restart it
// on the same address (and queue directory). Then it stops publishing, waits until every event is
// persisted, and requires the destination to hold every event published at least once, and every
// event each persisted index read covered. It prints one line per case with the faults it injected
// and the duplicates it counted.
//
// "Persisted" is not the same promise for the two queues. With the memory queue it means the
// output confirmed the event: the destination must hold it as soon as the index is read. With
// the disk queue it means synced into the queue's files, not yet delivered: there, every event at
// or below an index read (before a SIGKILL, say) must be in the destination once Shipper ran again
// and drained; that is checked at the end.
//
// An event the destination refuses for good (Sink::Refused: the aggregator's max_message_size)
// is not in the destination but in the dead-letter file, once, its reason naming the key; the
// dead-letter file holds nothing else.
//
// Random choices come from --seed (printed; 0 picks one). A seed replays the same faults in the
// same order, not the same timing: Shipper and the destinations run at their own pace.
// --faults=KIND,... injects only those (what one fault costs: README, "At-least-once, per
// output"), --duration makes it a soak, --rate sets the load.
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <unordered_map>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/random/distributions.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/invariant/publisher.h"
#include "tests/invariant/sinks.h"
#include "tests/outputs/redis_server.h"
#include "tests/testing/shipper_process.h"

ABSL_FLAG(uint64_t, seed, 0, "seeds every random choice; 0: one from the clock (printed)");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(6),
          "how long each case injects faults (a soak: e.g. 10m, with --test_timeout)");
ABSL_FLAG(double, rate, 4000, "new events per second the client publishes");
ABSL_FLAG(std::vector<std::string>, faults, {},
          "only these faults (e.g. freeze,shipper-kill; a case without any of them skips); "
          "empty: all");

namespace shipper::testing {
namespace {

struct Case {
  std::string output;
  bool disk;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return absl::StrCat(info.param.output, info.param.disk ? "_disk" : "_memory");
}

void PrintTo(const Case& c, std::ostream* os) { *os << CaseName({c, 0}); }

// Shipper's own fault, beside the destination's.
constexpr absl::string_view kShipperKill = "shipper-kill";

// Shipper with `args`, once it listens.
absl::StatusOr<std::unique_ptr<ShipperProcess>> StartShipper(const std::vector<std::string>& args) {
  auto started = ShipperProcess::Start(args);
  if (!started.ok()) return started.status();
  return std::make_unique<ShipperProcess>(*std::move(started));
}

// Polls `condition` until it holds or `timeout` passes; whether it holds.
bool Await(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

class InvariantTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    seed_ = absl::GetFlag(FLAGS_seed);
    if (seed_ == 0) seed_ = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
    rng_.seed(seed_);
    name_ = CaseName({GetParam(), 0});
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name_);
    std::filesystem::remove_all(dir_);
    std::cout << "invariant " << name_ << ": seed " << seed_
              << " (again: --test_arg=--seed=" << seed_ << " --test_filter=*" << name_ << ")"
              << std::endl;
  }

  std::vector<std::string> ShipperArgs(const Sink& sink) const {
    std::vector<std::string> args = sink.ShipperArgs();
    args.insert(
        args.end(),
        {"-E", absl::StrCat("shipper.server.server=", address_), "-E",
         "shipper.output.backoff.init=20ms", "-E", "shipper.output.backoff.max=200ms", "-E",
         absl::StrCat("shipper.dead_letter.path=", dir_, "/dead.ndjson"), "-E", "http.port=0"});
    if (GetParam().disk) {
      args.insert(args.end(), {"-E", "shipper.queue.disk.enabled=true", "-E",
                               absl::StrCat("shipper.queue.disk.path=", dir_, "/queue"), "-E",
                               "shipper.queue.disk.max_size=64MiB"});
    } else {
      args.insert(args.end(), {"-E", "shipper.queue.mem.events=8192"});
    }
    return args;
  }

  // How many copies of each seq the destination holds.
  static void Read(Sink& sink, std::unordered_map<int64_t, int>* copies) {
    absl::StatusOr<std::vector<int64_t>> seqs = sink.Read();
    ASSERT_TRUE(seqs.ok()) << seqs.status();
    copies->clear();
    for (int64_t seq : *seqs) ++(*copies)[seq];
  }

  // Requires every event each of `samples` covers to be among `copies`.
  void Check(const std::unordered_map<int64_t, int>& copies, const Publisher& publisher,
             const std::vector<PersistedSample>& samples) {
    for (const PersistedSample& sample : samples) {
      std::vector<uint64_t> missing;
      for (uint64_t seq : publisher.SeqsCoveredBy(sample)) {
        if (copies.count(static_cast<int64_t>(seq)) == 0 && !sink_->Refused(seq)) {
          missing.push_back(seq);
        }
      }
      if (!missing.empty()) {
        const size_t count = missing.size();
        missing.resize(std::min<size_t>(count, 10));
        ADD_FAILURE() << name_ << ": process " << sample.uuid << " reported index " << sample.index
                      << " persisted, yet the destination lacks " << count
                      << " events it covers (seqs " << absl::StrJoin(missing, ", ") << ", ...)";
      }
    }
    ++checks_;
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::string name_;
  std::string dir_;
  const std::string address_ = absl::StrCat("127.0.0.1:", FreePort());
  int checks_ = 0;
  const Sink* sink_ = nullptr;
};

// The test_seq of each dead letter in `path`, requiring each to be a whole line whose reason
// names `key`.
std::vector<int64_t> DeadLetterSeqs(const std::string& path, const std::string& key) {
  std::vector<int64_t> seqs;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("reason") ||
        !doc["reason"].IsString() || !doc.HasMember("event") || !doc["event"].IsObject()) {
      ADD_FAILURE() << "not a dead letter: " << line.substr(0, 200);
      continue;
    }
    EXPECT_TRUE(key.empty() ? false : absl::StrContains(doc["reason"].GetString(), key))
        << "the reason names " << (key.empty() ? "no refusal expected" : key) << ": "
        << doc["reason"].GetString();
    const rapidjson::Value& event = doc["event"];
    seqs.push_back(event.HasMember("test_seq") && event["test_seq"].IsUint64()
                       ? static_cast<int64_t>(event["test_seq"].GetUint64())
                       : -1);
  }
  return seqs;
}

TEST_P(InvariantTest, NothingReportedPersistedIsLost) {
  const bool disk = GetParam().disk;
  auto sink = StartSink(GetParam().output, dir_ + "/sink", seed_);
  ASSERT_TRUE(sink.ok()) << sink.status();
  sink_ = sink->get();
  std::vector<std::string> kinds = (*sink)->Faults();
  kinds.emplace_back(kShipperKill);
  if (const std::vector<std::string> only = absl::GetFlag(FLAGS_faults); !only.empty()) {
    kinds.erase(std::remove_if(kinds.begin(), kinds.end(),
                               [&](const std::string& kind) {
                                 return std::find(only.begin(), only.end(), kind) == only.end();
                               }),
                kinds.end());
    if (kinds.empty()) GTEST_SKIP() << "none of --faults applies to " << name_;
  }

  const std::vector<std::string> args = ShipperArgs(**sink);
  absl::StatusOr<std::unique_ptr<ShipperProcess>> shipper = StartShipper(args);
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  (*sink)->ShipperStarted((*shipper)->pid());
  Publisher publisher(
      address_, [&](uint64_t seq) { return (*sink)->MakeEvent(seq); }, 200,
      absl::GetFlag(FLAGS_rate));
  ASSERT_TRUE(Await([&] { return publisher.LastPersisted().index > 0; }, absl::Seconds(30)))
      << (*shipper)->Log();

  std::vector<PersistedSample> samples;
  std::map<std::string, int> faults;  // injected, by kind
  const auto sample = [&] { samples.push_back(publisher.LastPersisted()); };
  const absl::Time start = absl::Now();
  while (absl::Now() < start + absl::GetFlag(FLAGS_duration)) {
    if (absl::Uniform(rng_, 0, 10) < 3) {
      sample();
      // With the disk queue the index runs ahead of the destination: it is checked at the end
      // (read all the same: Kafka's sink reads as it goes).
      std::unordered_map<int64_t, int> copies;
      ASSERT_NO_FATAL_FAILURE(Read(**sink, &copies));
      if (!disk) Check(copies, publisher, samples);
    } else if (const std::string& kind = kinds[absl::Uniform(rng_, 0u, kinds.size())];
               kind != kShipperKill) {
      const absl::Status injected = (*sink)->Inject(kind, rng_, sample);
      ASSERT_TRUE(injected.ok()) << injected;
      ++faults[kind];
      std::cout << "  "
                << absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1)))
                << " " << kind << " healed" << std::endl;
    } else {
      sample();  // the last index read before the kill
      (*shipper)->Signal(SIGKILL);
      ASSERT_TRUE((*shipper)->Wait(absl::Seconds(10)).ok());
      shipper = StartShipper(args);
      ASSERT_TRUE(shipper.ok()) << shipper.status();
      (*sink)->ShipperStarted((*shipper)->pid());
      // The client found the new process and heard from it, before the next fault.
      ASSERT_TRUE(Await([&] { return publisher.LastPersisted().uuid == (*shipper)->uuid(); },
                        absl::Seconds(30)))
          << (*shipper)->Log();
      ++faults[kind];
      std::cout << "  "
                << absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(1)))
                << " " << kind << " after index " << samples.back().index << ", restarted"
                << std::endl;
    }
    // Between actions: time for delivery to go on (the schedule, not a wait for a result).
    absl::SleepFor(absl::Milliseconds(absl::Uniform(rng_, 50, 500)));
  }
  publisher.StopNewEvents();
  ASSERT_TRUE(Await([&] { return publisher.AllPersisted(); }, absl::Seconds(120)))
      << "not every event was persisted in time; Shipper's log:\n"
      << (*shipper)->Log();
  sample();
  const uint64_t published = publisher.published();
  const auto all_there = [&](const std::unordered_map<int64_t, int>& copies) {
    for (uint64_t seq = 0; seq < published; ++seq) {
      if (copies.count(static_cast<int64_t>(seq)) == 0 && !(*sink)->Refused(seq)) return false;
    }
    return true;
  };
  std::unordered_map<int64_t, int> copies;
  ASSERT_NO_FATAL_FAILURE(Read(**sink, &copies));
  // The disk queue's index said synced: delivery may still be going on.
  for (const absl::Time deadline = absl::Now() + absl::Seconds(60);
       disk && !all_there(copies) && absl::Now() < deadline;) {
    absl::SleepFor(absl::Milliseconds(200));
    ASSERT_NO_FATAL_FAILURE(Read(**sink, &copies));
  }
  const absl::Duration took = absl::Now() - start;
  Check(copies, publisher, samples);
  std::unordered_map<int64_t, int> dead;
  for (int64_t seq : DeadLetterSeqs(dir_ + "/dead.ndjson", (*sink)->RefusalKey())) ++dead[seq];
  uint64_t lost = 0, duplicates = 0, refused = 0;
  for (uint64_t seq = 0; seq < published; ++seq) {
    if ((*sink)->Refused(seq)) {
      ++refused;
      EXPECT_EQ(copies.count(static_cast<int64_t>(seq)), 0u) << "refused, yet delivered: " << seq;
      if (dead.erase(static_cast<int64_t>(seq)) == 0 && ++lost <= 10) {
        ADD_FAILURE() << name_ << ": event " << seq << " refused for good, yet no dead letter";
      }
      continue;
    }
    auto it = copies.find(static_cast<int64_t>(seq));
    if (it == copies.end()) {
      if (++lost <= 10) ADD_FAILURE() << name_ << ": event " << seq << " never delivered";
    } else {
      duplicates += it->second - 1;
    }
  }
  EXPECT_EQ(copies.count(-1), 0u) << "every item in the destination is a whole test event";
  EXPECT_TRUE(dead.empty()) << dead.size() << " dead letters of events not refused, e.g. seq "
                            << dead.begin()->first;

  std::vector<std::string> injected;
  for (const auto& [fault, count] : faults) injected.push_back(absl::StrCat(fault, " ", count));
  std::cout << "invariant: " << GetParam().output << ", " << (disk ? "disk" : "memory")
            << " queue: " << published << " events in " << absl::Trunc(took, absl::Seconds(1))
            << " under " << absl::StrJoin(injected, ", ") << "; " << checks_
            << " checks of persisted against the destination (" << samples.size()
            << " indexes read); " << lost << " lost, " << duplicates << " duplicates ("
            << absl::StrFormat("%.2f", 100.0 * duplicates / std::max<uint64_t>(published, 1))
            << " %), " << refused << " refused for good and dead-lettered, "
            << publisher.processes_seen() << " Shipper processes; seed " << seed_ << std::endl;
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const std::string& output : SinkNames()) {
    for (bool disk : {false, true}) cases.push_back({output, disk});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryOutput, InvariantTest, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace shipper::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  absl::ParseCommandLine(argc, argv);
  return RUN_ALL_TESTS();
}
