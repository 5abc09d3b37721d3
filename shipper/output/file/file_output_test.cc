#include "shipper/output/file/file_output.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "runtime/mutex.h"
#include "shipper/output/queued_events.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;

std::vector<pb::Event> TestEvents(int n) {
  std::vector<pb::Event> events(n);
  for (int i = 0; i < n; ++i) {
    // Lines of varying length (about 150 to 450 bytes), so rotation points fall anywhere.
    (*events[i].mutable_fields()->mutable_data())["message"].set_string_value(
        std::string(100 + (i * 37) % 300, 'a' + i % 26));
  }
  return events;
}

// What a batch's Write() that returned `written` comes to: its finish's status (Outcome::finish)
// if it left one, else `written`.
absl::Status Finished(absl::Status written, Outcome* outcome) {
  return outcome->finish ? outcome->Finish() : written;
}

// ::fdatasync, but the calls numbered in `failing` (from 0, counted in `*calls`) fail with EIO.
std::function<int(int)> FailingSync(std::set<int> failing, std::atomic<int>* calls) {
  return [failing = std::move(failing), calls](int fd) {
    if (failing.count(calls->fetch_add(1)) == 0) return ::fdatasync(fd);
    errno = EIO;
    return -1;
  };
}

// Write() and, if it left one, its finish: what Delivery does for a batch.
absl::Status WriteAndFinish(Output& output, const Events& events, Outcome* outcome) {
  return Finished(output.Write(events, outcome), outcome);
}

class FileOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.path = absl::StrCat(getenv("TEST_TMPDIR"), "/", test_info()->name());
    std::filesystem::remove_all(config_.path);
  }

  // Writes all `events` in batches of `batch_size`.
  void WriteAll(QueuedEvents& events, size_t batch_size) {
    absl::StatusOr<std::unique_ptr<Output>> output = NewFileOutput(config_, ::fdatasync);
    ASSERT_TRUE(output.ok()) << output.status();
    for (queue::Batch batch = events.Take(batch_size); !batch.empty();
         batch = events.Take(batch_size)) {
      Outcome outcome;
      ASSERT_TRUE(WriteAndFinish(**output, Events(batch), &outcome).ok());
      EXPECT_TRUE(outcome.rejected.empty());
      batch.Done();
    }
  }

  std::string File(size_t n) const {
    std::string path = absl::StrCat(config_.path, "/", config_.filename);
    return n == 0 ? path : absl::StrCat(path, ".", n);
  }

  // The queue indexes in file n, checking every line is a whole JSON document.
  std::vector<uint64_t> Indexes(size_t n) const {
    std::ifstream in(File(n));
    std::vector<uint64_t> indexes;
    for (std::string line; std::getline(in, line);) {
      rapidjson::Document doc;
      doc.Parse(line.c_str());
      EXPECT_FALSE(doc.HasParseError()) << File(n) << ": " << line;
      if (!doc.HasParseError()) indexes.push_back(doc["@metadata"]["index"].GetUint64());
    }
    return indexes;
  }

  const ::testing::TestInfo* test_info() const {
    return ::testing::UnitTest::GetInstance()->current_test_info();
  }

  FileSettings config_;
};

