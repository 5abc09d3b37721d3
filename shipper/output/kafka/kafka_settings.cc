#include "shipper/output/kafka/kafka_settings.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "shipper/config/address.h"

namespace shipper {
namespace {

constexpr char kTopicKey[] = "shipper.output.kafka.topic";
constexpr char kKeyKey[] = "shipper.output.kafka.key";
constexpr char kExtraKey[] = "shipper.output.kafka.librdkafka";

const TlsBlock& Tls() {
  static const TlsBlock* block =
      new TlsBlock("shipper.output.kafka.ssl", TlsSide::kClient, "the brokers");
  return *block;
}

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

// What a message may take beside max_message_bytes: key, headers and framing.
constexpr size_t kMessageHeadroom = 65536;

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
      {k + "max_message_bytes", "message.max.bytes",
       absl::StrCat(s.max_message_bytes + kMessageHeadroom)},
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
      p.push_back({k + "ssl.certificate_authorities", "ssl.ca.location",
                   s.ssl.certificate_authorities.front()});
    }
    if (!s.ssl.certificate.empty()) {
      p.push_back({k + "ssl.certificate", "ssl.certificate.location", s.ssl.certificate});
      p.push_back({k + "ssl.key", "ssl.key.location", s.ssl.key});
    }
    p.push_back({k + "ssl.verification_mode", "enable.ssl.certificate.verification",
                 s.ssl.verification_mode == VerificationMode::kNone ? "false" : "true"});
    p.push_back({k + "ssl.verification_mode", "ssl.endpoint.identification.algorithm",
                 s.ssl.verification_mode == VerificationMode::kFull ? "https" : "none"});
  }
  return p;
}

// Other names of properties Shipper sets or fixes, which would set them as well (librdkafka 2.0.2's
// CONFIGURATION.md lists each alias). Topic properties may also carry a "topic." prefix.
constexpr std::pair<const char*, const char*> kAliases[] = {
    {"metadata.broker.list", "bootstrap.servers"},
    {"request.required.acks", "acks"},
    {"compression.type", "compression.codec"},
    {"delivery.timeout.ms", "message.timeout.ms"},
    {"sasl.mechanism", "sasl.mechanisms"},
    {"max.in.flight", "max.in.flight.requests.per.connection"},
    {"retries", "message.send.max.retries"},
};

// Properties no key sets that the extras may not set either, each because it would weaken
// at-least-once delivery or the order within a partition, or keep a Write() from ever ending
// (what librdkafka 2.0.2's CONFIGURATION.md says of each). Whatever librdkafka 2.0.2 documents
// beside these and Shipper's own properties weakens neither: batching and buffers (but see
// queue.buffering.max.kbytes in Validate()), timeouts of requests and connections, metadata,
// statistics, logging, TLS and SASL details.
constexpr std::pair<const char*, const char*> kFixed[] = {
    {"max.in.flight.requests.per.connection",
     "one produce request in flight per broker: with more, librdkafka takes a request that failed "
     "uncertainly as written once a later one to the partition succeeds, which lost events in "
     "Shipper's tests (README: Kafka output)"},
    {"message.send.max.retries",
     "librdkafka retries a failed request, in order, until shipper.output.kafka.timeout, and "
     "Shipper then after shipper.output.backoff.*; fewer retries would make them Shipper's, which "
     "reorder (and the idempotent producer refuses 0)"},
    {"queuing.strategy", "lifo reorders messages (and the idempotent producer refuses it)"},
    {"enable.gapless.guarantee",
     "Shipper retries what failed itself; this makes a gap a fatal error, each replacing the "
     "producer"},
    {"delivery.report.only.error",
     "an event counts as written on its delivery report: without reports of successes no "
     "Write() would end"},
    {"dr_cb", "an event counts as written on the delivery report Shipper's callback serves"},
    {"dr_msg_cb", "an event counts as written on the delivery report Shipper's callback serves"},
    {"enabled_events",
     "Shipper serves delivery reports, errors and statistics through its callbacks; events would "
     "take them away"},
    {"transactional.id",
     "Shipper's producer is idempotent, not transactional: outside a transaction it could "
     "produce nothing"},
    {"socket.max.fails",
     "librdkafka's default of 1 drops a connection after a request timed out; its documentation "
     "warns that other values can desynchronize client and broker"},
};

