#include "tests/invariant/sinks.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>

#include "absl/random/distributions.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "rapidjson/document.h"
#include "tests/kafka/mock_cluster.h"
#include "tests/kafka/real_kafka.h"
#include "tests/outputs/producer_client.h"
#include "tests/outputs/redis_server.h"
#include "tests/testing/shipper_process.h"

namespace shipper::testing {

namespace pb = elastic::agent::shipper::v1::messages;

pb::Event Sink::MakeEvent(uint64_t seq) const { return TestEvent(seq); }

namespace {

// A fault's own length: a random wait between `low_ms` and `high_ms`.
void FaultFor(std::mt19937_64& rng, int low_ms, int high_ms) {
  absl::SleepFor(absl::Milliseconds(absl::Uniform(rng, low_ms, high_ms)));
}

// The test_seq of every line of the files at `paths`.
std::vector<int64_t> ReadLines(const std::vector<std::string>& paths) {
  std::vector<int64_t> seqs;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) seqs.push_back(TestSeq(line));
  }
  return seqs;
}

// The file output writing one file (rotation never comes: 1 GiB).
std::vector<std::string> FileOutputArgs(const std::string& dir) {
  return {"-E", "shipper.output.file.enabled=true",
          "-E", absl::StrCat("shipper.output.file.path=", dir),
          "-E", "shipper.output.file.rotate_every_kb=1048576"};
}

class FileSink final : public Sink {
 public:
  // Every Shipper this process starts from now on preloads failing_sync.so (the faults
  // fdatasync-eio and write-errors); only the file cases make a FileSink.
  explicit FileSink(std::string dir) : dir_(std::move(dir)) {
    char* preload = ::realpath("tests/invariant/failing_sync.so", nullptr);
    if (preload != nullptr) {
      ::setenv("LD_PRELOAD", preload, 1);
      std::free(preload);
      preloaded_ = true;
    }
    ::setenv("SHIPPER_TEST_FAIL_SYNC", trigger("fail-sync").c_str(), 1);
    ::setenv("SHIPPER_TEST_FAIL_WRITE", trigger("fail-write").c_str(), 1);
    // A sanitized Shipper: its runtime need not come first, the preloaded library does.
    if (const char* asan = std::getenv("ASAN_OPTIONS"); asan != nullptr) {
      ::setenv("ASAN_OPTIONS", absl::StrCat(asan, ":verify_asan_link_order=0").c_str(), 1);
    }
  }

  std::vector<std::string> ShipperArgs() const override { return FileOutputArgs(dir_); }
  absl::StatusOr<std::vector<int64_t>> Read() override {
    return ReadLines({dir_ + "/shipper.ndjson"});
  }
  void ShipperStarted(pid_t pid) override { shipper_ = pid; }
  // "file-size-limit": Shipper's RLIMIT_FSIZE set a little past the file's size, so that writes
  // fail part way (EFBIG, as ENOSPC would: the same path) and then at once, until it is lifted.
  // With the disk queue its segments meet the limit too. (The test runs as root: permissions
  // stop nothing.)
  // "fdatasync-eio": for 0.2-1.5 s fdatasync fails with EIO on the file and the disk queue's
  // segments (failing_sync.cc), as on a device that cannot write back.
  // "write-errors": for 0.2-1.5 s writes to the file fail now and then: part way, EIO, ENOSPC
  // (failing_sync.cc says in which bursts); the disk queue's segments are written as ever.
  std::vector<std::string> Faults() const override {
    return {"file-size-limit", "fdatasync-eio", "write-errors"};
  }
  absl::Status Inject(absl::string_view name, std::mt19937_64& rng,
                      const std::function<void()>& during) override {
    if (name == "fdatasync-eio" || name == "write-errors") {
      if (!preloaded_) return absl::FailedPreconditionError("no tests/invariant/failing_sync.so");
      const std::string file = trigger(name == "write-errors" ? "fail-write" : "fail-sync");
      std::ofstream(file).put('\n');
      FaultFor(rng, 200, 1500);
      during();
      if (::unlink(file.c_str()) != 0) {
        return absl::InternalError(absl::StrCat("unlink ", file, ": ", std::strerror(errno)));
      }
      return absl::OkStatus();
    }
    if (name != "file-size-limit") {
      return absl::InvalidArgumentError(absl::StrCat("the file has no fault ", name));
    }
    struct stat st;
    const std::string file = dir_ + "/shipper.ndjson";
    const rlim_t size = ::stat(file.c_str(), &st) == 0 ? static_cast<rlim_t>(st.st_size) : 0;
    if (absl::Status set = SetFileSizeLimit(size + absl::Uniform<rlim_t>(rng, 0, 64 << 10));
        !set.ok()) {
      return set;
    }
    FaultFor(rng, 200, 2000);
    during();
    return SetFileSizeLimit(RLIM_INFINITY);
  }

