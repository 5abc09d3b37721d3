// The queue's mutex and condition variable.
//
// Mutex is the classic three-state futex lock (Drepper, "Futexes Are Tricky", mutex2): an
// uncontended Lock/Unlock pair is one compare-exchange and one exchange, a few instructions
// instead of glibc's ~60, which matters on a path taken once per published event. It spins
// briefly before it sleeps, because the sections it guards last a few hundred nanoseconds.
//
// CondVar is a futex on a sequence number. Unlike std::condition_variable, a woken waiter does
// not take the mutex back: the queue's waiters sleep on the other side's mutex and would
// otherwise fight that side's threads for it just to let go of it again.
//
// Why not absl::Mutex: Debian's Abseil is a shared library built without ThreadSanitizer, so TSan
// cannot see its happens-before edges and reports races that are not there. These are built
// from std::atomic, which TSan understands (it does not see futex sleeps, and need not: a woken
// waiter takes a mutex before it looks at anything).
//
// Thread safety: as std::mutex. CondVar::WaitAndUnlock requires the mutex it is given.
#ifndef SHIPPER_QUEUE_MUTEX_H_
#define SHIPPER_QUEUE_MUTEX_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace shipper::queue::internal {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    uint32_t unlocked = kUnlocked;
    if (!state_.compare_exchange_strong(unlocked, kLocked, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
      LockSlow();
    }
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    if (state_.exchange(kUnlocked, std::memory_order_release) == kSleepers) WakeOne();
  }
  // Tells clang's thread-safety analysis that the caller holds the mutex where it cannot see
  // that (a lambda called while it is held). Checks nothing at run time.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  enum : uint32_t { kUnlocked = 0, kLocked = 1, kSleepers = 2 };
  void LockSlow();
  void WakeOne();

  std::atomic<uint32_t> state_{kUnlocked};
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
  // Releases `mu` and sleeps until a Signal/SignalAll that comes after this call, `deadline`, or
  // spuriously. Returns without `mu`.
  void WaitAndUnlock(Mutex* mu, absl::Time deadline) ABSL_UNLOCK_FUNCTION(*mu);
  void Signal();
  void SignalAll();

 private:
  std::atomic<uint32_t> seq_{0};
};

}  // namespace shipper::queue::internal

#endif  // SHIPPER_QUEUE_MUTEX_H_
