// The interface both queues implement, the memory queue (memory_queue.h) and the disk queue
// (disk_queue.h): opaque events between producers (the gRPC server) and consumers (output
// workers), with acknowledgements in publish order.
//
// Every accepted event gets the next index of one ascending sequence starting at 1 (the disk
// queue's recovered events take the first ones). Consumers take batches of consecutive indexes
// (Get) and mark each batch done (Batch::Done) in any order, once its events are handed off for
// good. The persisted index (persisted_index()) is the highest N such that every event with
// index <= N is safe; what safe means is the queue's:
//
//   memory queue  done: Batch::Done() was called for it, which Delivery does once the output
//                 confirmed it (or it was dead-lettered). Get hands out events not yet persisted.
//   disk queue    durable: written and fdatasynced into a segment file, before any consumer can
//                 take it (Get hands out persisted events only). Done() does not move it: done
//                 events are recorded apart (the state file), so the persisted index runs ahead
//                 of what the outputs delivered, and what lies between is delivered from the
//                 files, after a restart too.
//
// Producers learn, through their ACK callback, how many of their events became persisted, in the
// order they published them. Drain() and stats() count events not yet done, for both queues.
//
// Thread safety: Queue and Producer are safe for concurrent use from any number of threads.
// A Batch is used by one thread at a time and may be handed between threads. Destroy a Producer
// before its Queue, and the Queue only after every call into it (Batch::Done included) has
// returned.
#ifndef SHIPPER_QUEUE_QUEUE_H_
#define SHIPPER_QUEUE_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "queue/event.h"

namespace shipper::queue {

// How waiting consumers and blocked producers wait, in either queue
// (shipper.queue.mem.wait_strategy, shipper.queue.disk.wait_strategy).
enum class WaitStrategy {
  kBlocking,  // sleep on a futex/condition variable; wakers pay a syscall only if someone sleeps
  kPhased,    // spin briefly, then yield, then block
  kSleeping,  // sleep with exponentially growing pauses between sleep_min and sleep_max
};

// "blocking", "phased" or "sleeping"; INVALID_ARGUMENT otherwise.
absl::StatusOr<WaitStrategy> ParseWaitStrategy(absl::string_view name);
// The inverse of ParseWaitStrategy.
absl::string_view WaitStrategyName(WaitStrategy strategy);

struct PublishResult {
  size_t accepted = 0;      // events taken from the front of the span
  uint64_t last_index = 0;  // index of the last accepted event; the highest index if none
  // OK when all were accepted; otherwise why not: RESOURCE_EXHAUSTED (full, TryPublish),
  // OUT_OF_RANGE (TryPublishAll: never fits whole), DEADLINE_EXCEEDED, CANCELLED (producer
  // cancelled) or UNAVAILABLE (queue closed).
  absl::Status status;
};

// Called with how many more of this producer's events are persisted (`count`), in publish order,
// exactly once per event (counts may be summed over several batches), and with the persisted
// index that covers them (`persisted_index`: every event with an index up to it is persisted, these
// included; it never decreases from one call to the next, over all of the queue's producers). The
// memory queue runs it inside a consumer's Batch::Done(): the consumer whose Done() advanced the
// persisted index, or one already acking that takes the newer range over; the disk queue on its
// sync thread, after the sync that made the events durable. Never concurrently with itself,
// never after the Producer is destroyed; it must be quick and must not call back into the queue
// (what it may need to know is in its arguments).
using AckCallback = std::function<void(uint64_t count, uint64_t persisted_index)>;

class Queue;

// A run of consecutive events handed to one consumer.
class Batch {
 public:
  Batch() = default;
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&& other) noexcept;
  // REQUIRES: Done() was called, or the batch is empty (else the process aborts: an undone
  // batch would hold back forever what the queue counts as done).
  ~Batch();

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Index of event(0); event(i) has index first_index() + i.
  uint64_t first_index() const { return first_index_; }
  // REQUIRES: i < size(). Inline: outputs call it for every event.
  const Event& event(size_t i) const {
    const uint64_t slot = (first_index_ + i) & mask_;
    return *reinterpret_cast<const Event*>(slots_ + slot * kSlotBytes);
  }

