#include "queue/wait.h"

#include <algorithm>
#include <thread>

namespace shipper::queue::internal {
namespace {

// kPhased: about 10 us of spinning, then up to 50 yields, before it blocks. Spinning longer
// only burns the core a producer needs on a 2-core host.
constexpr int kSpins = 256;
constexpr int kYields = 50;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

bool Waiter::Spin(uint32_t seen) const {
  auto notified = [&] { return channel_->epoch_.load(std::memory_order_acquire) != seen; };
  for (int i = 0; i < kSpins; ++i) {
    if (notified()) return true;
    CpuRelax();
  }
  for (int i = 0; i < kYields; ++i) {
    if (notified()) return true;
    std::this_thread::yield();
  }
  return false;
}

void Waiter::Wait(Mutex* mu, absl::Time deadline, Wakeups* pending) {
  if (pending != nullptr && !pending->empty()) {
    mu->Unlock();
    pending->Send();
    mu->Lock();
    return;  // the caller re-checks its condition anyway
  }
  const int round = rounds_++;
  switch (options_.strategy) {
    case WaitStrategy::kSleeping: {
      absl::Duration nap = std::min(pause_, deadline - absl::Now());
      pause_ = std::min(pause_ * 2, options_.sleep_max);
      mu->Unlock();
      absl::SleepFor(nap);
      mu->Lock();
      return;
    }
    case WaitStrategy::kPhased:
      if (round == 0) {
        const uint32_t seen = channel_->epoch_.load(std::memory_order_relaxed);
        mu->Unlock();
        Spin(seen);
        mu->Lock();
        return;
      }
      break;  // then block
    case WaitStrategy::kBlocking:
      break;
  }
  ++channel_->sleepers_;
  channel_->cv_.Wait(mu, deadline);
  --channel_->sleepers_;
}

}  // namespace shipper::queue::internal
