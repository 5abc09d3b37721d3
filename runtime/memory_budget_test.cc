#include "runtime/memory_budget.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace shipper::runtime {
namespace {

TEST(MemoryBudgetTest, TakesWhatFitsAndNoMore) {
  MemoryBudget budget(100);
  EXPECT_TRUE(budget.TryAcquire(60));
  EXPECT_FALSE(budget.TryAcquire(41));
  EXPECT_TRUE(budget.TryAcquire(40));
  EXPECT_EQ(budget.in_use(), 100u);
  EXPECT_FALSE(budget.TryAcquire(1));
  budget.Release(60);
  EXPECT_EQ(budget.in_use(), 40u);
  EXPECT_TRUE(budget.TryAcquire(60));
}

TEST(MemoryBudgetTest, MoreThanTheCapacityNeverFits) {
  MemoryBudget budget(100);
  EXPECT_FALSE(budget.TryAcquire(101));
  EXPECT_FALSE(budget.Acquire(101, absl::InfiniteFuture()));  // at once, not forever
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(MemoryBudgetTest, AcquireGivesUpAtItsDeadline) {
  MemoryBudget budget(100);
  ASSERT_TRUE(budget.TryAcquire(100));
  EXPECT_FALSE(budget.Acquire(1, absl::Now() + absl::Milliseconds(10)));
  EXPECT_EQ(budget.in_use(), 100u);
}

TEST(MemoryBudgetTest, AcquireWaitsForARelease) {
  MemoryBudget budget(100);
  ASSERT_TRUE(budget.TryAcquire(100));
  absl::Notification got;
  std::thread waiter([&] {
    EXPECT_TRUE(budget.Acquire(70, absl::InfiniteFuture()));
    got.Notify();
  });
  budget.Release(50);  // not enough for 70: the waiter keeps waiting
  EXPECT_FALSE(got.WaitForNotificationWithTimeout(absl::Milliseconds(20)));
  budget.Release(50);
  got.WaitForNotification();
  waiter.join();
  EXPECT_EQ(budget.in_use(), 70u);
}

TEST(MemoryBudgetTest, ZeroCapacityOnlyCounts) {
  MemoryBudget budget(0);
  EXPECT_TRUE(budget.TryAcquire(size_t{1} << 40));
  EXPECT_TRUE(budget.Acquire(5, absl::Now()));
  EXPECT_EQ(budget.in_use(), (size_t{1} << 40) + 5);
}

}  // namespace
}  // namespace shipper::runtime
