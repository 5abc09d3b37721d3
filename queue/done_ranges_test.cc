// The out-of-order done batches both queues keep: what they hold while one batch stays undone.
#include <cstdint>

#include "gtest/gtest.h"
#include "queue/common.h"

namespace shipper::queue::internal {
namespace {

TEST(DoneRangesTest, BatchesDoneAfterOneStuckBatchHoldOneRange) {
  DoneRanges ranges;
  uint64_t done = 0;
  // Batch [1, 10] is stuck; 10,000 batches of 10 after it are done, in a scrambled order.
  for (uint64_t i = 0; i < 10000; ++i) {
    const uint64_t batch = (i * 7919) % 10000 + 1;  // 7919 is prime: each batch once
    done = ranges.Add(batch * 10 + 1, batch * 10 + 10, done);
    EXPECT_EQ(done, 0u);
  }
  EXPECT_EQ(ranges.size(), 1u);
  // The stuck batch is done at last: everything is.
  EXPECT_EQ(ranges.Add(1, 10, done), 100010u);
  EXPECT_EQ(ranges.size(), 0u);
}

TEST(DoneRangesTest, RangesMergeOnBothSidesAndOnlyInOrderAdvances) {
  DoneRanges ranges;
  EXPECT_EQ(ranges.Add(11, 20, 0), 0u);
  EXPECT_EQ(ranges.Add(31, 40, 0), 0u);
  EXPECT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges.Add(21, 30, 0), 0u);  // joins both
  EXPECT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges.Add(51, 60, 0), 0u);
  EXPECT_EQ(ranges.Add(1, 10, 0), 40u);
  EXPECT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges.Add(41, 50, 40), 60u);
  EXPECT_EQ(ranges.size(), 0u);
}

}  // namespace
}  // namespace shipper::queue::internal