  // Marks every event of the batch handed off for good. Afterwards the batch is empty.
  void Done();
  // Gives the batch up at shutdown, when the output cannot take it: its events are never done,
  // so Drain() counts them as left (the memory queue's persisted index stays below them; the
  // disk queue delivers them again after a restart). Afterwards the batch is empty.
  // REQUIRES: the queue is closed.
  void Abandon() { size_ = 0; }

 private:
  friend class Queue;
  // The queue's ring slots start with their Event (each queue checks it of its slots).
  static constexpr size_t kSlotBytes = 32;

  // Set by the queue (Queue::MakeBatch).
  Queue* queue_ = nullptr;
  const char* slots_ = nullptr;  // the ring
  uint64_t mask_ = 0;            // index -> slot
  uint64_t first_index_ = 0;
  size_t size_ = 0;
};

class Producer {
 public:
  virtual ~Producer() = default;

  // Accepts a prefix of `events` without blocking, moving each accepted event into the queue.
  virtual PublishResult TryPublish(absl::Span<Event> events) = 0;
  // Accepts every event of `events` or none, without blocking: all of them when TryPublish would
  // have accepted all of them now. When none: `events` are left as they were, and the status is
  // RESOURCE_EXHAUSTED when there is no room for all of them now, OUT_OF_RANGE when the queue
  // could never hold them all at once (more events or bytes than its limits: only a span of one
  // event larger than the byte limit goes, alone, into an empty queue), else as TryPublish's.
  // For requests that must be taken whole (OTLP exports).
  virtual PublishResult TryPublishAll(absl::Span<Event> events) = 0;
  // Like TryPublish, but waits for room until all are accepted, `deadline` passes, Cancel() is
  // called or the queue closes.
  virtual PublishResult Publish(absl::Span<Event> events, absl::Time deadline) = 0;
  // Wakes blocked Publish calls of this producer; later publishes are refused (CANCELLED).
  // Events already accepted are still delivered and acknowledged.
  virtual void Cancel() = 0;
};

class Queue {
 public:
  virtual ~Queue() = default;

  // `on_ack` may be null. The producer must not outlive the queue. Destroying it cancels it and
  // stops its callback; the events it published are still delivered.
  virtual std::unique_ptr<Producer> NewProducer(AckCallback on_ack) = 0;

  // Waits for up to `max_events` consecutive events by the flush policy (the options'
  // flush_min_events and flush_timeout). Returns an empty batch when `deadline` passes first, or
  // when the queue is closed and nothing is left.
  virtual Batch Get(size_t max_events, absl::Time deadline = absl::InfiniteFuture()) = 0;

  // Highest N such that every event with index <= N is persisted: done for the memory queue,
  // durable for the disk queue (see above). 0 before any; the disk queue starts at the events it
  // recovered, which count as persisted.
  virtual uint64_t persisted_index() const = 0;
  // Highest index given to an event so far (0 before any; the disk queue's recovered events
  // have indexes 1..N).
  virtual uint64_t published_index() const = 0;
  // Blocks until persisted_index() > `index`, `deadline` passes or the queue is closed and
  // drained; returns persisted_index().
  virtual uint64_t WaitPersisted(uint64_t index, absl::Time deadline) = 0;

  // Stops accepting events (publishes get UNAVAILABLE); consumers still get what is queued.
  virtual void Close() = 0;
  // After Close(): waits until every accepted event is done or `deadline` passes; returns how
  // many accepted events were not done.
  virtual uint64_t Drain(absl::Time deadline) = 0;

  struct Stats {
    size_t events = 0;  // accepted and not yet done
    size_t bytes = 0;
  };
  virtual Stats stats() const = 0;
  // One line of internal state (indexes, waiters) for logs and watchdogs.
  virtual std::string DebugString() const = 0;

 protected:
  friend class Batch;
  // Marks the events with indexes [first_index, first_index + size) done: Batch::Done() of a
  // batch this queue handed out. Virtual, once per batch: outputs take hundreds of events each.
  virtual void Done(uint64_t first_index, size_t size) = 0;

  // Lets implementations hand out batches: Batch's fields are private.
  // `slots` is the ring: mask + 1 slots of Batch::kSlotBytes, each starting with its Event.
  static Batch MakeBatch(Queue* queue, const void* slots, uint64_t mask, uint64_t first_index,
                         size_t size);
};

}  // namespace shipper::queue

#endif  // SHIPPER_QUEUE_QUEUE_H_
