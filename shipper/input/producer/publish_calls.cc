#include "shipper/input/producer/publish_calls.h"

#include <algorithm>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "proto/messages.pb.h"
#include "shipper/input/producer/received_request.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/server/async_calls.h"

namespace shipper {

namespace pb = elastic::agent::shipper::v1::messages;

namespace {

// Longest a publish waits for room when nothing of it fits: the client resends what was not
// accepted, so parking it longer only delays that.
constexpr absl::Duration kMaxPublishWait = absl::Milliseconds(500);

// A parked call tries again after this, the pause doubling up to kMaxRetryPause.
constexpr absl::Duration kFirstRetryPause = absl::Milliseconds(2);
constexpr absl::Duration kMaxRetryPause = absl::Milliseconds(20);

constexpr absl::string_view kPublishEventsMethod =
    "/elastic.agent.shipper.v1.Producer/PublishEvents";

// absl's and gRPC's codes are the same numbers.
grpc::Status GrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::Status Served(absl::string_view method) {
  if (method == kPublishEventsMethod) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, absl::StrCat("unknown method ", method));
}

}  // namespace

// A received request and its reply, alive until its call is over and the queue has released
// every event that points into it.
class PublishCalls::Request final : public queue::EventOwner {
 public:
  explicit Request(runtime::MemoryBudget* budget) : budget_(budget) {}

  // Takes `bytes` of the budget for this request's copy if they fit now; they go back when the
  // request is freed. False when they could not be had. Until it succeeds, at most once per call.
  bool Charge(size_t bytes) {
    if (!budget_->TryAcquire(bytes)) return false;
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

// One PublishEvents call (async_calls.h): its request copied into the budget and published,
// parked on an alarm while there is no room.
//
// PublishEvents is served through gRPC's generic API so that a request's message is read only
// once a call has been posted for it: for a registered unary method gRPC reads the message of
// every stream that arrives, before any call is there to take it, however many clients send at
// once (16 connections × 8 large requests held 500 MiB that way, far past the resource quota,
// which reclaims only after the fact). Here at most PostedCalls() messages are read or waiting
// to be copied at any time; other streams wait with what their HTTP/2 window let in.
class PublishCalls::Call final : public AsyncCall {
 public:
  explicit Call(PublishCalls* calls)
      : AsyncCall(&calls->calls_), calls_(calls), request_(new Request(calls->budget_)) {}
  ~Call() override { request_->Release(); }

 private:
  void OnRequest(grpc::ByteBuffer& message) override {
    bytes_.Swap(&message);
    start_ = absl::Now();
    // How long a publish may wait for memory or for room in the queue.
    deadline_ = std::min(absl::FromChrono(context().deadline()), start_ + kMaxPublishWait);
    Attempt(/*may_wait=*/true);
  }
  // The alarm fired (!ok: cancelled: decide now).
  void OnWake(bool ok) override { Attempt(/*may_wait=*/ok); }

  // Tries to take the request into the budget and its events into the queue without blocking;
  // parks the call on an alarm when there is no room yet, `may_wait` and the deadline is ahead.
  void Attempt(bool may_wait) {
    may_wait = may_wait && absl::Now() < deadline_;
    grpc::Status status;
    if (!received_) {
      const Outcome outcome = calls_->Receive(bytes_, may_wait, *request_, &status);
      if (outcome == Outcome::kWait) return Wait();
      bytes_.Clear();  // from here on only the request's own copy holds the events
      // Only now the next call takes our place: the number of calls bounds what gRPC holds.
      // Before the scan, so that the next request is read while this one is scanned.
      PostNext();
      received_ = true;
      if (outcome == Outcome::kDecided) return Answer(status);
      if (!calls_->Scan(*request_, &status)) return Answer(status);
    }
    if (calls_->Publish(may_wait, *request_, &status) == Outcome::kWait) return Wait();
    Answer(status);
  }

  // Frees this completion-queue thread; the call comes back (OnWake) when the alarm fires.
  void Wait() {
    const absl::Time wake = std::min(deadline_, absl::Now() + pause_);
    pause_ = std::min(pause_ * 2, kMaxRetryPause);
    Park(wake);
  }

  void Answer(const grpc::Status& status) {
    const auto code = static_cast<absl::StatusCode>(status.error_code());
    const size_t events = request_->scanned().events.size();
    const size_t accepted = request_->reply().accepted_count();
    metrics::ShipperMetrics& metrics = metrics::ShipperMetrics::Get();
    metrics.Published(events, accepted, request_->reply().accepted_index(), code, start_);
    metrics.InputRequest("producer", code, absl::Now() - start_);
    metrics.InputRecords("producer", metrics::RecordOutcome::kAccepted, accepted);
    const bool resend = code == absl::StatusCode::kOk || code == absl::StatusCode::kUnavailable ||
                        code == absl::StatusCode::kFailedPrecondition;
    metrics.InputRecords(
        "producer", resend ? metrics::RecordOutcome::kRetry : metrics::RecordOutcome::kRejected,
        events - accepted);
    if (!status.ok()) return Fail(status);
    Reply(request_->reply());
  }

  PublishCalls* const calls_;
  Request* const request_;
  grpc::ByteBuffer bytes_;  // the request as received; empty once copied
  bool received_ = false;   // the request was copied or refused, and the next call posted
  absl::Time start_;
  absl::Time deadline_;
  absl::Duration pause_ = kFirstRetryPause;
};

PublishCalls::PublishCalls(queue::Queue* queue, runtime::MemoryBudget* budget, std::string uuid,
                           RequestLimits limits, size_t max_receive_memory,
                           queue::AckCallback on_ack)
    : queue_(queue),
      budget_(budget),
      uuid_(std::move(uuid)),
      limits_(limits),
      producer_(queue->NewProducer(std::move(on_ack))),
      calls_("PublishEvents", PostedCalls(max_receive_memory, limits.max_message_size), Served,
             [this] { return new Call(this); }) {}

void PublishCalls::StopAccepting() {
  accepting_.store(false);
  producer_->Cancel();
}

void PublishCalls::RegisterWith(grpc::ServerBuilder* builder) { calls_.RegisterWith(builder); }

void PublishCalls::Start() { calls_.Start(); }

void PublishCalls::Serve(const runtime::WorkerPool::Worker& worker) { calls_.Serve(worker); }

void PublishCalls::Shutdown() { calls_.Shutdown(); }

void PublishCalls::Finish() { calls_.Finish(); }

PublishCalls::Outcome PublishCalls::Receive(const grpc::ByteBuffer& bytes, bool may_wait,
                                            Request& request, grpc::Status* status) {
  pb::PublishReply& reply = request.reply();
  reply.set_uuid(uuid_);
  // Take() refuses what is larger than max_message_size before it copies anything.
  const size_t size = bytes.Length();
  if (size <= limits_.max_message_size && !request.Charge(size)) {
    if (budget_->capacity() != 0 && size > budget_->capacity()) {
      *status =
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       absl::StrCat("request of ", size, " bytes is larger than the memory budget ",
                                    "shipper.queue.mem.bytes (", budget_->capacity(),
                                    " bytes): send fewer events per request"));
      return Outcome::kDecided;
    }
    if (!accepting_.load(std::memory_order_relaxed)) {
      *status = ShuttingDown();
      return Outcome::kDecided;
    }
    if (may_wait) return Outcome::kWait;
    // Spent for now: as a full queue, none accepted (the index of the last event accepted so
    // far), and the client resends.
    reply.set_accepted_count(0);
    reply.set_accepted_index(queue_->published_index());
    *status = grpc::Status::OK;
    return Outcome::kDecided;
  }
  const absl::Status taken = request.received().Take(bytes, limits_);
  if (!taken.ok()) {
    *status = GrpcStatus(taken);
    return Outcome::kDecided;
  }
  return Outcome::kReceived;
}

bool PublishCalls::Scan(Request& request, grpc::Status* status) {
  const absl::Status scanned = request.received().Scan(limits_);
  if (!scanned.ok()) *status = GrpcStatus(scanned);
  return scanned.ok();
}

grpc::Status PublishCalls::ShuttingDown() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "shipper is shutting down; resend to its successor");
}

