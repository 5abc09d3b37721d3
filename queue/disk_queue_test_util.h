// A fixture for the disk queue's tests: a fresh directory, small segments, events of known bytes.
#ifndef SHIPPER_QUEUE_DISK_QUEUE_TEST_UTIL_H_
#define SHIPPER_QUEUE_DISK_QUEUE_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "queue/disk_queue.h"
#include "queue/test_util.h"

namespace shipper::queue::testing {

inline absl::Time In(absl::Duration d) { return absl::Now() + d; }

// Event `i`'s bytes: 200 of them, unique per i.
inline std::string Payload(uint64_t i) {
  std::string s = absl::StrFormat("event %08d ", i);
  s.resize(200, static_cast<char>('a' + i % 26));
  return s;
}

inline std::vector<std::string> Payloads(uint64_t first, uint64_t count) {
  std::vector<std::string> all;
  for (uint64_t i = first; i < first + count; ++i) all.push_back(Payload(i));
  return all;
}

inline std::string Bytes(const Event& event) {
  return std::string(static_cast<const char*>(event.data()), event.bytes());
}

class DiskQueueTest : public ::testing::Test {
 protected:
  // A frame of Payload(i): the 24-byte header of disk_format.h and 200 bytes.
  static constexpr uint64_t kFrame = 24 + 200;

  DiskQueueTest() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = absl::StrFormat("%s/%s.%s", ::testing::TempDir(), info->test_suite_name(), info->name());
    std::replace(dir_.begin() + ::testing::TempDir().size(), dir_.end(), '/', '_');
    std::filesystem::remove_all(dir_);
    options_.path = dir_;
    options_.max_size = 64 << 20;
    options_.segment_size = 4 << 10;
    options_.buffer_size = 1 << 20;
  }

  std::unique_ptr<DiskQueue> Open() {
    auto queue = DiskQueue::Create(options_);
    EXPECT_TRUE(queue.ok()) << queue.status();
    return queue.ok() ? std::move(*queue) : nullptr;
  }

  // Publishes Payload(first) .. Payload(first + count - 1).
  PublishResult Publish(Producer* producer, uint64_t first, uint64_t count,
                        absl::Time deadline = absl::InfiniteFuture()) {
    std::vector<std::string> bytes = Payloads(first, count);
    std::vector<Event> events;
    for (const std::string& b : bytes) events.emplace_back(b.data(), b.size(), &owner_);
    return deadline == absl::InfinitePast() ? producer->TryPublish(absl::MakeSpan(events))
                                            : producer->Publish(absl::MakeSpan(events), deadline);
  }
  PublishResult TryPublish(Producer* producer, uint64_t first, uint64_t count) {
    return Publish(producer, first, count, absl::InfinitePast());
  }

  // Takes and finishes batches until `limit` events (more may yet be published: a producer
  // waiting for the room this makes), or, without a limit, until every event the queue accepted
  // is done (stats().events == 0: taken here, or lost frames the reader skipped). It waits on
  // that state, not on a quiet spell, so a slow machine cannot end it early; 30 s bound a test
  // that expected more than will come.
  std::vector<std::string> TakeAll(Queue* queue,
                                   uint64_t limit = std::numeric_limits<uint64_t>::max()) {
    const bool all = limit == std::numeric_limits<uint64_t>::max();
    std::vector<std::string> got;
    const absl::Time deadline = In(absl::Seconds(30));
    while (got.size() < limit && (!all || queue->stats().events > 0) && absl::Now() < deadline) {
      Batch batch = queue->Get(std::min<uint64_t>(limit - got.size(), 1000),
                               std::min(deadline, In(absl::Milliseconds(100))));
      for (size_t i = 0; i < batch.size(); ++i) got.push_back(Bytes(batch.event(i)));
      batch.Done();
    }
    return got;
  }

  // Leaves `count` persisted, undelivered events in the directory.
  void PublishAndClose(uint64_t count) {
    auto queue = Open();
    auto producer = queue->NewProducer(nullptr);
    ASSERT_TRUE(Publish(producer.get(), 0, count).status.ok());
    queue->WaitPersisted(count - 1, In(absl::Seconds(10)));
  }

  std::vector<std::filesystem::path> Segments() const {
    std::vector<std::filesystem::path> all;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      if (e.path().extension() == ".seg") all.push_back(e.path());
    }
    std::sort(all.begin(), all.end());
    return all;
  }

  static void FlipByte(const std::filesystem::path& file, uint64_t offset) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(offset);
    char c;
    f.get(c);
    f.seekp(offset);
    f.put(static_cast<char>(c ^ 0x5a));
  }

  template <typename F>
  static void WaitFor(F done, absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time deadline = In(timeout);
    while (!done() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
    EXPECT_TRUE(done());
  }

  std::string dir_;
  DiskOptions options_;
  CountingOwner owner_;
};

}  // namespace shipper::queue::testing

#endif  // SHIPPER_QUEUE_DISK_QUEUE_TEST_UTIL_H_
