#include "tests/load/null_server.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/message_allocator.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "proto/producer.grpc.pb.h"
#include "shipper/input/producer/received_request.h"

namespace shipper::load {
namespace {

namespace v1 = ::elastic::agent::shipper::v1;
namespace msg = ::elastic::agent::shipper::v1::messages;

std::string RandomUuid() {
  absl::BitGen gen;
  const uint64_t hi = absl::Uniform<uint64_t>(gen), lo = absl::Uniform<uint64_t>(gen);
  return absl::StrFormat("%08x-%04x-4%03x-%04x-%012x", hi >> 32, (hi >> 16) & 0xffff, hi & 0xfff,
                         0x8000 | ((lo >> 48) & 0x3fff), lo & 0xffffffffffffULL);
}

// Blocks grow from 4 KiB to 256 KiB: a decoded batch of 500 filebeat events (about 1 MB) takes a
// handful of mallocs instead of the 8 KiB default maximum's hundred.
google::protobuf::ArenaOptions ArenaOptionsForRequests() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 4096;
  options.max_block_size = 256 << 10;
  return options;
}

// Request and reply of one PublishEvents call, parsed into one arena freed with the call.
class ArenaMessages final : public grpc::MessageHolder<msg::PublishRequest, msg::PublishReply> {
 public:
  ArenaMessages() : arena_(ArenaOptionsForRequests()) {
    set_request(google::protobuf::Arena::CreateMessage<msg::PublishRequest>(&arena_));
    set_response(google::protobuf::Arena::CreateMessage<msg::PublishReply>(&arena_));
  }
  void Release() override { delete this; }

 private:
  google::protobuf::Arena arena_;
};

class ArenaAllocator final : public grpc::MessageAllocator<msg::PublishRequest, msg::PublishReply> {
 public:
  grpc::MessageHolder<msg::PublishRequest, msg::PublishReply>* AllocateMessages() override {
    return new ArenaMessages();
  }
};

class ProducerService;

// One PersistedIndex stream. Writes are started outside mu_ (a reaction may run inline), and
// exactly one write or Finish is outstanding at a time.
class IndexStream final : public grpc::ServerWriteReactor<msg::PersistedIndexReply> {
 public:
  IndexStream(ProducerService* service, absl::Duration interval);

  // The persisted index may have changed: write it if allowed now, else leave it for the ticker.
  void Notify();

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  enum class Action { kNone, kWrite, kWriteAndFinish, kFinish };
  Action NextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run(Action action);

  ProducerService* const service_;
  const absl::Duration interval_;

  absl::Mutex mu_;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;  // a write or Finish is outstanding
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool sent_any_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t last_sent_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_write_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  msg::PersistedIndexReply reply_;  // owned by the outstanding write
};

// State shared by the services and streams: the index, the uuid and the open streams.
class ProducerService {
 public:
  explicit ProducerService(const NullServerOptions& options)
      : options_(options), uuid_(RandomUuid()) {
    ticker_ = std::thread([this] { Tick(); });
  }
  ~ProducerService() {
    stop_.Notify();
    ticker_.join();
  }

  // Checks a request with `uuid` and `n` events; on success accepts them and fills *reply.
  grpc::Status Publish(absl::string_view uuid, uint32_t n, msg::PublishReply* reply) {
    if (!uuid.empty() && uuid != uuid_) {
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          absl::StrCat("uuid ", uuid, " is not this server's (", uuid_,
                       "): the server restarted; rewind to the last persisted event"));
    }
    if (n == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the request has no events: send at least one");
    }
    if (options_.max_accept_per_call > 0 && n > options_.max_accept_per_call) {
      n = options_.max_accept_per_call;
    }
    const uint64_t last = index_.fetch_add(n, std::memory_order_relaxed) + n;
    calls_.fetch_add(1, std::memory_order_relaxed);
    reply->set_uuid(uuid_);
    reply->set_accepted_count(n);
    reply->set_accepted_index(last);
    return grpc::Status::OK;
  }

  void NotifyStreams() {
    // Streams unregister under streams_mu_ before they are deleted, so the pointers stay valid.
    absl::MutexLock lock(&streams_mu_);
    for (IndexStream* s : streams_) s->Notify();
  }

