#include "runtime/executor_sizing.h"

#include "gtest/gtest.h"

namespace shipper::runtime {
namespace {

TEST(ExecutorSizingTest, Placeholder) { EXPECT_EQ(OutputWorkers(0), 1); }

}  // namespace
}  // namespace shipper::runtime
