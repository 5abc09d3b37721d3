#include "shipper/output/shipper/shipper_output.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "google/protobuf/arena.h"
#include "grpcpp/grpcpp.h"
#include "proto/producer.grpc.pb.h"
#include "shipper/config/address.h"
#include "shipper/config/tls.h"
#include "shipper/output/grpc_credentials.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
using elastic::agent::shipper::v1::Producer;

// How often the next Shipper may report its persisted index: bounds the latency it adds.
constexpr absl::Duration kPollingInterval = absl::Milliseconds(10);
// Requests stay well below gRPC's default 4 MiB receive limit (by the events' decoded size).
constexpr size_t kMaxRequestBytes = 1 << 20;
// Pause before the PersistedIndex stream is reopened after it ended or failed.
constexpr absl::Duration kResubscribeDelay = absl::Milliseconds(100);
// The keepalive pings' least interval: twice what a Shipper listener allows (listener.h), so that
// a next Shipper of this version never takes them for abuse.
constexpr absl::Duration kMinKeepalive = absl::Seconds(2);

// Whether the next Shipper refused a request for what it holds, and would refuse it again: its
// events (INVALID_ARGUMENT: not protobuf or UTF-8, nested too deep, refused by strict mode, too
// many for one request) or its size (RESOURCE_EXHAUSTED for a request "larger than"
// shipper.server.max_message_size, or than gRPC's own receive limit). Not a lack of memory or of
// room (RESOURCE_EXHAUSTED otherwise), nor any other error: those pass, and are retried.
bool RefusedForGood(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
         (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
          absl::StrContains(status.error_message(), "larger than"));
}

class ShipperOutput final : public Output {
 public:
  ShipperOutput(const ShipperOutputSettings& config, std::shared_ptr<grpc::Channel> channel)
      : config_(config), stub_(Producer::NewStub(channel)) {
    follower_ = std::thread([this] { FollowPersistedIndex(); });
  }

  ~ShipperOutput() override {
    Cancel();
    follower_.join();
  }

  absl::Status Write(const Events& events, Outcome* outcome) override {
    uint64_t generation;  // the follower's, before anything of the batch was sent
    uint64_t breaks;      // of the follower's stream, before then too
    std::string uuid;     // of the instance that took the batch's first events
    {
      absl::MutexLock lock(&mu_);
      generation = generation_;
      breaks = breaks_;
      uuid = known_uuid_;
    }
    bool first = true;
    // Publishes until every event is accepted by one and the same Shipper instance, or refused
    // for good: a refused request is sent again in halves, down to its refused events alone,
    // which are rejected (dead letters); the rest of the batch then goes in requests as small.
    uint64_t last_index = 0;
    size_t most = events.size();  // events per request
    for (size_t next = 0; next < events.size();) {
      google::protobuf::Arena arena;
      auto* request = google::protobuf::Arena::CreateMessage<pb::PublishRequest>(&arena);
      request->set_uuid(uuid);
      size_t bytes = 0;
      size_t sent = 0;
      for (size_t i = next;
           i < events.size() && (i == next || (bytes < kMaxRequestBytes && sent < most)); ++i) {
        // The event's bytes as they are: an unknown field numbered like `events` is written
        // out exactly as an Event entry, with no decoding and encoding on the way.
        request->GetReflection()->MutableUnknownFields(request)->AddLengthDelimited(
            2, std::string(events.bytes(i)));
        bytes += events.bytes(i).size();
        ++sent;
      }
      pb::PublishReply reply;
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + config_.timeout));
      if (!Register(&context)) return absl::CancelledError("shutting down");
      grpc::Status status = stub_->PublishEvents(&context, *request, &reply);
      Unregister(&context);
      if (RefusedForGood(status)) {
        if (sent > 1) {
          most = sent / 2;
          continue;
        }
        outcome->rejected.push_back(
            {next, absl::StrCat("refused by the Shipper at ", config_.server, ": ",
                                status.error_message())});
        ++next;
        continue;
      }
      if (!status.ok()) {
        if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
          absl::MutexLock lock(&mu_);
          known_uuid_.clear();  // it restarted: the next attempt is a first contact
        }
        return absl::UnavailableError(
            absl::StrCat("forwarding to ", config_.server, ": ", status.error_message()));
      }
      if (!first && reply.uuid() != uuid) {
        return absl::UnavailableError(
            absl::StrCat("the Shipper at ", config_.server, " restarted (uuid ", uuid, " became ",
                         reply.uuid(), ") while taking this batch: resending it"));
      }
      first = false;
      uuid = reply.uuid();
      {
        absl::MutexLock lock(&mu_);
        known_uuid_ = uuid;
      }
      if (reply.accepted_count() > 0) last_index = reply.accepted_index();
      next += reply.accepted_count();
    }

    if (last_index == 0) return absl::OkStatus();  // every event refused for good
    absl::MutexLock lock(&mu_);
    while (!(follower_uuid_ == uuid && persisted_ >= last_index)) {
      // The follower saw another instance after this batch started, and that was not the one
      // that took it: the one that did is gone with the batch.
      if (generation_ > generation && follower_uuid_ != uuid) {
        return absl::UnavailableError(
            absl::StrCat("the Shipper at ", config_.server, " restarted (uuid ", uuid, " became ",
                         follower_uuid_, ") before persisting this batch: resending it"));
      }
      // The stream broke since (the next Shipper frozen, gone, or unreachable: the keepalive
      // pings found out): what it would have said is unknown, and waiting could last for good.
      if (breaks_ > breaks) {
        return absl::UnavailableError(
            absl::StrCat("lost the PersistedIndex stream of the Shipper at ", config_.server,
                         " before it reported this batch persisted: resending it"));
      }
      if (cancelled_) return absl::CancelledError("shutting down");
      changed_.Wait(&mu_);
    }
    return absl::OkStatus();
  }

  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    for (grpc::ClientContext* context : calls_) context->TryCancel();
    changed_.SignalAll();
  }

 private:
  // Notes a call Cancel() must end; false once cancelled.
  bool Register(grpc::ClientContext* context) {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return false;
    calls_.insert(context);
    return true;
  }
  void Unregister(grpc::ClientContext* context) {
    absl::MutexLock lock(&mu_);
    calls_.erase(context);
  }

  // The follower thread: keeps follower_uuid_ and persisted_ up to date.
  void FollowPersistedIndex() {
    while (true) {
      grpc::ClientContext context;
      if (!Register(&context)) return;
      pb::PersistedIndexRequest request;
      request.mutable_polling_interval()->set_nanos(
          static_cast<int32_t>(absl::ToInt64Nanoseconds(kPollingInterval)));
      std::unique_ptr<grpc::ClientReader<pb::PersistedIndexReply>> reader =
          stub_->PersistedIndex(&context, request);
      pb::PersistedIndexReply reply;
      while (reader->Read(&reply)) {
        absl::MutexLock lock(&mu_);
        if (reply.uuid() != follower_uuid_) {
          if (!follower_uuid_.empty()) {
            LOG(WARNING) << "the Shipper at " << config_.server << " restarted: uuid "
                         << follower_uuid_ << " became " << reply.uuid();
          }
          follower_uuid_ = reply.uuid();
          ++generation_;
        }
        persisted_ = reply.persisted_index();
        changed_.SignalAll();
      }
      const grpc::Status ended = reader->Finish();
      Unregister(&context);
      absl::MutexLock lock(&mu_);
      ++breaks_;
      changed_.SignalAll();
      LOG_EVERY_N(WARNING, 10) << "the PersistedIndex stream of the Shipper at " << config_.server
                               << " ended (" << ended.error_message() << "); reopening it";
      if (mu_.AwaitWithTimeout(absl::Condition(&cancelled_), kResubscribeDelay)) return;
    }
  }

  // Constant after construction.
  const ShipperOutputSettings config_;
  const std::unique_ptr<Producer::Stub> stub_;

  absl::Mutex mu_;
  absl::CondVar changed_;                        // the follower learnt something, or Cancel()
  std::string known_uuid_ ABSL_GUARDED_BY(mu_);  // sent in requests: from the latest reply
  // What the PersistedIndex stream last said; generation_ counts changes of its uuid.
  std::string follower_uuid_ ABSL_GUARDED_BY(mu_);
  uint64_t persisted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t breaks_ ABSL_GUARDED_BY(mu_) = 0;  // streams that ended or failed
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::set<grpc::ClientContext*> calls_ ABSL_GUARDED_BY(mu_);  // in flight, for Cancel()

  std::thread follower_;
};

