#include "tests/kafka/real_kafka.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

extern char** environ;

namespace shipper::testing {
namespace {

// Ours, not Kafka's default (which logs INFO to stdout and to files of its own): warnings and
// errors, to the node's log file, where a failing test's output can show them.
constexpr char kLog4j[] = R"(Configuration:
  Appenders:
    Console:
      name: STDERR
      target: SYSTEM_ERR
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDERR
)";

// A loopback port nothing listens on now (the kernel's pick, then released: the JVM binds it a
// moment later). The controller quorum's voters must be named before any node starts, so the
// ports cannot be the JVM's own port-0 picks.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Starts `argv` with stdout and stderr appended to `log`; its pid, or -1.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  if (posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RealKafka>> RealKafka::Start(int nodes, const std::string& dir) {
  const char* classpath_file = getenv("SHIPPER_KAFKA_CLASSPATH");
  if (classpath_file == nullptr || !std::filesystem::exists(classpath_file)) {
    return absl::FailedPreconditionError(
        "SHIPPER_KAFKA_CLASSPATH names no file: ./dev test resolves the Kafka broker "
        "(tests/peers/kafka/pom.xml) and passes it (.bazelrc)");
  }
  const std::string classpath(absl::StripAsciiWhitespace(ReadFile(classpath_file)));
  std::unique_ptr<RealKafka> kafka(new RealKafka(classpath, dir));
  std::filesystem::create_directories(dir);
  { std::ofstream(absl::StrCat(dir, "/log4j2.yaml")) << kLog4j; }
  std::vector<std::string> voters;
  for (int id = 1; id <= nodes; ++id) {
    Node n{id, FreePort(), FreePort(), absl::StrCat(dir, "/node", id)};
    if (n.port < 0 || n.controller_port < 0) return absl::InternalError("no free loopback port");
    voters.push_back(absl::StrCat(id, "@127.0.0.1:", n.controller_port));
    kafka->nodes_.push_back(n);
  }
  const int replicas = std::min(3, nodes);
  for (Node& n : kafka->nodes_) {
    std::filesystem::remove_all(n.dir);
    std::filesystem::create_directories(n.dir);
    std::ofstream(absl::StrCat(n.dir, "/server.properties"))
        << "process.roles=broker,controller\n"
        << "node.id=" << n.id << "\n"
        << "controller.quorum.voters=" << absl::StrJoin(voters, ",") << "\n"
        << "listeners=PLAINTEXT://127.0.0.1:" << n.port
        << ",CONTROLLER://127.0.0.1:" << n.controller_port << "\n"
        << "advertised.listeners=PLAINTEXT://127.0.0.1:" << n.port << "\n"
        << "controller.listener.names=CONTROLLER\n"
        << "inter.broker.listener.name=PLAINTEXT\n"
        << "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        << "log.dirs=" << n.dir << "/data\n"
        << "auto.create.topics.enable=false\n"
        << "num.network.threads=2\nnum.io.threads=2\nnum.replica.fetchers=1\n"
        << "background.threads=2\nlog.cleaner.enable=false\n"
        // The consumer's group needs __consumer_offsets: one partition is quick to create.
        << "offsets.topic.num.partitions=1\n"
        << "offsets.topic.replication.factor=" << replicas << "\n"
        << "transaction.state.log.replication.factor=" << replicas << "\n"
        << "transaction.state.log.min.isr=1\n"
        << "group.initial.rebalance.delay.ms=0\n"
        // A dead broker is fenced, and its partitions' leadership moved, within seconds, not
        // the default 9 s; a follower that stops fetching leaves the ISR as soon.
        << "broker.session.timeout.ms=3000\nbroker.heartbeat.interval.ms=500\n"
        << "replica.lag.time.max.ms=3000\n";
  }
  // Formatted side by side: each JVM takes seconds to start.
  std::vector<pid_t> formats;
  for (const Node& n : kafka->nodes_) {
    formats.push_back(
        kafka->SpawnJava({"-XX:TieredStopAtLevel=1", "kafka.tools.StorageTool", "format",
                          "--ignore-formatted", "--cluster-id", "c2hpcHBlci10ZXN0cy0wMQ",
                          "--config", absl::StrCat(n.dir, "/server.properties")},
                         absl::StrCat(n.dir, "/format.log")));
  }
  for (size_t i = 0; i < formats.size(); ++i) {
    const std::string log = absl::StrCat(kafka->nodes_[i].dir, "/format.log");
    int status = 0;
    if (formats[i] < 0 || waitpid(formats[i], &status, 0) != formats[i] || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      return absl::InternalError(
          absl::StrCat("kafka.tools.StorageTool format failed (", log, "):\n", ReadFile(log)));
    }
  }
  for (Node& n : kafka->nodes_) {
    absl::Status launched = kafka->Launch(n);
    if (!launched.ok()) return launched;
  }
  for (const Node& n : kafka->nodes_) {
    absl::Status serving = kafka->AwaitServing(n, absl::Seconds(90));
    if (!serving.ok()) return serving;
  }
  return kafka;
}