 private:
  // The file whose existence turns a fault of failing_sync.so on.
  std::string trigger(absl::string_view name) const { return absl::StrCat(dir_, "/", name); }

  absl::Status SetFileSizeLimit(rlim_t bytes) {
    const struct rlimit limit = {bytes, RLIM_INFINITY};
    if (::prlimit(shipper_, RLIMIT_FSIZE, &limit, nullptr) != 0) {
      return absl::InternalError(
          absl::StrCat("prlimit RLIMIT_FSIZE of ", shipper_, ": ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

  const std::string dir_;
  bool preloaded_ = false;
  pid_t shipper_ = 0;
};

class RedisSink final : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<Sink>> Start(const std::string& dir) {
    const int port = FreePort();
    auto server = RedisServer::Start(port, dir, /*append_only=*/true);
    if (!server.ok()) return server.status();
    return std::unique_ptr<Sink>(new RedisSink(dir, port, *std::move(server)));
  }

  std::vector<std::string> ShipperArgs() const override {
    return {"-E", "shipper.output.redis.enabled=true",
            "-E", absl::StrCat("shipper.output.redis.hosts=127.0.0.1:", port_),
            "-E", "shipper.output.redis.key=events",
            "-E", "shipper.output.redis.timeout=1s"};
  }
  absl::StatusOr<std::vector<int64_t>> Read() override {
    std::vector<int64_t> seqs;
    for (const std::string& item : server_->ReadList("events")) seqs.push_back(TestSeq(item));
    return seqs;
  }
  std::vector<std::string> Faults() const override {
    return {"kill", "freeze", "oom", "disconnect"};
  }
  absl::Status Inject(absl::string_view name, std::mt19937_64& rng,
                      const std::function<void()>& during) override {
    if (name == "kill") {  // killed and restarted on its files: it keeps what it acknowledged
      server_->Kill();
      FaultFor(rng, 100, 1000);
      during();
      auto server = RedisServer::Start(port_, dir_, /*append_only=*/true);
      if (!server.ok()) return server.status();
      server_ = *std::move(server);
    } else if (name == "freeze") {  // beyond the output's 1 s timeout at times
      server_->Signal(SIGSTOP);
      FaultFor(rng, 200, 2000);
      during();
      server_->Signal(SIGCONT);
    } else if (name == "oom") {  // "OOM command not allowed when used memory > 'maxmemory'"
      if (server_->Command({"CONFIG", "SET", "maxmemory", "1"}) == nullptr) {
        return absl::UnavailableError("CONFIG SET maxmemory failed");
      }
      FaultFor(rng, 100, 1000);
      during();
      if (server_->Command({"CONFIG", "SET", "maxmemory", "0"}) == nullptr) {
        return absl::UnavailableError("CONFIG SET maxmemory failed");
      }
    } else {  // "disconnect": every connection but ours cut, a few times
      for (int i = absl::Uniform(rng, 1, 5); i > 0; --i) {
        server_->Command({"CLIENT", "KILL", "TYPE", "normal"});
        FaultFor(rng, 10, 200);
      }
      during();
    }
    return absl::OkStatus();
  }

 private:
  RedisSink(std::string dir, int port, std::unique_ptr<RedisServer> server)
      : dir_(std::move(dir)), port_(port), server_(std::move(server)) {}

  const std::string dir_;
  const int port_;
  std::unique_ptr<RedisServer> server_;
};

constexpr int kKafkaBrokers = 3;
constexpr int kKafkaPartitions = 6;

class KafkaSink final : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<Sink>> Start() {
    auto cluster = MockCluster::Start(kKafkaBrokers);
    if (!cluster.ok()) return cluster.status();
    if (absl::Status created = (*cluster)->CreateTopic("events", kKafkaPartitions); !created.ok()) {
      return created;
    }
    return std::unique_ptr<Sink>(new KafkaSink(*std::move(cluster)));
  }

  std::vector<std::string> ShipperArgs() const override {
    return {"-E", "shipper.output.kafka.enabled=true",
            "-E", absl::StrCat("shipper.output.kafka.hosts=", cluster_->bootstraps()),
            "-E", "shipper.output.kafka.topic=events",
            "-E", "shipper.output.kafka.timeout=5s"};
  }
  // Reads on from where the last read ended: the mock cluster keeps only the last 5 MiB of
  // each partition (a Read() that comes too late fails, DATA_LOSS, rather than report a loss).
  absl::StatusOr<std::vector<int64_t>> Read() override {
    auto messages = cluster_->Consume("events", kKafkaPartitions, absl::Seconds(60), &offsets_);
    if (!messages.ok()) return messages.status();
    for (const KafkaMessage& m : *messages) seqs_.push_back(TestSeq(m.value));
    return seqs_;
  }
  std::vector<std::string> Faults() const override {
    return {"broker-down", "all-brokers-down", "produce-errors", "slow-broker", "leader-moved"};
  }
  absl::Status Inject(absl::string_view name, std::mt19937_64& rng,
                      const std::function<void()>& during) override {
    rd_kafka_mock_cluster_t* cluster = cluster_->get();
    const int broker = absl::Uniform(rng, 1, kKafkaBrokers + 1);
    if (name == "broker-down") {  // it keeps leading its partitions: they wait
      rd_kafka_mock_broker_set_down(cluster, broker);
      FaultFor(rng, 200, 1500);
      during();
      rd_kafka_mock_broker_set_up(cluster, broker);
    } else if (name == "all-brokers-down") {
      for (int b = 1; b <= kKafkaBrokers; ++b) rd_kafka_mock_broker_set_down(cluster, b);
      FaultFor(rng, 200, 1500);
      during();
      for (int b = 1; b <= kKafkaBrokers; ++b) rd_kafka_mock_broker_set_up(cluster, b);
    } else if (name == "produce-errors") {  // answered with retriable errors
      static constexpr rd_kafka_resp_err_t kErrors[] = {
          RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
          RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE};
      std::vector<rd_kafka_resp_err_t> errors(absl::Uniform(rng, 1, 7));
      for (rd_kafka_resp_err_t& e : errors) e = kErrors[absl::Uniform(rng, 0, 4)];
      rd_kafka_mock_push_request_errors_array(cluster, /*Produce=*/0, errors.size(), errors.data());
      FaultFor(rng, 100, 500);
      during();
    } else if (name == "slow-broker") {  // a freeze shorter than librdkafka's timeouts
      rd_kafka_mock_broker_set_rtt(cluster, broker, absl::Uniform(rng, 300, 3000));
      FaultFor(rng, 500, 2000);
      during();
      rd_kafka_mock_broker_set_rtt(cluster, broker, 0);
    } else {  // "leader-moved": a partition's leader moves
      rd_kafka_mock_partition_set_leader(cluster, "events", absl::Uniform(rng, 0, kKafkaPartitions),
                                         broker);
      FaultFor(rng, 100, 500);
      during();
    }
    return absl::OkStatus();
  }

 private:
  explicit KafkaSink(std::unique_ptr<MockCluster> cluster) : cluster_(std::move(cluster)) {}

  std::unique_ptr<MockCluster> cluster_;
  std::vector<int64_t> offsets_;  // where the next Read() starts, by partition
  std::vector<int64_t> seqs_;     // what Read() read so far
};

// One real Kafka node (tests/kafka/real_kafka.h), in a JVM of its own: what the mock cluster
// cannot be, a broker killed (and restarted on its log, recovering it) or frozen.
class RealKafkaSink final : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<Sink>> Start(const std::string& dir) {
    auto kafka = RealKafka::Start(1, dir);
    if (!kafka.ok()) return kafka.status();
    if (absl::Status created = (*kafka)->CreateTopic("events", kKafkaPartitions); !created.ok()) {
      return created;
    }
    return std::unique_ptr<Sink>(new RealKafkaSink(*std::move(kafka)));
  }

  std::vector<std::string> ShipperArgs() const override {
    return {"-E", "shipper.output.kafka.enabled=true",
            "-E", absl::StrCat("shipper.output.kafka.hosts=", kafka_->bootstraps()),
            "-E", "shipper.output.kafka.topic=events",
            "-E", "shipper.output.kafka.timeout=2s"};
  }
  absl::StatusOr<std::vector<int64_t>> Read() override {
    auto messages = kafka_->Consume("events", kKafkaPartitions, absl::Seconds(60), &offsets_);
    if (!messages.ok()) return messages.status();
    for (const KafkaMessage& m : *messages) seqs_.push_back(TestSeq(m.value));
    return seqs_;
  }
  std::vector<std::string> Faults() const override { return {"kill", "freeze"}; }
  absl::Status Inject(absl::string_view name, std::mt19937_64& rng,
                      const std::function<void()>& during) override {
    if (name == "kill") {  // SIGKILLed, restarted on its log: it keeps what it acknowledged
      kafka_->Kill(1);
      FaultFor(rng, 100, 1000);
      during();
      return kafka_->Restart(1);
    }
    // "freeze": connections open, nothing answered; beyond the output's 2 s timeout at times.
    kafka_->Freeze(1);
    FaultFor(rng, 300, 3000);
    during();
    kafka_->Thaw(1);
    return absl::OkStatus();
  }

 private:
  explicit RealKafkaSink(std::unique_ptr<RealKafka> kafka) : kafka_(std::move(kafka)) {}

  std::unique_ptr<RealKafka> kafka_;
  std::vector<int64_t> offsets_;  // where the next Read() starts, by partition
  std::vector<int64_t> seqs_;     // what Read() read so far
};

// A child process with its stdout and stderr in a file.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log) : log_(log) {
    pid_ = fork();
    if (pid_ != 0) return;
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  ~Child() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  void Signal(int signal) const { kill(pid_, signal); }
  std::string Log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bool Exited() const { return waitpid(pid_, nullptr, WNOHANG) == pid_; }