TEST_F(FileOutputTest, RotatesBySizeAndLosesNothing) {
  config_.rotate_every_kb = 4;
  config_.number_of_files = 100;  // keeps every file
  QueuedEvents events(TestEvents(1000));
  WriteAll(events, 37);

  std::set<uint64_t> seen;
  size_t files = 0;
  uint64_t previous_last = 0;
  // Oldest file first: indexes ascend across files.
  for (size_t n = 99; n != static_cast<size_t>(-1); --n) {
    if (!std::filesystem::exists(File(n))) continue;
    ++files;
    const uintmax_t size = std::filesystem::file_size(File(n));
    EXPECT_LE(size, 4096u) << File(n);
    if (n > 0) {
      EXPECT_GT(size, 4096u - 460) << File(n) << " was rotated early";
    }
    for (uint64_t index : Indexes(n)) {
      EXPECT_TRUE(seen.insert(index).second) << index << " twice";
      EXPECT_GT(index, previous_last) << File(n);
      previous_last = index;
    }
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(*seen.begin(), 1u);
  EXPECT_EQ(*seen.rbegin(), 1000u);
  EXPECT_GT(files, 50u) << "about 300 KB of lines in 4 KiB files";
}

TEST_F(FileOutputTest, KeepsNumberOfFilesDeletingTheOldest) {
  config_.rotate_every_kb = 2;
  config_.number_of_files = 3;
  QueuedEvents events(TestEvents(400));
  WriteAll(events, 10);
  EXPECT_TRUE(std::filesystem::exists(File(0)));
  EXPECT_TRUE(std::filesystem::exists(File(1)));
  EXPECT_TRUE(std::filesystem::exists(File(2)));
  EXPECT_FALSE(std::filesystem::exists(File(3)));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(config_.path),
                          std::filesystem::directory_iterator()),
            3);
  std::vector<uint64_t> newest = Indexes(0);
  ASSERT_FALSE(newest.empty());
  EXPECT_EQ(newest.back(), 400u);
  EXPECT_EQ(Indexes(1).back() + 1, newest.front()) << "filename.1 holds the lines just before";
}

TEST_F(FileOutputTest, AnEventLargerThanTheLimitGetsAFileOfItsOwn) {
  config_.rotate_every_kb = 1;
  config_.number_of_files = 10;
  std::vector<pb::Event> list = TestEvents(3);
  (*list[1].mutable_fields()->mutable_data())["message"].set_string_value(std::string(3000, 'x'));
  QueuedEvents events(std::move(list));
  WriteAll(events, 3);
  EXPECT_EQ(Indexes(2), std::vector<uint64_t>{1});
  EXPECT_EQ(Indexes(1), std::vector<uint64_t>{2}) << "larger than the limit: alone in its file";
  EXPECT_EQ(Indexes(0), std::vector<uint64_t>{3});
}

TEST_F(FileOutputTest, CutsAPartialLastLineLeftByAKilledProcess) {
  std::filesystem::create_directories(config_.path);
  std::ofstream(File(0)) << "{\"whole\":1}\n{\"cut\":";
  QueuedEvents events(TestEvents(2));
  WriteAll(events, 2);
  std::ifstream in(File(0));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u) << "the whole line, then the two new events";
  EXPECT_EQ(lines[0], "{\"whole\":1}");
  EXPECT_EQ(lines[1].substr(0, 10), "{\"message\"");
}

TEST_F(FileOutputTest, CreatesFilesWithTheConfiguredPermissions) {
  const mode_t old_umask = ::umask(0);
  config_.permissions = 0640;
  config_.rotate_every_kb = 1;
  QueuedEvents events(TestEvents(20));
  WriteAll(events, 5);
  ::umask(old_umask);
  for (size_t n : {0, 1}) {
    struct stat st;
    ASSERT_EQ(::stat(File(n).c_str(), &st), 0) << File(n);
    EXPECT_EQ(st.st_mode & 0777, 0640u) << File(n);
  }
}

