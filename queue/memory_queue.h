// The memory queue: the Queue interface (queue.h) over a bounded ring of events in memory.
//
// Persisted means done: an event is acknowledged to its producer, and covered by
// persisted_index(), once every event up to it is done; until then a crash loses it, and a
// restart starts from index 1 again.
//
// Thread safety: as Queue. Publishing takes a mutex shared by producers only and Get/Done one
// shared by consumers only, so the two sides never wait for each other's bookkeeping. The queue
// runs no thread of its own: ACK callbacks run inside consumers' Batch::Done().
#ifndef SHIPPER_QUEUE_MEMORY_QUEUE_H_
#define SHIPPER_QUEUE_MEMORY_QUEUE_H_

#include <cstddef>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "queue/queue.h"

namespace shipper::queue {

struct MemoryOptions {
  size_t max_events = 65536;  // shipper.queue.mem.events
  // shipper.queue.mem.bytes; 0 means no byte limit. An event larger than max_bytes is accepted
  // only into an empty queue, alone; otherwise it could never be accepted at all.
  size_t max_bytes = 64 << 20;
  // Direct loop when flush_min_events <= 1: Get returns as soon as anything is queued. Otherwise
  // buffered: Get waits until flush_min_events have gathered or flush_timeout has passed since the
  // first of them was published, or a producer is blocked because the queue is full.
  size_t flush_min_events = 1;                           // shipper.queue.mem.flush.min_events
  absl::Duration flush_timeout = absl::Milliseconds(5);  // shipper.queue.mem.flush.timeout
  // shipper.queue.mem.wait_strategy. Blocking is the default because queue_bench measured it
  // best for a sidecar: no CPU when idle, the lowest wake-up latency, and about a third of
  // phased's consumer CPU at 10k events/s. Phased only wins for single-event publishes in a
  // tight loop, where the consumer would otherwise sleep and be woken for every event.
  WaitStrategy wait_strategy = WaitStrategy::kBlocking;
  absl::Duration sleep_min = absl::Microseconds(50);  // kSleeping only
  absl::Duration sleep_max = absl::Milliseconds(10);  // kSleeping only
};

// The bytes of the ring a memory queue allocates, and touches, at Create: max_events rounded up
// to a power of two, a 32-byte slot each. Held for the queue's life whether events come or not.
size_t MemoryQueueRingBytes(size_t max_events);

class MemoryQueue : public Queue {
 public:
  // INVALID_ARGUMENT names the option to fix: the one Validate() finds.
  static absl::StatusOr<std::unique_ptr<MemoryQueue>> Create(const MemoryOptions& options);
  // Whether Create() would take `options`; reads nothing else.
  static absl::Status Validate(const MemoryOptions& options);
};

}  // namespace shipper::queue

#endif  // SHIPPER_QUEUE_MEMORY_QUEUE_H_