PublishCalls::Outcome PublishCalls::Publish(bool may_wait, Request& request, grpc::Status* status) {
  *status = grpc::Status::OK;
  const ScannedRequest& scanned = request.scanned();
  if (!scanned.uuid.empty() && scanned.uuid != uuid_) {
    *status = grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("request uuid '", scanned.uuid, "' is not this shipper's uuid '", uuid_,
                     "': the shipper restarted; rewind to your last persisted index and "
                     "resend with the new uuid"));
    return Outcome::kDecided;
  }
  const size_t n = scanned.events.size();
  if (n == 0) {
    *status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                           "request has no events: send at least one");
    return Outcome::kDecided;
  }
  if (!accepting_.load(std::memory_order_relaxed)) {
    *status = ShuttingDown();
    return Outcome::kDecided;
  }

  // Each event is its bytes (wire_event.h), which are also what it counts against the queue's
  // byte limit. Events not accepted give their reference back when `events` goes.
  absl::InlinedVector<queue::Event, 64> events;
  events.reserve(n);
  request.AddRefs(static_cast<int64_t>(n));
  for (absl::string_view event : scanned.events) {
    events.emplace_back(event.data(), static_cast<uint32_t>(event.size()), &request);
  }
  const queue::PublishResult result = producer_->TryPublish(absl::MakeSpan(events));
  if (result.accepted == 0 && absl::IsResourceExhausted(result.status) && may_wait) {
    return Outcome::kWait;
  }
  if (result.accepted == 0 && !accepting_.load(std::memory_order_relaxed)) {
    *status = ShuttingDown();
    return Outcome::kDecided;
  }
  pb::PublishReply& reply = request.reply();
  reply.set_accepted_count(static_cast<uint32_t>(result.accepted));
  reply.set_accepted_index(result.last_index);
  return Outcome::kDecided;
}

}  // namespace shipper
