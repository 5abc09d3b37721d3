// A real Apache Kafka cluster for tests: `nodes` JVMs running kafka.Kafka in KRaft mode, each a
// combined broker and controller (every node a voter), on ephemeral loopback ports, with a small
// heap and the log4j configuration beside this file (warnings and errors, to the node's log
// file). The broker is the one tests/peers/kafka/pom.xml pins; ./dev resolves its classpath and
// hands the file that holds it to tests as SHIPPER_KAFKA_CLASSPATH. Auto-creation of topics is
// off: tests create theirs (CreateTopic).
//
// Nodes are numbered 1..nodes (their node.id). Kill() and Freeze() inject faults; Restart()
// starts a killed node again on its own ports and storage.
//
// Thread safety: one thread uses a RealKafka (the consumer and admin calls may run beside it).
#ifndef SHIPPER_TESTS_KAFKA_REAL_KAFKA_H_
#define SHIPPER_TESTS_KAFKA_REAL_KAFKA_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/kafka/kafka_client.h"

namespace shipper::testing {

class RealKafka {
 public:
  // Formats a storage directory per node under `dir` (kafka.tools.StorageTool format), starts
  // the nodes and waits until every broker serves. FAILED_PRECONDITION when
  // SHIPPER_KAFKA_CLASSPATH is unset or names no file (run the tests through ./dev).
  static absl::StatusOr<std::unique_ptr<RealKafka>> Start(int nodes, const std::string& dir);
  // Kills every node still running (SIGKILL) and reaps it.
  ~RealKafka();

  // Where clients bootstrap: host:port,host:port,... (every node's broker listener).
  std::string bootstraps() const;

  // Creates `topic` with `partitions`, each on min(3, nodes) brokers, and waits for its leaders.
  absl::Status CreateTopic(const std::string& topic, int partitions);
  // ConsumeTopic() against this cluster.
  absl::StatusOr<std::vector<KafkaMessage>> Consume(const std::string& topic, int partitions,
                                                    absl::Duration timeout,
                                                    std::vector<int64_t>* offsets = nullptr);
  // The node leading `topic`/`partition` now.
  absl::StatusOr<int> Leader(const std::string& topic, int partition);

  // SIGKILL to node `node` and reaps it.
  void Kill(int node);
  // Starts killed node `node` again and waits until its broker serves.
  absl::Status Restart(int node);
  // SIGSTOP / SIGCONT to node `node`.
  void Freeze(int node);
  void Thaw(int node);
  // The node's log (what its JVM wrote to stdout and stderr).
  std::string Log(int node) const;

 private:
  struct Node {
    int id;
    int port;             // the broker listener
    int controller_port;  // the controller listener
    std::string dir;      // its config, storage and log
    pid_t pid = -1;
  };

  RealKafka(std::string classpath, std::string dir) : classpath_(classpath), dir_(dir) {}
  // Starts node `n`'s JVM (its storage already formatted).
  absl::Status Launch(Node& n);
  // Waits until the broker of node `n` answers a metadata request and lists it.
  absl::Status AwaitServing(const Node& n, absl::Duration timeout);
  // Starts java with the broker's classpath, a small heap (two cores run the tests, the
  // shipper and up to three of these; serial GC: the fewest GC threads, short pauses on 256 MiB)
  // and our log4j configuration, then `args` (JVM flags, the main class and its arguments), its
  // stdout and stderr appended to `log`; its pid, or -1.
  pid_t SpawnJava(const std::vector<std::string>& args, const std::string& log) const;

  std::string classpath_;
  std::string dir_;
  std::vector<Node> nodes_;
};

}  // namespace shipper::testing

#endif  // SHIPPER_TESTS_KAFKA_REAL_KAFKA_H_
