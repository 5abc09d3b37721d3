#include "queue/disk_queue.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "queue/disk_queue_test_util.h"
#include "queue/faulty_disk_io.h"

namespace shipper::queue {
namespace {

namespace fs = std::filesystem;
using testing::Bytes;
using testing::DiskQueueTest;
using testing::In;
using testing::Payload;
using testing::Payloads;

TEST_F(DiskQueueTest, EventsArePersistedBySyncAndReadBack) {
  auto queue = Open();
  std::atomic<uint64_t> acked{0};
  auto producer = queue->NewProducer([&](uint64_t n, uint64_t) { acked += n; });
  PublishResult r = Publish(producer.get(), 0, 10);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.accepted, 10);
  EXPECT_EQ(r.last_index, 10);
  // The bytes are copied: the publisher's memory is free at once.
  EXPECT_EQ(owner_.released(), 10);
  EXPECT_EQ(queue->WaitPersisted(9, In(absl::Seconds(10))), 10);
  // Persisted follows the sync, not the output: nothing is done yet. ACKs follow the index.
  WaitFor([&] { return acked.load() == 10; });
  EXPECT_GE(queue->disk_stats().syncs, 1);
  EXPECT_EQ(queue->stats().events, 10);

  Batch batch = queue->Get(100, In(absl::Seconds(10)));
  ASSERT_EQ(batch.size(), 10);
  EXPECT_EQ(batch.first_index(), 1);
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(Bytes(batch.event(i)), Payload(i));
  batch.Done();
  EXPECT_EQ(queue->stats().events, 0);
}

// Consumers read the newest buffer_size of written frames from memory, older ones from the files:
// damage put into the files after the write shows which.
TEST_F(DiskQueueTest, RecentFramesAreReadFromMemoryOlderOnesFromTheSegments) {
  options_.buffer_size = 16 << 10;  // the 200 events below take 44,800 bytes
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  ASSERT_TRUE(Publish(producer.get(), 0, 200).status.ok());
  EXPECT_EQ(queue->WaitPersisted(200, In(absl::Seconds(10))), 200);
  const std::vector<fs::path> segments = Segments();
  ASSERT_GE(segments.size(), 10);
  FlipByte(segments.front(), 5 * kFrame + 24 + 7);                // the sixth event: only on disk
  FlipByte(segments.back(), fs::file_size(segments.back()) - 7);  // the last: in memory too
  std::vector<std::string> want = Payloads(0, 200);
  want.erase(want.begin() + 5);
  EXPECT_EQ(TakeAll(queue.get()), want);
  EXPECT_EQ(queue->disk_stats().damaged_frames, 1);
}

TEST_F(DiskQueueTest, RecoveredEventsArePersistedAndDeliveredAfterRestart) {
  {
    auto queue = Open();
    auto producer = queue->NewProducer(nullptr);
    ASSERT_TRUE(Publish(producer.get(), 0, 5).status.ok());
    queue->WaitPersisted(4, In(absl::Seconds(10)));
  }
  auto queue = Open();
  EXPECT_EQ(queue->published_index(), 5);
  EXPECT_EQ(queue->persisted_index(), 5);
  EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 5));
  // New events continue after the recovered ones.
  auto producer = queue->NewProducer(nullptr);
  EXPECT_EQ(Publish(producer.get(), 5, 1).last_index, 6);
  EXPECT_EQ(TakeAll(queue.get()), Payloads(5, 1));
}

TEST_F(DiskQueueTest, RestartWithSeveralSegmentsResendsNothingDelivered) {
  // 200-byte events in 4 KiB segments: about 18 events a segment, so 100 events take 6.
  {
    auto queue = Open();
    auto producer = queue->NewProducer(nullptr);
    ASSERT_TRUE(Publish(producer.get(), 0, 100).status.ok());
    queue->WaitPersisted(99, In(absl::Seconds(10)));
    EXPECT_GE(queue->disk_stats().segments, 5);
    EXPECT_EQ(TakeAll(queue.get(), 60), Payloads(0, 60));
  }
  {
    auto queue = Open();
    EXPECT_EQ(TakeAll(queue.get()), Payloads(60, 40));
  }
  // Everything was delivered, the last event in a later segment too (beats #32560).
  auto queue = Open();
  EXPECT_EQ(queue->published_index(), 0);
  EXPECT_TRUE(queue->Get(100, In(absl::Milliseconds(50))).empty());
  EXPECT_EQ(queue->disk_stats().segments, 0);
}

