// The disk queue on a failing disk: I/O errors injected at each call it makes (FaultyDiskIo).
// At start it retries, or refuses naming the file, and never cuts, deletes or passes by what it
// could not read; at run time the writer keeps its buffer, reports the error and retries.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "queue/disk_queue.h"
#include "queue/disk_queue_test_util.h"
#include "queue/faulty_disk_io.h"

namespace shipper::queue {
namespace {

namespace fs = std::filesystem;
using testing::DiskCall;
using testing::DiskFault;
using testing::In;
using testing::Payloads;

// Every file of a directory with its bytes.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    files[entry.path().filename()] =
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

class DiskFaultsTest : public testing::DiskQueueTest {
 protected:
  DiskFaultsTest() { options_.io = &io_; }

  // 60 events in 4 segments (18 a segment) and a state that says the first 5 were delivered.
  void LeaveFourSegments() {
    {
      auto queue = Open();
      auto producer = queue->NewProducer(nullptr);
      ASSERT_TRUE(Publish(producer.get(), 0, 60).status.ok());
      queue->WaitPersisted(59, In(absl::Seconds(10)));
      ASSERT_EQ(TakeAll(queue.get(), 5), Payloads(0, 5));
    }
    ASSERT_EQ(Segments().size(), 4);
  }

  testing::FaultyDiskIo io_;
};

TEST_F(DiskFaultsTest, ALastingReadErrorAtStartRefusesNamingTheFileAndChangesNothing) {
  LeaveFourSegments();
  const std::map<std::string, std::string> before = Snapshot(dir_);
  // The last segment, whose unread bytes looked like a torn tail to cut; a middle one, whose
  // frames were all unreadable, so that it looked like one to delete; the state file.
  for (const std::string file : {Segments().back().filename().string(),
                                 Segments()[1].filename().string(), std::string("state")}) {
    for (DiskFault fault : {DiskFault::kEio, DiskFault::kEndOfFile}) {
      SCOPED_TRACE(file + (fault == DiskFault::kEio ? ": EIO" : ": a read that ends early"));
      io_.Fail(DiskCall::kRead, fault, file);
      absl::StatusOr<std::unique_ptr<DiskQueue>> queue = DiskQueue::Create(options_);
      ASSERT_FALSE(queue.ok());
      EXPECT_EQ(queue.status().code(), absl::StatusCode::kUnavailable) << queue.status();
      EXPECT_NE(queue.status().message().find(dir_ + "/" + file), std::string::npos)
          << queue.status();
      EXPECT_EQ(Snapshot(dir_), before);
      io_.Heal();
    }
  }
  // Once the disk reads again, every undelivered event is there.
  auto queue = Open();
  EXPECT_EQ(TakeAll(queue.get()), Payloads(5, 55));
  EXPECT_EQ(queue->disk_stats().damaged_frames, 0);
}

TEST_F(DiskFaultsTest, ASegmentThatCannotBeOpenedAtStartRefusesAndIsNotPassedBy) {
  LeaveFourSegments();
  const std::string middle = Segments()[1].filename();
  io_.Fail(DiskCall::kOpen, DiskFault::kEio, middle);
  absl::StatusOr<std::unique_ptr<DiskQueue>> refused = DiskQueue::Create(options_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(middle), std::string::npos) << refused.status();
  io_.Fail(DiskCall::kSize, DiskFault::kEio, middle);
  EXPECT_FALSE(DiskQueue::Create(options_).ok());
  io_.Heal();
  auto queue = Open();
  EXPECT_EQ(TakeAll(queue.get()), Payloads(5, 55));
}

TEST_F(DiskFaultsTest, ErrorsThatPassAtStartAreRetriedAndCostNothing) {
  LeaveFourSegments();
  const std::string middle = Segments()[1].filename();
  io_.Fail(DiskCall::kOpen, DiskFault::kEio, middle, 2);
  io_.Fail(DiskCall::kRead, DiskFault::kEio, ".seg", 3);
  io_.Fail(DiskCall::kRead, DiskFault::kEndOfFile, middle, 1);
  io_.Fail(DiskCall::kRead, DiskFault::kEio, "state", 1);
  io_.Fail(DiskCall::kList, DiskFault::kEio, "", 1);
  io_.Fail(DiskCall::kRead, DiskFault::kShortRead);  // every read returns half: read on
  auto queue = Open();
  ASSERT_NE(queue, nullptr);
  EXPECT_EQ(io_.failures(DiskCall::kOpen), 2);
  EXPECT_GE(io_.failures(DiskCall::kRead), 5 + 4);
  EXPECT_EQ(TakeAll(queue.get()), Payloads(5, 55)) << "the state was read too";
  EXPECT_EQ(queue->disk_stats().damaged_frames, 0);
}

}  // namespace
}  // namespace shipper::queue