  grpc::ServerWriteReactor<msg::PersistedIndexReply>* NewStream(
      const msg::PersistedIndexRequest* request) {
    absl::Duration interval = absl::Seconds(request->polling_interval().seconds()) +
                              absl::Nanoseconds(request->polling_interval().nanos());
    return new IndexStream(this, interval);
  }

  void Register(IndexStream* s) {
    absl::MutexLock lock(&streams_mu_);
    streams_.insert(s);
  }
  void Unregister(IndexStream* s) {
    absl::MutexLock lock(&streams_mu_);
    streams_.erase(s);
  }
  // Called by a stream that held back a change because of its polling interval.
  void WantTick() { tick_wanted_.store(true, std::memory_order_relaxed); }

  uint64_t persisted() const { return index_.load(std::memory_order_relaxed); }
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  const std::string& uuid() const { return uuid_; }
  const NullServerOptions& options() const { return options_; }

 private:
  void Tick() {
    while (!stop_.WaitForNotificationWithTimeout(absl::Milliseconds(1))) {
      if (tick_wanted_.exchange(false, std::memory_order_relaxed)) NotifyStreams();
    }
  }

  const NullServerOptions options_;
  const std::string uuid_;
  std::atomic<uint64_t> index_{0};
  std::atomic<uint64_t> calls_{0};
  std::atomic<bool> tick_wanted_{false};
  absl::Notification stop_;
  std::thread ticker_;

  absl::Mutex streams_mu_;
  std::set<IndexStream*> streams_ ABSL_GUARDED_BY(streams_mu_);
};

// What every service variant shares: the ProducerService behind it, and its PersistedIndex
// streams. `Base` is the generated service with PublishEvents in the variant's style.
template <typename Base>
class ServiceOn : public Base {
 public:
  explicit ServiceOn(ProducerService* core) : core_(core) {}

  grpc::ServerWriteReactor<msg::PersistedIndexReply>* PersistedIndex(
      grpc::CallbackServerContext*, const msg::PersistedIndexRequest* request) override {
    return core_->NewStream(request);
  }

 protected:
  ProducerService* const core_;
};

// Full decoding: gRPC parses every PublishRequest, events and their Structs included.
class DecodingService final : public ServiceOn<v1::Producer::CallbackService> {
 public:
  explicit DecodingService(ProducerService* core) : ServiceOn(core) {
    if (core->options().use_arena) SetMessageAllocatorFor_PublishEvents(&allocator_);
  }

  grpc::ServerUnaryReactor* PublishEvents(grpc::CallbackServerContext* context,
                                          const msg::PublishRequest* request,
                                          msg::PublishReply* reply) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status status =
        core_->Publish(request->uuid(), static_cast<uint32_t>(request->events_size()), reply);
    reactor->Finish(status);
    if (status.ok()) core_->NotifyStreams();
    return reactor;
  }

 private:
  ArenaAllocator allocator_;
};

