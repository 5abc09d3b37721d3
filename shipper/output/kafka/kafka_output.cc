#include "shipper/output/kafka/kafka_output.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "librdkafka/rdkafka.h"
#include "shipper/event/field_format.h"
#include "shipper/output/batch_json.h"
#include "shipper/output/kafka/kafka_metrics.h"
#include "shipper/output/kafka/kafka_reports.h"
#include "shipper/output/kafka/kafka_settings.h"
#include "shipper/output/kafka/kafka_statistics.h"

namespace shipper {
namespace {

class KafkaOutput final : public Output {
 public:
  KafkaOutput(const KafkaSettings& config, FieldFormat topic, std::optional<FieldFormat> key)
      : config_(config), topic_(std::move(topic)), key_(std::move(key)) {}

  ~KafkaOutput() override {
    if (poller_.joinable()) {
      stop_ = true;
      poller_.join();
    }
    absl::MutexLock lock(&rk_mu_);
    ReleaseTopics();
    if (rk_ != nullptr) retired_.push_back(rk_);
    // Every report is served before a handle goes, so that no KafkaReports is left behind.
    for (rd_kafka_t* rk : retired_) {
      rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      rd_kafka_flush(rk, 5000);
      rd_kafka_destroy(rk);
    }
    if (headers_ != nullptr) rd_kafka_headers_destroy(headers_);
    metrics_.SetBrokers({});
  }

  absl::Status Start(KafkaConf conf) {
    if (!config_.headers.empty()) {
      headers_ = rd_kafka_headers_new(config_.headers.size());
      for (const std::string& header : config_.headers) {
        const size_t colon = header.find(':');
        rd_kafka_header_add(headers_, header.data(), colon, header.data() + colon + 1,
                            header.size() - colon - 1);
      }
    }
    absl::StatusOr<rd_kafka_t*> rk = NewProducer(std::move(conf));
    if (!rk.ok()) return rk.status();
    {
      absl::MutexLock lock(&rk_mu_);
      rk_ = *rk;
    }
    poller_ = std::thread([this] {
      while (!stop_) {
        {
          absl::ReaderMutexLock lock(&rk_mu_);
          rd_kafka_poll(rk_, 100);
          metrics_.waiting = rd_kafka_outq_len(rk_);
        }
        ServeRetired();
        if (fatal_.exchange(false)) ReplaceAfterFatalError();
      }
    });
    return absl::OkStatus();
  }

  // A producer of `conf` reporting to this output.
  absl::StatusOr<rd_kafka_t*> NewProducer(KafkaConf conf) {
    rd_kafka_conf_set_opaque(conf.get(), this);
    rd_kafka_conf_set_dr_msg_cb(conf.get(), &KafkaOutput::OnDelivery);
    rd_kafka_conf_set_error_cb(conf.get(), &KafkaOutput::OnError);
    rd_kafka_conf_set_stats_cb(conf.get(), &KafkaOutput::OnStatistics);
    if (config_.partition == KafkaPartitioner::kRoundRobin) {
      // Topic-level properties (acks, message.timeout.ms) were set: the default topic
      // configuration exists and holds them.
      rd_kafka_topic_conf_t* topic = rd_kafka_conf_get_default_topic_conf(conf.get());
      CHECK(topic != nullptr);
      rd_kafka_topic_conf_set_opaque(topic, this);
      rd_kafka_topic_conf_set_partitioner_cb(topic, &KafkaOutput::RoundRobin);
    }
    char error[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), error, sizeof(error));
    if (rk == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("shipper.output.kafka: librdkafka: ", error));
    }
    conf.release();  // rd_kafka_new owns it now
    return rk;
  }

