#include "runtime/mutex.h"

#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shipper::runtime {
namespace {

TEST(MutexTest, Excludes) {
  Mutex mu;
  int counter = 0;  // guarded by mu
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        MutexLock lock(&mu);
        ++counter;
      }
    });
  }
  for (auto& t : threads) t.join();
  MutexLock lock(&mu);
  EXPECT_EQ(counter, 40000);
}

TEST(CondVarTest, SignalWakesAWaiterThatHoldsTheMutexAgain) {
  Mutex mu;
  CondVar cv;
  bool ready = false;  // guarded by mu
  bool seen = false;   // guarded by mu
  std::thread waiter([&] {
    MutexLock lock(&mu);
    while (!ready) cv.Wait(&mu);
    seen = true;  // still under mu: the wait gave it back
  });
  {
    MutexLock lock(&mu);
    ready = true;
  }
  cv.SignalAll();
  waiter.join();
  MutexLock lock(&mu);
  EXPECT_TRUE(seen);
}

TEST(CondVarTest, WaitUntilReturnsFalseAtTheDeadline) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(20);
  while (cv.WaitUntil(&mu, deadline)) {
  }
  EXPECT_GE(std::chrono::steady_clock::now(), deadline);
}

TEST(CondVarTest, WaitUntilReturnsTrueWhenSignaled) {
  Mutex mu;
  CondVar cv;
  bool ready = false;  // guarded by mu
  std::thread signaler([&] {
    MutexLock lock(&mu);
    ready = true;
    cv.Signal();
  });
  MutexLock lock(&mu);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool signaled = true;
  while (!ready && signaled) signaled = cv.WaitUntil(&mu, deadline);
  EXPECT_TRUE(ready);
  EXPECT_TRUE(signaled);
  signaler.join();  // it has let go of mu: ready was seen under mu
}

TEST(NotificationTest, AWaiterSeesWhatTheNotifierWroteBeforeNotify) {
  Notification done;
  int value = 0;  // written before Notify(), read after the wait: TSan checks the edge
  EXPECT_FALSE(done.HasBeenNotified());
  std::thread notifier([&] {
    value = 42;
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_EQ(value, 42);
  EXPECT_TRUE(done.HasBeenNotified());
  done.WaitForNotification();  // returns at once from then on
  notifier.join();
}

}  // namespace
}  // namespace shipper::runtime