// Full decoding on the async API: completion-queue threads (one per core) take calls, parse them
// into an arena and reply. The same shape as Shipper's PublishEvents path.
class AsyncDecodingService final
    : public ServiceOn<v1::Producer::WithAsyncMethod_PublishEvents<
          v1::Producer::WithCallbackMethod_PersistedIndex<v1::Producer::Service>>> {
 public:
  explicit AsyncDecodingService(ProducerService* core) : ServiceOn(core) {}
  ~AsyncDecodingService() override { Stop(); }

  // REQUIRES: the server is built and started with `cq`.
  void Start(std::unique_ptr<grpc::ServerCompletionQueue> cq, int threads) {
    cq_ = std::move(cq);
    for (int i = 0; i < kWaitingCalls; ++i) new Call(this);
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        void* tag;
        bool ok;
        while (cq_->Next(&tag, &ok)) static_cast<Call*>(tag)->Proceed(ok);
      });
    }
  }

  // REQUIRES: the server has been shut down.
  void Stop() {
    if (cq_ == nullptr) return;
    cq_->Shutdown();
    for (auto& t : threads_) t.join();
    threads_.clear();
    cq_.reset();
  }

 private:
  static constexpr int kWaitingCalls = 32;

  class Call {
   public:
    explicit Call(AsyncDecodingService* service)
        : service_(service), messages_(new ArenaMessages), responder_(&context_) {
      service->RequestPublishEvents(&context_, messages_->request(), &responder_,
                                    service->cq_.get(), service->cq_.get(), this);
    }
    ~Call() { messages_->Release(); }

    void Proceed(bool ok) {
      if (replying_ || !ok) {
        delete this;
        return;
      }
      new Call(service_);
      replying_ = true;
      const msg::PublishRequest& request = *messages_->request();
      ProducerService* core = service_->core_;
      grpc::Status status = core->Publish(
          request.uuid(), static_cast<uint32_t>(request.events_size()), messages_->response());
      // Another thread may complete and delete this call as soon as Finish is posted.
      responder_.Finish(*messages_->response(), status, this);
      if (status.ok()) core->NotifyStreams();
    }

   private:
    AsyncDecodingService* const service_;
    ArenaMessages* const messages_;
    grpc::ServerContext context_;
    grpc::ServerAsyncResponseWriter<msg::PublishReply> responder_;
    bool replying_ = false;
  };

  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::vector<std::thread> threads_;
};

// Decoding from the raw bytes. kScan: what Shipper does
// (shipper/input/producer/received_request.h). kEnvelope: reads the uuid and counts the events
// fields, skipping their bytes: the transport limit without decoding.
class RawService final
    : public ServiceOn<v1::Producer::WithRawCallbackMethod_PublishEvents<
          v1::Producer::WithCallbackMethod_PersistedIndex<v1::Producer::Service>>> {
 public:
  RawService(ProducerService* core, NullServerOptions::Decode decode)
      : ServiceOn(core), decode_(decode) {}

  grpc::ServerUnaryReactor* PublishEvents(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    std::string uuid;
    uint32_t events = 0;
    if (!(decode_ == NullServerOptions::Decode::kScan ? Scan(request, &uuid, &events)
                                                      : ScanEnvelope(request, &uuid, &events))) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "the request is not a valid PublishRequest"));
      return reactor;
    }
    msg::PublishReply reply;
    grpc::Status status = core_->Publish(uuid, events, &reply);
    if (status.ok()) {
      bool own = false;
      status = grpc::SerializationTraits<msg::PublishReply>::Serialize(reply, response, &own);
    }
    reactor->Finish(status);
    if (status.ok()) core_->NotifyStreams();
    return reactor;
  }

 private:
  static bool Scan(const grpc::ByteBuffer* buffer, std::string* uuid, uint32_t* events) {
    ReceivedRequest received;
    if (!received.Take(*buffer, RequestLimits{}).ok() || !received.Scan(RequestLimits{}).ok()) {
      return false;
    }
    *uuid = std::string(received.scanned().uuid);
    *events = static_cast<uint32_t>(received.scanned().events.size());
    return true;
  }

  static bool ScanEnvelope(const grpc::ByteBuffer* buffer, std::string* uuid, uint32_t* events) {
    grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(buffer));
    google::protobuf::io::CodedInputStream in(&reader);
    in.SetTotalBytesLimit(std::numeric_limits<int>::max());
    while (uint32_t tag = in.ReadTag()) {
      const int field = static_cast<int>(tag >> 3);
      if (field == msg::PublishRequest::kUuidFieldNumber && (tag & 7) == 2) {
        if (!google::protobuf::internal::WireFormatLite::ReadString(&in, uuid)) return false;
      } else if (field == msg::PublishRequest::kEventsFieldNumber && (tag & 7) == 2) {
        uint32_t length;
        if (!in.ReadVarint32(&length) || !in.Skip(static_cast<int>(length))) return false;
        ++*events;
      } else if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag)) {
        return false;
      }
    }
    return in.ConsumedEntireMessage();
  }

  const NullServerOptions::Decode decode_;
};

IndexStream::IndexStream(ProducerService* service, absl::Duration interval)
    : service_(service), interval_(interval) {
  service_->Register(this);
  Notify();
}

