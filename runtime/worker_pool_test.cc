#include "runtime/worker_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/eventually.h"

namespace shipper::runtime {
namespace {

// A tiny blocking queue with a deadline on Get, the way output workers use the memory queue.
class WorkQueue {
 public:
  void Put(int item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(item);
    }
    cv_.notify_one();
  }
  bool Get(int* item, std::chrono::milliseconds deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, deadline, [this] { return !items_.empty(); })) return false;
    *item = items_.front();
    items_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> items_;
};

TEST(WorkerPoolTest, StartsAndStopsSizeWorkers) {
  std::atomic<int> inside{0};
  WorkerPool pool("test", 3, [&](const WorkerPool::Worker& self) {
    ++inside;
    while (!self.stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    --inside;
  });
  EXPECT_EQ(pool.size(), 3);
  EXPECT_TRUE(Eventually([&] { return inside.load() == 3; }));
  pool.Stop();
  EXPECT_EQ(inside.load(), 0);
  EXPECT_EQ(pool.size(), 0);
  EXPECT_EQ(pool.live_threads(), 0);
  pool.Stop();     // idempotent
  pool.Resize(4);  // ignored after Stop
  EXPECT_EQ(pool.size(), 0);
}

TEST(WorkerPoolTest, ZeroWorkers) {
  WorkerPool pool("none", 0, [](const WorkerPool::Worker&) {});
  EXPECT_EQ(pool.size(), 0);
}

TEST(WorkerPoolTest, WorkerIdsAreUniqueAmongLiveWorkers) {
  std::mutex mu;
  std::multiset<int> ids;
  WorkerPool pool("ids", 4, [&](const WorkerPool::Worker& self) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(self.id());
    }
    while (!self.stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> lock(mu);
    ids.erase(ids.find(self.id()));
  });
  auto snapshot = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return ids;
  };
  EXPECT_TRUE(Eventually([&] { return snapshot() == std::multiset<int>{0, 1, 2, 3}; }));
  pool.Resize(2);
  EXPECT_TRUE(Eventually([&] { return snapshot() == std::multiset<int>{0, 1}; }));
  pool.Resize(3);
  EXPECT_TRUE(Eventually([&] { return snapshot() == std::multiset<int>{0, 1, 2}; }));
}

TEST(WorkerPoolTest, ShrinkDoesNotWaitForSurplusWorkers) {
  std::atomic<bool> release{false};
  std::atomic<int> working{0};
  WorkerPool pool("slow", 2, [&](const WorkerPool::Worker& self) {
    ++working;
    // Holds its unit of work until released, ignoring stopping() meanwhile.
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    while (!self.stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  // Both in their unit of work: a worker stopped before it began one finishes at once.
  ASSERT_TRUE(Eventually([&] { return working.load() == 2; }));
  pool.Resize(1);
  EXPECT_EQ(pool.size(), 1);
  EXPECT_EQ(pool.live_threads(), 2);  // the surplus one still finishes its work
  release = true;
  EXPECT_TRUE(Eventually([&] { return pool.live_threads() == 1; }));
}

TEST(WorkerPoolTest, LoopIsCalledAgainUntilStopping) {
  std::atomic<int> calls{0};
  WorkerPool pool("units", 1, [&](const WorkerPool::Worker&) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  EXPECT_TRUE(Eventually([&] { return calls.load() >= 5; }));
}

// The property the executor relies on: resizing while work flows neither loses nor duplicates
// any item, because a worker asked to stop finishes the item it holds before returning.
TEST(WorkerPoolTest, ResizeUnderLoadLosesAndDuplicatesNothing) {
  constexpr int kItems = 20000;
  WorkQueue queue;
  std::mutex mu;
  std::vector<int> seen(kItems, 0);
  std::atomic<int> done{0};
  WorkerPool pool("load", 2, [&](const WorkerPool::Worker& self) {
    int item;
    while (!self.stopping()) {
      if (!queue.Get(&item, std::chrono::milliseconds(50))) continue;
      {
        std::lock_guard<std::mutex> lock(mu);
        ++seen[item];
      }
      ++done;
    }
  });
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) {
      queue.Put(i);
      if (i % 500 == 0) std::this_thread::yield();
    }
  });
  const int sizes[] = {4, 1, 3, 0, 2, 5, 1, 2};
  for (int round = 0; round < 40; ++round) {
    pool.Resize(sizes[round % 8]);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  pool.Resize(2);
  producer.join();
  EXPECT_TRUE(Eventually([&] { return done.load() == kItems; })) << done.load();
  pool.Stop();
  std::lock_guard<std::mutex> lock(mu);
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(seen[i], 1) << "item " << i;
}

TEST(WorkerPoolTest, ConcurrentResizeAndStop) {
  WorkerPool pool("race", 1, [](const WorkerPool::Worker& self) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::vector<std::thread> resizers;
  for (int t = 0; t < 3; ++t) {
    resizers.emplace_back([&pool, t] {
      for (int i = 0; i < 50; ++i) {
        pool.Resize((i + t) % 4);
        (void)pool.size();
        (void)pool.live_threads();
      }
    });
  }
  for (auto& t : resizers) t.join();
  pool.Stop();
  EXPECT_EQ(pool.live_threads(), 0);
}

}  // namespace
}  // namespace shipper::runtime
