#include "shipper/server/async_calls.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"

namespace shipper {

int PostedCalls(size_t max_receive_memory, size_t max_message_size) {
  constexpr size_t kMaxPostedCalls = 32;
  return static_cast<int>(std::clamp<size_t>(
      max_receive_memory / std::max<size_t>(max_message_size, 1), 1, kMaxPostedCalls));
}

int ReceiveLimit(size_t max_message_size) {
  const size_t limit = max_message_size + max_message_size / 1024 + 1024;
  return static_cast<int>(std::min<size_t>(limit, INT_MAX));
}

AsyncCall::AsyncCall(AsyncCalls* calls) : calls_(calls), stream_(&context_) {}

AsyncCall::~AsyncCall() { calls_->Ended(); }

void AsyncCall::Proceed(bool ok) {
  switch (state_) {
    case State::kArriving: {
      if (!ok) break;  // the server is shutting down
      const grpc::Status served = calls_->method_check_(context_.method());
      if (!served.ok()) {
        PostNext();
        return Fail(served);
      }
      state_ = State::kReading;
      stream_.Read(&message_, this);
      return;
    }
    case State::kReading:
      if (!ok) {
        PostNext();
        return Fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 absl::StrCat(context_.method(), ": no request message")));
      }
      state_ = State::kHandling;
      return OnRequest(message_);
    case State::kWaiting:
      state_ = State::kHandling;
      return OnWake(ok);
    case State::kHandling:
      LOG(FATAL) << "an event for a call its input is handling";
    case State::kFinishing:
      break;
  }
  delete this;
}

void AsyncCall::PostNext() {
  if (posted_next_) return;
  posted_next_ = true;
  calls_->Post();
}

void AsyncCall::Fail(const grpc::Status& status) {
  state_ = State::kFinishing;  // before the completion can come, on another thread
  stream_.Finish(status, this);
}

void AsyncCall::Park(absl::Time wake) {
  state_ = State::kWaiting;
  // Never on a shut-down queue: this call is alive, so Shutdown() has not shut it down yet.
  alarm_ = std::make_unique<grpc::Alarm>();
  alarm_->Set(calls_->cq_.get(), absl::ToChronoTime(wake), this);
}

void AsyncCall::SerializeOrDie(const grpc::Status& serialized) {
  CHECK(serialized.ok()) << serialized.error_message();
}

void AsyncCall::Send(grpc::ByteBuffer bytes) {
  state_ = State::kFinishing;
  stream_.WriteAndFinish(bytes, grpc::WriteOptions(), grpc::Status::OK, this);
}

AsyncCalls::AsyncCalls(std::string name, int posted_calls,
                       std::function<grpc::Status(absl::string_view)> method_check,
                       std::function<AsyncCall*()> new_call)
    : name_(std::move(name)),
      posted_calls_(posted_calls),
      method_check_(std::move(method_check)),
      new_call_(std::move(new_call)) {}

AsyncCalls::~AsyncCalls() {
  absl::MutexLock lock(&mu_);
  LOG_IF(ERROR, live_ != 0) << name_ << ": " << live_ << " call(s) outlive their queue";
}

void AsyncCalls::RegisterWith(grpc::ServerBuilder* builder) {
  builder->RegisterAsyncGenericService(&generic_);
  cq_ = builder->AddCompletionQueue();
}

void AsyncCalls::Start() {
  for (int i = 0; i < posted_calls_; ++i) Post();
}

void AsyncCalls::Post() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    ++live_;
  }
  AsyncCall* call = new_call_();
  // The queue is alive: it shuts down only once live_ is 0, which this call keeps it from.
  generic_.RequestCall(&call->context_, &call->stream_, cq_.get(), cq_.get(), call);
}

void AsyncCalls::Ended() {
  absl::MutexLock lock(&mu_);
  --live_;
}

int AsyncCalls::live() const {
  absl::MutexLock lock(&mu_);
  return live_;
}

void AsyncCalls::Serve(const runtime::WorkerPool::Worker& worker) {
  constexpr absl::Duration kServePoll = absl::Milliseconds(500);
  while (!worker.stopping()) {
    void* tag;
    bool ok;
    switch (cq_->AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + kServePoll))) {
      case grpc::CompletionQueue::SHUTDOWN:
        return;
      case grpc::CompletionQueue::GOT_EVENT:
        static_cast<AsyncCall*>(tag)->Proceed(ok);
        break;
      case grpc::CompletionQueue::TIMEOUT:
        break;
    }
  }
}

void AsyncCalls::Shutdown() {
  if (cq_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  stopping_ = true;
  // The server's shutdown cancelled every open call, so each pending operation completes; a
  // call still converting or parked answers on its own. Log while it takes long, so that a call
  // that never ends is seen.
  const absl::Condition ended(
      +[](int* live) { return *live == 0; }, &live_);
  while (!mu_.AwaitWithTimeout(ended, absl::Seconds(5))) {
    LOG(WARNING) << name_ << ": waiting for " << live_ << " call(s) to end before stopping";
  }
  shut_down_ = true;
  cq_->Shutdown();
}

void AsyncCalls::Finish() {
  if (cq_ == nullptr) return;
  void* tag;
  bool ok;
  // Every call ended before the queue was shut down: what is left is no call's.
  while (cq_->Next(&tag, &ok)) {
  }
}

}  // namespace shipper
