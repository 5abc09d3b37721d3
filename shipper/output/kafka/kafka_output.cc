#include "shipper/output/kafka/kafka_output.h"

#include <algorithm>
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
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "librdkafka/rdkafka.h"
#include "shipper/config/preflight.h"
#include "shipper/event/field_format.h"
#include "shipper/output/batch_json.h"
#include "shipper/output/kafka/kafka_metrics.h"
#include "shipper/output/kafka/kafka_statistics.h"

namespace shipper {
namespace {

constexpr char kTopicKey[] = "shipper.output.kafka.topic";
constexpr char kKeyKey[] = "shipper.output.kafka.key";
constexpr char kExtraKey[] = "shipper.output.kafka.librdkafka";

// One librdkafka property and the key that sets it, so that a refusal names what to change.
struct Property {
  std::string key;
  std::string name;
  std::string value;
  bool secret = false;  // not repeated in messages
};

absl::string_view CompressionName(KafkaCompression c) {
  switch (c) {
    case KafkaCompression::kNone:
      return "none";
    case KafkaCompression::kGzip:
      return "gzip";
    case KafkaCompression::kSnappy:
      return "snappy";
    case KafkaCompression::kLz4:
      return "lz4";
    case KafkaCompression::kZstd:
      return "zstd";
  }
  return "none";
}

// Whether shipper.output.kafka.compression_level means anything for `codec`.
bool HasLevels(KafkaCompression codec) {
  return codec != KafkaCompression::kNone && codec != KafkaCompression::kSnappy;
}

std::string Milliseconds(absl::Duration d) { return absl::StrCat(absl::ToInt64Milliseconds(d)); }

// The properties Shipper sets from its own keys and for its guarantees. The extras of
// shipper.output.kafka.librdkafka may not override them: Validate() refuses those.
std::vector<Property> OwnProperties(const KafkaSettings& s) {
  const std::string k = "shipper.output.kafka.";
  std::vector<Property> p = {
      {k + "hosts", "bootstrap.servers", absl::StrJoin(s.hosts, ",")},
      {k + "client_id", "client.id", s.client_id},
      {k + "required_acks", "acks", absl::StrCat(s.required_acks)},
      // librdkafka's idempotence needs acks=all: with required_acks 1 its retries may
      // duplicate or reorder within a partition.
      {k + "required_acks", "enable.idempotence", s.required_acks == -1 ? "true" : "false"},
      {k + "compression", "compression.codec", std::string(CompressionName(s.compression))},
      // Codecs without levels (none, snappy) take librdkafka's default whatever the key says.
      {k + "compression_level", "compression.level",
       absl::StrCat(HasLevels(s.compression) ? s.compression_level : -1)},
      // Record batches no larger than one message may be, so that a broker accepting
      // max_message_bytes never refuses a batch of smaller messages as too large.
      {k + "max_message_bytes", "batch.size", absl::StrCat(s.max_message_bytes)},
      // Headroom above max_message_bytes for key, headers and framing: Write() refuses big
      // documents itself, naming the key.
      {k + "max_message_bytes", "message.max.bytes", absl::StrCat(s.max_message_bytes + 65536)},
      {k + "timeout", "message.timeout.ms", Milliseconds(s.timeout)},
      {k + "broker_timeout", "request.timeout.ms", Milliseconds(s.broker_timeout)},
  };
  switch (s.partition) {
    case KafkaPartitioner::kHash:
      p.push_back({k + "partition", "partitioner", "fnv1a_random"});
      break;
    case KafkaPartitioner::kRandom:
      p.push_back({k + "partition", "partitioner", "random"});
      break;
    case KafkaPartitioner::kRoundRobin:
      break;  // a partitioner callback of the output's own
  }
  const bool sasl = !s.sasl.mechanism.empty();
  p.push_back({k + (s.ssl.enabled ? "ssl.enabled" : "sasl.mechanism"), "security.protocol",
               absl::StrCat(sasl ? "sasl_" : "", s.ssl.enabled ? "ssl" : "plaintext")});
  if (sasl) {
    p.push_back({k + "sasl.mechanism", "sasl.mechanisms", s.sasl.mechanism});
    p.push_back({k + "sasl.username", "sasl.username", s.sasl.username});
    p.push_back({k + "sasl.password", "sasl.password", s.sasl.password, /*secret=*/true});
  }
  if (s.ssl.enabled) {
    if (!s.ssl.certificate_authorities.empty()) {
      p.push_back(
          {k + "ssl.certificate_authorities", "ssl.ca.location", s.ssl.certificate_authorities});
    }
    if (!s.ssl.certificate.empty()) {
      p.push_back({k + "ssl.certificate", "ssl.certificate.location", s.ssl.certificate});
      p.push_back({k + "ssl.key", "ssl.key.location", s.ssl.key});
    }
    p.push_back({k + "ssl.verification_mode", "enable.ssl.certificate.verification",
                 s.ssl.verification_mode == "none" ? "false" : "true"});
    p.push_back({k + "ssl.verification_mode", "ssl.endpoint.identification.algorithm",
                 s.ssl.verification_mode == "full" ? "https" : "none"});
  }
  return p;
}

// Other names of the properties above, which would override them as well.
constexpr std::pair<const char*, const char*> kAliases[] = {
    {"metadata.broker.list", "bootstrap.servers"}, {"request.required.acks", "acks"},
    {"compression.type", "compression.codec"},     {"delivery.timeout.ms", "message.timeout.ms"},
    {"sasl.mechanism", "sasl.mechanisms"},
};

// The extras of shipper.output.kafka.librdkafka; nullopt for one that is not name=value.
std::optional<Property> ParseExtra(const std::string& item) {
  const size_t eq = item.find('=');
  if (eq == 0 || eq == std::string::npos) return std::nullopt;
  return Property{kExtraKey, item.substr(0, eq), item.substr(eq + 1)};
}

// Every property Build() sets: Shipper's, defaults the extras may change, then the extras.
//   - The statistics behind the broker metrics come every 5 s (0: none).
//   - One produce request in flight per broker: with more, a request that failed without
//     certainty (REQUEST_TIMED_OUT, a lost connection) is taken as written once a later one to
//     the same partition succeeds (librdkafka's "implicit ack"), and the later one's success
//     proves that only where the broker enforces the idempotent producer's sequence numbers.
//     The mock cluster does not, and lost events that way in tests/kafka; on Kafka itself it was
//     reported across a leader election (confluent-kafka-go #921). With one in flight, a failed
//     request is retried before the next one goes.
std::vector<Property> AllProperties(const KafkaSettings& s) {
  std::vector<Property> all = OwnProperties(s);
  all.push_back({kExtraKey, "statistics.interval.ms", "5000"});
  all.push_back({kExtraKey, "max.in.flight.requests.per.connection", "1"});
  for (const std::string& item : s.librdkafka) {
    if (std::optional<Property> extra = ParseExtra(item)) all.push_back(*std::move(extra));
  }
  return all;
}

struct ConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
using Conf = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;

// A configuration with every property set; each one librdkafka refuses is a problem naming the
// key that set it.
Conf MakeConf(const KafkaSettings& s, Problems* problems) {
  Conf conf(rd_kafka_conf_new());
  char error[512];
  for (const Property& p : AllProperties(s)) {
    if (rd_kafka_conf_set(conf.get(), p.name.c_str(), p.value.c_str(), error, sizeof(error)) !=
        RD_KAFKA_CONF_OK) {
      problems->Add(absl::StrCat(p.key, ": librdkafka refuses ", p.name, "=",
                                 p.secret ? "<secret>" : p.value, ": ", error));
    }
  }
  return conf;
}

bool ValidHost(const std::string& host) {
  const size_t colon = host.rfind(':');
  int port = 0;
  return colon != std::string::npos && colon > 0 &&
         absl::SimpleAtoi(host.substr(colon + 1), &port) && port > 0 && port <= 65535;
}

// Whether a delivery error would come back on every retry. An unknown topic or partition is
// not among them: Kafka reports it while a new topic's metadata propagates and until an
// operator creates the topic, and dropping events then would lose them.
bool Permanent(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
      return true;
    default:
      return false;
  }
}

std::string ErrorText(rd_kafka_resp_err_t err) {
  return absl::StrCat("kafka: ", rd_kafka_err2name(err), ": ", rd_kafka_err2str(err));
}

// The messages of one Write(). Delivery reports arrive on the poller thread; the Round is freed
// by whichever lets go of it last: Write()'s finish, or the last report of a finish that gave up.
struct Round {
  // What became of each message; `produced` marks those with a report to come.
  struct Result {
    bool produced = false;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  };
  // A message's opaque: its Round and its event.
  struct Slot {
    Round* round;
    size_t event;
  };

