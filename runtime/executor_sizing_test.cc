#include "runtime/executor_sizing.h"

#include "gtest/gtest.h"

namespace shipper::runtime {
namespace {

TEST(ExecutorSizingTest, OutputWorkersFollowTheCpus) {
  EXPECT_EQ(OutputWorkers(0), 1);
  EXPECT_EQ(OutputWorkers(1), 1);
  EXPECT_EQ(OutputWorkers(6), 6);
}

TEST(ExecutorSizingTest, GrpcWorkersFollowTheCpus) {
  EXPECT_EQ(GrpcWorkers(0), 1);
  EXPECT_EQ(GrpcWorkers(1), 1);
  EXPECT_EQ(GrpcWorkers(3), 3);
}

TEST(ExecutorSizingTest, GrpcSyncServerKeepsAPollerBesideEachWorker) {
  EXPECT_EQ(GrpcSyncServerMaxThreads(0), 2);
  EXPECT_EQ(GrpcSyncServerMaxThreads(1), 2);
  EXPECT_EQ(GrpcSyncServerMaxThreads(4), 8);
}

}  // namespace
}  // namespace shipper::runtime
