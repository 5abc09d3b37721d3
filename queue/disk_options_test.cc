#include "queue/disk_options.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "queue/disk_queue.h"

namespace shipper::queue {
namespace {

TEST(ValidateDiskOptionsTest, ReportsEveryProblemNamingItsKey) {
  DiskOptions options;
  options.path = "/proc/version/queue";  // an existing ancestor that is a file
  options.max_size = 1000;
  options.buffer_size = 1;
  options.flush_timeout = -absl::Seconds(1);
  std::vector<absl::Status> problems = ValidateDiskOptions(options);
  problems.push_back(PreflightDiskPath(options));
  std::string all;
  for (const absl::Status& s : problems) absl::StrAppend(&all, s.message(), "\n");
  for (const char* key :
       {"shipper.queue.disk.path", "shipper.queue.disk.max_size", "shipper.queue.disk.segment_size",
        "shipper.queue.disk.buffer_size", "shipper.queue.disk.flush.timeout"}) {
    EXPECT_NE(all.find(key), std::string::npos) << key << " in " << all;
  }
  auto queue = DiskQueue::Create(options);
  EXPECT_EQ(queue.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateDiskOptionsTest, TheBufferFollowsASmallMaxSize) {
  DiskOptions options;
  options.path = ::testing::TempDir() + "/small";
  EXPECT_EQ(DiskBufferSize(options), 4 << 20);
  options.max_size = 2 << 20;  // a buffer of 4 MiB would not fit: a quarter does
  EXPECT_EQ(DiskBufferSize(options), 512 << 10);
  EXPECT_TRUE(ValidateDiskOptions(options).empty());
  options.max_size = 8192;
  EXPECT_EQ(DiskBufferSize(options), 4096);
  EXPECT_TRUE(ValidateDiskOptions(options).empty());
  options.buffer_size = 64 << 10;  // set: as set, and checked against max_size
  EXPECT_EQ(DiskBufferSize(options), 64 << 10);
  ASSERT_EQ(ValidateDiskOptions(options).size(), 1);
  EXPECT_EQ(ValidateDiskOptions(options)[0].message(),
            "shipper.queue.disk.buffer_size: must be between 4096 and max_size (8192), got 65536");
}

TEST(ValidateDiskOptionsTest, DefaultsAreGoodAndCreateNothing) {
  DiskOptions options;
  options.path = ::testing::TempDir() + "/not/yet/there";
  EXPECT_TRUE(ValidateDiskOptions(options).empty());
  EXPECT_TRUE(PreflightDiskPath(options).ok());
  EXPECT_FALSE(std::filesystem::exists(options.path));
}

// Config loading runs ValidateDiskOptions, the checks before a start PreflightDiskPath: a path
// that only the file system can refuse is for the second alone.
TEST(ValidateDiskOptionsTest, OnlyThePreflightLooksAtThePath) {
  DiskOptions options;
  options.path = "/proc/version/queue";
  EXPECT_TRUE(ValidateDiskOptions(options).empty());
  const absl::Status path = PreflightDiskPath(options);
  EXPECT_EQ(path.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(path.message(), "shipper.queue.disk.path: /proc/version is not a directory");
  options.path = "";
  EXPECT_TRUE(PreflightDiskPath(options).ok());
  ASSERT_EQ(ValidateDiskOptions(options).size(), 1);
  EXPECT_EQ(ValidateDiskOptions(options)[0].message(),
            "shipper.queue.disk.path: must not be empty");
}

}  // namespace
}  // namespace shipper::queue
