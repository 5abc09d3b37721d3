#include "shipper/input/producer/publish_calls.h"

#include <algorithm>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "proto/messages.pb.h"
#include "shipper/input/producer/received_request.h"
#include "shipper/metrics/shipper_metrics.h"

namespace shipper {

namespace pb = elastic::agent::shipper::v1::messages;

namespace {

// Longest a publish waits for room when nothing of it fits: the client resends what was not
// accepted, so holding a gRPC thread longer only delays that.
constexpr absl::Duration kMaxPublishWait = absl::Milliseconds(500);

// How long an idle Serve() thread waits before checking whether its pool shrank.
constexpr absl::Duration kServePoll = absl::Milliseconds(500);

constexpr absl::string_view kPublishEventsMethod =
    "/elastic.agent.shipper.v1.Producer/PublishEvents";

// PublishEvents calls posted to gRPC ahead of time, so arriving calls rarely wait to be matched:
// at most this many, and no more than max_receive_memory / max_message_size.
constexpr size_t kMaxWaitingCalls = 32;

grpc::ByteBuffer Serialized(const pb::PublishReply& reply) {
  grpc::ByteBuffer bytes;
  bool own_buffer;
  CHECK(grpc::SerializationTraits<pb::PublishReply>::Serialize(reply, &bytes, &own_buffer).ok());
  return bytes;
}

}  // namespace

// A received request and its reply, alive until its call is over and the queue has released
// every event that points into it.
class PublishCalls::Request final : public queue::EventOwner {
 public:
  explicit Request(runtime::MemoryBudget* budget) : budget_(budget) {}

  // Takes `bytes` of the budget for this request's copy, waiting until `deadline` at most; they
  // go back when the request is freed. False when they could not be had. Call once.
  bool Charge(size_t bytes, absl::Time deadline) {
    if (!budget_->Acquire(bytes, deadline)) return false;
    charged_ = bytes;
    return true;
  }

  // Called once per queued event, and once by the call when it is over.
  void Release() override {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  void AddRefs(int64_t n) { refs_.fetch_add(n, std::memory_order_relaxed); }

  ReceivedRequest& received() { return received_; }
  const ScannedRequest& scanned() const { return received_.scanned(); }
  pb::PublishReply& reply() { return reply_; }

 private:
  ~Request() {
    // The copy first, then the charge that covered it.
    received_ = ReceivedRequest();
    budget_->Release(charged_);
  }

  runtime::MemoryBudget* const budget_;
  size_t charged_ = 0;
  ReceivedRequest received_;
  pb::PublishReply reply_;
  std::atomic<int64_t> refs_{1};
};

// One PublishEvents call, from waiting for a call to its reply sent. Its address is its tag
// on the completion queue; only the thread handling its current event touches it.
//
// PublishEvents is served through gRPC's generic API so that a request's message is read only
// once a call has been posted for it: for a registered unary method gRPC reads the message of
// every stream that arrives, before any call is there to take it, however many clients send at
// once (16 connections × 8 large requests held 500 MiB that way, far past the resource quota,
// which reclaims only after the fact). Here at most waiting_calls_ messages are read or waiting
// to be copied at any time; other streams wait with what their HTTP/2 window let in.
class PublishCalls::Call final {
 public:
  // Asks gRPC for the next call.
  explicit Call(PublishCalls* calls)
      : calls_(calls), request_(new Request(calls->budget_)), stream_(&context_) {
    calls->generic_.RequestCall(&context_, &stream_, calls->cq_.get(), calls->cq_.get(), this);
  }
  ~Call() { request_->Release(); }

  // The call arrived (!ok: the server is shutting down), then its message was read (!ok: none
  // came), then the reply was sent.
  void Proceed(bool ok) {
    switch (state_) {
      case State::kArriving:
        if (!ok) break;
        if (context_.method() != kPublishEventsMethod) {
          return Refuse(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                     absl::StrCat("unknown method ", context_.method())));
        }
        state_ = State::kReading;
        stream_.Read(&bytes_, this);
        return;
      case State::kReading:
        if (!ok) {
          return Refuse(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                     "PublishEvents: no request message"));
        }
        return Reply();
      case State::kFinishing:
        break;
    }
    delete this;
  }

 private:
  enum class State { kArriving, kReading, kFinishing };

  void Reply() {
    const absl::Time start = absl::Now();
    // How long a publish may wait for memory or for room in the queue.
    const absl::Time deadline =
        std::min(absl::FromChrono(context_.deadline()), absl::Now() + kMaxPublishWait);
    grpc::Status status;
    const bool received = calls_->Receive(bytes_, deadline, *request_, &status);
    bytes_.Clear();  // from here on only the request's own copy holds the events
    // Only now the next call takes our place: the number of calls bounds what gRPC holds.
    new Call(calls_);
    if (received) status = calls_->Publish(deadline, *request_);
    metrics::ShipperMetrics::Get().Published(
        request_->scanned().events.size(), request_->reply().accepted_count(),
        request_->reply().accepted_index(), static_cast<absl::StatusCode>(status.error_code()),
        start);
    state_ = State::kFinishing;
    if (!status.ok()) return stream_.Finish(status, this);
    stream_.WriteAndFinish(Serialized(request_->reply()), grpc::WriteOptions(), status, this);
  }

