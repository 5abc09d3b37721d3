#include "runtime/memory_budget.h"

#include <chrono>

#include "absl/time/clock.h"
#include "glog/logging.h"

namespace shipper::runtime {

bool MemoryBudget::FitsLocked(size_t bytes) const {
  if (capacity_ == 0) return true;
  const size_t used = in_use_.load(std::memory_order_relaxed);
  return bytes <= capacity_ && used <= capacity_ - bytes;
}

bool MemoryBudget::TryAcquire(size_t bytes) {
  MutexLock lock(&mu_);
  if (!FitsLocked(bytes)) return false;
  in_use_.fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

bool MemoryBudget::Acquire(size_t bytes, absl::Time deadline) {
  if (capacity_ != 0 && bytes > capacity_) return false;
  MutexLock lock(&mu_);
  if (FitsLocked(bytes)) {  // the common case: no clock read, no wait
    in_use_.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  // Waits run on the steady clock; an infinite deadline would overflow it.
  const absl::Duration timeout = deadline - absl::Now();
  const bool forever = timeout == absl::InfiniteDuration();
  const auto steady_deadline =
      std::chrono::steady_clock::now() +
      (forever ? std::chrono::nanoseconds(0) : absl::ToChronoNanoseconds(timeout));
  ++waiters_;
  while (!FitsLocked(bytes)) {
    if (forever) {
      released_.Wait(&mu_);
    } else if (std::chrono::steady_clock::now() >= steady_deadline) {
      break;
    } else {
      released_.WaitUntil(&mu_, steady_deadline);
    }
  }
  --waiters_;
  if (!FitsLocked(bytes)) return false;
  in_use_.fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

void MemoryBudget::Release(size_t bytes) {
  MutexLock lock(&mu_);
  CHECK_LE(bytes, in_use_.load(std::memory_order_relaxed)) << "released more than acquired";
  in_use_.fetch_sub(bytes, std::memory_order_relaxed);
  // Waiters want different sizes: every one re-checks whether it fits now.
  if (waiters_ > 0) released_.SignalAll();
}

}  // namespace shipper::runtime