  explicit Round(size_t events) : slots(events), results(events) {
    for (size_t i = 0; i < events; ++i) slots[i] = {this, i};
  }

  // Drops one holder; true when it was the last, and the caller must delete the Round.
  bool Release() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return --holders == 0; }
  bool AllReported() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return holders == 1; }

  std::vector<Slot> slots;  // constant after construction, so the opaques stay valid
  absl::Mutex mu;
  int holders ABSL_GUARDED_BY(mu) = 1;  // Write()'s finish, and each report still to come
  std::vector<Result> results ABSL_GUARDED_BY(mu);
};

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
    if (rk_ != nullptr) retired_.push_back(rk_);
    // Every report is served before a handle goes, so that no Round is left behind.
    for (rd_kafka_t* rk : retired_) {
      rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      rd_kafka_flush(rk, 5000);
      rd_kafka_destroy(rk);
    }
    if (headers_ != nullptr) rd_kafka_headers_destroy(headers_);
    metrics_.SetBrokers({});
  }

  absl::Status Start(Conf conf) {
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
  absl::StatusOr<rd_kafka_t*> NewProducer(Conf conf) {
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
    Conf conf = MakeConf(config_, &problems);
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
    auto* round = new Round(events.size());
    std::vector<std::string> refusals(events.size());  // non-empty: rejected before producing
    size_t unproduced = 0;                             // from here on, not produced (cancelled)
    for (; unproduced < events.size() && !cancelled_; ++unproduced) {
      absl::Status status = Produce(events, json.document(unproduced), round, unproduced);
      if (!status.ok()) refusals[unproduced] = std::string(status.message());
    }
    if (cancelled_) {
      // What Cancel() purged may have missed what was produced after it.
      absl::ReaderMutexLock lock(&rk_mu_);
      rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    }
    // The reports are awaited once the worker has produced its next batch, so that the brokers'
    // round trips overlap the next batch's encoding and producing.
    outcome->finish = [this, round, refusals = std::move(refusals), unproduced](Outcome* outcome) {
      return Await(round, refusals, unproduced, outcome);
    };
    return absl::OkStatus();
  }

  void Cancel() override {
    cancelled_ = true;
    absl::ReaderMutexLock lock(&rk_mu_);
    rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  }

 private:
  // The end of a Write(): waits for the reports of the messages `round` produced and says what
  // became of each event. `refusals` and `unproduced` are Write()'s, by event.
  absl::Status Await(Round* round, const std::vector<std::string>& refusals, size_t unproduced,
                     Outcome* outcome) {
    const size_t events = refusals.size();
    round->mu.Lock();
    while (!round->mu.AwaitWithTimeout(absl::Condition(round, &Round::AllReported),
                                       absl::Milliseconds(100))) {
      if (!cancelled_) continue;
      // Purged messages in flight are reported only when their requests end: let go of the
      // Round rather than wait for that.
      const int waiting = round->holders - 1;
      const bool last = round->Release();
      round->mu.Unlock();
      if (last) delete round;
      return absl::UnavailableError(
          absl::StrCat("kafka: cancelled at shutdown; ", waiting, " messages unconfirmed, purged"));
    }
    std::vector<Round::Result> results = std::move(round->results);
    round->mu.Unlock();
    delete round;

    bool purged = false;
    for (size_t i = 0; i < events; ++i) {
      if (i >= unproduced) {
        outcome->Fail(i, "kafka: cancelled at shutdown");
      } else if (!refusals[i].empty()) {
        outcome->rejected.push_back({i, refusals[i]});
      } else if (results[i].produced && results[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        const rd_kafka_resp_err_t err = results[i].err;
        purged |= err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
        if (Permanent(err)) {
          outcome->rejected.push_back({i, ErrorText(err)});
        } else {
          outcome->Fail(i, ErrorText(err));
        }
      }
    }
    // (Purged without Cancel(): by the replacement of a producer after a fatal error; those
    // events failed for now, and the rest is written.)
    if (unproduced < events || (purged && cancelled_)) {
      return absl::UnavailableError("kafka: cancelled at shutdown; unconfirmed messages purged");
    }
    return absl::OkStatus();
  }

  // Hands event i to librdkafka, its report to come to round->slots[i]. An error is a
  // rejection for good, for the dead-letter file; a transient refusal is recorded as the
  // message's result.
  absl::Status Produce(const Events& events, absl::string_view document, Round* round, size_t i) {
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
    {
      absl::MutexLock lock(&round->mu);
      round->results[i].produced = true;
      ++round->holders;
    }
    for (;;) {
      rd_kafka_headers_t* headers = headers_ ? rd_kafka_headers_copy(headers_) : nullptr;
      rd_kafka_resp_err_t err;
      {
        absl::ReaderMutexLock lock(&rk_mu_);  // not across the wait below: a replacement waits
        err =
            rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(topic->c_str()),
                              RD_KAFKA_V_VALUE(const_cast<char*>(document.data()), document.size()),
                              RD_KAFKA_V_KEY(key.empty() ? nullptr : key.data(), key.size()),
                              RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_OPAQUE(&round->slots[i]), RD_KAFKA_V_END);
      }
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return absl::OkStatus();
      if (headers != nullptr) rd_kafka_headers_destroy(headers);
      // librdkafka's queue is full (queue.buffering.max.*): wait for reports to free it.
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && !cancelled_) {
        absl::SleepFor(absl::Milliseconds(1));
        continue;
      }
      CountError(err);
      absl::MutexLock lock(&round->mu);
      --round->holders;
      if (Permanent(err)) {
        round->results[i].produced = false;
        return absl::InvalidArgumentError(ErrorText(err));
      }
      round->results[i].err = err;
      return absl::OkStatus();
    }
  }

  static void CountError(rd_kafka_resp_err_t err) {
    KafkaMetrics::Get()
        .delivery_errors.Get(metrics::FormatLabels({{"code", rd_kafka_err2name(err)}}))
        .Add();
  }

  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* message, void*) {
    if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) CountError(message->err);
    auto* slot = static_cast<Round::Slot*>(message->_private);
    Round* round = slot->round;
    bool last;
    {
      absl::MutexLock lock(&round->mu);
      round->results[slot->event].err = message->err;
      last = round->Release();
    }
    if (last) delete round;
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