TEST_F(DiskQueueTest, OneQueuePerDirectory) {
  auto queue = Open();
  auto second = DiskQueue::Create(options_);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
  queue.reset();
  EXPECT_TRUE(DiskQueue::Create(options_).ok());
}

TEST_F(DiskQueueTest, ABatchSpansSegmentBoundaries) {
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  ASSERT_TRUE(Publish(producer.get(), 0, 50).status.ok());
  queue->WaitPersisted(49, In(absl::Seconds(10)));
  ASSERT_GE(queue->disk_stats().segments, 2);
  Batch batch = queue->Get(50, In(absl::Seconds(10)));
  ASSERT_EQ(batch.size(), 50);
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(Bytes(batch.event(i)), Payload(i));
  batch.Done();
}

TEST_F(DiskQueueTest, DoneSegmentsAreDeletedAndTheStateRecordsDelivery) {
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  ASSERT_TRUE(Publish(producer.get(), 0, 100).status.ok());
  queue->WaitPersisted(99, In(absl::Seconds(10)));
  const uint64_t segments = queue->disk_stats().segments;
  const uint64_t bytes = queue->disk_stats().bytes;
  // Out of order: nothing is deleted until the first batch is done too.
  Batch first = queue->Get(40, In(absl::Seconds(10)));
  Batch second = queue->Get(40, In(absl::Seconds(10)));
  second.Done();
  // The syncer looks for segments to delete after each sync: once an event published after
  // Done() is persisted, and then another, it has looked at least once.
  for (uint64_t i = 100; i < 102; ++i) {
    ASSERT_TRUE(Publish(producer.get(), i, 1).status.ok());
    ASSERT_EQ(queue->WaitPersisted(i, In(absl::Seconds(10))), i + 1);
  }
  EXPECT_EQ(queue->disk_stats().segments, segments);  // the two fit in the last one
  first.Done();
  WaitFor([&] { return queue->disk_stats().segments < segments; });
  WaitFor([&] { return queue->disk_stats().bytes < bytes; });
  EXPECT_EQ(queue->Drain(In(absl::Milliseconds(10))), 22);
}

TEST_F(DiskQueueTest, TornTailIsCut) {
  PublishAndClose(10);
  const fs::path last = Segments().back();
  const uint64_t size = fs::file_size(last);
  fs::resize_file(last, size - 50);  // a crash in the middle of the last frame
  auto queue = Open();
  EXPECT_EQ(fs::file_size(last), size - kFrame);
  EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 9));
  EXPECT_EQ(queue->disk_stats().damaged_frames, 0);
}

TEST_F(DiskQueueTest, DamagedMiddleFrameCostsOnlyItself) {
  PublishAndClose(10);
  const fs::path first = Segments().front();
  FlipByte(first, 3 * kFrame + 24 + 7);  // the payload of the fourth event
  auto queue = Open();
  std::vector<std::string> want = Payloads(0, 10);
  want.erase(want.begin() + 3);
  EXPECT_EQ(TakeAll(queue.get()), want);
  EXPECT_EQ(queue->disk_stats().damaged_frames, 1);
}

