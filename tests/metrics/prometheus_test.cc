// The metrics endpoint of the real shipper binary, checked by Prometheus's own tools: a C++ gRPC
// client publishes a known number of events (some refused: a wrong uuid, a full queue), then
//  - `promtool check metrics` finds no problem in /metrics,
//  - every counter equals what the client saw: received, accepted, rejected by reason,
//    persisted, gRPC calls by code, persist latency observations,
//  - a real `prometheus` server scraping Shipper every second reports
//    shipper_events_persisted_total through its HTTP API,
//  - the periodic summary line appears while events flow and stops once nothing changes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "proto/producer.grpc.pb.h"
#include "rapidjson/document.h"
#include "tests/testing/shipper_process.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
using elastic::agent::shipper::v1::Producer;

constexpr int kEvents = 20000;
constexpr int kBatch = 500;
constexpr int kQueueEvents = 2000;
constexpr char kPublish[] = "/elastic.agent.shipper.v1.Producer/PublishEvents";

std::string TempDir() { return std::getenv("TEST_TMPDIR"); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int SummaryLines(absl::string_view log) {
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    lines += absl::StrContains(line, "metrics in the last");
  }
  return lines;
}

// The events_persisted the summary lines in `log` report, added up.
int SummaryPersisted(absl::string_view log) {
  int persisted = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StrContains(line, "metrics in the last")) continue;
    const size_t at = line.find("events_persisted +");
    if (at == absl::string_view::npos) continue;
    absl::string_view count = line.substr(at + strlen("events_persisted +"));
    int n = 0;
    if (absl::SimpleAtoi(count.substr(0, count.find(',')), &n)) persisted += n;
  }
  return persisted;
}

// A loopback port nothing listens on right now (Prometheus cannot be told to pick one itself).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t size = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  close(fd);
  return ntohs(address.sin_port);
}

// Runs `command` through the shell; returns {exit status, what it printed}.
std::pair<int, std::string> RunCommand(const std::string& command) {
  const std::string out = TempDir() + "/command.out";
  const int status = std::system(absl::StrCat(command, " > ", out, " 2>&1").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out)};
}

// Samples of a text-format page by "name{labels}"; histogram buckets included.
std::map<std::string, double> ParseSamples(const std::string& page) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(page, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#")) continue;
    const size_t space = line.rfind(' ');
    double value;
    if (space != absl::string_view::npos && absl::SimpleAtod(line.substr(space + 1), &value)) {
      samples[std::string(line.substr(0, space))] = value;
    }
  }
  return samples;
}

// A Prometheus server with a fresh TSDB that scrapes one target every second.
class Prometheus {
 public:
  explicit Prometheus(const std::string& target) : port_(FreePort()) {
    const std::string dir = TempDir() + "/prometheus";
    const std::string config = dir + ".yml";
    std::ofstream(config) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                          << "scrape_configs:\n  - job_name: shipper\n    static_configs:\n"
                          << "      - targets: ['" << target << "']\n";
    log_path_ = dir + ".log";
    const std::string flags[] = {
        "/usr/bin/prometheus", "--config.file=" + config, "--storage.tsdb.path=" + dir,
        absl::StrCat("--web.listen-address=127.0.0.1:", port_), "--log.level=warn"};
    std::vector<char*> argv;
    for (const std::string& flag : flags) argv.push_back(const_cast<char*>(flag.c_str()));
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls between fork and exec: the test runs gRPC threads.
      int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Prometheus() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }

