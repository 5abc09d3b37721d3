// The disk queue's throughput with group commit against what the device allows, and its restart
// (recovery) time. Prints one JSON object per line.
//
//   disk_bench [--dir=/var/tmp/disk_bench] [--events=400000] [--bytes=256] [--producers=4]
//              [--publish_batch=50] [--recovery_mb=256]
//
// Throughput: `producers` threads publish `events` events of `bytes` bytes, `publish_batch` per
// call, while one consumer gets and finishes batches; the clock stops when the last event is
// persisted (synced). The baseline, in the same run and directory, writes the same frames
// sequentially to one file with one fdatasync per as many bytes as the queue's average sync
// carried: what the device allows at that batch size. Recovery: the queue is filled with
// `recovery_mb` MiB of events and reopened; the time is Create's (the files are in the page cache:
// this measures the scan, not the device's read speed).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "queue/disk_queue.h"

ABSL_FLAG(std::string, dir, "/var/tmp/disk_bench", "scratch directory, emptied first and after");
ABSL_FLAG(int64_t, events, 400000, "events in the throughput run");
ABSL_FLAG(int64_t, bytes, 256, "bytes per event");
ABSL_FLAG(int, producers, 4, "publishing threads");
ABSL_FLAG(int64_t, publish_batch, 50, "events per Publish call");
ABSL_FLAG(int64_t, recovery_mb, 256, "MiB queued for the restart measurement; 0 skips it");

namespace shipper::queue {
namespace {

constexpr uint64_t kFrameHeader = 24;  // disk_format.h

// Owns nothing: the events point into one shared buffer that outlives the queue.
std::vector<Event> MakeEvents(const std::string& bytes, int64_t count) {
  std::vector<Event> events;
  events.reserve(count);
  for (int64_t i = 0; i < count; ++i) events.emplace_back(bytes.data(), bytes.size(), nullptr);
  return events;
}

DiskOptions BenchOptions(const std::string& dir, uint64_t bytes) {
  DiskOptions options;
  options.path = dir;
  options.max_size = std::max<uint64_t>(uint64_t{1} << 30, bytes * 2);
  options.segment_size = 64 << 20;
  return options;
}

struct QueueRun {
  double seconds;
  uint64_t syncs;
  double sync_seconds;
};

QueueRun RunQueue(const std::string& dir, int64_t total, int64_t bytes, int producers,
                  int64_t batch) {
  std::filesystem::remove_all(dir);
  auto queue = *DiskQueue::Create(BenchOptions(dir, total * (bytes + kFrameHeader)));
  const std::string payload(bytes, 'x');
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    while (!stop.load()) {
      Batch b = queue->Get(4096, absl::Now() + absl::Milliseconds(20));
      b.Done();
    }
  });
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      auto producer = queue->NewProducer(nullptr);
      const int64_t mine = total / producers + (p < total % producers ? 1 : 0);
      for (int64_t sent = 0; sent < mine;) {
        std::vector<Event> events = MakeEvents(payload, std::min(batch, mine - sent));
        sent += producer->Publish(absl::MakeSpan(events), absl::InfiniteFuture()).accepted;
      }
    });
  }
  for (auto& t : threads) t.join();
  queue->WaitPersisted(total - 1, absl::InfiniteFuture());
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  stop = true;
  consumer.join();
  const DiskStats stats = queue->disk_stats();
  return {seconds, stats.syncs, absl::ToDoubleSeconds(stats.sync_time)};
}

// Writes `total_bytes` in writes of `per_sync` bytes, each followed by fdatasync.
double RunBaseline(const std::string& dir, uint64_t total_bytes, uint64_t per_sync) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/baseline";
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const std::string chunk(per_sync, 'x');
  const absl::Time start = absl::Now();
  for (uint64_t written = 0; written < total_bytes;) {
    const size_t n = std::min<uint64_t>(per_sync, total_bytes - written);
    if (write(fd, chunk.data(), n) != static_cast<ssize_t>(n) || fdatasync(fd) != 0) {
      std::perror("baseline");
      break;
    }
    written += n;
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  close(fd);
  return seconds;
}

void Throughput(const std::string& dir) {
  const int64_t total = absl::GetFlag(FLAGS_events);
  const int64_t bytes = absl::GetFlag(FLAGS_bytes);
  const int producers = absl::GetFlag(FLAGS_producers);
  const QueueRun q = RunQueue(dir, total, bytes, producers, absl::GetFlag(FLAGS_publish_batch));
  const uint64_t frame = bytes + kFrameHeader;
  const uint64_t per_sync =
      std::max<uint64_t>(frame, total * frame / std::max<uint64_t>(q.syncs, 1));
  const double base = RunBaseline(dir, total * frame, per_sync);
  const double mb = total * frame / 1e6;
  std::printf(
      "{\"name\":\"disk/throughput\",\"events\":%lld,\"event_bytes\":%lld,"
      "\"producers\":%d,\"events_per_s\":%.0f,\"mb_per_s\":%.1f,\"syncs\":%llu,"
      "\"events_per_sync\":%.1f,\"sync_s\":%.3f,\"baseline_events_per_s\":%.0f,"
      "\"baseline_mb_per_s\":%.1f,\"ratio\":%.2f}\n",
      static_cast<long long>(total), static_cast<long long>(bytes), producers, total / q.seconds,
      mb / q.seconds, static_cast<unsigned long long>(q.syncs),
      static_cast<double>(total) / std::max<uint64_t>(q.syncs, 1), q.sync_seconds, total / base,
      mb / base, base / q.seconds);
  std::fflush(stdout);
}

void Recovery(const std::string& dir) {
  const int64_t mib = absl::GetFlag(FLAGS_recovery_mb);
  if (mib <= 0) return;
  const int64_t bytes = absl::GetFlag(FLAGS_bytes);
  const int64_t total = (mib << 20) / (bytes + kFrameHeader);
  std::filesystem::remove_all(dir);
  const DiskOptions options = BenchOptions(dir, uint64_t(mib) << 21);
  {
    auto queue = *DiskQueue::Create(options);
    auto producer = queue->NewProducer(nullptr);
    const std::string payload(bytes, 'x');
    for (int64_t sent = 0; sent < total;) {
      std::vector<Event> events = MakeEvents(payload, std::min<int64_t>(1000, total - sent));
      sent += producer->Publish(absl::MakeSpan(events), absl::InfiniteFuture()).accepted;
    }
    queue->WaitPersisted(total - 1, absl::InfiniteFuture());
  }
  const absl::Time start = absl::Now();
  auto queue = *DiskQueue::Create(options);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf(
      "{\"name\":\"disk/recovery\",\"queued_mib\":%lld,\"events\":%lld,"
      "\"recovered\":%llu,\"seconds\":%.3f,\"mib_per_s\":%.0f,\"page_cache\":\"warm\"}\n",
      static_cast<long long>(mib), static_cast<long long>(total),
      static_cast<unsigned long long>(queue->published_index()), seconds, mib / seconds);
}

}  // namespace
}  // namespace shipper::queue

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  shipper::queue::Throughput(dir);
  shipper::queue::Recovery(dir);
  std::filesystem::remove_all(dir);
  return 0;
}
