// What both queues keep per producer: the state their entries point to, and the Producer handle
// over it. Internal to queue/.
//
// Thread safety: ProducerState::Ack and HandleGone may be called from any thread; `cancelled` and
// `published` are guarded by the owning queue's publishing mutex (see there).
#ifndef SHIPPER_QUEUE_PRODUCER_STATE_H_
#define SHIPPER_QUEUE_PRODUCER_STATE_H_

#include <atomic>
#include <cstdint>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/types/span.h"
#include "queue/mutex.h"
#include "queue/queue.h"

namespace shipper::queue::internal {

// What a producer's entries point to. It outlives the Producer handle until the last of its
// events is acknowledged, so the acking thread never follows a dangling pointer. It counts events
// rather than references: publishing then costs a plain add under the queue's mutex, not an
// atomic RMW.
class ProducerState {
 public:
  explicit ProducerState(AckCallback on_ack) : on_ack_(std::move(on_ack)) {}

  // Reports `count` more events persisted, up to `persisted_index` (unless `report` is false:
  // the queue is going away). Deletes the state when its handle is gone and this was its last
  // event.
  void Ack(uint64_t count, uint64_t persisted_index, bool report = true) {
    bool last;
    {
      MutexLock lock(&ack_mu_);
      if (report && on_ack_) on_ack_(count, persisted_index);
      acked_ += count;
      last = handle_gone_ && acked_ == published_total_;
    }
    if (last) delete this;
  }

  // The handle is gone after `published` accepted events: the callback is never called again,
  // and the state is deleted after the last of them is acknowledged.
  void HandleGone(uint64_t published) {
    bool last;
    {
      MutexLock lock(&ack_mu_);
      on_ack_ = nullptr;
      handle_gone_ = true;
      published_total_ = published;
      last = acked_ == published_total_;
    }
    if (last) delete this;
  }

  std::atomic<bool> cancelled{false};  // written under the queue's publishing mutex
  uint64_t published = 0;              // guarded by the queue's publishing mutex

 private:
  Mutex ack_mu_;
  AckCallback on_ack_ ABSL_GUARDED_BY(ack_mu_);
  uint64_t acked_ ABSL_GUARDED_BY(ack_mu_) = 0;
  bool handle_gone_ ABSL_GUARDED_BY(ack_mu_) = false;
  uint64_t published_total_ ABSL_GUARDED_BY(ack_mu_) = 0;
};

// The Producer of a queue implementation QueueT, which provides
//   PublishResult Publish(ProducerState*, absl::Span<Event>, absl::Time deadline, bool all)
//     (TryPublish when the deadline is absl::InfinitePast(); TryPublishAll with `all` too), and
//   uint64_t Cancel(ProducerState*), returning how many events the producer published.
template <typename QueueT>
class ProducerHandle final : public Producer {
 public:
  ProducerHandle(QueueT* queue, AckCallback on_ack)
      : queue_(queue), state_(new ProducerState(std::move(on_ack))) {}
  ~ProducerHandle() override { state_->HandleGone(queue_->Cancel(state_)); }

  PublishResult TryPublish(absl::Span<Event> events) override {
    return queue_->Publish(state_, events, absl::InfinitePast(), /*all=*/false);
  }
  PublishResult TryPublishAll(absl::Span<Event> events) override {
    return queue_->Publish(state_, events, absl::InfinitePast(), /*all=*/true);
  }
  PublishResult Publish(absl::Span<Event> events, absl::Time deadline) override {
    return queue_->Publish(state_, events, deadline, /*all=*/false);
  }
  void Cancel() override { queue_->Cancel(state_); }

 private:
  QueueT* const queue_;
  ProducerState* const state_;
};

}  // namespace shipper::queue::internal

#endif  // SHIPPER_QUEUE_PRODUCER_STATE_H_