// Bytes after the last frame of an earlier segment (damage recovery steps over) are on disk:
// counted at recovery, and freed when the segment is deleted, so that the queue's bytes come back
// to 0 once all is delivered.
TEST_F(DiskQueueTest, DeletingASegmentFreesWhatRecoveryCountedForIt) {
  PublishAndClose(60);
  const std::vector<fs::path> segments = Segments();
  ASSERT_GE(segments.size(), 2);
  {
    std::ofstream tail(segments.front(), std::ios::app | std::ios::binary);
    tail << std::string(30, 'x');
  }
  auto queue = Open();
  uint64_t files = 0;
  for (const fs::path& segment : segments) files += fs::file_size(segment);
  EXPECT_EQ(queue->disk_stats().bytes, files);
  EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 60));
  WaitFor([&] { return queue->disk_stats().segments == 0; });
  EXPECT_EQ(queue->disk_stats().bytes, 0);
}

TEST_F(DiskQueueTest, DamagedHeaderInAnEarlierSegmentCostsOnlyItsFrame) {
  PublishAndClose(60);
  const std::vector<fs::path> segments = Segments();
  ASSERT_GE(segments.size(), 3);
  FlipByte(segments[1], kFrame + 9);  // the second frame's length
  auto queue = Open();
  std::vector<std::string> events = TakeAll(queue.get());
  EXPECT_EQ(events.size(), 59);
  EXPECT_EQ(events.back(), Payload(59));
  EXPECT_EQ(queue->disk_stats().damaged_frames, 1);
}

// Writes `len` as the length of the frame at `offset` of `file`.
void DamageLength(const fs::path& file, uint64_t offset, uint32_t len) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset + 8);
  f.write(reinterpret_cast<const char*>(&len), sizeof(len));
}

// A damaged length claimed up to the rest of the segment: recovery read on, doubling its reads,
// until it held all it claimed. Past max_event_bytes it is checked in pieces of 4 MiB.
TEST_F(DiskQueueTest, ADamagedLengthAtRecoveryClaimsNoMoreThanAnEventCould) {
  options_.max_size = 256 << 20;
  options_.segment_size = 64 << 20;
  options_.max_event_bytes = 1024;
  PublishAndClose(100);
  ASSERT_EQ(Segments().size(), 1);
  const fs::path segment = Segments().front();
  DamageLength(segment, 2 * kFrame, 50 << 20);
  fs::resize_file(segment, 64 << 20);  // zeros past the frames, as in a preallocated file
  testing::FaultyDiskIo io;
  options_.io = &io;
  auto queue = Open();
  EXPECT_LE(io.largest_read(), 4 << 20);
  std::vector<std::string> want = Payloads(0, 100);
  want.erase(want.begin() + 2);
  EXPECT_EQ(TakeAll(queue.get()), want);
  EXPECT_EQ(queue->disk_stats().damaged_frames, 1);
}

// The same for a consumer's reads, which also kept every buffer they had doubled through.
TEST_F(DiskQueueTest, ADamagedLengthAtReadClaimsNoMoreThanAnEventCould) {
  options_.max_size = 256 << 20;
  options_.segment_size = 64 << 20;
  options_.buffer_size = 64 << 10;  // the first events are read back from the segment
  options_.max_event_bytes = 1024;
  testing::FaultyDiskIo io;
  options_.io = &io;
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  for (uint64_t first = 0; first < 60000; first += 1000) {
    ASSERT_TRUE(Publish(producer.get(), first, 1000).status.ok());
  }
  ASSERT_EQ(queue->WaitPersisted(59999, In(absl::Seconds(30))), 60000);
  DamageLength(Segments().front(), 2 * kFrame, 10 << 20);  // 13 MiB were written
  std::vector<std::string> want = Payloads(0, 60000);
  want.erase(want.begin() + 2);
  EXPECT_EQ(TakeAll(queue.get()), want);
  EXPECT_LE(io.largest_read(), 1 << 20);
  EXPECT_EQ(queue->disk_stats().damaged_frames, 1);
}