RealKafka::~RealKafka() {
  for (Node& n : nodes_) {
    if (n.pid > 0) Kill(n.id);
  }
}

std::string RealKafka::bootstraps() const {
  std::vector<std::string> hosts;
  for (const Node& n : nodes_) hosts.push_back(absl::StrCat("127.0.0.1:", n.port));
  return absl::StrJoin(hosts, ",");
}

absl::Status RealKafka::CreateTopic(const std::string& topic, int partitions) {
  return CreateKafkaTopic(bootstraps(), topic, partitions,
                          std::min(3, static_cast<int>(nodes_.size())), absl::Seconds(60));
}

absl::StatusOr<std::vector<KafkaMessage>> RealKafka::Consume(const std::string& topic,
                                                             int partitions, absl::Duration timeout,
                                                             std::vector<int64_t>* offsets) {
  return ConsumeTopic(bootstraps(), topic, partitions, timeout, offsets);
}

absl::StatusOr<int> RealKafka::Leader(const std::string& topic, int partition) {
  return KafkaPartitionLeader(bootstraps(), topic, partition, absl::Seconds(10));
}

void RealKafka::Kill(int node) {
  Node& n = nodes_[node - 1];
  if (n.pid <= 0) return;
  kill(n.pid, SIGKILL);
  int status;
  waitpid(n.pid, &status, 0);
  n.pid = -1;
}

absl::Status RealKafka::Restart(int node) {
  Node& n = nodes_[node - 1];
  if (n.pid > 0) return absl::FailedPreconditionError(absl::StrCat("node ", node, " runs"));
  absl::Status launched = Launch(n);
  if (!launched.ok()) return launched;
  return AwaitServing(n, absl::Seconds(90));
}

void RealKafka::Freeze(int node) { kill(nodes_[node - 1].pid, SIGSTOP); }
void RealKafka::Thaw(int node) { kill(nodes_[node - 1].pid, SIGCONT); }

std::string RealKafka::Log(int node) const {
  return ReadFile(absl::StrCat(nodes_[node - 1].dir, "/kafka.log"));
}

absl::Status RealKafka::Launch(Node& n) {
  n.pid = SpawnJava({"kafka.Kafka", absl::StrCat(n.dir, "/server.properties")},
                    absl::StrCat(n.dir, "/kafka.log"));
  if (n.pid < 0) return absl::InternalError("could not start java (is a JRE installed?)");
  return absl::OkStatus();
}

absl::Status RealKafka::AwaitServing(const Node& n, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<KafkaHandle> client = NewKafkaClient(
      RD_KAFKA_PRODUCER,
      {{"bootstrap.servers", absl::StrCat("127.0.0.1:", n.port)}, {"log_level", "0"}});
  if (!client.ok()) return client.status();
  while (absl::Now() < deadline) {
    int status;
    if (waitpid(n.pid, &status, WNOHANG) == n.pid) {
      nodes_[n.id - 1].pid = -1;
      return absl::InternalError(
          absl::StrCat("Kafka node ", n.id, " exited before it served:\n", Log(n.id)));
    }
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(client->get(), 0, nullptr, &md, 1000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      bool listed = false;
      for (int i = 0; i < md->broker_cnt; ++i) listed |= md->brokers[i].id == n.id;
      rd_kafka_metadata_destroy(md);
      if (listed) return absl::OkStatus();
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat("Kafka node ", n.id, " did not serve within ",
                                                  absl::FormatDuration(timeout), ":\n", Log(n.id)));
}

pid_t RealKafka::SpawnJava(const std::vector<std::string>& args, const std::string& log) const {
  std::vector<std::string> argv = {
      "java",
      "-Xms256m",
      "-Xmx256m",
      "-XX:+UseSerialGC",
      "-XX:-UsePerfData",
      "-Djava.awt.headless=true",
      absl::StrCat("-Dlog4j2.configurationFile=", dir_, "/log4j2.yaml"),
      "-cp",
      classpath_};
  argv.insert(argv.end(), args.begin(), args.end());
  return Spawn(argv, log);
}

}  // namespace shipper::testing
