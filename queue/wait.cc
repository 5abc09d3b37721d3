#include "queue/wait.h"

#include <algorithm>
#include <thread>

namespace shipper::queue::internal {
namespace {

// kPhased: a few microseconds of spinning, then a few yields, before it blocks. Spinning longer
// only burns the core a producer needs on a 2-core host.
constexpr int kSpins = 256;
constexpr int kYields = 8;

}  // namespace

void Wakeups::Add(WaitChannel* channel, bool all) {
  for (int i = 0; i < size_; ++i) {
    if (channels_[i] == channel) {
      all_[i] = all_[i] || all;
      return;
    }
  }
  if (size_ == kMax) Send();  // cannot happen with the queue's three channels
  channels_[size_] = channel;
  all_[size_++] = all;
}

void Wakeups::Send() {
  for (int i = 0; i < size_; ++i) channels_[i]->Signal(all_[i]);
  size_ = 0;
}

bool Waiter::NapOrSpin(Mutex* own_mu, absl::Time deadline) {
  const int round = rounds_++;
  switch (options_.strategy) {
    case WaitStrategy::kSleeping: {
      const absl::Duration nap = std::min(pause_, deadline - absl::Now());
      pause_ = std::min(pause_ * 2, options_.sleep_max);
      own_mu->Unlock();
      absl::SleepFor(nap);
      own_mu->Lock();
      return true;
    }
    case WaitStrategy::kPhased: {
      if (round > 0) return false;
      const uint64_t seen = channel_->watched_->load(std::memory_order_relaxed);
      auto moved = [&] { return channel_->watched_->load(std::memory_order_acquire) != seen; };
      own_mu->Unlock();
      for (int i = 0; i < kSpins && !moved(); ++i) CpuRelax();
      for (int i = 0; i < kYields && !moved(); ++i) std::this_thread::yield();
      own_mu->Lock();
      return true;
    }
    case WaitStrategy::kBlocking:
      return false;
  }
  return false;
}

}  // namespace shipper::queue::internal