// Events longer than max_event_bytes are still taken (an input may accept more than the config
// said), and read back, before and after a restart.
TEST_F(DiskQueueTest, EventsLongerThanMaxEventBytesAreDeliveredAllTheSame) {
  options_.max_event_bytes = 100;  // Payload(i) is 200 bytes
  {
    auto queue = Open();
    auto producer = queue->NewProducer(nullptr);
    ASSERT_TRUE(Publish(producer.get(), 0, 10).status.ok());
    queue->WaitPersisted(9, In(absl::Seconds(10)));
    EXPECT_EQ(TakeAll(queue.get(), 3), Payloads(0, 3));
  }
  auto queue = Open();
  EXPECT_EQ(TakeAll(queue.get()), Payloads(3, 7));
  EXPECT_EQ(queue->disk_stats().damaged_frames, 0);
}

TEST_F(DiskQueueTest, DamagedOrMissingStateIsRebuiltFromTheSegments) {
  for (bool remove : {false, true}) {
    SCOPED_TRACE(remove ? "missing" : "damaged");
    fs::remove_all(dir_);
    {
      auto queue = Open();
      auto producer = queue->NewProducer(nullptr);
      ASSERT_TRUE(Publish(producer.get(), 0, 10).status.ok());
      queue->WaitPersisted(9, In(absl::Seconds(10)));
      EXPECT_EQ(TakeAll(queue.get(), 4), Payloads(0, 4));
    }
    {
      // The state is honoured: what was delivered is not delivered again.
      auto queue = Open();
      EXPECT_EQ(TakeAll(queue.get(), 2), Payloads(4, 2));
    }
    if (remove) {
      fs::remove(dir_ + "/state");
    } else {
      FlipByte(dir_ + "/state", 9);
    }
    // At least once: the segment's events come again, the undelivered ones among them.
    auto queue = Open();
    EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 10));
  }
}

TEST_F(DiskQueueTest, FullQueueAcceptsAPrefixAndRecovers) {
  options_.max_size = 16 << 10;
  options_.segment_size = 4 << 10;
  options_.buffer_size = 4 << 10;
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  uint64_t accepted = 0;
  PublishResult r;
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 100 && r.status.ok(); ++i) {
    r = TryPublish(producer.get(), accepted, 10);
    accepted += r.accepted;
    if (!r.status.ok()) break;
    queue->WaitPersisted(accepted - 1, In(absl::Seconds(10)));
  }
  // A second refusal in the same episode is counted, not logged again.
  EXPECT_EQ(TryPublish(producer.get(), accepted, 10).accepted, 0u);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted) << r.status;
  EXPECT_LE(queue->disk_stats().bytes, options_.max_size);
  EXPECT_GT(accepted, 40);
  // Publish waits for room, which delivering makes.
  std::thread consumer(
      [&] { EXPECT_EQ(TakeAll(queue.get(), accepted + 10).size(), accepted + 10); });
  r = Publish(producer.get(), accepted, 10, In(absl::Seconds(20)));
  EXPECT_TRUE(r.status.ok()) << r.status;
  consumer.join();
  const std::string log = ::testing::internal::GetCapturedStderr();
  const std::vector<std::string> full =
      absl::StrSplit(log, "disk queue: full at shipper.queue.disk.max_size (16384 bytes)");
  EXPECT_EQ(full.size(), 2u) << "the full queue is logged once per episode:\n" << log;
  EXPECT_NE(log.find("disk queue: has room again"), std::string::npos) << log;
}

TEST_F(DiskQueueTest, AnUnreadableSegmentIsLoggedOnceAndReadOnceItIsBack) {
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  ASSERT_TRUE(Publish(producer.get(), 0, 5).status.ok());
  queue->WaitPersisted(4, In(absl::Seconds(10)));
  std::string segment;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().extension() == ".seg") segment = entry.path();
  }
  ASSERT_FALSE(segment.empty());
  fs::rename(segment, segment + ".away");
  ::testing::internal::CaptureStderr();
  // Retried meanwhile, at a growing interval: about 10 tries in this second.
  EXPECT_EQ(queue->Get(100, In(absl::Seconds(1))).size(), 0u);
  fs::rename(segment + ".away", segment);
  EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 5));
  const std::string log = ::testing::internal::GetCapturedStderr();
  const std::vector<std::string> errors = absl::StrSplit(log, "retrying until it reads");
  EXPECT_EQ(errors.size(), 2u) << "one ERROR for the episode:\n" << log;
  EXPECT_NE(log.find("disk queue: reading again after"), std::string::npos) << log;
}