  // After a fatal error (rd_kafka_fatal_error: e.g. the idempotent producer's sequence numbers
  // and a broker's disagree) librdkafka's producer refuses everything: a new one takes its place.
  // What the old one held is purged, reported failed and so produced again by the retry of its
  // Write(). On the poller thread.
  void ReplaceAfterFatalError() ABSL_LOCKS_EXCLUDED(rk_mu_) {
    char reason[512];
    rd_kafka_resp_err_t err;
    {
      absl::ReaderMutexLock lock(&rk_mu_);
      err = rd_kafka_fatal_error(rk_, reason, sizeof(reason));
    }
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;  // an error of a producer already replaced
    Problems problems;
    KafkaConf conf = NewKafkaConf(config_, &problems);
    CHECK(problems.empty()) << "Build() accepted these properties: " << problems.ToStatus();
    absl::StatusOr<rd_kafka_t*> fresh = NewProducer(std::move(conf));
    if (!fresh.ok()) {
      LOG(ERROR) << "kafka: fatal error " << rd_kafka_err2name(err) << ": " << reason
                 << "; no new producer (" << fresh.status() << "), trying again in 1s";
      absl::SleepFor(absl::Seconds(1));
      fatal_ = true;
      return;
    }
    rd_kafka_t* old;
    {
      absl::MutexLock lock(&rk_mu_);
      old = rk_;
      rk_ = *fresh;
      ReleaseTopics();  // the old producer's
    }
    LOG(ERROR) << "kafka: fatal error " << rd_kafka_err2name(err) << ": " << reason
               << "; a new producer replaces it, and the messages it held are produced again";
    rd_kafka_purge(old, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    retired_.push_back(old);
    recorded_ = {};
  }

  // Serves the reports of replaced producers, and destroys each once it has none to come. On the
  // poller thread.
  void ServeRetired() {
    for (auto it = retired_.begin(); it != retired_.end();) {
      rd_kafka_poll(*it, 0);
      if (rd_kafka_outq_len(*it) > 0) {
        ++it;
        continue;
      }
      rd_kafka_destroy(*it);
      it = retired_.erase(it);
    }
  }

  absl::Status Write(const Events& events, Outcome* outcome) override {
    if (cancelled_) return absl::UnavailableError("kafka: cancelled at shutdown");
    thread_local BatchJson json;
    json.Encode(events);
    KafkaReports* reports = KafkaReports::New(events.size());
    std::vector<std::string> refusals(events.size());  // non-empty: rejected before producing
    size_t unproduced = 0;                             // from here on, not produced (cancelled)
    {
      absl::ReaderMutexLock lock(&rk_mu_);  // Produce() lets go of it while librdkafka is full
      Topic topic;
      for (; unproduced < events.size() && !cancelled_; ++unproduced) {
        absl::Status status =
            Produce(events, json.document(unproduced), reports, unproduced, &topic);
        if (!status.ok()) refusals[unproduced] = std::string(status.message());
      }
    }
    if (cancelled_) {
      // What Cancel() purged may have missed what was produced after it.
      absl::ReaderMutexLock lock(&rk_mu_);
      rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    }
    // The reports are awaited once the worker has produced its next batch, so that the brokers'
    // round trips overlap the next batch's encoding and producing.
    outcome->finish = [this, reports, refusals = std::move(refusals),
                       unproduced](Outcome* outcome) {
      absl::StatusOr<std::vector<rd_kafka_resp_err_t>> results = reports->Await(cancelled_);
      if (!results.ok()) return results.status();
      absl::Status settled = SettleKafkaWrite(*results, refusals, unproduced, cancelled_, outcome);
      if (!outcome->failed.empty()) NameAMissingTopic(outcome);
      return settled;
    };
    return absl::OkStatus();
  }

  void Cancel() override {
    cancelled_ = true;
    absl::ReaderMutexLock lock(&rk_mu_);
    rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  }

 private:
  // The topic a writer produced its last message to, and that topic's handle (nullptr: none
  // yet, or rk_mu_ was let go of since).
  struct Topic {
    std::string name;
    rd_kafka_topic_t* handle = nullptr;
  };

  // Hands event i to librdkafka, its report to come to `reports`. An error is a rejection for
  // good, for the dead-letter file; a transient refusal is recorded as the message's result.
  // `last` is the writer's last topic, for this message to reuse. While librdkafka's queue is
  // full it lets go of rk_mu_, so that a replacement of the producer does not wait for room.
  absl::Status Produce(const Events& events, absl::string_view document, KafkaReports* reports,
                       size_t i, Topic* last) ABSL_SHARED_LOCKS_REQUIRED(rk_mu_) {
    absl::StatusOr<std::string> topic = topic_.Format(events.bytes(i));
    if (!topic.ok()) return topic.status();
    std::string key;
    if (key_) {
      absl::StatusOr<std::string> formatted = key_->Format(events.bytes(i));
      if (!formatted.ok()) return formatted.status();
      key = *std::move(formatted);
    }
    if (document.size() + key.size() > config_.max_message_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kafka: the message (", document.size() + key.size(),
          " bytes with its key) is larger than shipper.output.kafka.max_message_bytes (",
          config_.max_message_bytes, ")"));
    }
    void* opaque = reports->Expect(i);
    for (;;) {
      if (last->handle == nullptr || last->name != *topic) {
        last->name = *topic;
        last->handle = TopicHandle(last->name);
      }
      rd_kafka_headers_t* headers = headers_ ? rd_kafka_headers_copy(headers_) : nullptr;
      const rd_kafka_resp_err_t err =
          last->handle == nullptr
              ? RD_KAFKA_RESP_ERR__INVALID_ARG  // a name longer than librdkafka takes
              : rd_kafka_producev(
                    rk_, RD_KAFKA_V_RKT(last->handle),
                    RD_KAFKA_V_VALUE(const_cast<char*>(document.data()), document.size()),
                    RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()),
                    RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                    RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return absl::OkStatus();
      if (headers != nullptr) rd_kafka_headers_destroy(headers);
      // librdkafka's queue is full (queue.buffering.max.*): wait for reports to free it.
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && !cancelled_) {
        rk_mu_.ReaderUnlock();
        absl::SleepFor(absl::Milliseconds(1));
        rk_mu_.ReaderLock();
        last->handle = nullptr;  // rk_ and its handles may have been replaced meanwhile
        continue;
      }
      CountError(err);
      reports->Refused(i, err);
      if (KafkaErrorIsPermanent(err)) return absl::InvalidArgumentError(KafkaErrorText(err));
      return absl::OkStatus();
    }
  }

  // The handle of `topic` on rk_, looked up once (nullptr: librdkafka refused the name, which it
  // does only to names longer than 512 bytes).
  rd_kafka_topic_t* TopicHandle(const std::string& topic) ABSL_SHARED_LOCKS_REQUIRED(rk_mu_)
      ABSL_LOCKS_EXCLUDED(topics_mu_) {
    absl::MutexLock lock(&topics_mu_);
    auto [it, added] = topics_.try_emplace(topic, nullptr);
    if (added) it->second = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
    rd_kafka_topic_t* handle = it->second;
    if (handle == nullptr) topics_.erase(it);
    return handle;
  }

  // A message that timed out, or whose topic is unknown, may be bound for a topic that does not
  // exist on brokers that do not create topics: librdkafka then says only "Message timed out".
  // Asks the brokers about the topics of such messages and, for one they do not know, says so in
  // the failure, naming the key to change. On a worker, after a write failed: at most one
  // metadata request per topic and failed write.
  void NameAMissingTopic(Outcome* outcome) ABSL_LOCKS_EXCLUDED(rk_mu_, unconfirmed_mu_) {
    absl::flat_hash_set<std::string> topics;
    {
      absl::MutexLock lock(&unconfirmed_mu_);
      topics.swap(unconfirmed_topics_);
    }
    absl::ReaderMutexLock lock(&rk_mu_);
    for (const std::string& name : topics) {
      rd_kafka_topic_t* handle = TopicHandle(name);
      const rd_kafka_metadata_t* metadata = nullptr;
      if (handle == nullptr ||
          rd_kafka_metadata(rk_, 0, handle, &metadata, 2000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        continue;  // no broker answered: the failure's own words say enough
      }
      const bool missing = metadata->topic_cnt == 1 &&
                           metadata->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
      rd_kafka_metadata_destroy(metadata);
      if (!missing) continue;
      outcome->failure = absl::StrCat(
          "kafka: topic \"", name,
          "\" does not exist on the brokers, and they do not create topics: create it, or change "
          "shipper.output.kafka.topic (",
          outcome->failure, ")");
      return;
    }
  }

  // Lets go of rk_'s topic handles, before rk_ is replaced or destroyed.
  void ReleaseTopics() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rk_mu_) ABSL_LOCKS_EXCLUDED(topics_mu_) {
    absl::MutexLock lock(&topics_mu_);
    for (const auto& [name, handle] : topics_) rd_kafka_topic_destroy(handle);
    topics_.clear();
  }

  static void CountError(rd_kafka_resp_err_t err) {
    KafkaMetrics::Get()
        .delivery_errors.Get(metrics::FormatLabels({{"code", rd_kafka_err2name(err)}}))
        .Add();
  }

  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* message, void* output) {
    if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) CountError(message->err);
    if (message->err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT ||
        message->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
        message->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
      auto* self = static_cast<KafkaOutput*>(output);
      absl::MutexLock lock(&self->unconfirmed_mu_);
      self->unconfirmed_topics_.insert(rd_kafka_topic_name(message->rkt));
    }
    KafkaReports::Report(message->_private, message->err);
  }

  static void OnError(rd_kafka_t*, int err, const char* reason, void* output) {
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
      static_cast<KafkaOutput*>(output)->fatal_ = true;  // logged as the producer is replaced
      return;
    }
    LOG(WARNING) << "kafka: " << rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err)) << ": "
                 << reason;
  }

  static int OnStatistics(rd_kafka_t* rk, char* json, size_t size, void* output) {
    char reason[16];
    if (rd_kafka_fatal_error(rk, reason, sizeof(reason)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return 0;  // a producer replaced, or about to be: its successor's figures count
    }
    absl::StatusOr<KafkaStatistics> stats = ParseKafkaStatistics(absl::string_view(json, size));
    if (stats.ok()) {
      static_cast<KafkaOutput*>(output)->Record(*stats);
    } else {
      LOG_FIRST_N(WARNING, 1) << "kafka: " << stats.status();
    }
    return 0;  // librdkafka frees the JSON
  }

  // Called on the poller thread.
  void Record(const KafkaStatistics& stats) {
    const auto grown = [](uint64_t now, uint64_t* before) {
      const uint64_t delta = now > *before ? now - *before : 0;
      *before = now;
      return delta;
    };
    metrics_.sent_bytes.Add(grown(stats.tx_bytes, &recorded_.tx_bytes));
    metrics_.sent_message_bytes.Add(grown(stats.txmsg_bytes, &recorded_.txmsg_bytes));
    const std::map<std::string, KafkaMetrics::Broker> before = metrics_.brokers();
    std::map<std::string, KafkaMetrics::Broker> brokers;
    for (const KafkaStatistics::Broker& b : stats.brokers) {
      std::optional<absl::Duration> rtt = b.rtt;
      if (!rtt) {
        auto it = before.find(b.name);
        if (it != before.end()) rtt = it->second.rtt;
      }
      brokers[b.name] = {b.state, rtt};
    }
    metrics_.SetBrokers(std::move(brokers));
  }

  static int32_t RoundRobin(const rd_kafka_topic_t* topic, const void*, size_t, int32_t partitions,
                            void* output, void*) {
    auto* self = static_cast<KafkaOutput*>(output);
    int32_t partition = 0;
    for (int32_t tries = 0; tries < partitions; ++tries) {
      partition = static_cast<int32_t>(self->next_partition_.fetch_add(1) % partitions);
      if (rd_kafka_topic_partition_available(topic, partition)) break;
    }
    return partition;
  }

  // Constant after Start().
  const KafkaSettings config_;
  const FieldFormat topic_;
  const std::optional<FieldFormat> key_;
  rd_kafka_headers_t* headers_ = nullptr;  // copied onto each message
  std::thread poller_;                     // serves delivery reports, errors and statistics

  // The producer. Writers hold rk_mu_ shared to use it; the poller thread alone replaces it,
  // holding rk_mu_ exclusively, after a fatal error.
  absl::Mutex rk_mu_;
  rd_kafka_t* rk_ ABSL_GUARDED_BY(rk_mu_) = nullptr;
  // The handles of the topics rk_ produced to. librdkafka finds a topic named in
  // rd_kafka_producev(RD_KAFKA_V_TOPIC) under a write lock of the producer's, message by
  // message, which the writers and librdkafka's broker threads then took turns at: with the
  // handles, filebeat events reach Kafka a quarter faster (BENCHMARKS.md, Kafka output). Writers
  // holding rk_mu_ shared add to them; they go with rk_, with rk_mu_ held exclusively. As many as
  // the topics produced to, which librdkafka keeps for as long in any case.
  absl::Mutex topics_mu_ ABSL_ACQUIRED_AFTER(rk_mu_);
  absl::flat_hash_map<std::string, rd_kafka_topic_t*> topics_ ABSL_GUARDED_BY(topics_mu_);

  // Topics of messages that timed out or whose topic was unknown, since a worker last asked the
  // brokers about them (NameAMissingTopic()).
  absl::Mutex unconfirmed_mu_;
  absl::flat_hash_set<std::string> unconfirmed_topics_ ABSL_GUARDED_BY(unconfirmed_mu_);

  // The poller thread's alone (and the destructor's, once the poller is gone).
  std::vector<rd_kafka_t*> retired_;  // replaced producers with reports still to come
  struct {
    uint64_t tx_bytes = 0;
    uint64_t txmsg_bytes = 0;
  } recorded_;  // the current producer's totals the metrics have counted

  std::atomic<bool> fatal_{false};  // librdkafka reported a fatal error

  std::atomic<bool> stop_{false};
  std::atomic<bool> cancelled_{false};
  std::atomic<uint64_t> next_partition_{0};  // of round_robin
  KafkaMetrics& metrics_ = KafkaMetrics::Get();
};

}  // namespace

absl::StatusOr<std::unique_ptr<Output>> KafkaSettings::Build() const {
  Problems problems;
  KafkaConf conf = NewKafkaConf(*this, &problems);
  if (!problems.empty()) return problems.ToStatus();
  auto output = std::make_unique<KafkaOutput>(*this, TopicFormat(), KeyFormat());
  absl::Status started = output->Start(std::move(conf));
  if (!started.ok()) return started;
  return output;
}

OutputType KafkaOutputType() {
  return MakeOutputType<KafkaSettings>("kafka", "send events to Kafka (librdkafka)", KafkaKeys(),
                                       CollectKafkaMetrics);
}

}  // namespace shipper
