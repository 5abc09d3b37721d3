// runtime's mutex, lock, condition variable and notification: std::mutex and
// std::condition_variable with the capability attributes clang's -Wthread-safety needs
// (`--config=tsa`), which libstdc++'s types do not carry, so that ABSL_GUARDED_BY(mu_) on a member
// is checked. Every module that TSan checks (the queue aside) locks with these.
//
// Why not absl::Mutex: Debian's Abseil is a shared library built without ThreadSanitizer, so TSan
// cannot see its happens-before edges and reports races that are not there. std::mutex is
// pthread's, which TSan intercepts.
//
// Why not queue/mutex.h: that one is a futex tuned for the queue's hot path, and its condition
// variable does not take the mutex back on wake-up. runtime's locks are taken a few times a second
// at most and its waiters want the usual contract; a wrapper adds nothing to test.
//
// Thread safety: as std::mutex and std::condition_variable. CondVar's waits require the mutex they
// are given and hold it again when they return. Notification: any thread may call any method.
#ifndef SHIPPER_RUNTIME_MUTEX_H_
#define SHIPPER_RUNTIME_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace shipper::runtime {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
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

// Callers re-check their condition in a loop: a wait may end spuriously.
//
//   MutexLock lock(&mu_);                       // stop_ is ABSL_GUARDED_BY(mu_)
//   while (!stop_ && cv_.WaitUntil(&mu_, deadline)) {}
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu` and sleeps until a Signal/SignalAll after this call, or spuriously; holds `mu`
  // again on return.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu) {
    // The std::unique_lock borrows the held mutex for the wait and gives it back still held.
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As Wait, and also returns at `deadline`. Returns false when the deadline has passed.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool signaled = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return signaled;
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A one-time event, as absl::Notification: Notify() once, and every WaitForNotification() returns
// from then on; what the notifier did before Notify() is visible to a waiter after it returns.
class Notification {
 public:
  void Notify() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    notified_ = true;
    cv_.SignalAll();
  }
  void WaitForNotification() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    while (!notified_) cv_.Wait(&mu_);
  }
  bool HasBeenNotified() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return notified_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_MUTEX_H_