TEST_F(DiskQueueTest, ConcurrentPublishersShareSyncs) {
  auto queue = Open();
  constexpr int kThreads = 4, kPublishes = 200;
  std::atomic<uint64_t> acked{0};
  std::vector<std::unique_ptr<Producer>> producers;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    producers.push_back(queue->NewProducer([&](uint64_t n, uint64_t) { acked += n; }));
    threads.emplace_back([&, t, producer = producers.back().get()] {
      for (int i = 0; i < kPublishes; ++i) {
        auto r = Publish(producer, t * kPublishes + i, 1);
        ASSERT_TRUE(r.status.ok()) << r.status;
      }
      queue->WaitPersisted(queue->published_index() - 1, In(absl::Seconds(30)));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(queue->persisted_index(), kThreads * kPublishes);
  WaitFor([&] { return acked.load() == kThreads * kPublishes; });
  // Group commit: far fewer syncs than publishes.
  const uint64_t syncs = queue->disk_stats().syncs;
  std::printf("%d publishes, %llu syncs\n", kThreads * kPublishes,
              static_cast<unsigned long long>(syncs));
  EXPECT_LT(syncs, kThreads * kPublishes);
  EXPECT_EQ(TakeAll(queue.get()).size(), kThreads * kPublishes);
}

// After k of a producer's events are acknowledged, its first k events are persisted: the index the
// callback is given covers the k-th, and it never goes back, across producers.
TEST_F(DiskQueueTest, AcksArriveInPublishOrderPerProducer) {
  auto queue = Open();
  struct Ack {
    int producer;
    uint64_t count;
    uint64_t persisted_index;
  };
  std::vector<Ack> acks;  // in the order the callbacks ran
  std::mutex mu;
  auto callback = [&](int producer) {
    return [&, producer](uint64_t n, uint64_t persisted_index) {
      std::lock_guard<std::mutex> lock(mu);
      acks.push_back({producer, n, persisted_index});
    };
  };
  std::unique_ptr<Producer> producers[2] = {queue->NewProducer(callback(0)),
                                            queue->NewProducer(callback(1))};
  std::vector<uint64_t> indexes[2];  // each producer's events' indexes, in publish order
  for (int i = 0; i < 20; ++i) {
    // Producer 1 publishes while producer 0's events may be in a sync, and the other way round.
    for (int p = 0; p < 2; ++p) {
      const uint64_t n = p + 1;
      const PublishResult r = Publish(producers[p].get(), 3 * i + p, n);
      ASSERT_EQ(r.accepted, n);
      for (uint64_t k = n; k > 0; --k) indexes[p].push_back(r.last_index - k + 1);
    }
  }
  queue->WaitPersisted(queue->published_index() - 1, In(absl::Seconds(10)));
  WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    uint64_t total = 0;
    for (const Ack& ack : acks) total += ack.count;
    return total == 60;
  });
  std::lock_guard<std::mutex> lock(mu);
  uint64_t acked[2] = {0, 0};
  uint64_t last_index = 0;
  for (const Ack& ack : acks) {
    acked[ack.producer] += ack.count;
    ASSERT_LE(acked[ack.producer], indexes[ack.producer].size());
    EXPECT_LE(indexes[ack.producer][acked[ack.producer] - 1], ack.persisted_index)
        << "producer " << ack.producer << "'s first " << acked[ack.producer] << " events";
    EXPECT_GE(ack.persisted_index, last_index);
    last_index = ack.persisted_index;
  }
  EXPECT_EQ(acked[0], 20);
  EXPECT_EQ(acked[1], 40);
  EXPECT_EQ(last_index, 60);
}

TEST_F(DiskQueueTest, CloseLetsConsumersDrain) {
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  ASSERT_TRUE(Publish(producer.get(), 0, 7).status.ok());
  queue->Close();
  EXPECT_EQ(Publish(producer.get(), 7, 1).status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 7));
  EXPECT_TRUE(queue->Get(10, In(absl::Seconds(10))).empty());  // closed and empty: at once
  EXPECT_EQ(queue->Drain(In(absl::Seconds(1))), 0);
}

