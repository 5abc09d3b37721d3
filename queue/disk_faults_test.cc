// The disk queue on a failing disk: I/O errors injected at each call it makes (FaultyDiskIo).
// At start it retries, or refuses naming the file, and never cuts, deletes or passes by what it
// could not read; at run time the writer keeps its buffer, reports the error and retries.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
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
  for (const std::string& file : {Segments().back().filename().string(),
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

// Each call the writer makes, failing for a while: what was accepted waits in the buffer (not
// persisted, not acknowledged), the error shows in DiskStats, and once the call works again every
// event is persisted and written whole.
TEST_F(DiskFaultsTest, TheWriterKeepsItsBufferReportsTheErrorAndRetries) {
  struct Case {
    const char* name;
    DiskCall call;
    DiskFault fault;
    const char* file;  // a part of its path
    absl::StatusCode code;
  };
  const std::string dir = fs::path(dir_).filename();
  for (const Case& c : {
           Case{"write EIO", DiskCall::kWrite, DiskFault::kEio, ".seg",
                absl::StatusCode::kUnavailable},
           Case{"write ENOSPC", DiskCall::kWrite, DiskFault::kEnospc, ".seg",
                absl::StatusCode::kResourceExhausted},
           Case{"torn write", DiskCall::kWrite, DiskFault::kShortWrite, ".seg",
                absl::StatusCode::kResourceExhausted},
           Case{"sync EIO", DiskCall::kSync, DiskFault::kEio, ".seg",
                absl::StatusCode::kUnavailable},
           Case{"new segment", DiskCall::kOpen, DiskFault::kEio, ".seg",
                absl::StatusCode::kUnavailable},
           Case{"directory sync", DiskCall::kSync, DiskFault::kEnospc, dir.c_str(),
                absl::StatusCode::kResourceExhausted},
       }) {
    SCOPED_TRACE(c.name);
    fs::remove_all(dir_);
    options_.buffer_size = 8 << 10;  // 36 events
    {
      auto queue = Open();
      std::atomic<uint64_t> acked{0};
      auto producer = queue->NewProducer([&](uint64_t n, uint64_t) { acked += n; });
      ASSERT_TRUE(Publish(producer.get(), 0, 20).status.ok());  // the first segment and a bit
      ASSERT_EQ(queue->WaitPersisted(19, In(absl::Seconds(10))), 20);
      const int writes = io_.calls(DiskCall::kWrite);

      io_.Fail(c.call, c.fault, c.file);
      uint64_t accepted = 20;
      PublishResult r;
      const absl::Time deadline = In(absl::Seconds(10));
      while (r.status.ok() && absl::Now() < deadline) {
        r = TryPublish(producer.get(), accepted, 5);
        accepted += r.accepted;
        if (r.status.ok()) absl::SleepFor(absl::Milliseconds(1));
      }
      // Full: the buffer is not given up while the disk fails.
      EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted) << r.status;
      EXPECT_GT(accepted, 40);
      WaitFor([&] { return !queue->disk_stats().last_error.ok(); });
      const absl::Status error = queue->disk_stats().last_error;
      EXPECT_EQ(error.code(), c.code) << error;
      EXPECT_NE(error.message().find(c.file), std::string::npos) << error;
      // Kept, not persisted: all past the first 20, or, when only a new segment cannot be
      // created, those bound for it.
      const uint64_t stuck = queue->persisted_index();
      EXPECT_LT(stuck, accepted);
      if (c.call != DiskCall::kOpen) {
        EXPECT_EQ(stuck, 20);
      }
      WaitFor([&] { return acked.load() == stuck; });

      io_.Heal();
      EXPECT_EQ(queue->WaitPersisted(accepted - 1, In(absl::Seconds(10))), accepted);
      WaitFor([&] { return acked.load() == accepted; });
      EXPECT_TRUE(queue->disk_stats().last_error.ok()) << queue->disk_stats().last_error;
      // A failed sync may have lost the written pages: they were written again.
      EXPECT_GT(io_.calls(DiskCall::kWrite), writes + 1);
      const uint64_t more = accepted;
      ASSERT_TRUE(Publish(producer.get(), more, 5).status.ok());
      accepted += 5;
      EXPECT_EQ(queue->WaitPersisted(accepted - 1, In(absl::Seconds(10))), accepted);
    }
    // From the files: every event, each whole.
    auto queue = Open();
    EXPECT_EQ(TakeAll(queue.get()), Payloads(0, queue->published_index()));
    EXPECT_GT(queue->published_index(), 40);
    EXPECT_EQ(queue->disk_stats().damaged_frames, 0);
  }
}

// The next buffer is written while the last one is in fdatasync: a sync that takes its time holds
// back what is persisted, not what is written.
TEST_F(DiskFaultsTest, TheNextBufferIsWrittenWhileTheLastOneSyncs) {
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  ASSERT_TRUE(Publish(producer.get(), 0, 10).status.ok());
  ASSERT_EQ(queue->WaitPersisted(9, In(absl::Seconds(10))), 10);
  const int syncs = io_.calls(DiskCall::kSync);
  io_.Fail(DiskCall::kSync, DiskFault::kStall, ".seg");
  ASSERT_TRUE(Publish(producer.get(), 10, 10).status.ok());
  WaitFor([&] { return io_.calls(DiskCall::kSync) > syncs; });  // it stalls in there
  const int writes = io_.calls(DiskCall::kWrite);
  ASSERT_TRUE(Publish(producer.get(), 20, 10).status.ok());
  WaitFor([&] { return io_.calls(DiskCall::kWrite) > writes; });
  EXPECT_EQ(queue->persisted_index(), 10);
  io_.Heal();
  EXPECT_EQ(queue->WaitPersisted(29, In(absl::Seconds(10))), 30);
  EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 30));
}