  // The value of the instant query's single result, once it equals `want` (or the last seen
  // value after `timeout`; -1 when there was none).
  double AwaitQuery(const std::string& query, double want, absl::Duration timeout) {
    httplib::Client client("127.0.0.1", port_);
    double value = -1;
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      httplib::Result result =
          client.Get("/api/v1/query", httplib::Params{{"query", query}}, httplib::Headers{});
      if (result && result->status == 200) {
        rapidjson::Document doc;
        doc.Parse(result->body.c_str());
        const rapidjson::Value& results = doc["data"]["result"];
        if (results.Size() == 1 && absl::SimpleAtod(results[0]["value"][1].GetString(), &value) &&
            value == want) {
          return value;
        }
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    return value;
  }

  std::string Log() const { return ReadFile(log_path_); }

 private:
  const int port_;
  std::string log_path_;
  pid_t pid_;
};

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testing::ShipperProcess> process = testing::ShipperProcess::Start(
        {"-E", absl::StrCat("shipper.output.file.path=", TempDir(), "/out"), "-E",
         absl::StrCat("shipper.queue.mem.events=", kQueueEvents), "-E",
         "logging.metrics.period=1s"});
    ASSERT_TRUE(process.ok()) << process.status();
    shipper_ = std::make_unique<testing::ShipperProcess>(*std::move(process));
    ASSERT_FALSE(shipper_->metrics_address().empty()) << shipper_->Log();
    stub_ = Producer::NewStub(
        grpc::CreateChannel(shipper_->address(), grpc::InsecureChannelCredentials()));
    const std::string& address = shipper_->metrics_address();
    http_ = std::make_unique<httplib::Client>(address.substr(0, address.rfind(':')),
                                              std::stoi(address.substr(address.rfind(':') + 1)));
  }

  // One PublishEvents call of `n` events with `uuid`; counts what the client saw.
  grpc::Status PublishOnce(int n, const std::string& uuid, uint32_t* accepted) {
    pb::PublishRequest request;
    request.set_uuid(uuid);
    for (int i = 0; i < n; ++i) {
      (*request.add_events()->mutable_fields()->mutable_data())["message"].set_string_value(
          absl::StrCat("event ", sent_ + i));
    }
    pb::PublishReply reply;
    grpc::ClientContext context;
    grpc::Status status = stub_->PublishEvents(&context, request, &reply);
    sent_ += n;
    ++calls_[status.error_code()];
    *accepted = status.ok() ? reply.accepted_count() : 0;
    calls_accepting_ += *accepted > 0;
    return status;
  }

  std::string Page() {
    httplib::Result result = http_->Get("/metrics");
    if (!result || result->status != 200) return "";
    return result->body;
  }

  std::unique_ptr<testing::ShipperProcess> shipper_;
  std::unique_ptr<Producer::Stub> stub_;
  std::unique_ptr<httplib::Client> http_;
  int sent_ = 0;
  std::map<int, int> calls_;  // by status code
  int calls_accepting_ = 0;   // calls that had at least one event accepted
};

