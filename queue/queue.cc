// The memory queue: one ring of slots guarded by one mutex.
//
// Indexes only grow; index i lives in slot i & mask_. Four of them split the ring:
//
//   freed_ <= persisted_ <= read_ <= published_
//
//   (freed_, persisted_]     done; the acking thread is calling ACK callbacks and freeing them
//   (persisted_, read_]      handed to consumers (some batches may be done out of order)
//   (read_, published_]      waiting for a consumer
//   (published_, freed_ + max_events]   free
//
// Producers hold the mutex only to move their events into free slots; consumers only to take a
// range of indexes or to mark one done. The expensive part, calling ACK callbacks and destroying
// events, runs outside the mutex on exactly one consumer thread at a time (see AckPersisted), which
// is what keeps the callbacks in publish order and never concurrent.
#include "queue/queue.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "absl/base/internal/raw_logging.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "queue/mutex.h"
#include "queue/wait.h"

namespace shipper::queue {

absl::StatusOr<WaitStrategy> ParseWaitStrategy(absl::string_view name) {
  for (WaitStrategy s :
       {WaitStrategy::kBlocking, WaitStrategy::kPhased, WaitStrategy::kSleeping}) {
    if (name == WaitStrategyName(s)) return s;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("shipper.queue.mem.wait_strategy: want blocking, phased or sleeping, got \"",
                   name, "\""));
}

absl::string_view WaitStrategyName(WaitStrategy strategy) {
  switch (strategy) {
    case WaitStrategy::kBlocking:
      return "blocking";
    case WaitStrategy::kPhased:
      return "phased";
    case WaitStrategy::kSleeping:
      return "sleeping";
  }
  return "unknown";
}

namespace {

// What a producer's slots point to. It outlives the Producer handle until the last of its events
// is acknowledged, so the acking thread never follows a dangling pointer.
class ProducerState {
 public:
  explicit ProducerState(AckCallback on_ack) : on_ack_(std::move(on_ack)) {}

  // Adds `count` events in the queue to the handle's own reference.
  void Ref(uint64_t count) { refs_.fetch_add(count, std::memory_order_relaxed); }
  void Unref(uint64_t count) {
    if (refs_.fetch_sub(count, std::memory_order_acq_rel) == count) delete this;
  }

  // Reports `count` more persisted events, then drops their references.
  void Ack(uint64_t count) {
    {
      internal::MutexLock lock(&ack_mu_);
      if (on_ack_) on_ack_(count);
    }
    Unref(count);
  }

  // After this returns the callback is never called again.
  void StopAcks() {
    internal::MutexLock lock(&ack_mu_);
    on_ack_ = nullptr;
  }

  // Guarded by the queue's mutex (QueueImpl::mu_).
  bool cancelled = false;

 private:
  internal::Mutex ack_mu_;
  AckCallback on_ack_ ABSL_GUARDED_BY(ack_mu_);
  std::atomic<uint64_t> refs_{1};  // the handle + events not yet acknowledged
};

// An entry: the event and who published it, in one 32-byte slot.
struct Slot {
  Event event;
  ProducerState* producer = nullptr;
};
static_assert(sizeof(Slot) == 32, "two slots per cache line");

class QueueImpl final : public Queue {
 public:
  explicit QueueImpl(const Options& options);
  ~QueueImpl() override;

  std::unique_ptr<Producer> NewProducer(AckCallback on_ack) override;
  Batch Get(size_t max_events, absl::Time deadline) override;
  uint64_t persisted_index() const override;
  uint64_t published_index() const override;
  uint64_t WaitPersisted(uint64_t index, absl::Time deadline) override;
  void Close() override;
  uint64_t Drain(absl::Time deadline) override;
  Stats stats() const override;
  std::string DebugString() const override;

  // TryPublish when `deadline` is absl::InfinitePast().
  PublishResult Publish(ProducerState* producer, absl::Span<Event> events, absl::Time deadline);
  void Cancel(ProducerState* producer);
  // Marks the events with indexes [first_index, first_index + size) done.
  void Done(uint64_t first_index, size_t size);

  // REQUIRES: `index` is in a batch that is not done.
  const Event& event(uint64_t index) const { return slot(index).event; }

 private:
  Slot& slot(uint64_t index) const { return slots_[index & mask_]; }