TEST_F(FileOutputTest, DefaultPermissionsAre0600AndFsyncNeverStillWrites) {
  config_.fsync = FsyncPolicy::kNever;
  QueuedEvents events(TestEvents(5));
  WriteAll(events, 5);
  struct stat st;
  ASSERT_EQ(::stat(File(0).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Indexes(0), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
}

// Calls ::fdatasync and records, per file (inode), the size of the file when a flush of it
// started: every byte below it is durable once the flush returns.
class RecordingSync {
 public:
  int operator()(int fd) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return -1;
    if (::fdatasync(fd) != 0) return -1;
    runtime::MutexLock lock(&mu_);
    ++flushes_;
    uint64_t& synced = synced_[st.st_ino];
    synced = std::max<uint64_t>(synced, st.st_size);
    return 0;
  }
  int flushes() {
    runtime::MutexLock lock(&mu_);
    return flushes_;
  }
  // Of the file at `path` (0 if never flushed).
  uint64_t synced(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    runtime::MutexLock lock(&mu_);
    auto it = synced_.find(st.st_ino);
    return it == synced_.end() ? 0 : it->second;
  }

 private:
  runtime::Mutex mu_;
  int flushes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<ino_t, uint64_t> synced_ ABSL_GUARDED_BY(mu_);
};

// The lines of `path`.
size_t Lines(const std::string& path) {
  std::ifstream in(path);
  size_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

// Where the line of the event with queue index `index` ends in `path` (0 if it is not there).
uint64_t EndOfLine(const std::string& path, uint64_t index) {
  std::ifstream in(path);
  uint64_t end = 0;
  for (std::string line; std::getline(in, line);) {
    end += line.size() + 1;
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    if (!doc.HasParseError() && doc["@metadata"]["index"].GetUint64() == index) return end;
  }
  return 0;
}

TEST_F(FileOutputTest, WriteReturnsBeforeItsFlushWhichItsFinishAwaitsAndFsyncNeverHasNone) {
  RecordingSync recording;
  runtime::Notification flush_started, release_flush;
  absl::StatusOr<std::unique_ptr<Output>> output = NewFileOutput(config_, [&](int fd) {
    flush_started.Notify();
    release_flush.WaitForNotification();
    return recording(fd);
  });
  ASSERT_TRUE(output.ok()) << output.status();
  QueuedEvents events(TestEvents(20));
  queue::Batch batch = events.Take(10);
  Outcome outcome;
  // The flush is stuck, and Write() returns all the same.
  ASSERT_TRUE((*output)->Write(Events(batch), &outcome).ok());
  EXPECT_EQ(Lines(File(0)), 10u);
  ASSERT_TRUE(outcome.finish);
  flush_started.WaitForNotification();
  release_flush.Notify();
  EXPECT_TRUE(outcome.Finish().ok());
  EXPECT_EQ(recording.synced(File(0)), std::filesystem::file_size(File(0)));
  batch.Done();

  config_.fsync = FsyncPolicy::kNever;
  output = NewFileOutput(config_, [&](int fd) { return recording(fd); });
  ASSERT_TRUE(output.ok()) << output.status();
  batch = events.Take(10);
  outcome.Clear();
  ASSERT_TRUE((*output)->Write(Events(batch), &outcome).ok());
  EXPECT_FALSE(outcome.finish);
  EXPECT_EQ(Lines(File(0)), 20u);
  batch.Done();
}

TEST_F(FileOutputTest, AFailedFlushFailsItsBatchAndALaterFlushServesTheNext) {
  std::atomic<int> calls{0};
  absl::StatusOr<std::unique_ptr<Output>> output = NewFileOutput(config_, FailingSync({0}, &calls));
  ASSERT_TRUE(output.ok()) << output.status();
  QueuedEvents events(TestEvents(20));
  queue::Batch first = events.Take(10), second = events.Take(10);
  Outcome outcome;
  absl::Status status = WriteAndFinish(**output, Events(first), &outcome);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("flushing " + File(0)), std::string::npos) << status;
  EXPECT_NE(status.message().find(std::strerror(EIO)), std::string::npos) << status;
  outcome.Clear();
  EXPECT_TRUE(WriteAndFinish(**output, Events(second), &outcome).ok());
  EXPECT_EQ(calls.load(), 2);
  first.Done();
  second.Done();
}

TEST_F(FileOutputTest, WritersThatFinishDuringAFlushShareTheNextOne) {
  RecordingSync recording;
  runtime::Notification first_flush_started, release_first_flush;
  std::atomic<int> calls{0};
  absl::StatusOr<std::unique_ptr<Output>> output = NewFileOutput(config_, [&](int fd) {
    if (calls.fetch_add(1) == 0) {
      first_flush_started.Notify();
      release_first_flush.WaitForNotification();
    }
    return recording(fd);
  });
  ASSERT_TRUE(output.ok()) << output.status();
  QueuedEvents events(TestEvents(40));
  std::vector<queue::Batch> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(events.Take(10));

  // Each writer checks, once its batch is confirmed, that a flush covered its last line.
  std::atomic<int> writes_returned{0};
  auto write = [&](queue::Batch* batch) {
    Outcome outcome;
    const absl::Status written = (*output)->Write(Events(*batch), &outcome);
    writes_returned.fetch_add(1);
    EXPECT_TRUE(Finished(written, &outcome).ok());
    const uint64_t end = EndOfLine(File(0), batch->first_index() + batch->size() - 1);
    EXPECT_GT(end, 0u);
    EXPECT_GE(recording.synced(File(0)), end) << "confirmed before its bytes were flushed";
  };
  std::thread first(write, &batches[0]);
  first_flush_started.WaitForNotification();
  // The first flush is stuck; three more batches are written while it runs. Their lines are
  // in the file only after the flush started, so it cannot cover them.
  std::vector<std::thread> others;
  for (int i = 1; i < 4; ++i) others.emplace_back(write, &batches[i]);
  // Write() returns once its lines are in the file and counted as written.
  while (writes_returned.load() < 4) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(Lines(File(0)), 40);
  release_first_flush.Notify();
  first.join();
  for (std::thread& t : others) t.join();
  EXPECT_EQ(recording.flushes(), 2) << "the first batch's flush, then one for the other three";
  EXPECT_EQ(recording.synced(File(0)), std::filesystem::file_size(File(0)));
  for (queue::Batch& batch : batches) batch.Done();
}

TEST_F(FileOutputTest, ConcurrentWritersRotatingLoseNothingAndFlushEveryByte) {
  config_.rotate_every_kb = 4;
  config_.number_of_files = 1000;  // keeps every file
  RecordingSync recording;
  absl::StatusOr<std::unique_ptr<Output>> output =
      NewFileOutput(config_, [&](int fd) { return recording(fd); });
  ASSERT_TRUE(output.ok()) << output.status();
  QueuedEvents events(TestEvents(2000));
  std::vector<queue::Batch> batches;
  for (queue::Batch batch = events.Take(23); !batch.empty(); batch = events.Take(23)) {
    batches.push_back(std::move(batch));
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&] {
      for (size_t i = next++; i < batches.size(); i = next++) {
        Outcome outcome;
        EXPECT_TRUE(WriteAndFinish(**output, Events(batches[i]), &outcome).ok());
      }
    });
  }
  for (std::thread& t : writers) t.join();
  for (queue::Batch& batch : batches) batch.Done();

  // Every event once; a batch's lines stay together in order (across a rotation too).
  std::vector<uint64_t> all;
  for (size_t n = 999; n != static_cast<size_t>(-1); --n) {
    if (!std::filesystem::exists(File(n))) continue;
    EXPECT_LE(std::filesystem::file_size(File(n)), 4096u) << File(n);
    EXPECT_EQ(recording.synced(File(n)), std::filesystem::file_size(File(n)))
        << File(n) << ": every confirmed byte was flushed";
    for (uint64_t index : Indexes(n)) all.push_back(index);
  }
  ASSERT_EQ(all.size(), 2000u);
  EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()).size(), 2000u);
  for (size_t i = 0; i < all.size(); ++i) {
    if ((all[i] - 1) % 23 != 0) {
      EXPECT_EQ(all[i], all[i - 1] + 1) << "batch split at " << i;
    }
  }
}

