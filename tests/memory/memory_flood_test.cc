// Floods of every event shape, each against a fresh Shipper with its output down (a Redis output
// pointed at a port where nothing listens), 16 channels × 8 calls in flight:
// - peak RSS (VmHWM) stays within the bound the README states: shipper.queue.mem.bytes +
//   shipper.server.max_receive_memory + the fixed overhead, as the process itself reports them;
// - clients see partial acceptance, never growth;
// - once Redis comes up on that port, every accepted event is delivered.
// The second case runs the same inside a memory cgroup of 256 MiB made here (root, cgroup v1 or
// v2): Shipper sizes its budgets from the limit and is never OOM-killed. Where no writable
// memory controller exists it prints why and passes.
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/load/load_generator.h"
#include "tests/load/otlp_load_generator.h"
#include "tests/outputs/producer_client.h"
#include "tests/outputs/redis_server.h"
#include "tests/testing/shipper_process.h"

#if defined(__SANITIZE_ADDRESS__)
#define SHIPPER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHIPPER_ASAN 1
#endif
#endif

namespace shipper::testing {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kCgroupLimit = 256 * kMiB;
constexpr char kKey[] = "flood";

struct Flood {
  load::EventShape shape;
  int batch;
};
constexpr Flood kFloods[] = {{load::EventShape::kFilebeat, 500},
                             {load::EventShape::kLarge, 500},
                             {load::EventShape::kLarge, 2000},
                             {load::EventShape::kTiny, 20000}};

std::string TempDir(absl::string_view name) {
  std::string dir = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A "name value" line of a /proc or cgroup file (VmHWM in kB, oom_kill), or nullopt.
std::optional<int64_t> Field(const std::string& text, absl::string_view name) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, name)) continue;
    line = absl::StripPrefix(line, ":");
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    int64_t value;
    if (!words.empty() && absl::SimpleAtoi(words[0], &value)) return value;
  }
  return std::nullopt;
}

int64_t PeakRss(pid_t pid) {
  return Field(ReadFile(absl::StrCat("/proc/", pid, "/status")), "VmHWM").value_or(0) * 1024;
}

// The bound the process logs at start: its two budgets plus the fixed overhead.
int64_t LoggedBound(const std::string& log) {
  static const std::regex kBudgets(
      "shipper.queue.mem.bytes=(\\d+) shipper.server.max_receive_memory=(\\d+) \\(\\+(\\d+) "
      "fixed\\)");
  std::smatch match;
  if (!std::regex_search(log, match, kBudgets)) return 0;
  return std::stoll(match[1]) + std::stoll(match[2]) + std::stoll(match[3]);
}

// A cgroup of its own for Shipper with a memory limit, v1 or v2; Skip() says why not.
class MemoryCgroup {
 public:
  ~MemoryCgroup() {
    if (!dir_.empty()) {
      for (int i = 0; i < 50 && rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i) {
        absl::SleepFor(absl::Milliseconds(100));  // the killed process is still exiting
      }
    }
  }

  // Empty on success; else why there is no memory cgroup to make.
  std::string Create(int64_t limit) {
    if (geteuid() != 0) return "needs root to create cgroups";
    std::string v1_path, v2_path;
    bool has_v2 = false;
    for (absl::string_view line : absl::StrSplit(ReadFile("/proc/self/cgroup"), '\n')) {
      std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (parts.size() != 3) continue;
      for (absl::string_view c : absl::StrSplit(parts[1], ',')) {
        if (c == "memory") v1_path = parts[2];
      }
      if (parts[0] == "0" && parts[1].empty()) v2_path = parts[2], has_v2 = true;
    }
    std::string parent;
    if (!v1_path.empty() && std::filesystem::exists("/sys/fs/cgroup/memory" + v1_path)) {
      version_ = 1;
      parent = "/sys/fs/cgroup/memory" + v1_path;
    } else if (has_v2 && std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers")) {
      version_ = 2;
      parent = "/sys/fs/cgroup" + v2_path;
      if (ReadFile(parent + "/cgroup.controllers").find("memory") == std::string::npos) {
        return absl::StrCat("cgroup v2 at ", parent, " has no memory controller");
      }
    } else {
      return "no cgroup v1 memory hierarchy or cgroup v2 mount at /sys/fs/cgroup";
    }
    const std::string dir = absl::StrCat(parent, "/shipper-memory-", getpid());
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::StrCat("cannot create ", dir, ": ", strerror(errno));
    }
    dir_ = dir;
    if (version_ == 2 && !Write(parent + "/cgroup.subtree_control", "+memory")) {
      return absl::StrCat("cannot enable memory in ", parent, "/cgroup.subtree_control (",
                          strerror(errno), ")");
    }
    const std::string file = version_ == 1 ? "/memory.limit_in_bytes" : "/memory.max";
    if (!Write(dir_ + file, absl::StrCat(limit))) {
      return absl::StrCat("cannot write ", dir_, file, ": ", strerror(errno));
    }
    if (version_ == 2) Write(dir_ + "/memory.swap.max", "0");  // a limit, not a swap file
    return "";
  }

  const std::string& dir() const { return dir_; }
  // OOM kills in the cgroup so far.
  int64_t oom_kills() const {
    return Field(ReadFile(dir_ + (version_ == 1 ? "/memory.oom_control" : "/memory.events")),
                 "oom_kill")
        .value_or(0);
  }

 private:
  static bool Write(const std::string& path, const std::string& value) {
    std::ofstream out(path);
    out << value << "\n";
    out.flush();
    return out.good();
  }

  int version_ = 0;
  std::string dir_;
};

