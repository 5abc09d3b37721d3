// How the queue's threads wait: one WaitChannel per kind of waiter (consumers waiting for events,
// producers waiting for room, ...), and one Waiter per thread and wait.
//
// The waiting condition itself lives in the queue, under the queue's mutex. A Waiter only sleeps
// (or spins, or naps) until the condition may have changed; the caller re-checks it in a loop:
//
//   Waiter waiter(&channel, options);
//   while (!Ready()) {
//     if (absl::Now() >= deadline) return ...;
//     waiter.Wait(&mu_, deadline);
//   }
//
// whoever may have made the condition true calls channel.NotifyOne() or NotifyAll().
//
// Thread safety: every method of WaitChannel and Waiter requires the caller to hold the one mutex
// that guards the channel (the same for every call). Waiter::Wait releases it while waiting.
#ifndef SHIPPER_QUEUE_WAIT_H_
#define SHIPPER_QUEUE_WAIT_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "queue/mutex.h"
#include "queue/queue.h"

namespace shipper::queue::internal {

// Signals decided under the mutex and sent once it is released, so that the woken thread does
// not run into the mutex its waker still holds. Declare it before the lock it outlives.
class Wakeups {
 public:
  Wakeups() = default;
  Wakeups(const Wakeups&) = delete;
  Wakeups& operator=(const Wakeups&) = delete;
  ~Wakeups() { Send(); }

  bool empty() const { return size_ == 0; }

  // REQUIRES: the mutex is not held.
  void Send() {
    for (int i = 0; i < size_; ++i) all_[i] ? cvs_[i]->SignalAll() : cvs_[i]->Signal();
    size_ = 0;
  }

 private:
  friend class WaitChannel;
  void Add(CondVar* cv, bool all) {
    for (int i = 0; i < size_; ++i) {
      if (cvs_[i] == cv) {
        all_[i] = all_[i] || all;
        return;
      }
    }
    if (size_ == kMax) Send();  // cannot happen with the queue's three channels
    cvs_[size_] = cv;
    all_[size_++] = all;
  }

  static constexpr int kMax = 4;
  CondVar* cvs_[kMax];
  bool all_[kMax];
  int size_ = 0;
};

class WaitChannel {
 public:
  WaitChannel() = default;
  WaitChannel(const WaitChannel&) = delete;
  WaitChannel& operator=(const WaitChannel&) = delete;

  // Wakes one waiter (all waiters). Costs a syscall only when a thread is asleep on the channel;
  // with `later` the syscall happens when `later` is sent, after the mutex is released.
  void NotifyOne(Wakeups* later = nullptr) { Notify(later, false); }
  void NotifyAll(Wakeups* later = nullptr) { Notify(later, true); }

  int sleepers() const { return sleepers_; }

 private:
  friend class Waiter;

  void Notify(Wakeups* later, bool all) {
    // Spinning waiters watch `epoch_` without the mutex. Notifiers hold the mutex, so a plain
    // load and store (no read-modify-write) is enough.
    epoch_.store(epoch_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    if (sleepers_ == 0) return;
    if (later != nullptr) {
      later->Add(&cv_, all);
    } else {
      all ? cv_.SignalAll() : cv_.Signal();
    }
  }

  CondVar cv_;
  int sleepers_ = 0;  // threads blocked in cv_
  std::atomic<uint32_t> epoch_{0};
};

struct WaitOptions {
  WaitStrategy strategy = WaitStrategy::kBlocking;
  absl::Duration sleep_min = absl::Microseconds(50);
  absl::Duration sleep_max = absl::Milliseconds(10);
};

class Waiter {
 public:
  Waiter(WaitChannel* channel, const WaitOptions& options)
      : channel_(channel), options_(options), pause_(options.sleep_min) {}

  // REQUIRES: `mu` guards the channel and is held. Returns after a notify, at `deadline`, or
  // earlier (spuriously); `mu` is held again on return. Sends `pending` wake-ups first, without
  // the mutex: a thread must not sleep on signals it owes others.
  void Wait(Mutex* mu, absl::Time deadline, Wakeups* pending = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu);

 private:
  // Spins, then yields, until the channel is notified; false if it gave up first.
  bool Spin(uint32_t seen) const;

  WaitChannel* const channel_;
  const WaitOptions& options_;
  absl::Duration pause_;  // kSleeping: the next nap
  int rounds_ = 0;
};

}  // namespace shipper::queue::internal

#endif  // SHIPPER_QUEUE_WAIT_H_
