#include "shipper/config/config.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shipper/input/producer/producer_input.h"
#include "shipper/output/elasticsearch/elasticsearch_settings.h"
#include "shipper/output/file/file_output.h"
#include "shipper/output/kafka/kafka_settings.h"
#include "shipper/output/redis/redis_output.h"
#include "shipper/output/shipper/shipper_output.h"

namespace shipper {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Config> Parse(absl::string_view yaml, std::vector<std::string> overrides = {}) {
  return ParseConfig(yaml, "test.yml", overrides);
}

// The active output's settings.
const FileSettings& File(const Config& config) { return config.output_as<FileSettings>(); }
const RedisSettings& Redis(const Config& config) { return config.output_as<RedisSettings>(); }
const ShipperOutputSettings& Forward(const Config& config) {
  return config.output_as<ShipperOutputSettings>();
}
const ProducerSettings& Producer(const Config& config) {
  return config.input_as<ProducerSettings>("producer");
}

std::string Error(absl::string_view yaml, std::vector<std::string> overrides = {}) {
  absl::StatusOr<Config> config = Parse(yaml, std::move(overrides));
  EXPECT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

TEST(ConfigTest, DefaultsServeLoopbackIntoFile) {
  absl::StatusOr<Config> config = Parse("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.address, "127.0.0.1:50051");
  EXPECT_EQ(config->output, "file");
  EXPECT_EQ(File(*config).path, "./data");
  EXPECT_EQ(File(*config).filename, "shipper.ndjson");
  EXPECT_EQ(config->shutdown_timeout, absl::Seconds(30));
}

TEST(ConfigTest, NestedAndDottedKeysAreTheSame) {
  absl::StatusOr<Config> nested = Parse(R"(
shipper:
  server:
    server: unix:///tmp/s.sock
  queue:
    mem:
      events: 1000
      bytes: 2MiB
      flush:
        min_events: 100
        timeout: 20ms
      wait_strategy: sleeping
)");
  ASSERT_TRUE(nested.ok()) << nested.status();
  absl::StatusOr<Config> dotted = Parse(R"(
shipper.server.server: unix:///tmp/s.sock
shipper.queue.mem.events: 1000
shipper.queue.mem.bytes: 2MiB
shipper.queue:
  mem.flush.min_events: 100
  mem.flush.timeout: 20ms
  mem.wait_strategy: sleeping
)");
  ASSERT_TRUE(dotted.ok()) << dotted.status();
  for (const Config& c : {*nested, *dotted}) {
    EXPECT_EQ(c.server.address, "unix:///tmp/s.sock");
    EXPECT_EQ(c.queue.max_events, 1000u);
    EXPECT_EQ(c.queue.max_bytes, 2u << 20);
    EXPECT_EQ(c.queue.flush_min_events, 100u);
    EXPECT_EQ(c.queue.flush_timeout, absl::Milliseconds(20));
    EXPECT_EQ(c.queue.wait_strategy, queue::WaitStrategy::kSleeping);
  }
}

TEST(ConfigTest, OverridesApplyInOrderOnTopOfTheFile) {
  absl::StatusOr<Config> config =
      Parse("shipper.queue.mem.events: 10",
            {"shipper.queue.mem.events=20", "shipper.queue.mem.events=30",
             "shipper.output.discard.enabled=true", "shipper.cpu.rounding=ceil"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->queue.max_events, 30u);
  EXPECT_EQ(config->output, "discard");
  EXPECT_EQ(config->cpu.rounding, runtime::Rounding::kCeil);
}

TEST(ConfigTest, UnknownKeySuggestsTheClosest) {
  std::string error = Error("shipper:\n  queue.mem.event: 5\n");
  EXPECT_THAT(error, HasSubstr("test.yml:2"));
  EXPECT_THAT(error, HasSubstr("unknown config key 'shipper.queue.mem.event'"));
  EXPECT_THAT(error, HasSubstr("did you mean 'shipper.queue.mem.events'"));
  EXPECT_THAT(Error("", {"nonsense.key=1"}), HasSubstr("see --help"));
}

TEST(ConfigTest, WrongTypesNameTheKeyAndWhatWasExpected) {
  EXPECT_THAT(Error("shipper.queue.mem.events: many"),
              HasSubstr("'shipper.queue.mem.events': expected a whole number >= 1, got 'many'"));
  EXPECT_THAT(Error("shipper.queue.mem.events: 0"), HasSubstr("expected a whole number >= 1"));
  EXPECT_THAT(Error("shipper.queue.mem.flush.timeout: 5"),
              HasSubstr("expected a duration such as 5ms"));
  EXPECT_THAT(Error("shipper.output.file.enabled: maybe"), HasSubstr("expected true or false"));
  EXPECT_THAT(Error("shipper.queue.mem.wait_strategy: spin"),
              HasSubstr("expected one of blocking|phased|sleeping, got 'spin'"));
  EXPECT_THAT(Error("shipper.server.server: [a, b]"), HasSubstr("got a list"));
  EXPECT_THAT(Error("", {"shipper.queue.mem.events"}), HasSubstr("-E expects key=value"));
}

TEST(ConfigTest, TwoOutputsAreRefusedNamingBoth) {
  std::string error = Error(R"(
shipper.output.file.enabled: true
shipper.output.console.enabled: true
)");
  EXPECT_THAT(error, HasSubstr("exactly one output"));
  EXPECT_THAT(error, HasSubstr("file, console"));
}

TEST(ConfigTest, BadYamlSaysWhere) {
  EXPECT_THAT(Error("shipper: [unclosed"), HasSubstr("not valid YAML"));
  EXPECT_THAT(Error("- just\n- a list\n"), HasSubstr("expected a map"));
}

TEST(ConfigTest, MissingFileNamesThePath) {
  absl::StatusOr<Config> config = LoadConfig("/nonexistent/shipper.yml", {});
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("'/nonexistent/shipper.yml' cannot be read"));
}

TEST(ConfigTest, LoadsAFile) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/shipper.yml";
  std::ofstream(path) << "shipper.output.file.path: /tmp/out\n";
  absl::StatusOr<Config> config = LoadConfig(path, {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(File(*config).path, "/tmp/out");
}

TEST(ConfigTest, HealthListenerIsOffByDefaultAndTakesHostPort) {
  absl::StatusOr<Config> config = Parse("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.health_address, "");
  config =
      Parse("shipper.server:\n  server: unix:///run/s.sock\n  health.address: 0.0.0.0:50052\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.health_address, "0.0.0.0:50052");
  config =
      Parse("shipper.server.health.address: 0.0.0.0:50052", {"shipper.server.health.address=\"\""});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.health_address, "");
  EXPECT_THAT(Error("shipper.server.health.address: unix:///run/h.sock"),
              HasSubstr("'shipper.server.health.address': expected host:port or \"\""));
  EXPECT_THAT(Error("shipper.server.health.address: localhost"), HasSubstr("expected host:port"));
  EXPECT_THAT(ConfigKeysHelp(), HasSubstr("shipper.server.health.address = \"\""));
}

TEST(ConfigTest, HelpListsEveryKeyWithItsDefault) {
  std::string help = ConfigKeysHelp();
  EXPECT_THAT(help, HasSubstr("shipper.server.server = 127.0.0.1:50051"));
  EXPECT_THAT(help, HasSubstr("shipper.queue.mem.flush.timeout = 5ms"));
  EXPECT_THAT(help, HasSubstr("shipper.output.file.filename = shipper.ndjson"));
}

TEST(ConfigTest, OutputKeysHaveBeatsDefaults) {
  absl::StatusOr<Config> config = Parse("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(File(*config).rotate_every_kb, 10240u);
  EXPECT_EQ(File(*config).number_of_files, 7u);
  EXPECT_EQ(File(*config).permissions, 0600u);
  EXPECT_EQ(File(*config).fsync, FsyncPolicy::kBatch);
  absl::StatusOr<Config> redis = Parse("shipper.output.redis.enabled: true");
  ASSERT_TRUE(redis.ok()) << redis.status();
  EXPECT_EQ(Redis(*redis).hosts, std::vector<std::string>{"127.0.0.1:6379"});
  EXPECT_EQ(Redis(*redis).datatype, RedisDatatype::kList);
  EXPECT_EQ(Redis(*redis).timeout, absl::Seconds(5));
  EXPECT_EQ(config->backoff_init, absl::Seconds(1));
  EXPECT_EQ(config->backoff_max, absl::Seconds(60));
  EXPECT_EQ(config->dead_letter_path, "");
}

TEST(ConfigTest, FileOutputRotationPermissionsAndFsync) {
  absl::StatusOr<Config> config = Parse(R"(
shipper.output.file:
  rotate_every_kb: 64
  number_of_files: 3
  permissions: 0640
  fsync: never
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(File(*config).rotate_every_kb, 64u);
  EXPECT_EQ(File(*config).number_of_files, 3u);
  EXPECT_EQ(File(*config).permissions, 0640u);
  EXPECT_EQ(File(*config).fsync, FsyncPolicy::kNever);
  EXPECT_THAT(Error("shipper.output.file.permissions: 0800"), HasSubstr("octal permissions"));
  EXPECT_THAT(Error("shipper.output.file.permissions: 07777"), HasSubstr("octal permissions"));
  EXPECT_THAT(Error("shipper.output.file.number_of_files: 1"),
              HasSubstr("expected a whole number >= 2"));
  EXPECT_THAT(Error("shipper.output.file.fsync: sometimes"),
              HasSubstr("expected one of batch|never, got 'sometimes'"));
}

TEST(ConfigTest, RedisOutputKeys) {
  absl::StatusOr<Config> config = Parse(R"(
shipper.output.redis:
  enabled: true
  hosts: ["10.0.0.1:6379", "10.0.0.2:6380"]
  key: "logs-%{[data_stream.dataset]}"
  datatype: stream
  db: 3
  password: secret
  timeout: 2s
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->output, "redis");
  EXPECT_EQ(Redis(*config).hosts, (std::vector<std::string>{"10.0.0.1:6379", "10.0.0.2:6380"}));
  EXPECT_EQ(Redis(*config).key, "logs-%{[data_stream.dataset]}");
  EXPECT_EQ(Redis(*config).datatype, RedisDatatype::kStream);
  EXPECT_EQ(Redis(*config).db, 3u);
  EXPECT_EQ(Redis(*config).password, "secret");
  EXPECT_EQ(Redis(*config).timeout, absl::Seconds(2));
  config = Parse("", {"shipper.output.redis.enabled=true", "shipper.output.redis.hosts=a:1, b:2",
                      "shipper.output.redis.datatype=channel"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(Redis(*config).hosts, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(Redis(*config).datatype, RedisDatatype::kChannel);
  EXPECT_THAT(Error("shipper.output.redis.hosts: [a, {b: c}]"), HasSubstr("a list of non-empty"));
  EXPECT_THAT(Error("shipper.output.redis.hosts: 'a,,b'"), HasSubstr("a list of non-empty"));
  EXPECT_THAT(Error("shipper.output.redis.datatype: set"), HasSubstr("list|channel|stream"));
}

// A list key gets its items as YAML gives them, from a file and from -E alike: an item may hold
// a comma.
TEST(ConfigTest, ListItemsKeepTheirCommas) {
  const std::vector<std::string> properties = {"ssl.cipher.suites=A,B", "linger.ms=5"};
  const auto kafka = [](const absl::StatusOr<Config>& config) {
    EXPECT_TRUE(config.ok()) << config.status();
    return config.ok() ? config->output_as<KafkaSettings>().librdkafka : std::vector<std::string>{};
  };
  const std::string enabled = "shipper.output.kafka: {enabled: true, topic: events}\n";
  EXPECT_EQ(
      kafka(Parse(enabled +
                  "shipper.output.kafka.librdkafka: [\"ssl.cipher.suites=A,B\", linger.ms=5]")),
      properties);
  EXPECT_EQ(
      kafka(Parse(enabled,
                  {R"(shipper.output.kafka.librdkafka=["ssl.cipher.suites=A,B", linger.ms=5])"})),
      properties);
  // One scalar is one item.
  EXPECT_EQ(kafka(Parse(enabled, {"shipper.output.kafka.librdkafka=ssl.cipher.suites=A,B"})),
            std::vector<std::string>{"ssl.cipher.suites=A,B"});

  absl::StatusOr<Config> config =
      Parse("shipper.output.elasticsearch: {enabled: true, headers: ['X-Tags: a, b', 'X-A: 1']}");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->output_as<ElasticsearchSettings>().headers,
            (std::vector<std::string>{"X-Tags: a, b", "X-A: 1"}));
  config = Parse("", {"shipper.output.elasticsearch.enabled=true",
                      R"(shipper.output.elasticsearch.headers=["X-Tags: a, b", "X-A: 1"])"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->output_as<ElasticsearchSettings>().headers,
            (std::vector<std::string>{"X-Tags: a, b", "X-A: 1"}));
  EXPECT_THAT(Error("shipper.output.kafka.headers: [a:1, '']"), HasSubstr("a list of non-empty"));
}

// Every key that names an address takes the same forms and refuses the same mistakes in the same
// words (address.h).
TEST(ConfigTest, EveryAddressKeyFollowsTheSameRules) {
  const std::vector<std::vector<std::string>> keys = {
      {"shipper.server.server="},
      {"shipper.server.health.address="},
      {"shipper.output.shipper.enabled=true", "shipper.output.shipper.server="},
      {"shipper.output.kafka.enabled=true", "shipper.output.kafka.topic=t",
       "shipper.output.kafka.hosts="},
      {"shipper.output.redis.enabled=true", "shipper.output.redis.hosts="},
  };
  const auto with = [](std::vector<std::string> overrides, const std::string& address) {
    overrides.back() += address;
    return overrides;
  };
  for (const std::vector<std::string>& key : keys) {
    const std::string name = key.back().substr(0, key.back().size() - 1);
    EXPECT_TRUE(Parse("", with(key, "\"[::1]:5000\"")).ok()) << name;  // quoted: YAML's [ is a list
    EXPECT_TRUE(Parse("", with(key, "host-1.example.com:5000")).ok()) << name;
    EXPECT_THAT(Error("", with(key, "::1:5000")), HasSubstr("goes in brackets: [::1]:port"))
        << name;
    EXPECT_THAT(Error("", with(key, "a b:5000")), HasSubstr("'a b' is not a host name")) << name;
    EXPECT_THAT(Error("", with(key, "host:70000")), HasSubstr("to 65535")) << name;
  }
  // What each allows beside: Redis' default port, the listeners' empty host and port 0, unix
  // sockets where Shipper can use one.
  ASSERT_TRUE(Parse("", with(keys[4], "redis")).ok());
  EXPECT_THAT(Error("", with(keys[3], "kafka")),
              HasSubstr("shipper.output.kafka.hosts: 'kafka' is not host:port: no port"));
  EXPECT_THAT(Error("", with(keys[2], "aggregator")),
              HasSubstr("'aggregator' is not host:port or unix:///path: no port"));
  EXPECT_TRUE(Parse("", with(keys[2], "unix:///run/aggregator.sock")).ok());
  EXPECT_TRUE(Parse("", with(keys[0], ":0")).ok());
  EXPECT_TRUE(Parse("", with(keys[1], ":0")).ok());
  EXPECT_THAT(Error("", with(keys[3], "kafka:0")), HasSubstr("from 1 to 65535"));
  EXPECT_THAT(Error("", with(keys[4], "unix:///run/redis.sock")),
              HasSubstr("a unix socket is not allowed here"));
}

TEST(ConfigTest, ShipperOutputNeedsAServer) {
  absl::StatusOr<Config> config =
      Parse("shipper.output.shipper: {enabled: true, server: 'aggregator:50051', timeout: 3s}");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->output, "shipper");
  EXPECT_EQ(Forward(*config).server, "aggregator:50051");
  EXPECT_EQ(Forward(*config).timeout, absl::Seconds(3));
  EXPECT_THAT(Error("shipper.output.shipper.enabled: true"),
              HasSubstr("needs shipper.output.shipper.server"));
  EXPECT_THAT(Error("shipper.output.shipper.timeout: 0"), HasSubstr("must be above 0"));
  EXPECT_THAT(Error("shipper.output.redis.timeout: 0"), HasSubstr("must be above 0"));
}

TEST(ConfigTest, BackoffAndDeadLetterPath) {
  absl::StatusOr<Config> config =
      Parse("shipper.output.backoff: {init: 50ms, max: 2s}\nshipper.dead_letter.path: /tmp/dl");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->backoff_init, absl::Milliseconds(50));
  EXPECT_EQ(config->backoff_max, absl::Seconds(2));
  EXPECT_EQ(config->dead_letter_path, "/tmp/dl");
  EXPECT_THAT(Error("shipper.output.backoff: {init: 5s, max: 1s}"),
              HasSubstr("shipper.output.backoff.max (1s) is below shipper.output.backoff.init"));
}

TEST(ConfigTest, TwoOfTheNewOutputsAreRefusedNamingBoth) {
  std::string error =
      Error("", {"shipper.output.redis.enabled=true", "shipper.output.shipper.enabled=true",
                 "shipper.output.shipper.server=x:1"});
  EXPECT_THAT(error, HasSubstr("exactly one output"));
  EXPECT_THAT(error, HasSubstr("redis, shipper"));
}

TEST(ConfigTest, ServerLimitsDefaultAndParse) {
  absl::StatusOr<Config> defaults = Parse("");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->server.limits.max_message_size, 64u << 20);
  EXPECT_EQ(defaults->server.limits.max_receive_memory, 128u << 20);
  EXPECT_EQ(Producer(*defaults).limits.max_events_per_request, 65536u);
  EXPECT_EQ(Producer(*defaults).limits.max_nesting_depth, 64u);
  EXPECT_EQ(defaults->server.limits.max_concurrent_streams, 100u);
  EXPECT_EQ(defaults->server.socket_mode, 0600u);
  absl::StatusOr<Config> config = Parse(R"(
shipper.server:
  max_message_size: 4MiB
  max_receive_memory: 16MiB
  max_events_per_request: 10
  max_nesting_depth: 8
  max_concurrent_streams: 3
  socket_mode: "0660"
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.limits.max_message_size, 4u << 20);
  EXPECT_EQ(config->server.limits.max_receive_memory, 16u << 20);
  EXPECT_EQ(Producer(*config).limits.max_events_per_request, 10u);
  EXPECT_EQ(Producer(*config).limits.max_nesting_depth, 8u);
  EXPECT_EQ(config->server.limits.max_concurrent_streams, 3u);
  EXPECT_EQ(config->server.socket_mode, 0660u);
  EXPECT_THAT(Error("shipper.server.max_nesting_depth: 0"), HasSubstr("expected a whole number"));
  EXPECT_THAT(Error("shipper.server.max_events_per_request: -1"),
              HasSubstr("'shipper.server.max_events_per_request'"));
  EXPECT_THAT(Error("shipper.server.max_concurrent_streams: 0"),
              HasSubstr("'shipper.server.max_concurrent_streams'"));
  EXPECT_THAT(Error("shipper.server.max_message_size: 1TB"),
              HasSubstr("'shipper.server.max_message_size'"));
  EXPECT_THAT(Error("shipper.server.socket_mode: rw"), HasSubstr("octal permissions"));
  EXPECT_THAT(Error("shipper.server.max_message_size: 2GiB"), HasSubstr("below 2GiB"));
  EXPECT_THAT(Error("shipper.server.max_message_size: 512MiB"),
              HasSubstr("shipper.server.max_receive_memory (134217728 bytes) must be at least "
                        "shipper.server.max_message_size (536870912 bytes)"));
  EXPECT_TRUE(
      Parse("shipper.server:\n  max_message_size: 512MiB\n  max_receive_memory: 1GiB").ok());
  EXPECT_THAT(Error("shipper.server.max_nesting_depth: 1001"),
              HasSubstr("shipper.server.max_nesting_depth must be at most 1000"));
  EXPECT_TRUE(Parse("shipper.server.max_nesting_depth: 1000").ok());
}

// The disk queue trusts frame lengths up to the largest event an input hands it: for the Producer
// API, a whole request at most.
TEST(ConfigTest, TheDiskQueuesLongestFrameIsTheLargestEventTheInputsAccept) {
  absl::StatusOr<Config> defaults = Parse("");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->disk.max_event_bytes, 64u << 20);
  absl::StatusOr<Config> config = Parse("shipper.server.max_message_size: 4MiB");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->disk.max_event_bytes, 4u << 20);
}

TEST(ConfigTest, ShipperOutputSsl) {
  absl::StatusOr<Config> config = Parse(R"(
shipper.output.shipper:
  enabled: true
  server: aggregator:50051
  ssl:
    enabled: true
    certificate_authorities: /ca.crt
    certificate: /client.crt
    key: /client.key
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(Forward(*config).ssl.enabled);
  EXPECT_EQ(Forward(*config).ssl.certificate_authorities, std::vector<std::string>{"/ca.crt"});
  EXPECT_EQ(Forward(*config).ssl.certificate, "/client.crt");
  EXPECT_EQ(Forward(*config).ssl.key, "/client.key");
  EXPECT_FALSE(Forward(*Parse("", {"shipper.output.shipper.enabled=true",
                                   "shipper.output.shipper.server=a:1"}))
                   .ssl.enabled);
  EXPECT_THAT(Error("shipper.output.shipper.ssl.certificate_authorities: /ca.crt"),
              HasSubstr("set shipper.output.shipper.ssl.enabled: true"));
  EXPECT_THAT(Error("shipper.output.shipper.ssl:\n  enabled: true\n  key: /k"),
              HasSubstr("set both or neither"));
}

TEST(ConfigTest, SslKeys) {
  absl::StatusOr<Config> defaults = Parse("");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE(defaults->server.ssl.certificate.empty());
  EXPECT_EQ(defaults->server.ssl.client_authentication, ClientAuthentication::kNone);
  absl::StatusOr<Config> config = Parse(R"(
shipper.server.ssl:
  certificate: /etc/shipper/server.crt
  key: /etc/shipper/server.key
  certificate_authorities: /etc/shipper/ca.crt
  client_authentication: required
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.ssl.certificate, "/etc/shipper/server.crt");
  EXPECT_EQ(config->server.ssl.key, "/etc/shipper/server.key");
  EXPECT_EQ(config->server.ssl.certificate_authorities,
            std::vector<std::string>{"/etc/shipper/ca.crt"});
  EXPECT_EQ(config->server.ssl.client_authentication, ClientAuthentication::kRequired);
  absl::StatusOr<Config> optional =
      Parse("", {"shipper.server.ssl.certificate=/c.crt", "shipper.server.ssl.key=/c.key",
                 "shipper.server.ssl.certificate_authorities=/ca.crt",
                 "shipper.server.ssl.client_authentication=optional"});
  ASSERT_TRUE(optional.ok()) << optional.status();
  EXPECT_EQ(optional->server.ssl.client_authentication, ClientAuthentication::kOptional);
  EXPECT_THAT(Error("shipper.server.ssl.client_authentication: yes"),
              HasSubstr("expected one of none|optional|required"));
}

TEST(ConfigTest, HttpEndpointAndMetricsPeriod) {
  absl::StatusOr<Config> defaults = Parse("");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE(defaults->http.enabled);
  EXPECT_EQ(defaults->http.host, "127.0.0.1");
  EXPECT_EQ(defaults->http.port, 8282);
  EXPECT_TRUE(defaults->metrics_log.enabled);
  EXPECT_EQ(defaults->metrics_log.period, absl::Seconds(30));

  absl::StatusOr<Config> config =
      Parse("http: {enabled: false, host: 0.0.0.0, port: 0}\nlogging.metrics.period: 0");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->http.enabled);
  EXPECT_EQ(config->http.host, "0.0.0.0");
  EXPECT_EQ(config->http.port, 0);
  EXPECT_EQ(config->metrics_log.period, absl::ZeroDuration());
  EXPECT_TRUE(config->warnings.empty());

  EXPECT_THAT(Error("http.port: 65536"),
              HasSubstr("'http.port': expected a port number from 0 to 65535"));
  EXPECT_THAT(Error("logging.metrics.period: often"), HasSubstr("logging.metrics.period"));
  EXPECT_FALSE(Parse("logging.metrics.enabled: false")->metrics_log.enabled);
}

TEST(ConfigTest, LastReleasesSpellingsStillWorkWithAWarning) {
  absl::StatusOr<Config> config =
      Parse("shipper.http: {enabled: false, host: 0.0.0.0, port: 0}\nshipper.metrics.period: 0");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->http.enabled);
  EXPECT_EQ(config->http.host, "0.0.0.0");
  EXPECT_EQ(config->http.port, 0);
  EXPECT_EQ(config->metrics_log.period, absl::ZeroDuration());
  ASSERT_EQ(config->warnings.size(), 4u);
  EXPECT_THAT(config->warnings[0],
              HasSubstr("shipper.http.enabled is deprecated: write http.enabled"));
  EXPECT_THAT(config->warnings[3],
              HasSubstr("shipper.metrics.period is deprecated: write logging.metrics.period"));
  config = Parse("", {"shipper.http.port=9000"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->http.port, 9000);
  EXPECT_THAT(config->warnings, ::testing::ElementsAre(HasSubstr("write http.port")));
  // Its errors name the key to write now.
  EXPECT_THAT(Error("shipper.http.port: 65536"), HasSubstr("'http.port': expected a port"));
}

TEST(ConfigTest, TheOutputBatchSizeHasANameOfItsOwnAndTheOldOneStillWorks) {
  absl::StatusOr<Config> config = Parse("shipper.output.batch_max_events: 100");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->batch_max_events, 100u);
  EXPECT_TRUE(config->warnings.empty());
  // The old name was also the Elasticsearch output's key for events per bulk request.
  config = Parse("shipper.output.bulk_max_size: 200");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->batch_max_events, 200u);
  EXPECT_THAT(
      config->warnings,
      ::testing::ElementsAre(HasSubstr(
          "shipper.output.bulk_max_size is deprecated: write shipper.output.batch_max_events")));
  EXPECT_THAT(Error("shipper.output.bulk_max_size: 0"),
              HasSubstr("'shipper.output.batch_max_events': expected a whole number >= 1"));
}

TEST(ConfigTest, TheArchivedShippersOwnKeys) {
  // Its sample config, verbatim.
  absl::StatusOr<Config> config = LoadConfig("tests/config/elastic-agent-shipper.yml", {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->output, "console");
  EXPECT_EQ(config->server.address, "unix:///tmp/grpc.socket");
  EXPECT_EQ(config->http.host, "localhost");
  EXPECT_FALSE(Producer(*config).limits.strict_mode);
  EXPECT_EQ(config->queue.max_events, queue::MemoryOptions().max_events);
  EXPECT_THAT(config->notes, ::testing::ElementsAre(HasSubstr("/metrics serves")));
  EXPECT_TRUE(Parse("monitoring.enabled: true")->notes.size() == 1);
  EXPECT_TRUE(Producer(*Parse("shipper.strict_mode: true")).limits.strict_mode);

  EXPECT_THAT(Error("type: kafka\nshipper.output.console.enabled: true"),
              HasSubstr("type is 'kafka' but the enabled output is 'console'"));
  EXPECT_THAT(Error("type: console"), HasSubstr("the enabled output is 'file'"));
}

TEST(ConfigTest, CertificateAuthoritiesTakeAListOrOnePath) {
  absl::StatusOr<Config> config =
      Parse("shipper.server.ssl.certificate_authorities: [/a.crt, /b.crt]");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.ssl.certificate_authorities,
            (std::vector<std::string>{"/a.crt", "/b.crt"}));
  config = Parse(
      "shipper.output.shipper: {enabled: true, server: a:1, ssl: {enabled: true, "
      "certificate_authorities: [/a.crt, /b.crt]}}");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(Forward(*config).ssl.certificate_authorities,
            (std::vector<std::string>{"/a.crt", "/b.crt"}));
}

std::string TestPath(absl::string_view name) {
  return absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
}

// Every output's `ssl` block has the same keys, takes them the same way and refuses the same
// mistakes in the same words (tls.h).
TEST(ConfigTest, EveryClientTlsBlockIsTheSame) {
  const std::vector<std::vector<std::string>> outputs = {
      {"shipper.output.shipper.enabled=true", "shipper.output.shipper.server=a:1"},
      {"shipper.output.kafka.enabled=true", "shipper.output.kafka.topic=t"},
      {"shipper.output.elasticsearch.enabled=true"},
  };
  for (const std::vector<std::string>& output : outputs) {
    const std::string name = output[0].substr(0, output[0].find(".enabled"));
    const std::string ssl = name + ".ssl.";
    std::vector<std::string> overrides = output;
    for (const char* item : {"enabled=true", "certificate_authorities=[/ca.crt]",
                             "certificate=/c.crt", "key=/c.key", "verification_mode=certificate"}) {
      overrides.push_back(ssl + item);
    }
    EXPECT_TRUE(Parse("", overrides).ok()) << Parse("", overrides).status();
    overrides = output;
    overrides.push_back(ssl + "certificate=/c.crt");
    EXPECT_THAT(Error("", overrides),
                HasSubstr(absl::StrCat(ssl, "certificate and ", ssl,
                                       "key go together (the client's own, for mTLS)")))
        << name;
    overrides.back() = ssl + "enabled=false";
    overrides.push_back(ssl + "certificate_authorities=/ca.crt");
    EXPECT_THAT(Error("", overrides), HasSubstr(absl::StrCat("config: ", name,
                                                             ".ssl files are set but TLS is off: "
                                                             "set ",
                                                             ssl, "enabled: true")))
        << name;
  }
  // What one output adds: librdkafka reads one CA file; Elasticsearch's https:// hosts need TLS.
  EXPECT_THAT(Error("", {"shipper.output.kafka.enabled=true", "shipper.output.kafka.topic=t",
                         "shipper.output.kafka.ssl.enabled=true",
                         "shipper.output.kafka.ssl.certificate_authorities=[/a.crt, /b.crt]"}),
              HasSubstr("librdkafka takes one CA file"));
  EXPECT_THAT(Error("", {"shipper.output.elasticsearch.enabled=true",
                         "shipper.output.elasticsearch.hosts=https://es:9200",
                         "shipper.output.elasticsearch.ssl.enabled=false"}),
              HasSubstr("'https://es:9200' needs TLS, but shipper.output.elasticsearch.ssl.enabled "
                        "is false"));
}

// What start refuses of shipper.server.ssl: the settings that go together (ParseConfig), the
// files (Preflight).
TEST(ConfigTest, StartNamesWhatTlsSettingsMiss) {
  const std::string cert = TestPath("cert.pem"), key = TestPath("key.pem");
  std::ofstream(cert) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  std::ofstream(key) << "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
  auto message = [](const std::vector<std::string>& ssl) {
    std::vector<std::string> overrides;
    for (const std::string& item : ssl) overrides.push_back("shipper.server.ssl." + item);
    absl::StatusOr<Config> config = Parse("", overrides);
    absl::Status status = config.ok() ? Preflight(*config) : config.status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    return std::string(status.message());
  };
  auto ok = [](const std::vector<std::string>& ssl) {
    std::vector<std::string> overrides;
    for (const std::string& item : ssl) overrides.push_back("shipper.server.ssl." + item);
    absl::StatusOr<Config> config = Parse("", overrides);
    return config.ok() && Preflight(*config).ok();
  };
  EXPECT_THAT(message({"key=" + key}), HasSubstr("need shipper.server.ssl.certificate"));
  EXPECT_THAT(message({"certificate=" + cert}), HasSubstr("needs shipper.server.ssl.key"));
  EXPECT_THAT(message({"certificate=" + cert, "key=" + TestPath("missing.pem")}),
              HasSubstr("'shipper.server.ssl.key': cannot read"));
  EXPECT_THAT(message({"certificate=" + cert, "key=" + cert}),
              HasSubstr("is not a PEM file with a PRIVATE KEY"));
  EXPECT_TRUE(ok({"certificate=" + cert, "key=" + key}));
  EXPECT_THAT(message({"certificate=" + cert, "key=" + key, "client_authentication=required"}),
              HasSubstr("set it"));
  EXPECT_THAT(message({"certificate=" + cert, "key=" + key, "client_authentication=required",
                       "certificate_authorities=" + key}),
              HasSubstr("'shipper.server.ssl.certificate_authorities'"));
  EXPECT_TRUE(ok({"certificate=" + cert, "key=" + key, "client_authentication=required",
                  "certificate_authorities=" + cert}));
}

}  // namespace
}  // namespace shipper