const TlsBlock& Tls() {
  static const TlsBlock* block =
      new TlsBlock("shipper.output.shipper.ssl", TlsSide::kClient, "the next Shipper");
  return *block;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Output>> ShipperOutputSettings::Build() const {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ClientCredentials(Tls(), ssl);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args;
  // Reconnect quickly after the next Shipper restarts: gRPC's default backoff grows to 2 min.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A connection silent for `timeout` is pinged, and dropped when the ping is not answered within
  // `timeout`: a next Shipper frozen or gone behind a half-open connection ends the follower's
  // stream, and the Write() calls waiting on it, instead of leaving them waiting for good. Pings
  // go with no call in flight too and without data in between (the stream is silent while the
  // index stands); the next Shipper allows them (listener.cc).
  const int keepalive_ms =
      static_cast<int>(absl::ToInt64Milliseconds(std::max(timeout, kMinKeepalive)));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, keepalive_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // An address gRPC cannot resolve shows up as UNAVAILABLE on every call, with the address.
  return std::make_unique<ShipperOutput>(*this,
                                         grpc::CreateCustomChannel(server, *credentials, args));
}

void ShipperOutputSettings::Validate(Problems* problems) const {
  if (enabled && server.empty()) {
    problems->Add(
        "config: the shipper output needs shipper.output.shipper.server (the next Shipper's "
        "address)");
  }
  if (!server.empty()) {
    problems->Add(CheckAddress("shipper.output.shipper.server", server, {/*unix_socket=*/true}));
  }
  Tls().Validate(ssl, problems);
  if (timeout <= absl::ZeroDuration()) {
    problems->Add("config: shipper.output.shipper.timeout must be above 0");
  }
}

void ShipperOutputSettings::Preflight(Problems* problems) const { Tls().Preflight(ssl, problems); }

std::string ShipperOutputSettings::Destination() const {
  return absl::StrCat("shipper at ", server);
}

OutputType ShipperOutputType() {
  using K = KeysOf<ShipperOutputSettings>;
  std::vector<Key<ShipperOutputSettings>> keys = {
      K::String("shipper.output.shipper.server",
                "the next Shipper's address: host:port or unix:///path",
                &ShipperOutputSettings::server),
      K::Duration("shipper.output.shipper.timeout",
                  "deadline of each PublishEvents call; a connection silent as long (2s at "
                  "least) is pinged, and dropped when the ping goes unanswered as long",
                  &ShipperOutputSettings::timeout),
  };
  for (Key<ShipperOutputSettings>& key :
       Tls().KeysWithin<ShipperOutputSettings>(&ShipperOutputSettings::ssl)) {
    keys.push_back(std::move(key));
  }
  return MakeOutputType<ShipperOutputSettings>(
      "shipper", "forward events to another Shipper (aggregator tier)", std::move(keys));
}

}  // namespace shipper