// Reads that fail or end early are tried again, never taken for damage: the events come once
// the disk reads again.
TEST_F(DiskFaultsTest, TheReaderRetriesWhatItCouldNotRead) {
  options_.buffer_size = 4 << 10;  // most events are read back from the segments
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  ASSERT_TRUE(Publish(producer.get(), 0, 100).status.ok());
  ASSERT_EQ(queue->WaitPersisted(99, In(absl::Seconds(10))), 100);
  for (DiskFault fault : {DiskFault::kEio, DiskFault::kEndOfFile}) {
    io_.Fail(DiskCall::kRead, fault, ".seg");
    EXPECT_TRUE(queue->Get(100, In(absl::Milliseconds(100))).empty());
    io_.Heal();
  }
  io_.Fail(DiskCall::kRead, DiskFault::kShortRead);  // every read returns half: read on
  EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 100));
  EXPECT_EQ(queue->disk_stats().damaged_frames, 0);
}

// An event longer than max_event_bytes is accepted all the same and raises what the reader
// trusts. A read that loaded the old limit, stalled, and then finds that event's frame in bytes
// synced meanwhile must judge it as recovery would: an event, delivered, not damage.
TEST_F(DiskFaultsTest, AnEventLongerThanTheReadersLimitIsDeliveredNotTakenForDamage) {
  options_.max_event_bytes = 100;
  options_.segment_size = 1 << 20;  // one segment
  options_.buffer_size = 4 << 10;   // read back from the segment, not from written buffers
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  auto publish = [&](const std::vector<std::string>& bytes) {
    std::vector<Event> events;
    for (const std::string& b : bytes) events.emplace_back(b.data(), b.size(), &owner_);
    ASSERT_TRUE(producer->Publish(absl::MakeSpan(events), absl::InfiniteFuture()).status.ok());
  };
  // 100-byte frames, more than one read's worth (kMaxRead), so the consumer reads twice.
  std::vector<std::string> small;
  for (int i = 0; i < 2000; ++i) {
    small.push_back(absl::StrFormat("small %06d ", i));
    small.back().resize(76, 's');
  }
  publish(small);
  ASSERT_EQ(queue->WaitPersisted(1999, In(absl::Seconds(10))), 2000);

  const int reads = io_.calls(DiskCall::kRead);
  io_.Fail(DiskCall::kRead, DiskFault::kStall, ".seg", 1);
  std::vector<std::string> got;
  std::thread consumer([&] {
    Batch batch = queue->Get(2000, In(absl::Seconds(10)));  // one batch of two reads
    for (size_t i = 0; i < batch.size(); ++i) got.push_back(testing::Bytes(batch.event(i)));
    batch.Done();
  });
  WaitFor([&] { return io_.calls(DiskCall::kRead) > reads; });  // its first read stalls
  const std::string large = testing::Payload(7);                // 200 bytes
  publish({large});
  ASSERT_EQ(queue->WaitPersisted(2000, In(absl::Seconds(10))), 2001);
  io_.Heal();
  consumer.join();
  EXPECT_EQ(got, small);
  EXPECT_EQ(TakeAll(queue.get()), std::vector<std::string>{large});
  EXPECT_EQ(queue->disk_stats().damaged_frames, 0);
}