void IndexStream::Notify() {
  Action action;
  {
    absl::MutexLock lock(&mu_);
    action = NextLocked();
  }
  Run(action);
}

IndexStream::Action IndexStream::NextLocked() {
  if (busy_ || finished_) return Action::kNone;
  if (cancelled_) {
    busy_ = finished_ = true;
    return Action::kFinish;
  }
  const uint64_t persisted = service_->persisted();
  if (sent_any_ && persisted == last_sent_) return Action::kNone;
  const absl::Time now = absl::Now();
  if (sent_any_ && now < last_write_ + interval_) {
    service_->WantTick();
    return Action::kNone;
  }
  sent_any_ = true;
  last_sent_ = persisted;
  last_write_ = now;
  reply_.set_uuid(service_->uuid());
  reply_.set_persisted_index(persisted);
  busy_ = true;
  if (interval_ <= absl::ZeroDuration()) {
    finished_ = true;
    return Action::kWriteAndFinish;
  }
  return Action::kWrite;
}

void IndexStream::Run(Action action) {
  switch (action) {
    case Action::kNone:
      return;
    case Action::kWrite:
      StartWrite(&reply_);
      return;
    case Action::kWriteAndFinish:
      StartWriteAndFinish(&reply_, grpc::WriteOptions(), grpc::Status::OK);
      return;
    case Action::kFinish:
      Finish(grpc::Status::CANCELLED);
      return;
  }
}

void IndexStream::OnWriteDone(bool ok) {
  Action action;
  {
    absl::MutexLock lock(&mu_);
    busy_ = false;
    if (!ok) cancelled_ = true;
    action = NextLocked();
  }
  Run(action);
}

void IndexStream::OnCancel() {
  Action action;
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    action = NextLocked();
  }
  Run(action);
}

void IndexStream::OnDone() {
  service_->Unregister(this);
  delete this;
}

class NullServerImpl final : public NullServer {
 public:
  explicit NullServerImpl(const NullServerOptions& options) : options_(options), service_(options) {
    if (options.decode != NullServerOptions::Decode::kFull) {
      grpc_service_ = std::make_unique<RawService>(&service_, options.decode);
    } else if (options.api == NullServerOptions::Api::kAsync) {
      auto async = std::make_unique<AsyncDecodingService>(&service_);
      async_ = async.get();
      grpc_service_ = std::move(async);
    } else {
      grpc_service_ = std::make_unique<DecodingService>(&service_);
    }
  }
  ~NullServerImpl() override { Shutdown(); }

  absl::Status Start(const std::string& listen_address) {
    const size_t colon = listen_address.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("listen address \"", listen_address, "\" has no port: use HOST:PORT"));
    }
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort(listen_address, grpc::InsecureServerCredentials(), &port);
    builder.SetMaxReceiveMessageSize(64 << 20);
    builder.RegisterService(grpc_service_.get());
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    if (async_ != nullptr) cq = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port == 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", listen_address));
    }
    address_ = absl::StrCat(listen_address.substr(0, colon), ":", port);
    if (async_ != nullptr) {
      const int threads = options_.async_threads > 0
                              ? options_.async_threads
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
      async_->Start(std::move(cq), threads);
    }
    return absl::OkStatus();
  }

  const std::string& address() const override { return address_; }
  const std::string& uuid() const override { return service_.uuid(); }
  uint64_t events() const override { return service_.persisted(); }
  uint64_t calls() const override { return service_.calls(); }

  void Shutdown() override {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    if (async_ != nullptr) async_->Stop();
    server_->Wait();
    server_.reset();
  }

 private:
  const NullServerOptions options_;
  ProducerService service_;
  std::unique_ptr<grpc::Service> grpc_service_;
  AsyncDecodingService* async_ = nullptr;  // in grpc_service_, when the async API serves
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<NullServer>> NullServer::Start(const NullServerOptions& options) {
  auto server = std::make_unique<NullServerImpl>(options);
  absl::Status status = server->Start(options.listen_address);
  if (!status.ok()) return status;
  return std::unique_ptr<NullServer>(std::move(server));
}

}  // namespace shipper::load