// Starts Shipper (inside `cgroup_dir` when given, before it execs, so that it sizes itself from
// the limit), floods it with `flood` while its output is down, brings the output up and checks
// that everything accepted arrives. Returns Shipper's peak RSS and the bound it logged.
struct FloodResult {
  int64_t peak_rss = 0;
  int64_t bound = 0;
};
void FloodThenRecover(const std::string& cgroup_dir, const Flood& flood, FloodResult* out) {
  const int redis_port = FreePort();
  std::vector<std::string> args = {
      "-E", "shipper.server.server=127.0.0.1:0",
      "-E", "http.port=0",
      "-E", "shipper.output.redis.enabled=true",
      "-E", absl::StrCat("shipper.output.redis.hosts=127.0.0.1:", redis_port),
      "-E", absl::StrCat("shipper.output.redis.key=", kKey),
      "-E", "shipper.output.redis.timeout=1s",
      "-E", "shipper.output.backoff.init=50ms",
      "-E", "shipper.output.backoff.max=500ms"};
  std::string binary = "shipper/shipper";
  if (!cgroup_dir.empty()) {
    args.insert(
        args.begin(),
        {"-c", absl::StrCat("echo $$ > ", cgroup_dir, "/cgroup.procs && exec \"$0\" \"$@\""),
         binary});
    binary = "/bin/sh";
  }
  absl::StatusOr<ShipperProcess> shipper = ShipperProcess::Start(args, binary);
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  out->bound = LoggedBound(shipper->Log());
  EXPECT_GT(out->bound, 0) << shipper->Log();

  load::LoadOptions options;
  options.target = shipper->address();
  options.channels = 16;
  options.inflight = 8;
  options.batch = flood.batch;
  options.shape = flood.shape;
  options.duration = absl::Seconds(3);
  options.call_timeout = absl::Seconds(2);       // calls queued behind a full Shipper end soon
  options.drain_timeout = absl::ZeroDuration();  // the output is down: nothing persists
  options.max_errors = ~uint64_t{0};
  options.drop_at_end = true;
  absl::StatusOr<load::LoadResult> result = load::RunLoad(options);
  ASSERT_TRUE(result.ok()) << result.status() << "\n" << shipper->Log();
  out->peak_rss = PeakRss(shipper->pid());
  std::cout << load::EventShapeName(flood.shape) << " x " << flood.batch << ": accepted "
            << result->events_accepted << ", partial replies " << result->partial_replies
            << ", errors " << result->errors << " (" << result->first_error << "), peak RSS "
            << out->peak_rss / kMiB << " MiB, bound " << out->bound / kMiB << " MiB" << std::endl;
  EXPECT_GT(result->events_accepted, 0u);
  EXPECT_GT(result->partial_replies, 0u) << "the queue should have filled";
  ASSERT_EQ(kill(shipper->pid(), 0), 0) << "shipper died:\n" << shipper->Log();

  // The output comes back: everything accepted is delivered.
  absl::StatusOr<std::unique_ptr<RedisServer>> redis =
      RedisServer::Start(redis_port, TempDir("redis"), /*append_only=*/false);
  ASSERT_TRUE(redis.ok()) << redis.status();
  ProducerClient client(shipper->address());
  EXPECT_EQ(client.AwaitPersisted(result->events_accepted, absl::Now() + absl::Seconds(60)),
            result->events_accepted)
      << shipper->Log();
  auto length = (*redis)->Command({"LLEN", kKey});
  ASSERT_NE(length, nullptr);
  EXPECT_GE(static_cast<uint64_t>(length->integer), result->events_accepted);
}