TEST_F(MetricsTest, CountersMatchWhatWasPublishedAndPrometheusScrapesThem) {
  uint32_t accepted = 0;
  ASSERT_EQ(PublishOnce(7, "not-this-shippers-uuid", &accepted).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  int total_accepted = 0, partial = 0;
  // The first call sends more than the queue holds: it is accepted only in part.
  for (int batch = kQueueEvents + kBatch; total_accepted < kEvents; batch = kBatch) {
    const int n = std::min(batch, kEvents - total_accepted);
    grpc::Status status = PublishOnce(n, shipper_->uuid(), &accepted);
    ASSERT_TRUE(status.ok()) << status.error_message();
    partial += accepted < static_cast<uint32_t>(n);
    total_accepted += accepted;
  }
  EXPECT_GE(partial, 1);
  ASSERT_EQ(total_accepted, kEvents);

  // The queue counts a batch persisted before its producers' callbacks observe the latency:
  // wait for both.
  std::map<std::string, double> samples;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    samples = ParseSamples(Page());
    if (samples["shipper_events_persisted_total"] == kEvents &&
        samples["shipper_persist_duration_seconds_count"] == calls_accepting_) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  const std::string page = Page();
  samples = ParseSamples(page);

  // Prometheus's own parser and linter.
  std::ofstream(TempDir() + "/metrics.txt") << page;
  auto [promtool_status, promtool_output] =
      RunCommand("/usr/bin/promtool check metrics < " + TempDir() + "/metrics.txt");
  EXPECT_EQ(promtool_status, 0) << promtool_output;
  EXPECT_EQ(promtool_output, "") << page;

  const int rejected_full = sent_ - 7 - kEvents;
  EXPECT_GE(rejected_full, kBatch);
  std::cout << sent_ << " events sent in " << calls_[grpc::StatusCode::OK] + 1 << " calls, "
            << partial << " replies accepted only part; " << rejected_full
            << " refused as queue full\n";
  EXPECT_EQ(samples["shipper_events_received_total"], sent_);
  EXPECT_EQ(samples["shipper_events_accepted_total"], kEvents);
  EXPECT_EQ(samples["shipper_events_persisted_total"], kEvents);
  EXPECT_EQ(samples[R"(shipper_events_rejected_total{reason="uuid_mismatch"})"], 7);
  EXPECT_EQ(samples[R"(shipper_events_rejected_total{reason="queue_full"})"], rejected_full);
  EXPECT_EQ(samples["shipper_queue_events"], 0);
  EXPECT_EQ(samples["shipper_queue_max_events"], kQueueEvents);
  EXPECT_EQ(
      samples[absl::StrCat("shipper_grpc_requests_total{method=\"", kPublish, "\",code=\"OK\"}")],
      calls_[grpc::StatusCode::OK]);
  EXPECT_EQ(samples[absl::StrCat("shipper_grpc_requests_total{method=\"", kPublish,
                                 "\",code=\"FAILED_PRECONDITION\"}")],
            1);
  // One observation per call that had events accepted; all of them are persisted now.
  EXPECT_EQ(samples["shipper_persist_duration_seconds_count"], calls_accepting_);
  EXPECT_GE(samples[R"(shipper_output_batch_events_count{output="file"})"], 1);
  EXPECT_EQ(samples[R"(shipper_output_errors_total{output="file"})"], 0);
  EXPECT_EQ(samples[R"(shipper_build_info{version="0.1.0"})"], 1);
  EXPECT_GT(samples["process_resident_memory_bytes"], 0);
  EXPECT_GE(samples[R"(shipper_executor_threads{pool="output"})"], 1);
  EXPECT_GE(samples["shipper_uptime_seconds"], 0);

  Prometheus prometheus(shipper_->metrics_address());
  EXPECT_EQ(prometheus.AwaitQuery("shipper_events_persisted_total", kEvents, absl::Seconds(30)),
            kEvents)
      << prometheus.Log();
  EXPECT_EQ(prometheus.AwaitQuery(R"(up{job="shipper"})", 1, absl::Seconds(5)), 1);

  httplib::Result health = http_->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  // The summary lines reported the traffic: their events_persisted add up to every event once the
  // line for the last events' period is out.
  std::string log;
  absl::Time wait = absl::Now() + absl::Seconds(30);
  do {
    absl::SleepFor(absl::Milliseconds(50));
    log = shipper_->Log();
  } while (SummaryPersisted(log) < kEvents && absl::Now() < wait);
  EXPECT_EQ(SummaryPersisted(log), kEvents) << log;
  EXPECT_TRUE(absl::StrContains(log, "metrics in the last 1s: events_received +")) << log;
  const int lines = SummaryLines(log);
  // Then they say nothing while nothing changes (Prometheus scraping meanwhile changes no
  // counter), for three periods by Shipper's own clock...
  const double uptime = ParseSamples(Page())["shipper_uptime_seconds"];
  wait = absl::Now() + absl::Seconds(30);
  while (ParseSamples(Page())["shipper_uptime_seconds"] < uptime + 3 && absl::Now() < wait) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_GE(ParseSamples(Page())["shipper_uptime_seconds"], uptime + 3);
  log = shipper_->Log();
  EXPECT_EQ(SummaryLines(log), lines) << log;
  // ... although the summary runs on: one more event, one more line.
  ASSERT_TRUE(PublishOnce(1, shipper_->uuid(), &accepted).ok());
  wait = absl::Now() + absl::Seconds(30);
  while (SummaryLines(shipper_->Log()) == lines && absl::Now() < wait) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  log = shipper_->Log();
  EXPECT_EQ(SummaryLines(log), lines + 1) << log;
  EXPECT_TRUE(absl::StrContains(log.substr(log.rfind("metrics in the last")), "events_received +1"))
      << log;

  shipper_->Signal(SIGTERM);
  absl::StatusOr<int> code = shipper_->Wait(absl::Seconds(30));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << shipper_->Log();
}

}  // namespace
}  // namespace shipper