  // Moves the longest prefix of `events` that fits into free slots; returns how many.
  size_t Accept(ProducerState* producer, absl::Span<Event> events, internal::Wakeups* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a Get for up to `max_events` should return now (the flush policy).
  bool ReadyToFlush(size_t max_events) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls ACK callbacks and frees the slots of done events until none are left.
  // REQUIRES: no thread is acking (acking_ is false).
  void AckPersisted(internal::Wakeups* wake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Acknowledges and destroys the events in [from, to]; returns their bytes.
  // REQUIRES: the calling thread owns those slots (it set acking_).
  size_t AckRange(uint64_t from, uint64_t to);

  size_t unread() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return published_ - read_; }
  size_t held() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return published_ - freed_; }

  // Constant after construction.
  const Options options_;
  const internal::WaitOptions wait_options_;
  const bool buffered_;
  const uint64_t mask_;
  const std::unique_ptr<Slot[]> slots_;

  mutable internal::Mutex mu_;
  uint64_t published_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t read_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t persisted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t freed_ ABSL_GUARDED_BY(mu_) = 0;
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;  // of the events in (freed_, published_]
  // Buffered only: when the oldest unread event was published.
  absl::Time first_unread_time_ ABSL_GUARDED_BY(mu_);
  // Done batches beyond persisted_ + 1, as [first, last], lowest first.
  using Range = std::pair<uint64_t, uint64_t>;
  std::priority_queue<Range, std::vector<Range>, std::greater<Range>> done_early_
      ABSL_GUARDED_BY(mu_);
  bool acking_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int blocked_producers_ ABSL_GUARDED_BY(mu_) = 0;

  internal::WaitChannel consumers_ ABSL_GUARDED_BY(mu_);  // Get: events to take
  internal::WaitChannel producers_ ABSL_GUARDED_BY(mu_);  // Publish: room, cancel, close
  internal::WaitChannel progress_ ABSL_GUARDED_BY(mu_);   // WaitPersisted, Drain
};

class ProducerImpl final : public Producer {
 public:
  ProducerImpl(QueueImpl* queue, ProducerState* state) : queue_(queue), state_(state) {}
  ~ProducerImpl() override {
    Cancel();
    state_->StopAcks();
    state_->Unref(1);
  }

  PublishResult TryPublish(absl::Span<Event> events) override {
    return queue_->Publish(state_, events, absl::InfinitePast());
  }
  PublishResult Publish(absl::Span<Event> events, absl::Time deadline) override {
    return queue_->Publish(state_, events, deadline);
  }
  void Cancel() override { queue_->Cancel(state_); }

