// The Kafka benchmark's helper (./dev bench kafka, tests/bench/e2e.py): librdkafka's mock
// cluster as a process of its own, and the baseline Shipper is measured against.
//
//   kafka_bench --serve
//       starts a 3-broker mock cluster (rdkafka_mock.h, not a real Kafka: messages stay in
//       memory) with topic --topic, prints "mock cluster listening on <bootstrap servers>" and
//       runs until SIGTERM or SIGINT; with --real, one real Kafka node instead
//       (tests/kafka/real_kafka.h, its files under --dir), "kafka listening on ...";
//   kafka_bench --produce --bootstrap=HOST:PORT,... --shape=filebeat --events=N
//       produces N documents of the shape, exactly as Shipper's outputs write them, straight
//       into that cluster with librdkafka (no gRPC, no Shipper), with the properties Shipper's
//       Kafka output sets, waits for every delivery report and prints one JSON line:
//       {"events", "events_per_sec", "cpu_sec", "tx_bytes", "txmsg_bytes", "failed"}.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "librdkafka/rdkafka.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/event/event_json.h"
#include "tests/kafka/mock_cluster.h"
#include "tests/kafka/real_kafka.h"
#include "tests/load/event_shapes.h"
#include "tests/load/process_cpu.h"

ABSL_FLAG(bool, serve, false, "run a 3-broker mock cluster until SIGTERM");
ABSL_FLAG(bool, real, false,
          "--serve: one real Kafka node (SHIPPER_KAFKA_CLASSPATH) instead of the mock cluster");
ABSL_FLAG(std::string, dir, "/tmp/shipper-kafka-bench", "--serve --real: the node's files");
ABSL_FLAG(bool, produce, false, "produce --events documents into --bootstrap");
ABSL_FLAG(std::string, topic, "bench", "topic to create (--serve) or produce to (--produce)");
ABSL_FLAG(int, partitions, 6, "partitions of --topic, each on every broker (--serve)");
ABSL_FLAG(std::string, bootstrap, "", "bootstrap servers (--produce)");
ABSL_FLAG(std::string, shape, "filebeat", "event shape: filebeat, tiny or large");
ABSL_FLAG(uint64_t, events, 100000, "documents to produce");
ABSL_FLAG(std::string, compression, "gzip", "compression.codec");
ABSL_FLAG(int, compression_level, 1, "compression.level");
ABSL_FLAG(int, max_in_flight, 1, "max.in.flight (the Kafka output's default: 1)");