void KafkaSettings::Validate(Problems* problems) const {
  const std::string k = "shipper.output.kafka.";
  if (hosts.empty()) problems->Add(k + "hosts: name at least one broker as host:port");
  for (const std::string& host : hosts) {
    if (!ValidHost(host)) {
      problems->Add(absl::StrCat(k, "hosts: '", host, "' is not host:port (e.g. kafka:9092)"));
    }
  }
  if (topic.empty()) {
    if (enabled) problems->Add(k + "topic: the Kafka output needs a topic");
  } else {
    problems->Add(FieldFormat::Parse(topic, kTopicKey).status());
  }
  if (!key.empty()) problems->Add(FieldFormat::Parse(key, kKeyKey).status());
  if (required_acks == 0) {
    problems->Add(k +
                  "required_acks: 0 is refused: without acknowledgements nothing could confirm "
                  "delivery, and the persisted index would run ahead of what Kafka has; use -1 "
                  "(all in-sync replicas) or 1 (the leader)");
  }
  const int max_level = compression == KafkaCompression::kGzip ? 9 : 12;
  if (HasLevels(compression) && (compression_level < -1 || compression_level > max_level)) {
    problems->Add(absl::StrCat(k, "compression_level: ", compression_level, " is out of range for ",
                               CompressionName(compression), ": -1 (the codec's default) to ",
                               max_level));
  }
  if (max_message_bytes < 1) problems->Add(k + "max_message_bytes: must be above 0");
  if (timeout < absl::Milliseconds(1)) problems->Add(k + "timeout: must be at least 1ms");
  if (broker_timeout < absl::Milliseconds(1)) {
    problems->Add(k + "broker_timeout: must be at least 1ms");
  }
  for (const std::string& header : headers) {
    if (header.find(':') == 0 || header.find(':') == std::string::npos) {
      problems->Add(absl::StrCat(k, "headers: '", header, "' is not key:value"));
    }
  }
  if (!sasl.mechanism.empty() && (sasl.username.empty() || sasl.password.empty())) {
    problems->Add(k + "sasl.mechanism: needs sasl.username and sasl.password");
  }
  if (sasl.mechanism.empty() && !(sasl.username.empty() && sasl.password.empty())) {
    problems->Add(k + "sasl.username: set sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)");
  }
  if (!ssl.enabled &&
      !(ssl.certificate_authorities.empty() && ssl.certificate.empty() && ssl.key.empty())) {
    problems->Add(k + "ssl: files are set but TLS is off: set " + k + "ssl.enabled: true");
  }
  if (ssl.certificate.empty() != ssl.key.empty()) {
    problems->Add(k + "ssl.certificate and ssl.key go together: set both or neither");
  }
  std::vector<Property> own = OwnProperties(*this);
  for (const std::string& item : librdkafka) {
    std::optional<Property> extra = ParseExtra(item);
    if (!extra) {
      problems->Add(absl::StrCat(kExtraKey, ": '", item, "' is not name=value"));
      continue;
    }
    std::string name = extra->name;
    for (const auto& [alias, canonical] : kAliases) {
      if (name == alias) name = canonical;
    }
    for (const Property& p : own) {
      if (p.name == name) {
        problems->Add(absl::StrCat(kExtraKey, ": ", extra->name, " is set by ", p.key));
        break;
      }
    }
    if (name == "dr_cb" || name == "dr_msg_cb" || name == "enable.gapless.guarantee") {
      problems->Add(absl::StrCat(kExtraKey, ": ", extra->name, " is Shipper's own to set"));
    }
  }
}

