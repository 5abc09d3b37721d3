#include "shipper/output/redis/redis_output.h"

#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hiredis/hiredis.h"
#include "runtime/mutex.h"
#include "shipper/config/address.h"
#include "shipper/event/field_format.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/output/batch_json.h"

namespace shipper {
namespace {

constexpr char kHostsKey[] = "shipper.output.redis.hosts";
// A host without a port is Redis' own, as Beats takes it.
constexpr AddressRules kRedisAddress = {/*unix_socket=*/false, /*listen=*/false,
                                        /*default_port=*/6379};

struct Host {
  std::string name;  // as configured, for messages
  Address address;
};

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Connection = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// What a failed connection or command says, for logs.
std::string ConnectionError(const redisContext* c, const Host& host) {
  return absl::StrCat("redis ", host.name, ": ", c != nullptr && c->err ? c->errstr : "no reply");
}

class RedisOutput final : public Output {
 public:
  RedisOutput(const RedisSettings& config, std::vector<Host> hosts, FieldFormat key)
      : config_(config), hosts_(std::move(hosts)), key_(std::move(key)) {}

  absl::Status Write(const Events& events, Outcome* outcome) override {
    thread_local BatchJson json;
    json.Encode(events);
    size_t host = 0;
    absl::StatusOr<Connection> connection = Acquire(&host);
    if (!connection.ok()) return connection.status();
    redisContext* c = connection->get();

    std::vector<size_t> sent;  // the events whose commands are pipelined
    sent.reserve(events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      absl::StatusOr<std::string> key = key_.Format(events.bytes(i));
      if (!key.ok()) {
        outcome->rejected.push_back({i, std::string(key.status().message())});
        continue;
      }
      const absl::string_view doc = json.document(i);
      const char* argv[5];
      size_t argvlen[5];
      int argc = 0;
      auto arg = [&](absl::string_view s) {
        argv[argc] = s.data();
        argvlen[argc++] = s.size();
      };
      switch (config_.datatype) {
        case RedisDatatype::kList:
          arg("RPUSH");
          break;
        case RedisDatatype::kChannel:
          arg("PUBLISH");
          break;
        case RedisDatatype::kStream:
          arg("XADD");
          break;
      }
      arg(*key);
      if (config_.datatype == RedisDatatype::kStream) {
        arg("*");
        arg("event");
      }
      arg(doc);
      if (redisAppendCommandArgv(c, argc, argv, argvlen) != REDIS_OK) {
        return absl::UnavailableError(ConnectionError(c, hosts_[host]));
      }
      sent.push_back(i);
    }

    size_t heard = 0, unheard = 0;  // PUBLISHes that reached a subscriber, and none
    for (size_t i : sent) {
      void* raw = nullptr;
      if (redisGetReply(c, &raw) != REDIS_OK) {
        return absl::UnavailableError(ConnectionError(c, hosts_[host]));
      }
      Reply reply(static_cast<redisReply*>(raw));
      // PUBLISH answers how many subscribers got the message.
      if (reply->type == REDIS_REPLY_INTEGER) ++(reply->integer > 0 ? heard : unheard);
      if (reply->type != REDIS_REPLY_ERROR) continue;
      absl::string_view error(reply->str, reply->len);
      const std::string reason = absl::StrCat("redis ", hosts_[host].name, ": ", error);
      if (absl::StartsWith(error, "WRONGTYPE")) {
        outcome->rejected.push_back({i, reason});
      } else {
        // Only this command is retried (OOM, LOADING, ...): the others were written.
        outcome->Fail(i, reason);
      }
    }
    // Every reply was read: the connection is in step and may serve the next batch.
    Release(*std::move(connection), host);
    if (config_.datatype == RedisDatatype::kChannel) {
      // Only commands that succeeded answer a count; a retried one is counted when it does.
      unheard_.Add(unheard);
      published_.Add(heard);
    }
    std::sort(outcome->rejected.begin(), outcome->rejected.end(),
              [](const Rejection& a, const Rejection& b) { return a.event < b.event; });
    return absl::OkStatus();
  }

 private:
  // An idle connection, or a new one to the next host that answers (stored in *host).
  absl::StatusOr<Connection> Acquire(size_t* host) {
    {
      runtime::MutexLock lock(&mu_);
      if (!idle_.empty()) {
        auto [connection, h] = std::move(idle_.back());
        idle_.pop_back();
        *host = h;
        return std::move(connection);
      }
    }
    std::string errors;
    for (size_t attempt = 0; attempt < hosts_.size(); ++attempt) {
      *host = next_host_.load(std::memory_order_relaxed) % hosts_.size();
      absl::StatusOr<Connection> connection = Connect(hosts_[*host]);
      if (connection.ok()) return connection;
      absl::StrAppend(&errors, errors.empty() ? "" : "; ", connection.status().message());
      next_host_.fetch_add(1, std::memory_order_relaxed);
    }
    return absl::UnavailableError(errors);
  }

