// The memory queue: one ring of slots between two mutexes.
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
// Producers take publish_mu_ to fill free slots and advance published_; consumers take get_mu_ to
// advance read_, persisted_ and freed_. Neither side ever holds the other's mutex, so a consumer
// taking a few events does not stall the producers, and the other side's index is read through
// an atomic. The expensive part, calling ACK callbacks and destroying events, runs outside both
// mutexes on exactly one consumer thread at a time (see AckPersisted), which is what keeps the
// callbacks in publish order and never concurrent.
//
// Waking across the two sides (wait.h): consumers sleep on a channel of publish_mu_, producers on
// one of get_mu_, so whoever advances an index sees under its own mutex whether anyone sleeps.
// Lock order: get_mu_, then publish_mu_.
#include "queue/memory_queue.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/internal/raw_logging.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "queue/common.h"
#include "queue/mutex.h"
#include "queue/producer_state.h"
#include "queue/wait.h"

namespace shipper::queue {

namespace {

using internal::ProducerState;

// An entry: the event and who published it, in one 32-byte slot.
struct Slot {
  Event event;
  ProducerState* producer = nullptr;
};
// Two slots per cache line; Batch::event() reads events straight from the slots, without calling
// in here.
static_assert(sizeof(Slot) == 32 && offsetof(Slot, event) == 0,
              "Batch reads slots like this, two per cache line");

class MemoryQueueImpl final : public MemoryQueue {
 public:
  explicit MemoryQueueImpl(const MemoryOptions& options);
  ~MemoryQueueImpl() override;

  std::unique_ptr<Producer> NewProducer(AckCallback on_ack) override;
  Batch Get(size_t max_events, absl::Time deadline) override;
  uint64_t persisted_index() const override;
  uint64_t published_index() const override;
  uint64_t WaitPersisted(uint64_t index, absl::Time deadline) override;
  void Close() override;
  uint64_t Drain(absl::Time deadline) override;
  Stats stats() const override;
  std::string DebugString() const override;

  // TryPublish when `deadline` is absl::InfinitePast(); with `all` too, TryPublishAll.
  PublishResult Publish(ProducerState* producer, absl::Span<Event> events, absl::Time deadline,
                        bool all);
  // Returns how many events the producer published.
  uint64_t Cancel(ProducerState* producer);

 protected:
  void Done(uint64_t first_index, size_t size) override;

 private:
  Slot& slot(uint64_t index) const { return slots_[index & mask_]; }
  // Calls f(slot) for the slots of indexes [first, first + count): at most two contiguous pieces
  // of the ring, walked with plain pointers.
  template <typename F>
  void ForEachSlot(uint64_t first, uint64_t count, F f) const {
    while (count > 0) {
      Slot* s = &slot(first);
      const uint64_t n = std::min(count, mask_ + 1 - (first & mask_));
      for (Slot* const end = s + n; s != end; ++s) f(*s);
      first += n;
      count -= n;
    }
  }

