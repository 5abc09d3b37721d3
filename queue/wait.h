// How the queue's threads wait: one WaitChannel per kind of waiter (consumers waiting for events,
// producers waiting for room, ...), and one Waiter per thread and wait.
//
// The condition itself lives in the queue. A channel belongs to one mutex, under which waiters
// check their condition; the state they wait for may be changed under another mutex (or none),
// through atomics. A Waiter only sleeps (or spins, or naps) until that state may have changed; the
// caller re-checks its condition in a loop:
//
//   Waiter waiter(&channel, options);           // holding channel's mutex
//   while (!Ready()) {
//     if (absl::Now() >= deadline) return ...;
//     waiter.Wait(deadline, [&] { return /* state differs from what Ready() saw */; });
//   }
//
// and whoever changes that state (with a seq_cst store or read-modify-write) calls
// channel.NotifyOne(&wakeups) afterwards. A wake-up costs the notifier a load when nobody sleeps,
// and a mutex round trip plus a futex syscall, sent after the notifier released its own locks,
// when somebody does.
//
// Thread safety: Waiter::Wait requires the channel's mutex to be held and releases it while
// waiting. NotifyOne/NotifyAll may be called from any thread, with or without any mutex; the
// Wakeups they fill must be sent with no mutex held.
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
  // Waiters hold `mu`. kPhased waiters spin until `watched` changes (or a while), then block.
  WaitChannel(Mutex* mu, const std::atomic<uint64_t>* watched) : mu_(mu), watched_(watched) {}
  WaitChannel(const WaitChannel&) = delete;
  WaitChannel& operator=(const WaitChannel&) = delete;

  // Wakes one (all) of the threads asleep on the channel, once `later` is sent; a load when none
  // sleeps. REQUIRES: the state change that calls for it was a seq_cst store or RMW.
  void NotifyOne(Wakeups* later) { Notify(later, false); }
  void NotifyAll(Wakeups* later) { Notify(later, true); }

  int sleepers() const { return sleepers_.load(std::memory_order_relaxed); }

 private:
  friend class Waiter;
  friend class Wakeups;

  void Notify(Wakeups* later, bool all) {
    if (sleepers_.load(std::memory_order_seq_cst) > 0) later->Add(this, all);
  }
  // Taking the mutex first ensures a waiter that registered is already inside cv_.Wait.
  void Signal(bool all) {
    mu_->Lock();
    mu_->Unlock();
    all ? cv_.SignalAll() : cv_.Signal();
  }

  Mutex* const mu_;
  const std::atomic<uint64_t>* const watched_;
  CondVar cv_;
  std::atomic<int> sleepers_{0};  // threads blocked in cv_ or about to be
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

  // REQUIRES: the channel's mutex is held. Returns after a notify, at `deadline`, or earlier
  // (spuriously), holding the mutex again. `changed()` is checked, under the mutex, after the
  // waiter is registered as a sleeper and before it blocks: it must say whether the state that
  // the caller's condition depends on moved since the caller checked it. Sends `pending` first,
  // without the mutex: a thread must not sleep on wake-ups it owes others.
  template <typename Changed>
  void Wait(absl::Time deadline, Changed changed, Wakeups* pending = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(*channel_->mu_) {
    if (pending != nullptr && !pending->empty()) {
      channel_->mu_->Unlock();
      pending->Send();
      channel_->mu_->Lock();
      return;  // the caller re-checks its condition anyway
    }
    if (NapOrSpin(deadline)) return;
    channel_->sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (!changed()) channel_->cv_.Wait(channel_->mu_, deadline);
    channel_->sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  // kSleeping: naps; kPhased (first round only): spins, then yields. Returns false when the
  // strategy says to block now. Releases and retakes the mutex when it returns true.
  bool NapOrSpin(absl::Time deadline);

  WaitChannel* const channel_;
  const WaitOptions& options_;
  absl::Duration pause_;  // kSleeping: the next nap
  int rounds_ = 0;
};

}  // namespace shipper::queue::internal

#endif  // SHIPPER_QUEUE_WAIT_H_