void KafkaSettings::Preflight(Problems* problems) const {
  MakeConf(*this, problems);
  if (!ssl.enabled) return;
  const std::string k = "shipper.output.kafka.ssl.";
  if (!ssl.certificate_authorities.empty()) {
    CheckPem(problems, k + "certificate_authorities", ssl.certificate_authorities, "CERTIFICATE");
  }
  if (!ssl.certificate.empty())
    CheckPem(problems, k + "certificate", ssl.certificate, "CERTIFICATE");
  if (!ssl.key.empty()) CheckPem(problems, k + "key", ssl.key, "PRIVATE KEY");
}

absl::StatusOr<std::unique_ptr<Output>> KafkaSettings::Build() const {
  Problems problems;
  Conf conf = MakeConf(*this, &problems);
  if (!problems.empty()) return problems.ToStatus();
  std::optional<FieldFormat> key_format;
  if (!key.empty()) key_format = *FieldFormat::Parse(key, kKeyKey);
  auto output =
      std::make_unique<KafkaOutput>(*this, *FieldFormat::Parse(topic, kTopicKey), key_format);
  absl::Status started = output->Start(std::move(conf));
  if (!started.ok()) return started;
  return output;
}

std::string KafkaSettings::Destination() const {
  return absl::StrCat("kafka ", absl::StrJoin(hosts, ","), " topic ", topic);
}

