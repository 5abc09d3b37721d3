// The queue's mutex and condition variable: std::mutex and std::condition_variable with
// Abseil's thread-safety annotations.
//
// Why not absl::Mutex: Debian's Abseil is a shared library built without ThreadSanitizer, so TSan
// cannot see its happens-before edges and reports races that are not there. The C++ standard
// library's primitives go through pthread, which TSan intercepts. A short spin before blocking
// keeps the hot path (sections of a few hundred nanoseconds) out of futex syscalls.
//
// Thread safety: as std::mutex. CondVar::Wait requires the mutex it is given to be held.
#ifndef SHIPPER_QUEUE_MUTEX_H_
#define SHIPPER_QUEUE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace shipper::queue::internal {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    for (int i = 0; i < kSpins; ++i) {
      if (mu_.try_lock()) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    mu_.lock();
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  static constexpr int kSpins = 64;
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Releases `mu` and sleeps until Signal/SignalAll, `deadline`, or spuriously; then relocks.
  void Wait(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    if (deadline == absl::InfiniteFuture()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, absl::ToChronoTime(deadline));
    }
    lock.release();
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace shipper::queue::internal

#endif  // SHIPPER_QUEUE_MUTEX_H_