  // Moves the longest prefix of `events` that fits into the slots free up to `freed` into
  // them (with `all`, all of them or none); returns how many.
  size_t Accept(ProducerState* producer, absl::Span<Event> events, uint64_t freed, bool all,
                internal::Wakeups* wake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(publish_mu_);
  // Whether `events` are more than the queue can ever hold at once (TryPublishAll).
  bool NeverFits(absl::Span<const Event> events) const;
  // Whether a Get for up to `max_events` should return now (the flush policy).
  bool ReadyToFlush(uint64_t unread, size_t max_events, bool closed) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(get_mu_);
  // Buffered only: when the unread events must be handed out even if too few.
  absl::Time FlushTime() const {
    return flush_.FlushTime(first_unread_ns_.load(std::memory_order_relaxed));
  }
  // Calls ACK callbacks and frees the slots of done events until none are left.
  // REQUIRES: no thread is acking (acking_ is false).
  void AckPersisted(internal::Wakeups* wake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(get_mu_);
  // Acknowledges and destroys the events in [from, to], all persisted; returns their bytes.
  // REQUIRES: the calling thread owns those slots (it set acking_).
  // With `report` false, destroys them without calling callbacks.
  size_t AckRange(uint64_t from, uint64_t to, bool report = true);

  // Constant after construction.
  const MemoryOptions options_;
  const internal::WaitOptions wait_options_;
  const bool buffered_;
  const internal::FlushPolicy flush_;
  const uint64_t mask_;
  const std::unique_ptr<Slot[]> slots_;

  // Producer side. The atomics are written under publish_mu_ and read anywhere. Each side starts
  // a cache line of its own, so that one side's writes do not evict the other's lock.
  alignas(64) mutable internal::Mutex publish_mu_;
  std::atomic<uint64_t> published_{0};
  std::atomic<uint64_t> bytes_in_{0};        // bytes of all events ever accepted
  std::atomic<int64_t> first_unread_ns_{0};  // buffered: when the oldest unread was published
  std::atomic<int> blocked_producers_{0};    // in Publish, waiting for room
  std::atomic<bool> closed_{false};
  internal::WaitChannel consumers_{&publish_mu_, &published_};  // Get: events to take

  // Consumer side. The atomics are written under get_mu_ and read anywhere.
  alignas(64) mutable internal::Mutex get_mu_;
  std::atomic<uint64_t> read_{0};
  std::atomic<uint64_t> persisted_{0};
  std::atomic<uint64_t> freed_{0};
  std::atomic<uint64_t> bytes_out_{0};  // bytes of all events freed
  // Done batches beyond persisted_ + 1.
  internal::DoneRanges done_early_ ABSL_GUARDED_BY(get_mu_);
  bool acking_ ABSL_GUARDED_BY(get_mu_) = false;
  internal::WaitChannel producers_{&get_mu_, &freed_};     // Publish: room, cancel, close
  internal::WaitChannel progress_{&get_mu_, &persisted_};  // WaitPersisted, Drain
};

uint64_t RingSize(size_t max_events) {
  uint64_t size = 1;
  while (size < max_events) size <<= 1;
  return size;
}

MemoryQueueImpl::MemoryQueueImpl(const MemoryOptions& options)
    : options_(options),
      wait_options_{options.wait_strategy, options.sleep_min, options.sleep_max},
      buffered_(options.flush_min_events > 1),
      flush_{buffered_, options.flush_min_events, options.flush_timeout},
      mask_(RingSize(options.max_events) - 1),
      slots_(new Slot[mask_ + 1]) {}

MemoryQueueImpl::~MemoryQueueImpl() {
  if (freed_.load() < published_.load()) AckRange(freed_.load() + 1, published_.load(), false);
}

std::unique_ptr<Producer> MemoryQueueImpl::NewProducer(AckCallback on_ack) {
  return std::make_unique<internal::ProducerHandle<MemoryQueueImpl>>(this, std::move(on_ack));
}

bool MemoryQueueImpl::NeverFits(absl::Span<const Event> events) const {
  if (events.size() > options_.max_events) return true;
  if (options_.max_bytes == 0 || events.size() == 1) return false;
  uint64_t bytes = 0;
  for (const Event& event : events) bytes += event.bytes();
  return bytes > options_.max_bytes;
}

size_t MemoryQueueImpl::Accept(ProducerState* producer, absl::Span<Event> events, uint64_t freed,
                               bool all, internal::Wakeups* wake) {
  const uint64_t published = published_.load(std::memory_order_relaxed);
  const uint64_t held = published - freed;
  const size_t room = options_.max_events - held;
  const size_t max_bytes = options_.max_bytes;
  const uint64_t bytes_in = bytes_in_.load(std::memory_order_relaxed);
  const uint64_t held_bytes = bytes_in - bytes_out_.load(std::memory_order_acquire);
  if (all) {
    // The loop below takes a prefix; make sure it takes everything before it moves anything.
    if (events.size() > room) return 0;
    if (max_bytes != 0 && !(held == 0 && events.size() == 1)) {
      uint64_t bytes = 0;
      for (const Event& event : events) bytes += event.bytes();
      if (held_bytes + bytes > max_bytes) return 0;
    }
  }
  uint64_t added_bytes = 0;
  size_t n = 0;
  for (; n < events.size() && n < room; ++n) {
    const size_t event_bytes = events[n].bytes();
    // An event larger than max_bytes is accepted alone into an empty queue, else it never would.
    if (max_bytes != 0 && held_bytes + added_bytes + event_bytes > max_bytes && held + n > 0) {
      break;
    }
    added_bytes += event_bytes;
    Slot& s = slot(published + 1 + n);
    s.event = std::move(events[n]);
    s.producer = producer;
  }
  if (n == 0) return 0;
  producer->published += n;
  // Approximate on purpose: if a consumer races us, the timer starts early, never late.
  if (buffered_ && read_.load(std::memory_order_relaxed) >= published) {
    first_unread_ns_.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed);
  }
  bytes_in_.store(bytes_in + added_bytes, std::memory_order_relaxed);
  published_.store(published + n, std::memory_order_release);
  // Wake a consumer only when its answer may change: the first unread event starts the flush
  // timer, reaching flush_min_events ends the wait. Get passes any rest on to the next consumer.
  const uint64_t read = std::min(read_.load(std::memory_order_acquire), published);
  const uint64_t unread_before = published - read;
  const uint64_t threshold = options_.flush_min_events;
  if (unread_before == 0 || (unread_before < threshold && unread_before + n >= threshold)) {
    consumers_.NotifyOne(wake);
  }
  return n;
}

PublishResult MemoryQueueImpl::Publish(ProducerState* producer, absl::Span<Event> events,
                                       absl::Time deadline, bool all) {
  PublishResult result;
  if (all && NeverFits(events)) {
    result.status = absl::OutOfRangeError("more events or bytes than the queue holds at once");
    result.last_index = published_.load(std::memory_order_relaxed);
    return result;
  }
  internal::Wakeups wake;
  internal::MutexLock lock(&publish_mu_);
  std::optional<internal::Waiter> waiter;  // only when it must wait
  bool blocked = false;
  for (;;) {
    if (producer->cancelled.load(std::memory_order_relaxed)) {
      result.status = absl::CancelledError("producer cancelled");
      break;
    }
    if (closed_.load(std::memory_order_relaxed)) {
      result.status = absl::UnavailableError("queue closed");
      break;
    }
    const uint64_t freed = freed_.load(std::memory_order_acquire);
    const size_t accepted = Accept(producer, events.subspan(result.accepted), freed, all, &wake);
    if (accepted > 0) {
      result.accepted += accepted;
      result.last_index = published_.load(std::memory_order_relaxed);
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
      blocked_producers_.fetch_add(1, std::memory_order_relaxed);
      consumers_.NotifyOne(&wake);
    }
    if (!waiter) waiter.emplace(&producers_, wait_options_);
    waiter->Wait(
        &publish_mu_, deadline,
        [&] {  // under get_mu_
          return freed_.load(std::memory_order_relaxed) != freed ||
                 producer->cancelled.load(std::memory_order_relaxed) ||
                 closed_.load(std::memory_order_relaxed);
        },
        &wake);
  }
  if (blocked) blocked_producers_.fetch_sub(1, std::memory_order_relaxed);
  if (result.accepted == 0) result.last_index = published_.load(std::memory_order_relaxed);
  return result;
}

uint64_t MemoryQueueImpl::Cancel(ProducerState* producer) {
  internal::Wakeups wake;
  uint64_t published;
  {
    internal::MutexLock lock(&publish_mu_);
    producer->cancelled.store(true, std::memory_order_relaxed);
    published = producer->published;
  }
  internal::MutexLock lock(&get_mu_);
  producers_.NotifyAll(&wake);
  return published;
}

bool MemoryQueueImpl::ReadyToFlush(uint64_t unread, size_t max_events, bool closed) const {
  return flush_.Ready(unread, max_events, closed,
                      blocked_producers_.load(std::memory_order_relaxed) > 0,
                      first_unread_ns_.load(std::memory_order_relaxed));
}

Batch MemoryQueueImpl::Get(size_t max_events, absl::Time deadline) {
  if (max_events == 0) return Batch();
  internal::Wakeups wake;
  internal::MutexLock lock(&get_mu_);
  internal::Waiter waiter(&consumers_, wait_options_);
  uint64_t read;  // re-read after every wait: other consumers take events meanwhile
  uint64_t published;
  for (;;) {
    read = read_.load(std::memory_order_relaxed);
    // closed_ first: once it is set, no event is published any more.
    const bool closed = closed_.load(std::memory_order_acquire);
    published = published_.load(std::memory_order_acquire);
    const uint64_t unread = published - read;
    if (ReadyToFlush(unread, max_events, closed)) break;
    if (closed && unread == 0) return Batch();
    if (absl::Now() >= deadline) return Batch();
    const absl::Time until = unread > 0 ? std::min(deadline, FlushTime()) : deadline;
    const int blocked = blocked_producers_.load(std::memory_order_relaxed);
    waiter.Wait(&get_mu_, until, [&] {  // under publish_mu_
      return published_.load(std::memory_order_relaxed) != published ||
             closed_.load(std::memory_order_relaxed) != closed ||
             blocked_producers_.load(std::memory_order_relaxed) != blocked;
    });
  }
  const size_t n = std::min<uint64_t>(max_events, published - read);
  read_.store(read + n, std::memory_order_release);
  if (read + n < published) {
    internal::MutexLock producer_side(&publish_mu_);
    consumers_.NotifyOne(&wake);
  }
  return MakeBatch(this, slots_.get(), mask_, read + 1, n);
}

void MemoryQueueImpl::Done(uint64_t first_index, size_t size) {
  const uint64_t last = first_index + size - 1;
  internal::Wakeups wake;
  internal::MutexLock lock(&get_mu_);
  const uint64_t before = persisted_.load(std::memory_order_relaxed);
  const uint64_t persisted = done_early_.Add(first_index, last, before);
  if (persisted == before) return;  // done out of order
  persisted_.store(persisted, std::memory_order_release);
  progress_.NotifyAll(&wake);
  if (!acking_) AckPersisted(&wake);
}

void MemoryQueueImpl::AckPersisted(internal::Wakeups* wake) {
  acking_ = true;
  uint64_t freed = freed_.load(std::memory_order_relaxed);
  while (freed < persisted_.load(std::memory_order_relaxed)) {
    const uint64_t to = persisted_.load(std::memory_order_relaxed);
    get_mu_.Unlock();
    wake->Send();
    const size_t bytes = AckRange(freed + 1, to);
    get_mu_.Lock();
    bytes_out_.store(bytes_out_.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
    freed = to;
    freed_.store(freed, std::memory_order_release);
    producers_.NotifyAll(wake);
    progress_.NotifyAll(wake);
  }
  acking_ = false;
}

size_t MemoryQueueImpl::AckRange(uint64_t from, uint64_t to, bool report) {
  // One callback per producer and range: runs of a producer's events are summed first.
  struct Acks {
    ProducerState* producer;
    uint64_t count;
  };
  absl::InlinedVector<Acks, 8> acks;
  auto add = [&](ProducerState* producer, uint64_t run) {
    auto it = std::find_if(acks.begin(), acks.end(),
                           [&](const Acks& a) { return a.producer == producer; });
    if (it != acks.end()) {
      it->count += run;
    } else {
      acks.push_back({producer, run});
    }
  };
  size_t bytes = 0;
  ProducerState* producer = slot(from).producer;
  uint64_t run = 0;
  ForEachSlot(from, to - from + 1, [&](Slot& s) {
    if (s.producer != producer) {
      add(producer, run);
      producer = s.producer;
      run = 0;
    }
    ++run;
    bytes += s.event.bytes();
    Event done = std::move(s.event);
  });
  add(producer, run);
  for (const Acks& a : acks) a.producer->Ack(a.count, to, report);
  return bytes;
}

uint64_t MemoryQueueImpl::persisted_index() const {
  return persisted_.load(std::memory_order_acquire);
}

uint64_t MemoryQueueImpl::published_index() const {
  return published_.load(std::memory_order_acquire);
}

uint64_t MemoryQueueImpl::WaitPersisted(uint64_t index, absl::Time deadline) {
  internal::MutexLock lock(&get_mu_);
  internal::Waiter waiter(&progress_, wait_options_);
  for (;;) {
    const bool closed = closed_.load(std::memory_order_acquire);
    const uint64_t persisted = persisted_.load(std::memory_order_relaxed);
    if (persisted > index || (closed && persisted == published_.load()) ||
        absl::Now() >= deadline) {
      return persisted;
    }
    waiter.Wait(&get_mu_, deadline,
                [&] { return closed_.load(std::memory_order_relaxed) != closed; });
  }
}

void MemoryQueueImpl::Close() {
  internal::Wakeups wake;
  {
    internal::MutexLock lock(&publish_mu_);
    closed_.store(true, std::memory_order_release);
    consumers_.NotifyAll(&wake);
  }
  internal::MutexLock lock(&get_mu_);
  producers_.NotifyAll(&wake);
  progress_.NotifyAll(&wake);
}

uint64_t MemoryQueueImpl::Drain(absl::Time deadline) {
  internal::MutexLock lock(&get_mu_);
  internal::Waiter waiter(&progress_, wait_options_);
  // Waits for the ACKs too: once Drain returns 0, no callback runs any more.
  for (;;) {
    const uint64_t published = published_.load(std::memory_order_acquire);
    if (freed_.load(std::memory_order_relaxed) == published || absl::Now() >= deadline) {
      return published - persisted_.load(std::memory_order_relaxed);
    }
    waiter.Wait(&get_mu_, deadline,
                [&] { return published_.load(std::memory_order_relaxed) != published; });
  }
}

Queue::Stats MemoryQueueImpl::stats() const {
  const uint64_t persisted = persisted_.load();
  const uint64_t bytes_out = bytes_out_.load();
  return {static_cast<size_t>(published_.load() - persisted),
          static_cast<size_t>(bytes_in_.load() - bytes_out)};
}

std::string MemoryQueueImpl::DebugString() const {
  internal::MutexLock lock(&get_mu_);
  internal::MutexLock producer_side(&publish_mu_);
  return absl::StrCat(
      "published=", published_.load(), " read=", read_.load(), " persisted=", persisted_.load(),
      " freed=", freed_.load(), " bytes=", bytes_in_.load() - bytes_out_.load(),
      " done_early=", done_early_.size(), " acking=", acking_, " closed=", closed_.load(),
      " blocked_producers=", blocked_producers_.load(),
      " sleeping_consumers=", consumers_.sleepers(), " sleeping_producers=", producers_.sleepers());
}

}  // namespace

absl::Status MemoryQueue::Validate(const MemoryOptions& options) {
  // A ring of 2^26 slots is 2 GiB; a sidecar that wants more has a different problem.
  if (options.max_events < 1 || options.max_events > (size_t{1} << 26)) {
    return absl::InvalidArgumentError("shipper.queue.mem.events: must be between 1 and 67108864");
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
  return absl::OkStatus();
}

size_t MemoryQueueRingBytes(size_t max_events) { return RingSize(max_events) * sizeof(Slot); }

absl::StatusOr<std::unique_ptr<MemoryQueue>> MemoryQueue::Create(const MemoryOptions& options) {
  if (absl::Status valid = Validate(options); !valid.ok()) return valid;
  return std::unique_ptr<MemoryQueue>(new MemoryQueueImpl(options));
}

}  // namespace shipper::queue