TEST_F(DiskQueueTest, AbandonedBatchesAreDeliveredAfterRestart) {
  {
    auto queue = Open();
    auto producer = queue->NewProducer(nullptr);
    ASSERT_TRUE(Publish(producer.get(), 0, 3).status.ok());
    Batch batch = queue->Get(10, In(absl::Seconds(10)));
    EXPECT_EQ(batch.size(), 3);
    queue->Close();
    batch.Abandon();
    EXPECT_EQ(queue->Drain(In(absl::Milliseconds(10))), 3);
  }
  auto queue = Open();
  EXPECT_EQ(TakeAll(queue.get()), Payloads(0, 3));
}

// A batch its output retries for good: consumers read at most read_ahead past it (one batch more
// at most), so that it holds back, and a crash delivers again, no more than that.
TEST_F(DiskQueueTest, ABatchNotDoneBoundsHowFarConsumersReadPastIt) {
  options_.read_ahead = 20 * kFrame;
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  ASSERT_TRUE(Publish(producer.get(), 0, 200).status.ok());
  ASSERT_GE(queue->WaitPersisted(199, In(absl::Seconds(10))), 200u);
  Batch stuck = queue->Get(1, In(absl::Seconds(10)));
  ASSERT_EQ(stuck.size(), 1u);
  std::vector<std::string> past;
  for (Batch batch = queue->Get(4, absl::Now()); !batch.empty();
       batch = queue->Get(4, absl::Now())) {
    for (size_t i = 0; i < batch.size(); ++i) past.push_back(Bytes(batch.event(i)));
    batch.Done();
  }
  EXPECT_GE(past.size(), 19u);
  EXPECT_LE(past.size(), 19u + 4);
  EXPECT_EQ(past, Payloads(1, past.size()));

  // A consumer waiting there takes the next batch once the oldest one is done.
  Batch next;
  std::thread consumer([&] { next = queue->Get(4, In(absl::Seconds(10))); });
  stuck.Done();
  consumer.join();
  ASSERT_EQ(next.size(), 4u);
  EXPECT_EQ(Bytes(next.event(0)), Payload(1 + past.size()));
  next.Done();
  EXPECT_EQ(TakeAll(queue.get()), Payloads(5 + past.size(), 200 - 5 - past.size()));
}

// Batches being delivered keep the written chunks they read from: those count against the
// buffer_size share of the newest chunks, so that past it consumers read from the files.
TEST_F(DiskQueueTest, BatchesInFlightHoldWrittenChunksWithinBufferSize) {
  testing::FaultyDiskIo io;
  options_.io = &io;
  options_.buffer_size = 16 << 10;
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  std::vector<Batch> held;
  for (uint64_t i = 0; i < 20 && io.calls(testing::DiskCall::kRead) == 0; ++i) {
    ASSERT_TRUE(Publish(producer.get(), i, 1).status.ok());
    ASSERT_GT(queue->WaitPersisted(i, In(absl::Seconds(10))), i);
    held.push_back(queue->Get(1, In(absl::Seconds(10))));
    ASSERT_EQ(held.back().size(), 1u);
    EXPECT_EQ(Bytes(held.back().event(0)), Payload(i));
  }
  // Each round's chunk touched a page: four of them fill the share.
  EXPECT_GT(io.calls(testing::DiskCall::kRead), 0);
  EXPECT_LE(held.size(), 6u);
  for (Batch& batch : held) batch.Done();
}

TEST_F(DiskQueueTest, OldestAgeCountsUndoneEvents) {
  auto queue = Open();
  EXPECT_EQ(queue->disk_stats().oldest_age, absl::ZeroDuration());
  auto producer = queue->NewProducer(nullptr);
  Publish(producer.get(), 0, 1);
  queue->WaitPersisted(0, In(absl::Seconds(10)));
  EXPECT_GT(queue->disk_stats().oldest_age, absl::ZeroDuration());
  TakeAll(queue.get());
  EXPECT_EQ(queue->disk_stats().oldest_age, absl::ZeroDuration());
}