  void Release(Connection connection, size_t host) {
    runtime::MutexLock lock(&mu_);
    idle_.emplace_back(std::move(connection), host);
  }

  absl::StatusOr<Connection> Connect(const Host& host) {
    const timeval tv = absl::ToTimeval(config_.timeout);
    Connection c(redisConnectWithTimeout(host.address.host.c_str(), host.address.port, tv));
    if (c == nullptr || c->err || redisSetTimeout(c.get(), tv) != REDIS_OK) {
      return absl::UnavailableError(ConnectionError(c.get(), host));
    }
    if (!config_.password.empty()) {
      absl::Status status = Command(c.get(), host, {"AUTH", config_.password});
      if (!status.ok()) return status;
    }
    if (config_.db != 0) {
      absl::Status status = Command(c.get(), host, {"SELECT", absl::StrCat(config_.db)});
      if (!status.ok()) return status;
    }
    return c;
  }

  static absl::Status Command(redisContext* c, const Host& host,
                              const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> argvlen;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      argvlen.push_back(a.size());
    }
    Reply reply(static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), argvlen.data())));
    if (reply == nullptr) return absl::UnavailableError(ConnectionError(c, host));
    if (reply->type == REDIS_REPLY_ERROR) {
      return absl::UnavailableError(absl::StrCat("redis ", host.name, ": ", args[0], ": ",
                                                 absl::string_view(reply->str, reply->len)));
    }
    return absl::OkStatus();
  }

  // Constant after construction.
  const RedisSettings config_;
  const std::vector<Host> hosts_;
  const FieldFormat key_;

  // shipper_output_items_total{output="redis"} of a channel: PUBLISHes that reached a
  // subscriber, and those that reached none (written all the same, as Beats counts them).
  metrics::Counter& published_ = metrics::ShipperMetrics::Get().OutputItems("redis", "published");
  metrics::Counter& unheard_ = metrics::ShipperMetrics::Get().OutputItems("redis", "no_subscriber");

  std::atomic<size_t> next_host_{0};  // where new connections go
  runtime::Mutex mu_;
  std::vector<std::pair<Connection, size_t>> idle_ ABSL_GUARDED_BY(mu_);  // with its host
};

}  // namespace

void RedisSettings::Validate(Problems* problems) const {
  if (hosts.empty()) problems->Add(absl::StrCat(kHostsKey, ": name at least one host:port"));
  for (const std::string& name : hosts) problems->Add(CheckAddress(kHostsKey, name, kRedisAddress));
  problems->Add(FieldFormat::Parse(key, "shipper.output.redis.key").status());
  if (timeout <= absl::ZeroDuration()) {
    problems->Add("shipper.output.redis.timeout: must be above 0");
  }
}

absl::StatusOr<std::unique_ptr<Output>> RedisSettings::Build() const {
  std::vector<Host> parsed;
  for (const std::string& name : hosts) {
    parsed.push_back({name, *ParseAddress(name, kRedisAddress)});
  }
  return std::make_unique<RedisOutput>(*this, std::move(parsed),
                                       *FieldFormat::Parse(key, "shipper.output.redis.key"));
}

std::string RedisSettings::Destination() const {
  return absl::StrCat("redis ", absl::StrJoin(hosts, ","), " key ", key);
}

OutputType RedisOutputType() {
  using K = KeysOf<RedisSettings>;
  return MakeOutputType<RedisSettings>(
      "redis", "send events to Redis",
      {
          K::CommaList(kHostsKey, "Redis servers as host:port; the next is tried when one fails",
                       &RedisSettings::hosts),
          K::String("shipper.output.redis.key",
                    "list, channel or stream name; %{[data_stream.dataset]} takes it from each "
                    "event, %{[field]:default} when the field may be missing",
                    &RedisSettings::key),
          K::Choice<RedisDatatype>("shipper.output.redis.datatype",
                                   "RPUSH to a list, PUBLISH to a channel, XADD to a stream",
                                   {{"list", RedisDatatype::kList},
                                    {"channel", RedisDatatype::kChannel},
                                    {"stream", RedisDatatype::kStream}},
                                   &RedisSettings::datatype),
          K::Size("shipper.output.redis.db", "Redis database number (SELECT)", 0, false,
                  &RedisSettings::db),
          K::String("shipper.output.redis.password", "Redis password (AUTH); unset: none",
                    &RedisSettings::password),
          K::Duration("shipper.output.redis.timeout", "connect and reply timeout",
                      &RedisSettings::timeout),
      });
}

}  // namespace shipper