// Sets a resource limit (soft) for its lifetime.
class ScopedLimit {
 public:
  ScopedLimit(int resource, rlim_t soft) : resource_(resource) {
    EXPECT_EQ(::getrlimit(resource, &old_), 0);
    rlimit limit = old_;
    limit.rlim_cur = soft;
    EXPECT_EQ(::setrlimit(resource, &limit), 0) << std::strerror(errno);
  }
  ~ScopedLimit() { ::setrlimit(resource_, &old_); }

 private:
  const int resource_;
  rlimit old_;
};

// The lowest free file descriptor: with RLIMIT_NOFILE at it, every open fails (EMFILE).
rlim_t LowestFreeFd() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  ::close(fd);
  return static_cast<rlim_t>(fd);
}

TEST_F(FileOutputTest, ARotationWhoseOpenFailsIsRetriedWithoutLosingAFile) {
  config_.rotate_every_kb = 1;
  config_.number_of_files = 3;
  config_.fsync = FsyncPolicy::kNever;  // no syncer thread opening the directory meanwhile
  absl::StatusOr<std::unique_ptr<Output>> output = NewFileOutput(config_, ::fdatasync);
  ASSERT_TRUE(output.ok()) << output.status();
  QueuedEvents events(TestEvents(40));
  while (!std::filesystem::exists(File(2))) {
    queue::Batch batch = events.Take(1);
    Outcome outcome;
    ASSERT_TRUE((*output)->Write(Events(batch), &outcome).ok());
    batch.Done();
  }
  const std::vector<uint64_t> was_1 = Indexes(1), was_0 = Indexes(0);
  std::vector<pb::Event> large(1);  // larger than the limit: it rotates
  (*large[0].mutable_fields()->mutable_data())["message"].set_string_value(std::string(2000, 'x'));
  QueuedEvents rotating(std::move(large));
  queue::Batch batch = rotating.Take(1);
  {
    ScopedLimit no_files(RLIMIT_NOFILE, LowestFreeFd());
    for (int attempt = 0; attempt < 3; ++attempt) {
      Outcome outcome;
      EXPECT_FALSE((*output)->Write(Events(batch), &outcome).ok());
    }
  }
  Outcome outcome;
  ASSERT_TRUE((*output)->Write(Events(batch), &outcome).ok());
  batch.Done();
  // One rotation: the oldest file replaced, the others shifted, the batch in a new file.
  EXPECT_EQ(Indexes(2), was_1);
  EXPECT_EQ(Indexes(1), was_0);
  EXPECT_EQ(Indexes(0), std::vector<uint64_t>{1});
}

