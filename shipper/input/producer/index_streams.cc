#include "shipper/input/producer/index_streams.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace shipper {

namespace pb = elastic::agent::shipper::v1::messages;

// One PersistedIndex call. Its state is guarded by the streams' mu_; every transition goes
// through Next(), and the gRPC call it decides on is made after mu_ is released.
class IndexStreams::Stream final : public grpc::ServerWriteReactor<pb::PersistedIndexReply> {
 public:
  // A zero interval asks for one reply.
  Stream(IndexStreams* streams, absl::Duration interval) : streams_(streams), interval_(interval) {
    reply_.set_uuid(streams->uuid_);
  }

  // Decides what to send now; lowers *wake to when it next wants to be asked.
  Action Next(absl::Time now, absl::Time* wake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(streams_->mu_) {
    if (writing_ || finished_) return Action::kNone;
    const uint64_t persisted = streams_->persisted_;
    if (cancelled_) {
      finished_ = true;
      return Action::kCancel;
    }
    if (interval_ <= absl::ZeroDuration() || streams_->ending_) {
      finished_ = true;
      if (sent_ == persisted) return Action::kFinish;
      reply_.set_persisted_index(persisted);
      return Action::kWriteAndFinish;
    }
    if (sent_ == persisted) return Action::kNone;
    if (now < next_) {
      *wake = std::min(*wake, next_);
      return Action::kNone;
    }
    reply_.set_persisted_index(persisted);
    sent_ = persisted;
    next_ = now + interval_;
    writing_ = true;
    return Action::kWrite;
  }

  // REQUIRES: mu_ not held; `action` came from Next().
  void Act(Action action) {
    switch (action) {
      case Action::kNone:
        break;
      case Action::kWrite:
        StartWrite(&reply_);
        break;
      case Action::kWriteAndFinish:
        StartWriteAndFinish(&reply_, grpc::WriteOptions(), grpc::Status::OK);
        break;
      case Action::kFinish:
        Finish(grpc::Status::OK);
        break;
      case Action::kCancel:
        Finish(grpc::Status::CANCELLED);
        break;
    }
  }

  void OnWriteDone(bool ok) override {
    Action action;
    {
      absl::MutexLock lock(&streams_->mu_);
      writing_ = false;
      cancelled_ |= !ok;
      action = Decide();
    }
    Act(action);
  }
  void OnCancel() override {
    Action action;
    {
      absl::MutexLock lock(&streams_->mu_);
      cancelled_ = true;
      action = Decide();
    }
    Act(action);
  }
  void OnDone() override {
    {
      absl::MutexLock lock(&streams_->mu_);
      std::vector<Stream*>& all = streams_->streams_;
      all.erase(std::remove(all.begin(), all.end(), this), all.end());
    }
    delete this;
  }

 private:
  friend class IndexStreams;  // for streams_, in what it asserts about mu_

  // Next() after a change of this stream's state; the action to take once mu_ is released.
  Action Decide() ABSL_EXCLUSIVE_LOCKS_REQUIRED(streams_->mu_) {
    absl::Time wake = absl::InfiniteFuture();
    const Action action = Next(absl::Now(), &wake);
    // A stream that must wait for its interval is the broadcaster's to wake.
    if (wake != absl::InfiniteFuture()) streams_->dirty_ = true;
    return action;
  }

  IndexStreams* const streams_;
  const absl::Duration interval_;
  pb::PersistedIndexReply reply_;  // written only while no write is in flight

  static constexpr uint64_t kNeverSent = ~uint64_t{0};
  uint64_t sent_ ABSL_GUARDED_BY(streams_->mu_) = kNeverSent;
  absl::Time next_ ABSL_GUARDED_BY(streams_->mu_) = absl::InfinitePast();
  bool writing_ ABSL_GUARDED_BY(streams_->mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(streams_->mu_) = false;
  bool finished_ ABSL_GUARDED_BY(streams_->mu_) = false;
};

IndexStreams::IndexStreams(std::string uuid)
    : uuid_(std::move(uuid)), broadcaster_([this] { BroadcastLoop(); }) {}

IndexStreams::~IndexStreams() {
  uint64_t persisted;
  {
    absl::MutexLock lock(&mu_);
    persisted = persisted_;
  }
  End(persisted);
}

grpc::ServerWriteReactor<pb::PersistedIndexReply>* IndexStreams::Open(
    const pb::PersistedIndexRequest& request, uint64_t persisted) {
  const auto& interval = request.polling_interval();
  auto* stream =
      new Stream(this, absl::Seconds(interval.seconds()) + absl::Nanoseconds(interval.nanos()));
  Action action;
  {
    absl::MutexLock lock(&mu_);
    streams_.push_back(stream);
    persisted_ = std::max(persisted_, persisted);
    stream->streams_->mu_.AssertHeld();  // it is mu_: for the analysis, which cannot tell
    absl::Time wake = absl::InfiniteFuture();
    action = stream->Next(absl::Now(), &wake);
  }
  stream->Act(action);
  return stream;
}

void IndexStreams::Persisted(uint64_t persisted) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    persisted_ = std::max(persisted_, persisted);
    if (Due(&actions) != absl::InfiniteFuture()) dirty_ = true;
  }
  Act(actions);
}

void IndexStreams::End(uint64_t persisted) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    if (ending_) return;
    ending_ = true;
    dirty_ = true;
    persisted_ = std::max(persisted_, persisted);
    Due(&actions);
  }
  Act(actions);
  broadcaster_.join();
}

absl::Time IndexStreams::Due(Actions* actions) {
  absl::Time wake = absl::InfiniteFuture();
  const absl::Time now = absl::Now();
  for (Stream* stream : streams_) {
    stream->streams_->mu_.AssertHeld();  // it is mu_: for the analysis, which cannot tell
    const Action action = stream->Next(now, &wake);
    if (action != Action::kNone) actions->emplace_back(stream, action);
  }
  return wake;
}

void IndexStreams::Act(const Actions& actions) {
  for (const auto& [stream, action] : actions) stream->Act(action);
}

void IndexStreams::BroadcastLoop() {
  absl::Time wake = absl::InfiniteFuture();
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.AwaitWithDeadline(absl::Condition(&dirty_), wake);
    if (ending_) return;
    dirty_ = false;
    Actions actions;
    wake = Due(&actions);
    mu_.Unlock();
    Act(actions);
    mu_.Lock();
  }
}

}  // namespace shipper