// Why `extra`, a property of shipper.output.kafka.librdkafka, may not be set with settings `s`;
// nullopt when it may.
std::optional<std::string> Refusal(const KafkaSettings& s, const Property& extra) {
  // librdkafka takes topic properties with a "topic." prefix, too.
  std::string name(absl::StripPrefix(extra.name, "topic."));
  for (const auto& [alias, canonical] : kAliases) {
    if (name == alias) name = canonical;
  }
  std::vector<Property> own = OwnProperties(s);
  // round_robin sets a partitioner callback instead, which the property would not change; it is
  // the key's to choose all the same.
  own.push_back({"shipper.output.kafka.partition", "partitioner", ""});
  for (const Property& p : own) {
    if (p.name == name) return absl::StrCat(extra.name, " is set by ", p.key);
  }
  for (const auto& [fixed, why] : kFixed) {
    if (name == fixed) return absl::StrCat(extra.name, " is Shipper's to set: ", why);
  }
  // librdkafka refuses a message larger than its queue as the queue being full, for ever.
  size_t kbytes;
  if (name == "queue.buffering.max.kbytes" && absl::SimpleAtoi(extra.value, &kbytes) &&
      kbytes < (s.max_message_bytes + kMessageHeadroom + 1023) / 1024) {
    return absl::StrCat(extra.name, "=", extra.value,
                        " holds less than one message of shipper.output.kafka.max_message_bytes (",
                        s.max_message_bytes, " bytes, and ", kMessageHeadroom / 1024,
                        " KiB for key and headers): such a message would never be queued");
  }
  return std::nullopt;
}

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

}  // namespace

KafkaConf NewKafkaConf(const KafkaSettings& s, Problems* problems) {
  KafkaConf conf(rd_kafka_conf_new());
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

void KafkaSettings::Validate(Problems* problems) const {
  const std::string k = "shipper.output.kafka.";
  if (hosts.empty()) problems->Add(k + "hosts: name at least one broker as host:port");
  for (const std::string& host : hosts) problems->Add(CheckAddress(k + "hosts", host, {}));
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
  Tls().Validate(ssl, problems);
  if (ssl.certificate_authorities.size() > 1) {
    problems->Add(k +
                  "ssl.certificate_authorities: librdkafka takes one CA file: put the "
                  "certificates into one");
  }
  for (const std::string& item : librdkafka) {
    std::optional<Property> extra = ParseExtra(item);
    if (!extra) {
      problems->Add(absl::StrCat(kExtraKey, ": '", item, "' is not name=value"));
      continue;
    }
    if (std::optional<std::string> refusal = Refusal(*this, *extra)) {
      problems->Add(absl::StrCat(kExtraKey, ": ", *std::move(refusal)));
    }
  }
}

void KafkaSettings::Preflight(Problems* problems) const {
  NewKafkaConf(*this, problems);
  Tls().Preflight(ssl, problems);
}

std::string KafkaSettings::Destination() const {
  return absl::StrCat("kafka ", absl::StrJoin(hosts, ","), " topic ", topic);
}

FieldFormat KafkaSettings::TopicFormat() const { return *FieldFormat::Parse(topic, kTopicKey); }

std::optional<FieldFormat> KafkaSettings::KeyFormat() const {
  if (key.empty()) return std::nullopt;
  return *FieldFormat::Parse(key, kKeyKey);
}

std::vector<Key<KafkaSettings>> KafkaKeys() {
  using K = KeysOf<KafkaSettings>;
  using S = KafkaSettings;
  const auto sasl = [](auto member) {
    return [member](S & s) -> auto& { return s.sasl.*member; };
  };
  const auto integer = [](int min, int max) {
    return [min, max](const std::string& s) -> std::optional<int> {
      int v;
      if (!absl::SimpleAtoi(s, &v) || v < min || v > max) return std::nullopt;
      return v;
    };
  };
  const auto show_int = [](const int& v) { return absl::StrCat(v); };
  std::vector<Key<S>> keys = {
      K::CommaList("shipper.output.kafka.hosts", "bootstrap brokers as host:port", &S::hosts),
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
      K::String("shipper.output.kafka.sasl.password", "SASL password", sasl(&S::Sasl::password)),
      K::StringList(kExtraKey,
                    "more librdkafka properties as name=value (those above are Shipper's)",
                    &S::librdkafka),
  };
  for (Key<S>& key : Tls().KeysWithin<S>(&S::ssl)) keys.push_back(std::move(key));
  return keys;
}

}  // namespace shipper