// A write that fails part way (the disk full; here RLIMIT_FSIZE) is cut back to its last whole
// line before anything else is appended: no line is glued to a fragment.
TEST_F(FileOutputTest, AShortWriteIsCutBackToTheLastWholeLine) {
  std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  absl::StatusOr<std::unique_ptr<Output>> output = NewFileOutput(config_, ::fdatasync);
  ASSERT_TRUE(output.ok()) << output.status();
  QueuedEvents events(TestEvents(30));
  queue::Batch first = events.Take(10), second = events.Take(10), third = events.Take(10);
  Outcome outcome;
  ASSERT_TRUE(WriteAndFinish(**output, Events(first), &outcome).ok());
  {
    ScopedLimit limit(RLIMIT_FSIZE, std::filesystem::file_size(File(0)) + 1000);
    outcome.Clear();
    EXPECT_FALSE(WriteAndFinish(**output, Events(second), &outcome).ok());
  }
  outcome.Clear();
  ASSERT_TRUE(WriteAndFinish(**output, Events(third), &outcome).ok());
  outcome.Clear();
  ASSERT_TRUE(WriteAndFinish(**output, Events(second), &outcome).ok());
  std::vector<uint64_t> want;
  for (uint64_t i = 1; i <= 10; ++i) want.push_back(i);
  for (uint64_t i = 21; i <= 30; ++i) want.push_back(i);
  for (uint64_t i = 11; i <= 20; ++i) want.push_back(i);
  EXPECT_EQ(Indexes(0), want);  // and every line parses
  first.Done();
  second.Done();
  third.Done();
}

// After a failed fdatasync Linux may have dropped the pages it could not write and reports that
// once: a later fdatasync returns 0. So every batch written into the file since its last good
// sync fails, a batch written while the failing sync ran included: the file is cut back to that
// sync and all are written again.
TEST_F(FileOutputTest, AFailedFlushLosesEverythingUnsyncedWhichIsCutAndWrittenAgain) {
  runtime::Notification flush_started, release_flush;
  std::atomic<int> calls{0};
  absl::StatusOr<std::unique_ptr<Output>> output = NewFileOutput(config_, [&](int fd) {
    if (calls.fetch_add(1) > 0) return ::fdatasync(fd);
    flush_started.Notify();
    release_flush.WaitForNotification();
    errno = EIO;
    return -1;
  });
  ASSERT_TRUE(output.ok()) << output.status();
  QueuedEvents events(TestEvents(20));
  queue::Batch first = events.Take(10), second = events.Take(10);
  Outcome first_outcome, second_outcome;
  ASSERT_TRUE((*output)->Write(Events(first), &first_outcome).ok());
  flush_started.WaitForNotification();
  ASSERT_TRUE((*output)->Write(Events(second), &second_outcome).ok());  // during the flush
  release_flush.Notify();
  EXPECT_FALSE(first_outcome.Finish().ok());
  EXPECT_FALSE(second_outcome.Finish().ok()) << "written before the failure was reported";
  for (queue::Batch* batch : {&first, &second}) {
    Outcome outcome;
    EXPECT_TRUE(WriteAndFinish(**output, Events(*batch), &outcome).ok());
  }
  std::vector<uint64_t> all;
  for (uint64_t i = 1; i <= 20; ++i) all.push_back(i);
  EXPECT_EQ(Indexes(0), all) << "once each: what the failed flush left was cut";
  EXPECT_FALSE(std::filesystem::exists(File(1))) << "no rotation";
  first.Done();
  second.Done();
}