OutputType KafkaOutputType() {
  using K = KeysOf<KafkaSettings>;
  using S = KafkaSettings;
  const auto sasl = [](auto member) {
    return [member](S & s) -> auto& { return s.sasl.*member; };
  };
  const auto ssl = [](auto member) {
    return [member](S & s) -> auto& { return s.ssl.*member; };
  };
  const auto integer = [](int min, int max) {
    return [min, max](const std::string& s) -> std::optional<int> {
      int v;
      if (!absl::SimpleAtoi(s, &v) || v < min || v > max) return std::nullopt;
      return v;
    };
  };
  const auto show_int = [](const int& v) { return absl::StrCat(v); };
  return MakeOutputType<S>(
      "kafka", "send events to Kafka (librdkafka)",
      {
          K::StringList("shipper.output.kafka.hosts", "bootstrap brokers as host:port", &S::hosts),
          K::String(kTopicKey,
                    "topic of each event (required); %{[data_stream.dataset]} takes it from the "
                    "event, %{[field]:default} when the field may be missing",
                    &S::topic),
          K::String(kKeyKey, "message key, a format string like topic; unset: no key", &S::key),
          K::Choice<KafkaPartitioner>("shipper.output.kafka.partition",
                                      "hash: by key (random without one); random; round_robin",
                                      {{"hash", KafkaPartitioner::kHash},
                                       {"random", KafkaPartitioner::kRandom},
                                       {"round_robin", KafkaPartitioner::kRoundRobin}},
                                      &S::partition),
          K::Typed<int>("shipper.output.kafka.required_acks",
                        "-1: every in-sync replica confirms (idempotent producer); 1: the leader "
                        "alone (no idempotence); 0 is refused",
                        "-1, 0 or 1", integer(-1, 1), show_int, &S::required_acks),
          K::Choice<KafkaCompression>("shipper.output.kafka.compression", "message compression",
                                      {{"none", KafkaCompression::kNone},
                                       {"gzip", KafkaCompression::kGzip},
                                       {"snappy", KafkaCompression::kSnappy},
                                       {"lz4", KafkaCompression::kLz4},
                                       {"zstd", KafkaCompression::kZstd}},
                                      &S::compression),
          K::Typed<int>("shipper.output.kafka.compression_level",
                        "-1: the codec's default; gzip 0-9, lz4 and zstd 0-12",
                        "a whole number from -1 to 12", integer(-1, 12), show_int,
                        &S::compression_level),
          K::Size("shipper.output.kafka.max_message_bytes",
                  "largest message (document and key); larger events are dead letters", 1, true,
                  &S::max_message_bytes),
          K::String("shipper.output.kafka.client_id", "client.id the brokers see", &S::client_id),
          K::Duration("shipper.output.kafka.timeout",
                      "how long librdkafka tries to deliver a message before Shipper retries it",
                      &S::timeout),
          K::Duration("shipper.output.kafka.broker_timeout",
                      "how long a broker may wait for required_acks", &S::broker_timeout),
          K::StringList("shipper.output.kafka.headers", "key:value headers on every message",
                        &S::headers),
          K::Choice<std::string>("shipper.output.kafka.sasl.mechanism", "SASL; unset: none",
                                 {{"PLAIN", "PLAIN"},
                                  {"SCRAM-SHA-256", "SCRAM-SHA-256"},
                                  {"SCRAM-SHA-512", "SCRAM-SHA-512"}},
                                 sasl(&S::Sasl::mechanism)),
          K::String("shipper.output.kafka.sasl.username", "SASL user", sasl(&S::Sasl::username)),
          K::String("shipper.output.kafka.sasl.password", "SASL password",
                    sasl(&S::Sasl::password)),
          K::Bool("shipper.output.kafka.ssl.enabled", "TLS to the brokers", ssl(&S::Ssl::enabled)),
          K::String("shipper.output.kafka.ssl.certificate_authorities",
                    "PEM CA file verifying the brokers; unset: the system's",
                    ssl(&S::Ssl::certificate_authorities)),
          K::String("shipper.output.kafka.ssl.certificate", "PEM client certificate (mTLS)",
                    ssl(&S::Ssl::certificate)),
          K::String("shipper.output.kafka.ssl.key", "PEM private key of ssl.certificate",
                    ssl(&S::Ssl::key)),
          K::Choice<std::string>(
              "shipper.output.kafka.ssl.verification_mode",
              "full: chain and host name; certificate: chain only; none",
              {{"full", "full"}, {"certificate", "certificate"}, {"none", "none"}},
              ssl(&S::Ssl::verification_mode)),
          K::StringList(kExtraKey,
                        "more librdkafka properties as name=value (those above are Shipper's)",
                        &S::librdkafka),
      },
      CollectKafkaMetrics);
}

}  // namespace shipper
