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

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"
#include "shipper/input/otlp/otlp_signals.h"
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

// The first group of `pattern` in Shipper's log, once it is there (at most 10 s); "" if not.
std::string LoggedMatch(const ShipperProcess& shipper, const std::regex& pattern) {
  for (absl::Time deadline = absl::Now() + absl::Seconds(10); absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(10))) {
    std::smatch match;
    const std::string log = shipper.Log();
    if (std::regex_search(log, match, pattern)) return match[1];
  }
  return "";
}

// The port OTLP/HTTP logged it serves on; 0 if it did not.
int OtlpHttpPort(const ShipperProcess& shipper) {
  const std::string port = LoggedMatch(shipper, std::regex("OTLP/HTTP serving on \\S+:(\\d+)"));
  return port.empty() ? 0 : std::stoi(port);
}

// A protobuf field of wire type LEN: its tag byte (field < 16), length and `payload`.
std::string LengthDelimited(char tag, const std::string& payload) {
  std::string out(1, tag);
  for (size_t n = payload.size();; n >>= 7) {
    out += static_cast<char>(n < 0x80 ? n : (n & 0x7f) | 0x80);
    if (n < 0x80) break;
  }
  return out + payload;
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
    addresses[i] = LoggedMatch(*shipper, listening[i]);
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
  const int port = OtlpHttpPort(*shipper);
  ASSERT_GT(port, 0) << shipper->Log();
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
      httplib::Client client("127.0.0.1", port);
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

// Empty records are the cheapest to send and each becomes a queued event of its own (its times,
// its signal, its data_stream): 65,000 of them are 130 KB of protobuf or 195 KB of OTLP/JSON.
// 8 senders post such exports over OTLP/HTTP, half protobuf, half JSON, for 3 s with the output
// down: the queue fills (65,536 events: one such export), the rest is told to retry (503), and
// peak RSS stays within the bound. (The queue's slots are allocated for shipper.queue.mem.events
// up front, outside the bound: a flood against millions of slots measures them, not the input.)
TEST(MemoryFloodTest, OtlpFloodsOfEmptyRecordsStayWithinTheBound) {
  constexpr int kRecords = 65000;
  absl::StatusOr<ShipperProcess> shipper = ShipperProcess::Start(
      {"-E", "http.port=0", "-E", "shipper.otlp.enabled=true", "-E",
       "shipper.otlp.grpc.enabled=false", "-E", "shipper.otlp.http.server=127.0.0.1:0", "-E",
       "shipper.otlp.ack=queued", "-E", "shipper.output.redis.enabled=true", "-E",
       absl::StrCat("shipper.output.redis.hosts=127.0.0.1:", FreePort()), "-E",
       "shipper.output.redis.timeout=1s"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  const int64_t bound = LoggedBound(shipper->Log());
  ASSERT_GT(bound, 0) << shipper->Log();
  const int port = OtlpHttpPort(*shipper);
  ASSERT_GT(port, 0) << shipper->Log();
  std::string records;  // ScopeLogs.log_records, each empty
  for (int i = 0; i < kRecords; ++i) records += std::string("\x12\x00", 2);
  const std::string protobuf = LengthDelimited(0x0a, LengthDelimited(0x12, records));
  std::string json = R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{})";
  for (int i = 1; i < kRecords; ++i) json += ",{}";
  json += "]}]}]}";
  std::atomic<int> taken{0}, retry{0}, other{0};
  std::vector<std::thread> senders;
  const absl::Time end = absl::Now() + absl::Seconds(3);
  for (int i = 0; i < 8; ++i) {
    senders.emplace_back([&, i] {
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(60);
      const bool as_json = i % 2 == 1;
      while (absl::Now() < end) {
        httplib::Result result =
            client.Post("/v1/logs", as_json ? json : protobuf,
                        as_json ? "application/json" : "application/x-protobuf");
        if (result && result->status == 200) {
          taken.fetch_add(1);
        } else if (result && result->status == 503) {
          retry.fetch_add(1);
        } else {
          other.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& sender : senders) sender.join();
  const int64_t peak_rss = PeakRss(shipper->pid());
  std::cout << "8 senders of " << kRecords << " empty records (protobuf and JSON): " << taken.load()
            << " exports taken, " << retry.load() << " told to retry, " << other.load()
            << " other, peak RSS " << peak_rss / kMiB << " MiB, bound " << bound / kMiB << " MiB"
            << std::endl;
  ASSERT_EQ(kill(shipper->pid(), 0), 0) << "shipper died:\n" << shipper->Log();
  EXPECT_GT(taken.load(), 0);
  EXPECT_GT(retry.load(), 0) << "the queue should have filled";
  EXPECT_EQ(other.load(), 0);
#ifndef SHIPPER_ASAN
  EXPECT_LE(peak_rss, bound);
#endif
}

// With shipper.queue.mem.bytes: 0 (no budget) one request holds at most 16 x
// shipper.otlp.max_message_size at once, everything counted (docs/otlp.md): its body, the
// conversion's bookkeeping, its records and their events. The export, 3.4 MB under a
// max_message_size of 4 MiB: a 512 KiB resource attribute copied into every record's event,
// three records whose bodies are 500,000 empty array values each (4 bytes of bookkeeping per 2
// bytes sent), and `empty` empty records. With 110 of those it would hold about 73 MiB, more than
// the 64 MiB bound (its records alone, about 62 MiB, are not): refused (413) before its records are
// made. With 60 it holds about 48 MiB: taken. Posted one after the other, peak RSS grows by less
// than the bound.
TEST(MemoryFloodTest, WithoutABudgetARequestHoldsAtMost16TimesMaxMessageSize) {
  constexpr int64_t kMaxMessage = 4 * kMiB;
  absl::StatusOr<ShipperProcess> shipper = ShipperProcess::Start(
      {"-E", "http.port=0",
       "-E", "shipper.otlp.enabled=true",
       "-E", "shipper.otlp.grpc.enabled=false",
       "-E", "shipper.otlp.http.server=127.0.0.1:0",
       "-E", "shipper.otlp.ack=queued",
       "-E", "shipper.queue.mem.bytes=0",
       "-E", absl::StrCat("shipper.otlp.max_message_size=", kMaxMessage),
       "-E", "shipper.output.redis.enabled=true",
       "-E", absl::StrCat("shipper.output.redis.hosts=127.0.0.1:", FreePort()),
       "-E", "shipper.output.redis.timeout=1s"});
  if (!shipper.ok() && absl::StrContains(shipper.status().message(), "limit")) {
    GTEST_SKIP() << "shipper.queue.mem.bytes: 0 is refused under a memory limit: "
                 << shipper.status();
  }
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  const int port = OtlpHttpPort(*shipper);
  ASSERT_GT(port, 0) << shipper->Log();
  const auto hostile = [](int empty) {
    const std::string attribute =
        LengthDelimited(0x0a, "big") +  // KeyValue.key, value: AnyValue.string_value
        LengthDelimited(0x12, LengthDelimited(0x0a, std::string(kMaxMessage / 8, 'r')));
    const std::string resource = LengthDelimited(0x0a, LengthDelimited(0x0a, attribute));
    std::string values;  // ArrayValue.values, each an empty AnyValue
    for (int i = 0; i < 500000; ++i) values += std::string("\x0a\x00", 2);
    // ScopeLogs.log_records: LogRecord.body, an AnyValue.array_value.
    const std::string array_record =
        LengthDelimited(0x12, LengthDelimited(0x2a, LengthDelimited(0x2a, values)));
    std::string records = array_record + array_record + array_record;
    for (int i = 0; i < empty; ++i) records += std::string("\x12\x00", 2);
    return LengthDelimited(0x0a, resource + LengthDelimited(0x12, records));
  };
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60);
  const auto post = [&](const std::string& body) {
    httplib::Result result = client.Post("/v1/logs", body, "application/x-protobuf");
    return result ? result->status : -1;
  };
  ASSERT_EQ(post(LengthDelimited(0x0a, LengthDelimited(0x12, std::string("\x12\x00", 2)))), 200)
      << "a small export first, so that the threads serving it are counted before";
  const int64_t before = PeakRss(shipper->pid());
  const std::string refused = hostile(110), taken = hostile(60);
  ASSERT_LT(refused.size(), kMaxMessage);
  EXPECT_EQ(post(refused), 413);
  EXPECT_EQ(post(taken), 200);
  const int64_t grown = PeakRss(shipper->pid()) - before;
  std::cout << "shipper.queue.mem.bytes 0, max_message_size 4 MiB: peak RSS grew by "
            << grown / kMiB << " MiB (bound " << 16 * kMaxMessage / kMiB << " MiB)" << std::endl;
  ASSERT_EQ(kill(shipper->pid(), 0), 0) << "shipper died:\n" << shipper->Log();
#ifndef SHIPPER_ASAN
  EXPECT_LE(grown, 16 * kMaxMessage);
#endif
}

// The spans' and data points' hostile shapes, each an export cheap to send and costly to hold:
// spans of 10,000 empty span events each (every event an entry with its timestamp once
// converted), spans of 50,000 attributes each, and a histogram data point of a million buckets
// (bucket counts and bounds, every bucket a count and a value in metrics.<name> once converted).
// Each as protobuf (gRPC and HTTP) and as OTLP/JSON (HTTP).
struct HostileExport {
  std::string name;
  OtlpSignal signal;
  std::string protobuf, json;
};

// An export of `spans` spans, each made by fill(span, json): the span's message, and its
// OTLP/JSON fields appended (the braces are added here).
template <typename Fill>
HostileExport SpansExport(std::string name, int spans, Fill fill) {
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
  auto* scope = request.add_resource_spans()->add_scope_spans();
  std::string json = R"({"resourceSpans":[{"scopeSpans":[{"spans":[)";
  for (int i = 0; i < spans; ++i) {
    json += i == 0 ? "{" : ",{";
    fill(scope->add_spans(), &json);
    json += "}";
  }
  json += "]}]}]}";
  return {std::move(name), OtlpSignal::kTraces, request.SerializeAsString(), std::move(json)};
}

std::vector<HostileExport> HostileExports() {
  std::vector<HostileExport> out;
  out.push_back(SpansExport("spans of 10,000 span events", 16, [](auto* span, std::string* json) {
    *json += R"("events":[{})";
    span->add_events();
    for (int j = 1; j < 10000; ++j) {
      span->add_events();
      *json += ",{}";
    }
    *json += "]";
  }));
  out.push_back(SpansExport("spans of 50,000 attributes", 4, [](auto* span, std::string* json) {
    *json += R"("attributes":[)";
    for (int j = 0; j < 50000; ++j) {
      span->add_attributes()->set_key(absl::StrCat("a", j));
      absl::StrAppend(json, j == 0 ? "" : ",", R"({"key":"a)", j, R"("})");
    }
    *json += "]";
  }));
  {
    constexpr int kBuckets = 1000000;
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
    opentelemetry::proto::metrics::v1::Metric* metric =
        request.add_resource_metrics()->add_scope_metrics()->add_metrics();
    metric->set_name("buckets");
    opentelemetry::proto::metrics::v1::HistogramDataPoint* point =
        metric->mutable_histogram()->add_data_points();
    std::string json =
        R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"buckets","histogram":{)"
        R"("dataPoints":[{"count":"1000000","bucketCounts":[1)";
    point->set_count(kBuckets);
    for (int i = 0; i < kBuckets; ++i) point->add_bucket_counts(1);
    for (int i = 1; i < kBuckets; ++i) json += ",1";
    json += R"(],"explicitBounds":[)";
    for (int i = 1; i < kBuckets; ++i) {
      point->add_explicit_bounds(i);
      absl::StrAppend(&json, i == 1 ? "" : ",", i);
    }
    json += "]}]}}]}]}]}";
    out.push_back({"a histogram point of a million buckets", OtlpSignal::kMetrics,
                   request.SerializeAsString(), json});
  }
  return out;
}

// One Export call of `request` to `method`, waited for; the reply in *reply.
grpc::Status ExportOverGrpc(grpc::GenericStub* stub, const std::string& method,
                            const grpc::ByteBuffer& request, grpc::ByteBuffer* reply) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  grpc::Status status;
  absl::Notification done;
  stub->UnaryCall(&context, method, grpc::StubOptions(), &request, reply, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  return status;
}

// A flood of one of those against a fresh Shipper, output down, ack: queued: one export alone
// first (taken), then two senders on each of gRPC (TraceService/MetricsService Export), HTTP
// protobuf and HTTP JSON (/v1/traces, /v1/metrics) send it over and over for 3 s. Every export
// is answered: taken, told to retry (the queue and the budget full: exports in flight hold the
// budget, so the histogram's may all be), or refused for good (RESOURCE_EXHAUSTED, 413 or
// partial_success: a JSON body whose decoding is more than the budget ever holds, as the
// million buckets' and 200,000 attributes' are, is counted and refused before it is built).
// Shipper stays up, and peak RSS stays within the bound.
void FloodWithHostileExport(const HostileExport& x) {
  absl::StatusOr<ShipperProcess> shipper = ShipperProcess::Start(
      {"-E", "http.port=0", "-E", "shipper.otlp.enabled=true", "-E",
       "shipper.otlp.grpc.server=127.0.0.1:0", "-E", "shipper.otlp.http.server=127.0.0.1:0", "-E",
       "shipper.otlp.ack=queued", "-E", "shipper.otlp.retry_delay=10ms", "-E",
       "shipper.output.redis.enabled=true", "-E",
       absl::StrCat("shipper.output.redis.hosts=127.0.0.1:", FreePort()), "-E",
       "shipper.output.redis.timeout=1s"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  const int64_t bound = LoggedBound(shipper->Log());
  ASSERT_GT(bound, 0) << shipper->Log();
  const int http_port = OtlpHttpPort(*shipper);
  ASSERT_GT(http_port, 0) << shipper->Log();
  const std::string grpc_address =
      LoggedMatch(*shipper, std::regex("OTLP/gRPC listening on (\\S+)"));
  ASSERT_FALSE(grpc_address.empty()) << shipper->Log();
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxSendMessageSize(-1);
  const std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(grpc_address, grpc::InsecureChannelCredentials(), channel_args);
  const std::string path = absl::StrCat("/v1/", SignalName(x.signal));
  const std::string method(ExportMethod(x.signal));

  // Alone, into an empty queue, the export is taken: its records fit the budget, and the flood's
  // peak includes one converted and held.
  {
    grpc::GenericStub stub(channel);
    grpc::Slice slice(x.protobuf);
    grpc::ByteBuffer reply;
    const grpc::Status status = ExportOverGrpc(&stub, method, grpc::ByteBuffer(&slice, 1), &reply);
    ASSERT_TRUE(status.ok()) << x.name << ": " << status.error_message();
    ASSERT_EQ(reply.Length(), 0u) << x.name << ": rejected in part";
  }

  enum Transport { kGrpc, kHttpProtobuf, kHttpJson, kTransports };
  constexpr const char* kTransportNames[] = {"gRPC", "HTTP protobuf", "HTTP JSON"};
  struct Answers {
    std::atomic<int> taken{0}, retry{0}, refused{0}, other{0};
    absl::Mutex mu;
    std::string first_other ABSL_GUARDED_BY(mu);
  };
  Answers answers[kTransports];
  // A body refused before it is all read closes the connection under the sender still writing.
  signal(SIGPIPE, SIG_IGN);
  std::vector<std::thread> senders;
  const absl::Time end = absl::Now() + absl::Seconds(3);
  for (int i = 0; i < 2 * kTransports; ++i) {
    senders.emplace_back([&, t = i % kTransports] {
      Answers& a = answers[t];
      const auto other = [&a](std::string why) {
        absl::MutexLock lock(&a.mu);
        if (a.other.fetch_add(1) == 0) a.first_other = std::move(why);
      };
      grpc::GenericStub stub(channel);
      httplib::Client client("127.0.0.1", http_port);
      client.set_read_timeout(60);
      grpc::Slice slice(x.protobuf);
      const grpc::ByteBuffer request(&slice, 1);
      while (absl::Now() < end) {
        if (t == kGrpc) {
          grpc::ByteBuffer reply;
          const grpc::Status status = ExportOverGrpc(&stub, method, request, &reply);
          if (status.ok()) {
            // An empty Export*ServiceResponse: taken; one with partial_success: refused.
            (reply.Length() == 0 ? a.taken : a.refused).fetch_add(1);
          } else if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
            a.retry.fetch_add(1);
            absl::SleepFor(absl::Milliseconds(10));
          } else if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
            a.refused.fetch_add(1);
          } else {
            other(absl::StrCat("gRPC ", status.error_code(), ": ", status.error_message()));
          }
          continue;
        }
        const bool json = t == kHttpJson;
        httplib::Result result = client.Post(path, json ? x.json : x.protobuf,
                                             json ? "application/json" : "application/x-protobuf");
        if (result && result->status == 200) {
          const bool partial = json ? result->body.find("partialSuccess") != std::string::npos
                                    : !result->body.empty();
          (partial ? a.refused : a.taken).fetch_add(1);
        } else if (result && result->status == 503) {
          a.retry.fetch_add(1);
          absl::SleepFor(absl::Milliseconds(10));
        } else if (result && result->status == 413) {
          a.refused.fetch_add(1);
        } else {
          other(result ? absl::StrCat("HTTP ", result->status, ": ", result->body.substr(0, 200))
                       : absl::StrCat("HTTP: ", httplib::to_string(result.error())));
        }
      }
    });
  }
  for (std::thread& sender : senders) sender.join();
  const int64_t peak_rss = PeakRss(shipper->pid());
  int retry = 0;
  for (int t = 0; t < kTransports; ++t) {
    Answers& a = answers[t];
    absl::MutexLock lock(&a.mu);
    std::cout << x.name << " over " << kTransportNames[t] << ": " << a.taken.load() << " taken, "
              << a.retry.load() << " told to retry, " << a.refused.load() << " refused, "
              << a.other.load() << " other " << a.first_other << std::endl;
    EXPECT_GT(a.taken.load() + a.retry.load() + a.refused.load(), 0)
        << x.name << " over " << kTransportNames[t] << " was never answered";
    EXPECT_EQ(a.other.load(), 0) << x.name << " over " << kTransportNames[t] << ": "
                                 << a.first_other;
    retry += a.retry.load();
  }
  std::cout << x.name << ": peak RSS " << peak_rss / kMiB << " MiB, bound " << bound / kMiB
            << " MiB" << std::endl;
  ASSERT_EQ(kill(shipper->pid(), 0), 0) << "shipper died:\n" << shipper->Log();
  // Under ASan, Shipper is too slow to fill the queue in 3 s, and its memory is not all its own.
#ifndef SHIPPER_ASAN
  EXPECT_GT(retry, 0) << x.name << ": the queue should have filled";
  EXPECT_LE(peak_rss, bound) << x.name;
#endif
}

TEST(MemoryFloodTest, OtlpFloodsOfHostileSpansAndPointsStayWithinTheBound) {
  for (const HostileExport& x : HostileExports()) FloodWithHostileExport(x);
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
