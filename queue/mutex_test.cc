#include "queue/mutex.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace shipper::queue::internal {
namespace {

TEST(MutexTest, ExcludesUnderContention) {
  Mutex mu;
  int64_t counter = 0;  // guarded by mu
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) {
        MutexLock lock(&mu);
        ++counter;
      }
    });
  }
  for (auto& t : threads) t.join();
  MutexLock lock(&mu);
  EXPECT_EQ(counter, 400000);
}

TEST(CondVarTest, SignalWakesAWaiterWhoDoesNotRetakeTheMutex) {
  Mutex mu;
  CondVar cv;
  bool waiting = false;  // guarded by mu
  std::atomic<bool> woke{false};
  std::thread waiter([&] {
    mu.Lock();
    waiting = true;
    // Reads the sequence number under mu: a Signal once mu is released again wakes it.
    cv.WaitAndUnlock(&mu, absl::Now() + absl::Seconds(10));
    woke.store(true);
  });
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (;;) {
    mu.Lock();
    if (waiting) break;
    mu.Unlock();
    absl::SleepFor(absl::Microseconds(100));
  }
  // Signalled while this thread holds mu: the waiter returns all the same, without it.
  cv.Signal();
  while (!woke.load() && absl::Now() < deadline) absl::SleepFor(absl::Microseconds(100));
  const absl::Duration left = deadline - absl::Now();
  mu.Unlock();
  waiter.join();
  EXPECT_TRUE(woke.load());
  EXPECT_GT(left, absl::ZeroDuration()) << "woken by the deadline, not the signal";
}

TEST(CondVarTest, SignalBetweenCheckAndSleepIsNotLost) {
  // The waiter reads the sequence number under the mutex, so a signal sent after it released
  // the mutex but before it reached the futex still wakes it.
  for (int round = 0; round < 200; ++round) {
    Mutex mu;
    CondVar cv;
    bool ready = false;
    std::thread waiter([&] {
      mu.Lock();
      while (!ready) {
        cv.WaitAndUnlock(&mu, absl::Now() + absl::Seconds(10));
        mu.Lock();
      }
      mu.Unlock();
    });
    mu.Lock();
    ready = true;
    mu.Unlock();
    cv.SignalAll();
    const absl::Time start = absl::Now();
    waiter.join();
    ASSERT_LT(absl::Now() - start, absl::Seconds(5)) << "round " << round;
  }
}

TEST(CondVarTest, WaitEndsAtTheDeadline) {
  Mutex mu;
  CondVar cv;
  const absl::Time start = absl::Now();
  mu.Lock();
  cv.WaitAndUnlock(&mu, start + absl::Milliseconds(20));
  // Spurious returns are allowed, but not before the deadline without a signal in practice.
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(19));
}

}  // namespace
}  // namespace shipper::queue::internal