TEST_F(DiskQueueTest, EventLargerThanTheLimitsGoesAloneIntoAnEmptyQueue) {
  options_.max_size = 16 << 10;
  options_.segment_size = 4 << 10;
  options_.buffer_size = 4 << 10;
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  std::string big(20 << 10, 'x');
  std::vector<Event> events;
  events.emplace_back(big.data(), big.size(), nullptr);
  events.emplace_back(big.data(), 10, nullptr);
  PublishResult r = producer->TryPublish(absl::MakeSpan(events));
  EXPECT_EQ(r.accepted, 1);
  Batch batch = queue->Get(10, In(absl::Seconds(10)));
  ASSERT_EQ(batch.size(), 1);
  EXPECT_EQ(Bytes(batch.event(0)), big);
  batch.Done();
}

TEST_F(DiskQueueTest, TryPublishAllTakesEveryEventOrNone) {
  options_.max_size = 16 << 10;
  options_.segment_size = 4 << 10;
  options_.buffer_size = 4 << 10;
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  std::string payload(1000, 'x');
  const auto events = [&](size_t n) {
    std::vector<Event> out;
    for (size_t i = 0; i < n; ++i) out.emplace_back(payload.data(), payload.size(), nullptr);
    return out;
  };
  // Three frames fit into the 4 KiB buffer, a fourth would not: none of the four goes.
  std::vector<Event> three = events(3);
  PublishResult r = producer->TryPublishAll(absl::MakeSpan(three));
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.accepted, 3);
  std::vector<Event> two = events(2);
  r = producer->TryPublishAll(absl::MakeSpan(two));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted) << r.status;
  EXPECT_EQ(r.accepted, 0);
  EXPECT_EQ(r.last_index, 3);
  EXPECT_EQ(queue->published_index(), 3);
  // Once the three are synced the buffer has room for the two.
  queue->WaitPersisted(2, In(absl::Seconds(10)));
  r = producer->TryPublishAll(absl::MakeSpan(two));
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.last_index, 5);
  // More than the buffer holds at once can never go whole.
  std::vector<Event> five = events(5);
  EXPECT_EQ(producer->TryPublishAll(absl::MakeSpan(five)).status.code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(TakeAll(queue.get(), 5).size(), 5);
}

class DiskQueueLoopTest : public DiskQueueTest, public ::testing::WithParamInterface<bool> {};

TEST_P(DiskQueueLoopTest, FlushPolicy) {
  const bool buffered = GetParam();
  if (buffered) {
    options_.flush_min_events = 8;
    options_.flush_timeout = absl::Milliseconds(200);
  }
  auto queue = Open();
  auto producer = queue->NewProducer(nullptr);
  const absl::Time published = absl::Now();  // before the publish, which starts the flush timer
  Publish(producer.get(), 0, 3);
  queue->WaitPersisted(2, In(absl::Seconds(10)));
  const absl::Time persisted = absl::Now();
  Batch batch = queue->Get(100, In(absl::Seconds(10)));
  EXPECT_EQ(batch.size(), 3);
  if (buffered) {
    // Too few events: handed out once the flush timeout passed (10 ms for the clocks).
    EXPECT_GE(absl::Now() - published, absl::Milliseconds(190));
  } else {
    // Handed out at once, far within the 10 s deadline.
    EXPECT_LT(absl::Now() - persisted, absl::Seconds(1));
  }
  batch.Done();
  Publish(producer.get(), 3, 8);
  batch = queue->Get(100, In(absl::Seconds(10)));
  EXPECT_GE(batch.size(), 1);
  batch.Done();
}

INSTANTIATE_TEST_SUITE_P(Loops, DiskQueueLoopTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Buffered" : "Direct"; });

}  // namespace
}  // namespace shipper::queue