// After a failed fdatasync the kernel may have dropped the pages it could not write, and the
// next fdatasync passes. So everything written before the failure and not synced since is written
// again: a round the writer was still writing, and handed over only after the syncer's retry,
// included.
TEST_F(DiskFaultsTest, EverythingWrittenBeforeAFailedSyncIsWrittenAgain) {
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  ASSERT_TRUE(Publish(producer.get(), 0, 5).status.ok());
  ASSERT_EQ(queue->WaitPersisted(4, In(absl::Seconds(10))), 5);
  // The next sync takes its time, then loses what was written to its segment meanwhile.
  const int syncs = io_.calls(DiskCall::kSync);
  io_.Fail(DiskCall::kSync, DiskFault::kStall, ".seg", 1);
  io_.Fail(DiskCall::kSync, DiskFault::kLostWrites, ".seg", 1);
  ASSERT_TRUE(Publish(producer.get(), 5, 5).status.ok());
  WaitFor([&] { return io_.calls(DiskCall::kSync) > syncs; });
  // A round of 20: 8 into that segment (18 fit in one), then the open of the next one stalls.
  const int opens = io_.calls(DiskCall::kOpen);
  io_.Fail(DiskCall::kOpen, DiskFault::kStall, ".seg", 1);
  ASSERT_TRUE(Publish(producer.get(), 10, 20).status.ok());
  WaitFor([&] { return io_.calls(DiskCall::kOpen) > opens; });
  io_.Release(DiskCall::kSync);  // it fails; the retry writes and syncs the first round again
  ASSERT_EQ(queue->WaitPersisted(9, In(absl::Seconds(10))), 10);
  io_.Heal();  // the round of 20 is written on, and handed over
  ASSERT_EQ(queue->WaitPersisted(29, In(absl::Seconds(10))), 30);
  producer.reset();
  queue.reset();
  queue = Open();
  EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 30));
  EXPECT_EQ(queue->disk_stats().damaged_frames, 0);
}

// A delivered segment that cannot be deleted stays behind, costing nothing: the next start
// deletes it and delivers nothing again.
TEST_F(DiskFaultsTest, ASegmentThatCannotBeDeletedIsDeletedByTheNextStart) {
  {
    auto queue = Open();
    auto producer = queue->NewProducer(nullptr);
    ASSERT_TRUE(Publish(producer.get(), 0, 60).status.ok());
    queue->WaitPersisted(59, In(absl::Seconds(10)));
    io_.Fail(DiskCall::kRemove, DiskFault::kEio);
    EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 60));
    WaitFor([&] { return io_.failures(DiskCall::kRemove) >= 3; });
  }
  EXPECT_EQ(Segments().size(), 4);
  io_.Heal();
  auto queue = Open();
  EXPECT_EQ(Segments().size(), 0);
  EXPECT_TRUE(TakeAll(queue.get()).empty());
}

// A delivered segment is cut short a few MiB at a time before it is unlinked, always at a frame
// boundary: a crash in between (here: the unlink fails, and the state file that says what was
// delivered is never written) leaves whole frames, delivered again at the next start, no damage.
TEST_F(DiskFaultsTest, ADeliveredSegmentIsCutAtFramesBeforeItIsDeleted) {
  options_.segment_size = 12 << 20;
  constexpr uint64_t kEvents = 60000;  // 13.4 MB: one whole segment and the start of the next
  {
    auto queue = Open();
    auto producer = queue->NewProducer(nullptr);
    ASSERT_TRUE(Publish(producer.get(), 0, kEvents).status.ok());
    queue->WaitPersisted(kEvents - 1, In(absl::Seconds(30)));
    ASSERT_EQ(Segments().size(), 2);
    io_.Fail(DiskCall::kRemove, DiskFault::kEio);
    io_.Fail(DiskCall::kWrite, DiskFault::kEio, "state");
    EXPECT_EQ(TakeAll(queue.get()).size(), kEvents);
    WaitFor([&] { return io_.failures(DiskCall::kRemove) >= 1; });
  }
  EXPECT_GE(io_.calls(DiskCall::kTruncate), 2);
  ASSERT_EQ(Segments().size(), 2);
  const uint64_t cut = fs::file_size(Segments()[0]);
  EXPECT_GE(cut, 4u << 20);
  EXPECT_LT(cut, 8u << 20);
  EXPECT_EQ(cut % kFrame, 0);
  const uint64_t second = kEvents - fs::file_size(Segments()[1]) / kFrame;  // its first event
  io_.Heal();
  auto queue = Open();
  std::vector<std::string> again = Payloads(0, cut / kFrame);
  for (std::string& event : Payloads(second, kEvents - second)) again.push_back(std::move(event));
  EXPECT_EQ(TakeAll(queue.get()), again);
  EXPECT_EQ(queue->disk_stats().damaged_frames, 0);
}

}  // namespace
}  // namespace shipper::queue
