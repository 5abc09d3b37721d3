// One byte budget for what Shipper holds on behalf of clients: each received request's own copy
// (and so every queued event, which points into it) from the moment it is copied out of gRPC's
// buffers until its last event is acknowledged, including the time it waits for room in the
// queue. What gRPC holds before that is bounded by its own resource quota
// (shipper.server.max_receive_memory); the two together, plus a fixed overhead, bound the
// process's memory (docs/operations.md "Memory").
//
// A publish that cannot get its bytes waits a little (PublishEvents retries TryAcquire from an
// alarm, so no serving thread blocks; Acquire waits with a deadline) and is then refused with
// partial acceptance (none of it, the client resends): the budget never grows.
//
// Thread safety: every method from any thread.
#ifndef SHIPPER_RUNTIME_MEMORY_BUDGET_H_
#define SHIPPER_RUNTIME_MEMORY_BUDGET_H_

#include <atomic>
#include <cstddef>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "runtime/mutex.h"

namespace shipper::runtime {

class MemoryBudget {
 public:
  // capacity 0: no budget; every Acquire succeeds and in_use() still counts.
  explicit MemoryBudget(size_t capacity) : capacity_(capacity) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Takes `bytes` if they fit now. Never for more than capacity().
  bool TryAcquire(size_t bytes);
  // Takes `bytes` once they fit, or false at `deadline` (at once when bytes > capacity()).
  bool Acquire(size_t bytes, absl::Time deadline);
  // Gives back what an Acquire took; wakes waiters that may fit now.
  void Release(size_t bytes);

  size_t capacity() const { return capacity_; }
  size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }

 private:
  bool FitsLocked(size_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t capacity_;
  // Written under mu_; read without it by in_use() (a gauge).
  std::atomic<size_t> in_use_{0};

  Mutex mu_;
  CondVar released_;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_MEMORY_BUDGET_H_