 private:
  const std::string log_;
  pid_t pid_;
};

// A fake destination in Python (tests/elasticsearch/fake_elasticsearch.py,
// tests/otlp_output/fake_otlp_receiver.py): its process, and its control endpoints on the port it
// logs as "listening on 127.0.0.1:PORT": POST /_fake/faults, GET /_fake/values?field=NAME.
class PythonFake {
 public:
  static absl::StatusOr<std::unique_ptr<PythonFake>> Start(std::vector<std::string> argv,
                                                           const std::string& log) {
    argv.insert(argv.begin(), "/usr/bin/python3");
    auto process = std::make_unique<Child>(argv, log);
    static const std::regex kListening("listening on 127\\.0\\.0\\.1:(\\d+)");
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      std::smatch match;
      const std::string text = process->Log();
      if (std::regex_search(text, match, kListening)) {
        return std::unique_ptr<PythonFake>(new PythonFake(std::move(process), std::stoi(match[1])));
      }
      if (process->Exited()) return absl::FailedPreconditionError(argv[1] + ": " + text);
      absl::SleepFor(absl::Milliseconds(20));
    }
    return absl::DeadlineExceededError(argv[1] + " did not listen: " + process->Log());
  }

  int port() const { return port_; }
  const Child& process() const { return *process_; }

  // POST /_fake/faults with `faults` (JSON).
  absl::Status Set(const std::string& faults) {
    httplib::Client http = Client();
    httplib::Result answer = http.Post("/_fake/faults", faults, "application/json");
    if (!answer || answer->status != 200) {
      return absl::UnavailableError(
          absl::StrCat("POST /_fake/faults ", faults, " failed: ", Error(answer)));
    }
    return absl::OkStatus();
  }

  // The unsigned value of `field` in everything the fake holds, one per copy; -1 for none.
  absl::StatusOr<std::vector<int64_t>> Values(absl::string_view field) {
    httplib::Client http = Client();
    httplib::Result page = http.Get(absl::StrCat("/_fake/values?field=", field));
    if (!page || page->status != 200) {
      return absl::UnavailableError(absl::StrCat("GET /_fake/values failed: ", Error(page)));
    }
    rapidjson::Document doc;
    doc.Parse(page->body.c_str());
    if (doc.HasParseError() || !doc.IsArray()) return absl::InternalError(page->body);
    std::vector<int64_t> values;
    for (const rapidjson::Value& v : doc.GetArray()) {
      values.push_back(v.IsUint64() ? static_cast<int64_t>(v.GetUint64()) : -1);
    }
    return values;
  }

 private:
  PythonFake(std::unique_ptr<Child> process, int port)
      : process_(std::move(process)), port_(port) {}

  // A client for the fake's own endpoints. The fake is Python on a loaded machine, holding
  // hundreds of thousands of documents in a long run: httplib's 300 ms to connect failed after
  // 2 minutes of faults.
  httplib::Client Client() const {
    httplib::Client http("127.0.0.1", port_);
    http.set_connection_timeout(10);
    http.set_read_timeout(60);
    return http;
  }

  static std::string Error(const httplib::Result& result) {
    return result ? absl::StrCat("HTTP ", result->status) : httplib::to_string(result.error());
  }

  const std::unique_ptr<Child> process_;
  const int port_;
};