namespace shipper {
namespace {

// Distinct documents cycled through: more than a record batch holds (batch.size 1 MB), so that
// compression never sees one document twice in a batch.
constexpr size_t kDocuments = 8192;

int Serve() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before librdkafka starts its threads
  if (absl::GetFlag(FLAGS_real)) {
    // The JVM is this process's child: SIGKILLed when RealKafka goes, after sigwait.
    auto kafka = testing::RealKafka::Start(1, absl::GetFlag(FLAGS_dir));
    absl::Status created = kafka.ok() ? (*kafka)->CreateTopic(absl::GetFlag(FLAGS_topic),
                                                              absl::GetFlag(FLAGS_partitions))
                                      : kafka.status();
    if (!created.ok()) {
      std::cerr << "kafka_bench: " << created << "\n";
      return 1;
    }
    std::cerr << "kafka listening on " << (*kafka)->bootstraps() << std::endl;
    int sig = 0;
    sigwait(&stop, &sig);
    return 0;
  }
  auto cluster = testing::MockCluster::Start(3);
  if (!cluster.ok()) {
    std::cerr << "kafka_bench: " << cluster.status() << "\n";
    return 1;
  }
  absl::Status created =
      (*cluster)->CreateTopic(absl::GetFlag(FLAGS_topic), absl::GetFlag(FLAGS_partitions));
  if (!created.ok()) {
    std::cerr << "kafka_bench: " << created << "\n";
    return 1;
  }
  std::cerr << "mock cluster listening on " << (*cluster)->bootstraps() << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}

struct Totals {
  std::atomic<uint64_t> delivered{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> tx_bytes{0};
  std::atomic<uint64_t> txmsg_bytes{0};
};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* totals) {
  auto* t = static_cast<Totals*>(totals);
  (m->err == RD_KAFKA_RESP_ERR_NO_ERROR ? t->delivered : t->failed).fetch_add(1);
}

int OnStatistics(rd_kafka_t*, char* json, size_t size, void* totals) {
  rapidjson::Document doc;
  doc.Parse(json, size);
  auto* t = static_cast<Totals*>(totals);
  if (doc.IsObject() && doc.HasMember("tx_bytes") && doc.HasMember("txmsg_bytes")) {
    t->tx_bytes = doc["tx_bytes"].GetUint64();
    t->txmsg_bytes = doc["txmsg_bytes"].GetUint64();
  }
  return 0;
}

int Produce() {
  absl::StatusOr<load::EventShape> shape = load::ParseEventShape(absl::GetFlag(FLAGS_shape));
  if (!shape.ok()) {
    std::cerr << "kafka_bench: " << shape.status() << "\n";
    return 1;
  }
  std::vector<std::string> documents(kDocuments);
  elastic::agent::shipper::v1::messages::Event event;
  for (size_t i = 0; i < kDocuments; ++i) {
    load::MakeEvent(*shape, i, &event);
    rapidjson::StringBuffer json;
    AppendEventJson(event.SerializeAsString(), i + 1, &json);
    documents[i].assign(json.GetString(), json.GetSize() - 1);  // without the newline
  }

  Totals totals;
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // What the Kafka output sets at its defaults (kafka_settings.cc, OwnProperties).
  const std::vector<std::pair<std::string, std::string>> properties = {
      {"bootstrap.servers", absl::GetFlag(FLAGS_bootstrap)},
      {"acks", "-1"},
      {"enable.idempotence", "true"},
      {"compression.codec", absl::GetFlag(FLAGS_compression)},
      {"compression.level", absl::StrCat(absl::GetFlag(FLAGS_compression_level))},
      {"batch.size", "1000000"},
      {"message.max.bytes", "1065536"},
      {"partitioner", "fnv1a_random"},
      {"max.in.flight", absl::StrCat(absl::GetFlag(FLAGS_max_in_flight))},
      {"statistics.interval.ms", "100"},
      {"log_level", "3"},
  };
  char error[512];
  for (const auto& [name, value] : properties) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), error, sizeof(error)) !=
        RD_KAFKA_CONF_OK) {
      std::cerr << "kafka_bench: " << name << "=" << value << ": " << error << "\n";
      return 1;
    }
  }
  rd_kafka_conf_set_opaque(conf, &totals);
  rd_kafka_conf_set_dr_msg_cb(conf, &OnDelivery);
  rd_kafka_conf_set_stats_cb(conf, &OnStatistics);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof(error));
  if (rk == nullptr) {
    std::cerr << "kafka_bench: " << error << "\n";
    return 1;
  }
  const std::string topic = absl::GetFlag(FLAGS_topic);
  const uint64_t events = absl::GetFlag(FLAGS_events);
  // The producer connected and the topic's leaders known before the clock starts.
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_topic_t* handle = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  rd_kafka_metadata(rk, 0, handle, &metadata, 10000);
  if (metadata != nullptr) rd_kafka_metadata_destroy(metadata);
  rd_kafka_topic_destroy(handle);

  const double cpu0 = load::ProcessCpuSeconds();
  const absl::Time start = absl::Now();
  for (uint64_t i = 0; i < events;) {
    const std::string& doc = documents[i % kDocuments];
    const rd_kafka_resp_err_t err =
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()),
                          RD_KAFKA_V_VALUE(const_cast<char*>(doc.data()), doc.size()),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk, 1);
      continue;
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::cerr << "kafka_bench: " << rd_kafka_err2str(err) << "\n";
      return 1;
    }
    rd_kafka_poll(rk, 0);
    ++i;
  }
  rd_kafka_flush(rk, 120000);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const double cpu = load::ProcessCpuSeconds() - cpu0;
  // One more statistics interval, which counts the last requests.
  const uint64_t before = totals.tx_bytes;
  for (int i = 0; i < 30 && totals.tx_bytes == before; ++i) rd_kafka_poll(rk, 20);
  rd_kafka_poll(rk, 150);
  std::cout << "{\"events\": " << totals.delivered
            << ", \"events_per_sec\": " << static_cast<uint64_t>(totals.delivered / seconds)
            << ", \"cpu_sec\": " << cpu << ", \"tx_bytes\": " << totals.tx_bytes
            << ", \"txmsg_bytes\": " << totals.txmsg_bytes << ", \"failed\": " << totals.failed
            << "}" << std::endl;
  rd_kafka_destroy(rk);
  return totals.failed == 0 && totals.delivered == events ? 0 : 1;
}

}  // namespace
}  // namespace shipper

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_serve)) return shipper::Serve();
  if (absl::GetFlag(FLAGS_produce)) return shipper::Produce();
  std::cerr << "kafka_bench: --serve or --produce\n";
  return 2;
}