TEST(MemoryFloodTest, PeakRssStaysWithinTheDocumentedBound) {
  for (const Flood& flood : kFloods) {
    FloodResult result;
    FloodThenRecover("", flood, &result);
#ifdef SHIPPER_ASAN
    std::cout << "not checking the bound: ASan's shadow memory and quarantine are not Shipper's"
              << std::endl;
#else
    EXPECT_LE(result.peak_rss, result.bound) << load::EventShapeName(flood.shape);
#endif
  }
}

// The same bound with OTLP floods on both transports at once, each from 32 exports in flight
// (gRPC streams on one channel, HTTP connections) of large records, ack: persisted, the output
// down: exports wait for a persistence that does not come, time out and are sent again, the queue
// and the budget fill, and what the transports hold is charged before it is copied (HTTP bodies
// to the budget, gRPC messages to the shared quota). Once Redis is up, every record that was
// answered OK is there.
TEST(MemoryFloodTest, OtlpFloodOnBothTransportsStaysWithinTheBound) {
  const int redis_port = FreePort();
  absl::StatusOr<ShipperProcess> shipper = ShipperProcess::Start(
      {"-E", "http.port=0",  // here: ShipperProcess takes shipper.otlp.http.* for an http key
       "-E", "shipper.otlp.enabled=true",
       "-E", "shipper.otlp.grpc.server=127.0.0.1:0",
       "-E", "shipper.otlp.http.server=127.0.0.1:0",
       "-E", "shipper.otlp.retry_delay=10ms",
       "-E", "shipper.output.redis.enabled=true",
       "-E", absl::StrCat("shipper.output.redis.hosts=127.0.0.1:", redis_port),
       "-E", absl::StrCat("shipper.output.redis.key=", kKey),
       "-E", "shipper.output.redis.timeout=1s",
       "-E", "shipper.output.backoff.init=50ms",
       "-E", "shipper.output.backoff.max=500ms"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  const int64_t bound = LoggedBound(shipper->Log());
  ASSERT_GT(bound, 0) << shipper->Log();
  std::string addresses[2];
  const std::regex listening[2] = {std::regex("OTLP/gRPC listening on (\\S+)"),
                                   std::regex("OTLP/HTTP serving on (\\S+)")};
  for (int i = 0; i < 2; ++i) {
    for (absl::Time deadline = absl::Now() + absl::Seconds(10);
         addresses[i].empty() && absl::Now() < deadline; absl::SleepFor(absl::Milliseconds(10))) {
      std::smatch match;
      const std::string log = shipper->Log();
      if (std::regex_search(log, match, listening[i])) addresses[i] = match[1];
    }
    ASSERT_FALSE(addresses[i].empty()) << shipper->Log();
  }

  absl::StatusOr<load::OtlpLoadResult> results[2];
  std::thread floods[2];
  for (int i = 0; i < 2; ++i) {
    floods[i] = std::thread([&, i] {
      load::OtlpLoadOptions options;
      options.target = addresses[i];
      options.transport = i == 0 ? load::OtlpTransport::kGrpc : load::OtlpTransport::kHttp;
      options.shape = load::EventShape::kLarge;
      options.batch = 500;
      options.inflight = 32;
      options.duration = absl::Seconds(3);
      options.call_timeout = absl::Seconds(1);
      options.retry_after = absl::Milliseconds(10);
      options.max_errors = ~uint64_t{0};
      results[i] = load::RunOtlpLoad(options);
    });
  }
  for (std::thread& flood : floods) flood.join();
  const int64_t peak_rss = PeakRss(shipper->pid());
  uint64_t answered_ok = 0;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    std::cout << (i == 0 ? "OTLP/gRPC" : "OTLP/HTTP") << ": " << results[i]->exports
              << " exports answered OK, " << results[i]->retries << " retries, "
              << results[i]->errors << " errors (" << results[i]->first_error << ")" << std::endl;
    EXPECT_GT(results[i]->retries + results[i]->errors, 0u) << "the flood should have been held";
    answered_ok += results[i]->events;
  }
  std::cout << "peak RSS " << peak_rss / kMiB << " MiB, bound " << bound / kMiB << " MiB"
            << std::endl;
  ASSERT_EQ(kill(shipper->pid(), 0), 0) << "shipper died:\n" << shipper->Log();
#ifdef SHIPPER_ASAN
  std::cout << "not checking the bound: ASan's shadow memory and quarantine are not Shipper's"
            << std::endl;
#else
  EXPECT_LE(peak_rss, bound);
#endif

  // The output comes back: what was queued is delivered, every record answered OK among it.
  absl::StatusOr<std::unique_ptr<RedisServer>> redis =
      RedisServer::Start(redis_port, TempDir("redis-otlp"), /*append_only=*/false);
  ASSERT_TRUE(redis.ok()) << redis.status();
  int64_t delivered = 0;
  for (absl::Time deadline = absl::Now() + absl::Seconds(60);
       absl::Now() < deadline && (delivered == 0 || delivered < static_cast<int64_t>(answered_ok));
       absl::SleepFor(absl::Milliseconds(50))) {
    auto length = (*redis)->Command({"LLEN", kKey});
    if (length != nullptr) delivered = length->integer;
  }
  EXPECT_GT(delivered, 0);
  EXPECT_GE(delivered, static_cast<int64_t>(answered_ok));
}

// OTLP/JSON whose size says little about what decoding it builds: 16 MiB of empty attributes
// (`{}`, 3 bytes each) is 5.6 million KeyValues, gigabytes once decoded. Posted by 4 senders at
// once, each is counted before anything is built for it and refused (413: more than the whole
// budget; 503 while the others' bodies fill it), and peak RSS stays within the bound.
TEST(MemoryFloodTest, OtlpJsonOfEmptyValuesIsCountedBeforeItIsBuilt) {
  absl::StatusOr<ShipperProcess> shipper = ShipperProcess::Start(
      {"-E", "http.port=0", "-E", "shipper.otlp.enabled=true", "-E",
       "shipper.otlp.grpc.enabled=false", "-E", "shipper.otlp.http.server=127.0.0.1:0"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  const int64_t bound = LoggedBound(shipper->Log());
  ASSERT_GT(bound, 0) << shipper->Log();
  std::string address;
  for (absl::Time deadline = absl::Now() + absl::Seconds(10);
       address.empty() && absl::Now() < deadline; absl::SleepFor(absl::Milliseconds(10))) {
    std::smatch match;
    const std::string log = shipper->Log();
    if (std::regex_search(log, match, std::regex("OTLP/HTTP serving on \\S+:(\\d+)"))) {
      address = match[1];
    }
  }
  ASSERT_FALSE(address.empty()) << shipper->Log();
  std::string json = R"({"resourceLogs":[{"resource":{"attributes":[{})";
  json.reserve(16 * kMiB + 64);
  while (json.size() < 16 * kMiB) json += ",{}";
  json += R"(]},"scopeLogs":[{"logRecords":[{}]}]}]})";
  // A body refused before it is all read (no room for it now) closes the connection under the
  // sender still writing: that is an error here, not a signal.
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::thread> senders;
  std::atomic<int> refused{0}, taken{0};
  for (int i = 0; i < 4; ++i) {
    senders.emplace_back([&] {
      httplib::Client client("127.0.0.1", std::stoi(address));
      client.set_read_timeout(60);
      httplib::Result result = client.Post("/v1/logs", json, "application/json");
      // 413, or 503 (or the connection closed early) when the others' bodies hold the budget.
      if (result && result->status == 413) refused.fetch_add(1);
      if (result && result->status == 200) taken.fetch_add(1);
    });
  }
  for (std::thread& sender : senders) sender.join();
  const int64_t peak_rss = PeakRss(shipper->pid());
  std::cout << "4 x 16 MiB of empty JSON values: " << refused.load() << " refused (413), "
            << taken.load() << " taken, peak RSS " << peak_rss / kMiB << " MiB, bound "
            << bound / kMiB << " MiB" << std::endl;
  ASSERT_EQ(kill(shipper->pid(), 0), 0) << "shipper died:\n" << shipper->Log();
  EXPECT_GT(refused.load(), 0);
  EXPECT_EQ(taken.load(), 0);
#ifndef SHIPPER_ASAN
  EXPECT_LE(peak_rss, bound);
#endif
}

TEST(MemoryFloodTest, NeverOomKilledIn256MiBCgroup) {
#ifdef SHIPPER_ASAN
  std::cout << "SKIPPED: under ASan the limit would count its shadow memory, not Shipper's"
            << std::endl;
  GTEST_SKIP();
#endif
  MemoryCgroup cgroup;
  if (std::string why = cgroup.Create(kCgroupLimit); !why.empty()) {
    std::cout << "SKIPPED: " << why << std::endl;
    GTEST_SKIP() << why;
  }
  std::cout << "in " << cgroup.dir() << ", limit " << kCgroupLimit / kMiB << " MiB" << std::endl;
  for (const Flood& flood : kFloods) {
    FloodResult result;
    FloodThenRecover(cgroup.dir(), flood, &result);
    EXPECT_LT(result.bound, kCgroupLimit) << "budgets not sized from the limit";
    EXPECT_EQ(cgroup.oom_kills(), 0) << load::EventShapeName(flood.shape);
  }
}

}  // namespace
}  // namespace shipper::testing