class ElasticsearchSink final : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<Sink>> Start(const std::string& dir, uint64_t seed) {
    absl::StatusOr<std::unique_ptr<PythonFake>> fake = PythonFake::Start(
        {"tests/elasticsearch/fake_elasticsearch.py"}, dir + "/fake_elasticsearch.log");
    if (!fake.ok()) return fake.status();
    return std::unique_ptr<Sink>(new ElasticsearchSink(*std::move(fake), seed));
  }

  std::vector<std::string> ShipperArgs() const override {
    return {
        "-E", "shipper.output.elasticsearch.enabled=true",
        "-E", absl::StrCat("shipper.output.elasticsearch.hosts=http://127.0.0.1:", fake_->port()),
        "-E", "shipper.output.elasticsearch.timeout=2s"};
  }
  // One event in 100 is answered 429 the first time the fake sees it, one in 100 409 (and
  // indexed, as if an earlier attempt had written it): the fake reads "fault" and "seq".
  pb::Event MakeEvent(uint64_t seq) const override {
    pb::Event event = TestEvent(seq);
    auto& data = *event.mutable_fields()->mutable_data();
    data["seq"].set_uint64_value(seq);
    const uint64_t pick = (seq * 0x9E3779B97F4A7C15u + seed_) % 100;
    if (pick == 0) data["fault"].set_string_value("retry");
    if (pick == 1) data["fault"].set_string_value("conflict");
    return event;
  }
  absl::StatusOr<std::vector<int64_t>> Read() override { return fake_->Values("test_seq"); }
  std::vector<std::string> Faults() const override {
    return {"request-errors", "stall", "freeze", "slow"};
  }
  absl::Status Inject(absl::string_view name, std::mt19937_64& rng,
                      const std::function<void()>& during) override {
    if (name == "request-errors") {  // the next bulk requests: 429, 503, or cut unanswered
      std::vector<std::string> faults(absl::Uniform(rng, 1, 6));
      for (std::string& f : faults)
        f = std::vector<std::string>{"429", "503", "\"close\""}[absl::Uniform(rng, 0, 3)];
      if (absl::Status s = fake_->Set(
              absl::StrCat(R"({"request_faults": [)", absl::StrJoin(faults, ", "), "]}"));
          !s.ok()) {
        return s;
      }
      FaultFor(rng, 100, 500);
      during();
    } else if (name == "stall") {  // requests held unanswered, then their connections closed
      if (absl::Status s = fake_->Set(R"({"stalled": true})"); !s.ok()) return s;
      FaultFor(rng, 200, 1500);
      during();
      if (absl::Status s = fake_->Set(R"({"stalled": false})"); !s.ok()) return s;
    } else if (name == "freeze") {  // beyond the 2 s timeout at times: what it indexes is resent
      fake_->process().Signal(SIGSTOP);
      FaultFor(rng, 200, 3000);
      during();
      fake_->process().Signal(SIGCONT);
    } else {  // "slow": answers, beyond the timeout at times
      const double delay = absl::Uniform(rng, 0.3, 2.5);
      if (absl::Status s = fake_->Set(absl::StrCat(R"({"delay": )", delay, "}")); !s.ok()) {
        return s;
      }
      FaultFor(rng, 500, 2000);
      during();
      if (absl::Status s = fake_->Set(R"({"delay": 0})"); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  ElasticsearchSink(std::unique_ptr<PythonFake> fake, uint64_t seed)
      : fake_(std::move(fake)), seed_(seed) {}

  const std::unique_ptr<PythonFake> fake_;
  const uint64_t seed_;
};

// The OTLP output (over OTLP/gRPC) into fake_otlp_receiver.py, which follows the OTLP
// specification's answers.
class OtlpSink final : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<Sink>> Start(const std::string& dir) {
    const std::string log = dir + "/fake_otlp_receiver.log";
    absl::StatusOr<std::unique_ptr<PythonFake>> fake =
        PythonFake::Start({"tests/otlp_output/fake_otlp_receiver.py"}, log);
    if (!fake.ok()) return fake.status();
    std::smatch match;
    const std::string text = (*fake)->process().Log();
    static const std::regex kReceiving("receiving on (127\\.0\\.0\\.1:\\d+)");
    if (!std::regex_search(text, match, kReceiving)) return absl::InternalError(text);
    // Throttled answers ask for 100 ms, stalled ones answer after 3 s: past the timeout.
    if (absl::Status s = (*fake)->Set(R"({"retry_delay": 0.1, "stall": 3})"); !s.ok()) return s;
    return std::unique_ptr<Sink>(new OtlpSink(*std::move(fake), match[1]));
  }

  std::vector<std::string> ShipperArgs() const override {
    return {"-E", "shipper.output.otlp.enabled=true",
            "-E", absl::StrCat("shipper.output.otlp.endpoint=", address_),
            "-E", "shipper.output.otlp.timeout=2s"};
  }
  absl::StatusOr<std::vector<int64_t>> Read() override { return fake_->Values("test_seq"); }
  std::vector<std::string> Faults() const override { return {"request-errors", "stall", "freeze"}; }
  absl::Status Inject(absl::string_view name, std::mt19937_64& rng,
                      const std::function<void()>& during) override {
    if (name == "freeze") {  // beyond the 2 s timeout at times: what it took is resent
      fake_->process().Signal(SIGSTOP);
      FaultFor(rng, 200, 3000);
      during();
      fake_->process().Signal(SIGCONT);
      return absl::OkStatus();
    }
    // The next requests: failed for now (throttled or not), or answered after the timeout.
    static const std::vector<std::string> kErrors = {
        "\"UNAVAILABLE\"",       "\"UNAVAILABLE+retry\"", "\"RESOURCE_EXHAUSTED+retry\"",
        "\"DEADLINE_EXCEEDED\"", "\"ABORTED\"",           "\"DATA_LOSS\""};
    std::vector<std::string> faults(absl::Uniform(rng, 1, 6));
    for (std::string& f : faults) {
      f = name == "stall" ? "\"stall\"" : kErrors[absl::Uniform<size_t>(rng, 0, kErrors.size())];
    }
    if (absl::Status s =
            fake_->Set(absl::StrCat(R"({"faults": [)", absl::StrJoin(faults, ", "), "]}"));
        !s.ok()) {
      return s;
    }
    FaultFor(rng, 100, 500);
    during();
    return absl::OkStatus();
  }

 private:
  OtlpSink(std::unique_ptr<PythonFake> fake, std::string address)
      : fake_(std::move(fake)), address_(std::move(address)) {}

  const std::unique_ptr<PythonFake> fake_;
  const std::string address_;
};

class ForwardSink final : public Sink {
 public:
  static absl::StatusOr<std::unique_ptr<Sink>> Start(const std::string& dir) {
    std::unique_ptr<ForwardSink> sink(new ForwardSink(dir));
    if (absl::Status started = sink->StartAggregator(); !started.ok()) return started;
    return std::unique_ptr<Sink>(std::move(sink));
  }

  // Batches of 1024 events stay below the aggregator's max_message_size; the disk queue's
  // buffer_size (with the memory queue, unused) is below a refused event, which the disk queue
  // then takes alone into an empty queue.
  std::vector<std::string> ShipperArgs() const override {
    return {"-E", "shipper.output.shipper.enabled=true",
            "-E", absl::StrCat("shipper.output.shipper.server=", address_),
            "-E", "shipper.output.shipper.timeout=1s",
            "-E", "shipper.output.batch_max_events=1024",
            "-E", "shipper.queue.disk.buffer_size=1MiB"};
  }
  // One event in 8000 is larger than the aggregator takes (its max_message_size, 1 MiB).
  pb::Event MakeEvent(uint64_t seq) const override {
    pb::Event event = TestEvent(seq);
    if (Refused(seq)) {
      (*event.mutable_fields()->mutable_data())["big"].set_string_value(std::string(3 << 19, 'x'));
    }
    return event;
  }
  bool Refused(uint64_t seq) const override { return seq % 8000 == 3999; }
  std::string RefusalKey() const override { return "max_message_size"; }
  absl::StatusOr<std::vector<int64_t>> Read() override {
    return ReadLines({dir_ + "/shipper.ndjson"});
  }
  std::vector<std::string> Faults() const override { return {"kill", "freeze"}; }
  absl::Status Inject(absl::string_view name, std::mt19937_64& rng,
                      const std::function<void()>& during) override {
    if (name == "kill") {  // a new uuid when it is back
      aggregator_->Signal(SIGKILL);
      if (absl::StatusOr<int> code = aggregator_->Wait(absl::Seconds(10)); !code.ok()) {
        return code.status();
      }
      FaultFor(rng, 100, 1000);
      during();
      return StartAggregator();
    }
    // "freeze", its connections open: beyond the sidecar's timeout and pings (2 s) at times.
    aggregator_->Signal(SIGSTOP);
    FaultFor(rng, 300, 3500);
    during();
    aggregator_->Signal(SIGCONT);
    return absl::OkStatus();
  }

 private:
  explicit ForwardSink(const std::string& dir)
      : dir_(dir), address_(absl::StrCat("127.0.0.1:", FreePort())) {}

  absl::Status StartAggregator() {
    std::vector<std::string> args = FileOutputArgs(dir_);
    // A small queue: the sidecar meets partial acceptance under load.
    args.insert(args.end(), {"-E", absl::StrCat("shipper.server.server=", address_), "-E",
                             "shipper.queue.mem.events=4096", "-E",
                             "shipper.server.max_message_size=1MiB", "-E", "http.port=0"});
    aggregator_.reset();
    auto started = ShipperProcess::Start(args);
    if (!started.ok()) return started.status();
    aggregator_ = std::make_unique<ShipperProcess>(*std::move(started));
    return absl::OkStatus();
  }

  const std::string dir_;
  const std::string address_;
  std::unique_ptr<ShipperProcess> aggregator_;
};

}  // namespace

const std::vector<std::string>& SinkNames() {
  static const std::vector<std::string> kNames = {"file",          "redis",   "kafka", "kafka_real",
                                                  "elasticsearch", "shipper", "otlp"};
  return kNames;
}

absl::StatusOr<std::unique_ptr<Sink>> StartSink(absl::string_view name, const std::string& dir,
                                                uint64_t seed) {
  std::filesystem::create_directories(dir);
  if (name == "file") return std::unique_ptr<Sink>(new FileSink(dir));
  if (name == "redis") return RedisSink::Start(dir);
  if (name == "kafka") return KafkaSink::Start();
  if (name == "kafka_real") return RealKafkaSink::Start(dir);
  if (name == "elasticsearch") return ElasticsearchSink::Start(dir, seed);
  if (name == "shipper") return ForwardSink::Start(dir);
  if (name == "otlp") return OtlpSink::Start(dir);
  return absl::InvalidArgumentError(absl::StrCat("no output named ", name));
}

}  // namespace shipper::testing
