// What the memory and disk queues share beside ProducerState: the flush policy and the ranges
// done out of order; and the disk queue's publish loop. Internal to queue/.
//
// Thread safety: each names the mutex its caller holds.
#ifndef SHIPPER_QUEUE_COMMON_H_
#define SHIPPER_QUEUE_COMMON_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "queue/mutex.h"
#include "queue/producer_state.h"
#include "queue/queue.h"
#include "queue/wait.h"

namespace shipper::queue::internal {

// The shared publishing side of a queue: its mutex, what blocked producers wait on, and the
// consumers to tell when a producer blocks.
struct PublishSide {
  Mutex* mu;
  const std::atomic<uint64_t>* published;
  const std::atomic<bool>* closed;
  std::atomic<int>* blocked_producers;
  WaitChannel* consumers;
  WaitChannel* producers;
  const WaitOptions* wait_options;
};

// Publish and TryPublish (`deadline` absl::InfinitePast()) of the disk queue. The memory queue
// keeps the same loop written out in MemoryQueueImpl::Publish: through this template its
// single-event publishes took 30-50 ns more CPU per event (queue_bench direct/1p|4p/single,
// measured), which the disk queue, copying every event's bytes anyway, does not notice. Takes
// side.mu and calls accept(rest, wakeups) for the events not yet accepted, returning how many it
// accepted, until all are, the deadline passes, or the producer is cancelled or the queue closed.
// Between tries it waits on side.producers until room_changed() (called under that channel's mutex)
// says that room may have appeared since accept last looked.
template <typename Accept, typename RoomChanged>
PublishResult PublishLoop(const PublishSide& side, ProducerState* producer,
                          absl::Span<Event> events, absl::Time deadline, Accept accept,
                          RoomChanged room_changed) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  PublishResult result;
  Wakeups wake;
  MutexLock lock(side.mu);
  std::optional<Waiter> waiter;  // only when it must wait
  bool blocked = false;
  for (;;) {
    if (producer->cancelled.load(std::memory_order_relaxed)) {
      result.status = absl::CancelledError("producer cancelled");
      break;
    }
    if (side.closed->load(std::memory_order_relaxed)) {
      result.status = absl::UnavailableError("queue closed");
      break;
    }
    const size_t accepted = accept(events.subspan(result.accepted), &wake);
    if (accepted > 0) {
      result.accepted += accepted;
      result.last_index = side.published->load(std::memory_order_relaxed);
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
      // A buffered Get flushes early for blocked producers (see FlushPolicy).
      blocked = true;
      side.blocked_producers->fetch_add(1, std::memory_order_relaxed);
      side.consumers->NotifyOne(&wake);
    }
    if (!waiter) waiter.emplace(side.producers, *side.wait_options);
    waiter->Wait(
        side.mu, deadline,
        [&] {
          return room_changed() || producer->cancelled.load(std::memory_order_relaxed) ||
                 side.closed->load(std::memory_order_relaxed);
        },
        &wake);
  }
  if (blocked) side.blocked_producers->fetch_sub(1, std::memory_order_relaxed);
  if (result.accepted == 0) result.last_index = side.published->load(std::memory_order_relaxed);
  return result;
}

// When a Get hands out what it can (the options' flush_min_events and flush_timeout): at once in
// the direct loop; in the buffered loop once min_events gathered, flush_timeout passed since the
// first of them was published, the queue closed or a producer is blocked.
struct FlushPolicy {
  bool buffered;
  size_t min_events;
  absl::Duration timeout;

  // `first_unread_ns`: when the first unread event was published.
  bool Ready(uint64_t unread, size_t max_events, bool closed, bool producers_blocked,
             int64_t first_unread_ns) const {
    if (unread == 0) return false;
    if (!buffered || closed || producers_blocked) return true;
    if (unread >= std::min(min_events, max_events)) return true;
    return absl::Now() >= FlushTime(first_unread_ns);
  }
  // When the unread events are due even if too few; `first_unread_ns` is when the first of them
  // was published.
  absl::Time FlushTime(int64_t first_unread_ns) const {
    return absl::FromUnixNanos(first_unread_ns) + timeout;
  }
};

// Batches done out of order, as ranges of indexes merged with their neighbours: while one batch
// stays undone (an output retrying it for good), every batch done after it joins one range, so
// that it holds back no memory per batch. Thread safety: as a std::map; the queues guard it with
// their consumers' mutex.
class DoneRanges {
 public:
  // Marks [first, last] done; returns the highest index up to which all are done, given that all
  // up to `done` were.
  uint64_t Add(uint64_t first, uint64_t last, uint64_t done) {
    if (first != done + 1) {
      auto next = early_.lower_bound(first);
      if (next != early_.end() && next->first == last + 1) {
        last = next->second;
        next = early_.erase(next);
      }
      if (next != early_.begin() && std::prev(next)->second + 1 == first) {
        std::prev(next)->second = last;
      } else {
        early_.emplace_hint(next, first, last);
      }
      return done;
    }
    done = last;
    // Ranges are never adjacent: only the first can continue `done`.
    if (!early_.empty() && early_.begin()->first == done + 1) {
      done = early_.begin()->second;
      early_.erase(early_.begin());
    }
    return done;
  }
  // How many ranges are held.
  size_t size() const { return early_.size(); }

 private:
  std::map<uint64_t, uint64_t> early_;  // first -> last
};

}  // namespace shipper::queue::internal

#endif  // SHIPPER_QUEUE_COMMON_H_