 private:
  QueueImpl* const queue_;
  ProducerState* const state_;
};

uint64_t RingSize(size_t max_events) {
  uint64_t size = 1;
  while (size < max_events) size <<= 1;
  return size;
}

QueueImpl::QueueImpl(const Options& options)
    : options_(options),
      wait_options_{options.wait_strategy, options.sleep_min, options.sleep_max},
      buffered_(options.flush_min_events > 1),
      mask_(RingSize(options.max_events) - 1),
      slots_(new Slot[mask_ + 1]) {}

QueueImpl::~QueueImpl() {
  internal::MutexLock lock(&mu_);
  for (uint64_t i = freed_ + 1; i <= published_; ++i) {
    Slot& s = slot(i);
    s.event = Event();
    s.producer->Unref(1);
  }
}

std::unique_ptr<Producer> QueueImpl::NewProducer(AckCallback on_ack) {
  return std::make_unique<ProducerImpl>(this, new ProducerState(std::move(on_ack)));
}

size_t QueueImpl::Accept(ProducerState* producer, absl::Span<Event> events,
                         internal::Wakeups* wake) {
  const size_t room = options_.max_events - held();
  const size_t max_bytes = options_.max_bytes;
  size_t n = 0;
  size_t bytes = bytes_;
  for (; n < events.size() && n < room; ++n) {
    const size_t event_bytes = events[n].bytes();
    // An event larger than max_bytes is accepted alone into an empty queue, else it never would.
    if (max_bytes != 0 && bytes + event_bytes > max_bytes && held() + n > 0) break;
    bytes += event_bytes;
    Slot& s = slot(published_ + 1 + n);
    s.event = std::move(events[n]);
    s.producer = producer;
  }
  if (n == 0) return 0;
  producer->Ref(n);
  const size_t unread_before = unread();
  if (buffered_ && unread_before == 0) first_unread_time_ = absl::Now();
  published_ += n;
  bytes_ = bytes;
  // Wake a consumer only when its answer may change: the first unread event starts the flush
  // timer, reaching flush_min_events ends the wait. Get passes any rest on to the next consumer.
  const size_t threshold = options_.flush_min_events;
  if (unread_before == 0 || (unread_before < threshold && unread() >= threshold)) {
    consumers_.NotifyOne(wake);
  }
  return n;
}

PublishResult QueueImpl::Publish(ProducerState* producer, absl::Span<Event> events,
                                 absl::Time deadline) {
  PublishResult result;
  internal::Wakeups wake;
  internal::MutexLock lock(&mu_);
  internal::Waiter waiter(&producers_, wait_options_);
  bool blocked = false;
  for (;;) {
    if (producer->cancelled) {
      result.status = absl::CancelledError("producer cancelled");
      break;
    }
    if (closed_) {
      result.status = absl::UnavailableError("queue closed");
      break;
    }
    const size_t accepted = Accept(producer, events.subspan(result.accepted), &wake);
    if (accepted > 0) {
      result.accepted += accepted;
      result.last_index = published_;
    }
    if (result.accepted == events.size()) break;
    if (deadline == absl::InfinitePast()) {
      result.status = absl::ResourceExhaustedError("queue full");
      break;
    }
    if (absl::Now() >= deadline) {
      result.status = absl::DeadlineExceededError("queue full until the deadline");
      break;
    }
    if (!blocked) {
      // A buffered Get flushes early for blocked producers (see ReadyToFlush).
      blocked = true;
      ++blocked_producers_;
      if (unread() > 0) consumers_.NotifyOne(&wake);
    }
    waiter.Wait(&mu_, deadline, &wake);
  }
  if (blocked) --blocked_producers_;
  if (result.accepted == 0) result.last_index = published_;
  return result;
}

void QueueImpl::Cancel(ProducerState* producer) {
  internal::MutexLock lock(&mu_);
  producer->cancelled = true;
  producers_.NotifyAll();
}

bool QueueImpl::ReadyToFlush(size_t max_events) const {
  const size_t n = unread();
  if (n == 0) return false;
  if (!buffered_ || closed_ || blocked_producers_ > 0) return true;
  if (n >= std::min(options_.flush_min_events, max_events)) return true;
  return absl::Now() >= first_unread_time_ + options_.flush_timeout;
}

Batch QueueImpl::Get(size_t max_events, absl::Time deadline) {
  if (max_events == 0) return Batch();
  internal::Wakeups wake;
  internal::MutexLock lock(&mu_);
  internal::Waiter waiter(&consumers_, wait_options_);
  while (!ReadyToFlush(max_events)) {
    if (closed_ && unread() == 0) return Batch();
    if (absl::Now() >= deadline) return Batch();
    absl::Time until = deadline;
    if (unread() > 0) until = std::min(until, first_unread_time_ + options_.flush_timeout);
    waiter.Wait(&mu_, until);
  }
  const size_t n = std::min(max_events, unread());
  const uint64_t first = read_ + 1;
  read_ += n;
  if (unread() > 0) consumers_.NotifyOne(&wake);
  return MakeBatch(this, first, n);
}

void QueueImpl::Done(uint64_t first_index, size_t size) {
  const uint64_t last = first_index + size - 1;
  internal::Wakeups wake;
  internal::MutexLock lock(&mu_);
  if (first_index != persisted_ + 1) {
    done_early_.push({first_index, last});
    return;
  }
  persisted_ = last;
  while (!done_early_.empty() && done_early_.top().first == persisted_ + 1) {
    persisted_ = done_early_.top().second;
    done_early_.pop();
  }
  progress_.NotifyAll();
  if (!acking_) AckPersisted(&wake);
}

void QueueImpl::AckPersisted(internal::Wakeups* wake) {
  acking_ = true;
  while (freed_ < persisted_) {
    const uint64_t from = freed_ + 1;
    const uint64_t to = persisted_;
    mu_.Unlock();
    wake->Send();
    const size_t bytes = AckRange(from, to);
    mu_.Lock();
    freed_ = to;
    bytes_ -= bytes;
    producers_.NotifyAll(wake);
    // Under the mutex: once Drain sees the last free, the queue may be destroyed.
    progress_.NotifyAll();
  }
  acking_ = false;
}

size_t QueueImpl::AckRange(uint64_t from, uint64_t to) {
  // One callback per producer and range: runs of a producer's events are summed first.
  struct Acks {
    ProducerState* producer;
    uint64_t count;
  };
  absl::InlinedVector<Acks, 8> acks;
  size_t bytes = 0;
  for (uint64_t i = from; i <= to;) {
    ProducerState* const producer = slot(i).producer;
    uint64_t run = 0;
    for (; i <= to && slot(i).producer == producer; ++i, ++run) {
      Event done = std::move(slot(i).event);
      bytes += done.bytes();
    }
    auto it = std::find_if(acks.begin(), acks.end(),
                           [&](const Acks& a) { return a.producer == producer; });
    if (it != acks.end()) {
      it->count += run;
    } else {
      acks.push_back({producer, run});
    }
  }
  for (const Acks& a : acks) a.producer->Ack(a.count);
  return bytes;
}

uint64_t QueueImpl::persisted_index() const {
  internal::MutexLock lock(&mu_);
  return persisted_;
}

uint64_t QueueImpl::published_index() const {
  internal::MutexLock lock(&mu_);
  return published_;
}

uint64_t QueueImpl::WaitPersisted(uint64_t index, absl::Time deadline) {
  internal::MutexLock lock(&mu_);
  internal::Waiter waiter(&progress_, wait_options_);
  while (persisted_ <= index && !(closed_ && persisted_ == published_) &&
         absl::Now() < deadline) {
    waiter.Wait(&mu_, deadline);
  }
  return persisted_;
}

void QueueImpl::Close() {
  internal::MutexLock lock(&mu_);
  closed_ = true;
  consumers_.NotifyAll();
  producers_.NotifyAll();
  progress_.NotifyAll();
}

uint64_t QueueImpl::Drain(absl::Time deadline) {
  internal::MutexLock lock(&mu_);
  internal::Waiter waiter(&progress_, wait_options_);
  // Waits for the ACKs too: once Drain returns 0, no callback runs any more.
  while (freed_ < published_ && absl::Now() < deadline) waiter.Wait(&mu_, deadline);
  return published_ - persisted_;
}

Queue::Stats QueueImpl::stats() const {
  internal::MutexLock lock(&mu_);
  return {static_cast<size_t>(published_ - persisted_), bytes_};
}

std::string QueueImpl::DebugString() const {
  internal::MutexLock lock(&mu_);
  return absl::StrCat("published=", published_, " read=", read_, " persisted=", persisted_,
                      " freed=", freed_, " bytes=", bytes_, " done_early=", done_early_.size(),
                      " acking=", acking_, " closed=", closed_,
                      " blocked_producers=", blocked_producers_,
                      " sleeping_consumers=", consumers_.sleepers(),
                      " sleeping_producers=", producers_.sleepers());
}

QueueImpl* Impl(Queue* queue) { return static_cast<QueueImpl*>(queue); }

}  // namespace

absl::StatusOr<std::unique_ptr<Queue>> Queue::Create(const Options& options) {
  // A ring of 2^26 slots is 2 GiB; a sidecar that wants more has a different problem.
  if (options.max_events < 1 || options.max_events > (size_t{1} << 26)) {
    return absl::InvalidArgumentError(
        "shipper.queue.mem.events: must be between 1 and 67108864");
  }
  if (options.flush_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("shipper.queue.mem.flush.timeout: must not be negative");
  }
  if (options.wait_strategy == WaitStrategy::kSleeping &&
      !(options.sleep_min > absl::ZeroDuration() && options.sleep_min <= options.sleep_max)) {
    return absl::InvalidArgumentError(
        "sleep_min/sleep_max: want 0 < sleep_min <= sleep_max for the sleeping wait strategy");
  }
  if (WaitStrategyName(options.wait_strategy) == "unknown") {
    return absl::InvalidArgumentError("shipper.queue.mem.wait_strategy: unknown value");
  }
  return std::unique_ptr<Queue>(new QueueImpl(options));
}

Batch Queue::MakeBatch(Queue* queue, uint64_t first_index, size_t size) {
  Batch batch;
  batch.queue_ = queue;
  batch.first_index_ = first_index;
  batch.size_ = size;
  return batch;
}

Batch::Batch(Batch&& other) noexcept
    : queue_(other.queue_),
      first_index_(other.first_index_),
      size_(std::exchange(other.size_, 0)) {}

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    ABSL_RAW_CHECK(empty(), "a Batch was overwritten before Done()");
    queue_ = other.queue_;
    first_index_ = other.first_index_;
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Batch::~Batch() { ABSL_RAW_CHECK(empty(), "a Batch was destroyed before Done()"); }

const Event& Batch::event(size_t i) const { return Impl(queue_)->event(first_index_ + i); }

void Batch::Done() {
  if (size_ == 0) return;
  Impl(queue_)->Done(first_index_, std::exchange(size_, 0));
}

}  // namespace shipper::queue
