#include "queue/mutex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace shipper::queue::internal {
namespace {

// About a microsecond: longer than the queue's critical sections, shorter than a context switch.
constexpr int kSpins = 100;

uint32_t* FutexWord(std::atomic<uint32_t>* state) { return reinterpret_cast<uint32_t*>(state); }

}  // namespace

void Mutex::LockSlow() {
  for (int i = 0; i < kSpins; ++i) {
    uint32_t state = state_.load(std::memory_order_relaxed);
    if (state == kUnlocked &&
        state_.compare_exchange_weak(state, kLocked, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
      return;
    }
    CpuRelax();
  }
  // From here on the lock word says "sleepers", so the holder's Unlock wakes one of us. Taking
  // the lock this way leaves it marked too, which at worst costs one spurious wake-up.
  while (state_.exchange(kSleepers, std::memory_order_acquire) != kUnlocked) {
    syscall(SYS_futex, FutexWord(&state_), FUTEX_WAIT_PRIVATE, kSleepers, nullptr, nullptr, 0);
  }
}

void Mutex::WakeOne() {
  syscall(SYS_futex, FutexWord(&state_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void CondVar::WaitAndUnlock(Mutex* mu, absl::Time deadline) {
  // Read under the mutex: a signal decided after the caller registered changes seq_ before the
  // futex call can sleep on the old value.
  const uint32_t seq = seq_.load(std::memory_order_relaxed);
  mu->Unlock();
  if (deadline == absl::InfiniteFuture()) {
    syscall(SYS_futex, FutexWord(&seq_), FUTEX_WAIT_PRIVATE, seq, nullptr, nullptr, 0);
  } else {
    const timespec until = absl::ToTimespec(deadline);  // absolute, on the realtime clock
    syscall(SYS_futex, FutexWord(&seq_), FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, seq,
            &until, nullptr, FUTEX_BITSET_MATCH_ANY);
  }
}

void CondVar::Signal() {
  seq_.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, FutexWord(&seq_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void CondVar::SignalAll() {
  seq_.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, FutexWord(&seq_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace shipper::queue::internal
