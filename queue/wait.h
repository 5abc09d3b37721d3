// How the queue's threads wait: one WaitChannel per kind of waiter (consumers waiting for events,
// producers waiting for room, ...), and one Waiter per thread and wait.
//
// A channel belongs to the mutex of the side that makes its waiters' conditions true: consumers
// wait on a channel of the producers' mutex, producers on one of the consumers' mutex. A waiter
// checks its condition under its own mutex; before it blocks it lets go of that mutex, registers
// on the channel under the channel's mutex and checks there, once more, whether the state it
// waits for moved (`changed`). A notifier decides under the channel's mutex whether anyone sleeps,
// so the hot path pays no fence and no syscall when nobody does. The caller re-checks its
// condition in a loop:
//
//   Waiter waiter(&channel, options);           // holding own_mu
//   while (!Ready()) {
//     if (absl::Now() >= deadline) return ...;
//     waiter.Wait(&own_mu, deadline, [&] { return /* state differs from what Ready() saw */; });
//   }
//
//   // notifier, holding the channel's mutex, after changing that state:
//   channel.NotifyOne(&wakeups);                // sent once the mutex is released
//
// Lock order: a waiter may take the channel's mutex while holding its own only when the channel's
// mutex is never held while taking the waiter's (the queue: consumers' mutex, then producers').
//
// Thread safety: NotifyOne/NotifyAll and sleepers() require the channel's mutex. Waiter::Wait
// requires the caller's own mutex and releases it while waiting. Wakeups are sent with no mutex
// held.
#ifndef SHIPPER_QUEUE_WAIT_H_
#define SHIPPER_QUEUE_WAIT_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "queue/mutex.h"
#include "queue/queue.h"

namespace shipper::queue::internal {

class WaitChannel;

// Wake-ups decided while holding a mutex and sent once it is released, so that the woken thread
// does not run into a mutex its waker still holds. Declare it before the locks it outlives.
class Wakeups {
 public:
  Wakeups() = default;
  Wakeups(const Wakeups&) = delete;
  Wakeups& operator=(const Wakeups&) = delete;
  ~Wakeups() {
    if (size_ != 0) Send();
  }

  bool empty() const { return size_ == 0; }
  // REQUIRES: no mutex is held.
  void Send();

 private:
  friend class WaitChannel;
  void Add(WaitChannel* channel, bool all);

  static constexpr int kMax = 4;  // the queue has three channels
  WaitChannel* channels_[kMax];
  bool all_[kMax];
  int size_ = 0;
};

class WaitChannel {
 public:
  // Waiters sleep on `mu`'s condition variable. kPhased waiters spin until `watched` changes (or
  // a while) before they block.
  WaitChannel(Mutex* mu, const std::atomic<uint64_t>* watched) : mu_(mu), watched_(watched) {}
  WaitChannel(const WaitChannel&) = delete;
  WaitChannel& operator=(const WaitChannel&) = delete;

  // Wakes one (all) of the threads asleep on the channel once `later` is sent.
  // REQUIRES: the channel's mutex is held.
  void NotifyOne(Wakeups* later) {
    if (sleepers() > 0) later->Add(this, false);
  }
  void NotifyAll(Wakeups* later) {
    if (sleepers() > 0) later->Add(this, true);
  }

  // REQUIRES: the channel's mutex is held.
  int sleepers() const { return sleepers_.load(std::memory_order_relaxed); }

 private:
  friend class Waiter;
  friend class Wakeups;

  void Signal(bool all) { all ? cv_.SignalAll() : cv_.Signal(); }

  Mutex* const mu_;
  const std::atomic<uint64_t>* const watched_;
  CondVar cv_;
  // Raised under *mu_, so a notifier holding it sees every registered sleeper; lowered by the
  // sleeper after it woke, without the mutex (a notifier may then signal for nobody: harmless).
  std::atomic<int> sleepers_{0};
};

// The options' wait_strategy, sleep_min and sleep_max (memory_queue.h, disk_queue.h).
struct WaitOptions {
  WaitStrategy strategy;
  absl::Duration sleep_min;
  absl::Duration sleep_max;
};

class Waiter {
 public:
  Waiter(WaitChannel* channel, const WaitOptions& options)
      : channel_(channel), options_(options), pause_(options.sleep_min) {}

  // REQUIRES: `own_mu` is held. Returns after a notify, at `deadline`, or earlier (spuriously),
  // holding `own_mu` again. Before blocking, `changed()` is called under the channel's mutex
  // (not `own_mu`, unless they are the same): it must say whether the state the caller's
  // condition depends on moved since the caller checked it. Sends `pending` first, without
  // `own_mu`: a thread must not sleep on wake-ups it owes others.
  // (The body swaps mutexes that may be one and the same, which the thread-safety analysis
  // cannot follow; callers are still checked.)
  template <typename Changed>
  void Wait(Mutex* own_mu, absl::Time deadline, Changed changed, Wakeups* pending = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(*own_mu) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (pending != nullptr && !pending->empty()) {
      own_mu->Unlock();
      pending->Send();
      own_mu->Lock();
      return;  // the caller re-checks its condition anyway
    }
    if (NapOrSpin(own_mu, deadline)) return;
    Mutex* const mu = channel_->mu_;
    if (mu != own_mu) {
      own_mu->Unlock();
      mu->Lock();
    }
    channel_->sleepers_.fetch_add(1, std::memory_order_relaxed);
    if (changed()) {
      mu->Unlock();
    } else {
      channel_->cv_.WaitAndUnlock(mu, deadline);
    }
    channel_->sleepers_.fetch_sub(1, std::memory_order_relaxed);
    own_mu->Lock();
  }

 private:
  // kSleeping: naps; kPhased (first round only): spins, then yields. Returns false when the
  // strategy says to block now. Releases and retakes `own_mu` when it returns true.
  bool NapOrSpin(Mutex* own_mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*own_mu);

  WaitChannel* const channel_;
  const WaitOptions& options_;
  absl::Duration pause_;  // kSleeping: the next nap
  int rounds_ = 0;
};

}  // namespace shipper::queue::internal

#endif  // SHIPPER_QUEUE_WAIT_H_