// Flushes that fail again and again (a failing device) must not rotate once per retry: with
// number_of_files 2 the second rotation deleted the file holding a batch already acknowledged.
TEST_F(FileOutputTest, FlushesThatKeepFailingDeleteNoAcknowledgedBatch) {
  config_.number_of_files = 2;
  std::atomic<int> calls{0};
  absl::StatusOr<std::unique_ptr<Output>> output =
      NewFileOutput(config_, FailingSync({1, 2, 3}, &calls));
  ASSERT_TRUE(output.ok()) << output.status();
  QueuedEvents events(TestEvents(20));
  queue::Batch first = events.Take(10), second = events.Take(10);
  Outcome outcome;
  ASSERT_TRUE(WriteAndFinish(**output, Events(first), &outcome).ok());
  for (int attempt = 0; attempt < 3; ++attempt) {
    outcome.Clear();
    EXPECT_FALSE(WriteAndFinish(**output, Events(second), &outcome).ok());
  }
  outcome.Clear();
  EXPECT_TRUE(WriteAndFinish(**output, Events(second), &outcome).ok());
  std::vector<uint64_t> all;
  for (uint64_t i = 1; i <= 20; ++i) all.push_back(i);
  EXPECT_EQ(Indexes(0), all);
  EXPECT_FALSE(std::filesystem::exists(File(1)));
  first.Done();
  second.Done();
}

// A flush that hangs (a failing device) must not hold shutdown: Cancel() fails the finish waiting
// on it and every later write at once, and the output is destroyed without waiting for it.
TEST_F(FileOutputTest, CancelEndsWhatWaitsOnAHungFlush) {
  auto flush_started = std::make_shared<runtime::Notification>();
  auto release_flush = std::make_shared<runtime::Notification>();
  auto calls = std::make_shared<std::atomic<int>>(0);
  absl::StatusOr<std::unique_ptr<Output>> output =
      NewFileOutput(config_, [flush_started, release_flush, calls](int fd) {
        if (calls->fetch_add(1) == 0) flush_started->Notify();
        release_flush->WaitForNotification();
        return ::fdatasync(fd);
      });
  ASSERT_TRUE(output.ok()) << output.status();
  QueuedEvents events(TestEvents(20));
  queue::Batch first = events.Take(10), second = events.Take(10);
  Outcome outcome;
  ASSERT_TRUE((*output)->Write(Events(first), &outcome).ok());
  ASSERT_TRUE(outcome.finish);
  flush_started->WaitForNotification();
  absl::Status finished;
  std::thread finisher([&] { finished = outcome.Finish(); });
  (*output)->Cancel();
  finisher.join();
  EXPECT_EQ(finished.code(), absl::StatusCode::kUnavailable) << finished;
  EXPECT_NE(finished.message().find("cancelled"), std::string::npos) << finished;
  Outcome later;
  absl::Status status = WriteAndFinish(**output, Events(second), &later);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find(File(0)), std::string::npos) << status;
  output->reset();  // returns with the flush still hung
  release_flush->Notify();
  first.Done();
  second.Done();
}

TEST_F(FileOutputTest, UnwritableDirectoryIsAClearError) {
  config_.path = "/proc/no/such/dir";
  absl::StatusOr<std::unique_ptr<Output>> output = NewFileOutput(config_, ::fdatasync);
  ASSERT_FALSE(output.ok());
  EXPECT_EQ(output.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(output.status().message().find("shipper.output.file.path"), std::string::npos);
}

}  // namespace
}  // namespace shipper
