// The disk queue on a file system that really fills up: a 4 MiB tmpfs the test mounts (it needs
// root; it skips, saying why, where it cannot mount).
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "queue/disk_queue.h"
#include "queue/disk_queue_test_util.h"

namespace shipper::queue {
namespace {

using testing::Bytes;
using testing::In;
using testing::Payload;

class DiskFullTest : public testing::DiskQueueTest {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_);
    if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=4m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs at " << dir_ << ": " << strerror(errno);
    }
    mounted_ = true;
    options_.path = dir_ + "/queue";
    options_.segment_size = 256 << 10;
    options_.buffer_size = 256 << 10;
  }
  void TearDown() override {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
  }

  bool mounted_ = false;
};

TEST_F(DiskFullTest, NoSpaceAcceptsAPrefixDropsNothingAndRecovers) {
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  uint64_t accepted = 0;
  PublishResult r;
  const absl::Time deadline = In(absl::Seconds(30));
  while (absl::Now() < deadline) {
    r = TryPublish(producer.get(), accepted, 50);
    accepted += r.accepted;
    if (!r.status.ok() && !queue->disk_stats().last_error.ok()) break;
    if (!r.status.ok()) absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted) << r.status;
  const absl::Status error = queue->disk_stats().last_error;
  EXPECT_EQ(error.code(), absl::StatusCode::kResourceExhausted) << error;
  EXPECT_NE(error.message().find("No space"), std::string::npos) << error;
  EXPECT_LT(queue->persisted_index(), accepted);

  // Delivering frees whole segments; the writer gets its buffer out, and every accepted event
  // comes out once, in order.
  uint64_t got = 0;
  while (got < accepted && absl::Now() < deadline) {
    Batch batch = queue->Get(1000, In(absl::Milliseconds(100)));
    for (size_t i = 0; i < batch.size(); ++i) ASSERT_EQ(Bytes(batch.event(i)), Payload(got + i));
    got += batch.size();
    batch.Done();
  }
  EXPECT_EQ(got, accepted);
  EXPECT_EQ(queue->persisted_index(), accepted);
  EXPECT_TRUE(queue->disk_stats().last_error.ok()) << queue->disk_stats().last_error;
  r = Publish(producer.get(), accepted, 50, In(absl::Seconds(10)));
  EXPECT_TRUE(r.status.ok()) << r.status;
}

}  // namespace
}  // namespace shipper::queue