  void Refuse(const grpc::Status& status) {
    new Call(calls_);
    state_ = State::kFinishing;
    stream_.Finish(status, this);
  }

  PublishCalls* const calls_;
  Request* const request_;
  grpc::GenericServerContext context_;
  grpc::GenericServerAsyncReaderWriter stream_;
  grpc::ByteBuffer bytes_;  // the request as received; empty once copied
  State state_ = State::kArriving;
};

PublishCalls::PublishCalls(queue::Queue* queue, runtime::MemoryBudget* budget, std::string uuid,
                           RequestLimits limits, size_t max_receive_memory,
                           queue::AckCallback on_ack)
    : queue_(queue),
      budget_(budget),
      uuid_(std::move(uuid)),
      limits_(limits),
      waiting_calls_(static_cast<int>(std::clamp<size_t>(
          max_receive_memory / std::max<size_t>(limits.max_message_size, 1), 1, kMaxWaitingCalls))),
      producer_(queue->NewProducer(std::move(on_ack))) {}

void PublishCalls::StopAccepting() {
  accepting_.store(false);
  producer_->Cancel();
}

void PublishCalls::RegisterWith(grpc::ServerBuilder* builder) {
  builder->RegisterAsyncGenericService(&generic_);
  cq_ = builder->AddCompletionQueue();
}

void PublishCalls::Start() {
  // Calls waiting for a thread are matched with these; each posts another once its request is
  // copied (or refused).
  for (int i = 0; i < waiting_calls_; ++i) new Call(this);
}

void PublishCalls::Serve(const runtime::WorkerPool::Worker& worker) {
  while (!worker.stopping()) {
    void* tag;
    bool ok;
    switch (cq_->AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + kServePoll))) {
      case grpc::CompletionQueue::SHUTDOWN:
        return;
      case grpc::CompletionQueue::GOT_EVENT:
        static_cast<Call*>(tag)->Proceed(ok);
        break;
      case grpc::CompletionQueue::TIMEOUT:
        break;
    }
  }
}

void PublishCalls::Shutdown() {
  if (cq_ != nullptr) cq_->Shutdown();
}

void PublishCalls::Finish() {
  if (cq_ == nullptr) return;
  void* tag;
  bool ok;
  while (cq_->Next(&tag, &ok)) static_cast<Call*>(tag)->Proceed(ok);
}

bool PublishCalls::Receive(const grpc::ByteBuffer& bytes, absl::Time deadline, Request& request,
                           grpc::Status* status) {
  pb::PublishReply& reply = request.reply();
  reply.set_uuid(uuid_);
  // Take() refuses what is larger than max_message_size before it copies anything.
  const size_t size = bytes.Length();
  if (size <= limits_.max_message_size && !request.Charge(size, deadline)) {
    if (budget_->capacity() != 0 && size > budget_->capacity()) {
      *status =
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       absl::StrCat("request of ", size, " bytes is larger than the memory budget ",
                                    "shipper.queue.mem.bytes (", budget_->capacity(),
                                    " bytes): send fewer events per request"));
      return false;
    }
    // Spent for now: as a full queue, none accepted, and the client resends.
    reply.set_accepted_count(0);
    reply.set_accepted_index(queue_->persisted_index());
    *status = grpc::Status::OK;
    return false;
  }
  const absl::Status taken = request.received().Take(bytes, limits_);
  if (!taken.ok()) {
    // absl's and gRPC's codes are the same numbers.
    *status =
        grpc::Status(static_cast<grpc::StatusCode>(taken.code()), std::string(taken.message()));
    return false;
  }
  return true;
}

grpc::Status PublishCalls::Publish(absl::Time deadline, Request& request) {
  const ScannedRequest& scanned = request.scanned();
  if (!scanned.uuid.empty() && scanned.uuid != uuid_) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("request uuid '", scanned.uuid, "' is not this shipper's uuid '", uuid_,
                     "': the shipper restarted; rewind to your last persisted index and "
                     "resend with the new uuid"));
  }
  const size_t n = scanned.events.size();
  if (n == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "request has no events: send at least one");
  }
  const grpc::Status shutting_down(grpc::StatusCode::UNAVAILABLE,
                                   "shipper is shutting down; resend to its successor");
  if (!accepting_.load(std::memory_order_relaxed)) return shutting_down;

  // Each event is its bytes (wire_event.h), which are also what it counts against the queue's
  // byte limit.
  absl::InlinedVector<queue::Event, 64> events;
  events.reserve(n);
  request.AddRefs(static_cast<int64_t>(n));
  for (absl::string_view event : scanned.events) {
    events.emplace_back(event.data(), static_cast<uint32_t>(event.size()), &request);
  }
  queue::PublishResult result = producer_->TryPublish(absl::MakeSpan(events));
  if (result.accepted == 0 && absl::IsResourceExhausted(result.status)) {
    result = producer_->Publish(absl::MakeSpan(events), deadline);
  }
  if (result.accepted == 0 && !accepting_.load(std::memory_order_relaxed)) return shutting_down;
  pb::PublishReply& reply = request.reply();
  reply.set_accepted_count(static_cast<uint32_t>(result.accepted));
  reply.set_accepted_index(result.last_index);
  return grpc::Status::OK;
}

}  // namespace shipper
