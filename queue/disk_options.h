// The disk queue's options (disk_queue.h says what the queue makes of them) and their checks, in
// two parts: ValidateDiskOptions reads nothing but the options, so that loading a configuration
// can run it; PreflightDiskPath looks at the file system, for the checks before a start.
// DiskQueue::Create runs both.
//
// Thread safety: functions of their arguments (and of the file system, PreflightDiskPath), safe
// from any thread.
#ifndef SHIPPER_QUEUE_DISK_OPTIONS_H_
#define SHIPPER_QUEUE_DISK_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "queue/disk_io.h"
#include "queue/queue.h"

namespace shipper::queue {

struct DiskOptions {
  std::string path = "./data/queue";  // shipper.queue.disk.path: a directory, created if missing
  // shipper.queue.disk.max_size: bytes in segment files at most (frames: 24 bytes + the event).
  uint64_t max_size = uint64_t{1} << 30;
  // shipper.queue.disk.segment_size; 0 means max_size / 10, at least 1 MiB. Between 4 KiB and
  // max_size / 2, so that a full queue always has a segment it can delete once delivered.
  uint64_t segment_size = 0;
  // shipper.queue.disk.buffer_size: bytes published and not yet being synced at most; 0 means
  // 4 MiB, or max_size / 4 if that is less (DiskBufferSize). In memory the queue holds up to four
  // times that: what fills and is written while the last buffer syncs, that one, the newest synced
  // ones (for consumers to read without a copy; batches being delivered keep those they read
  // from, within the same share) and emptied ones for reuse, each counted by the most it held.
  // Batches being delivered also hold the frames they read from the segments. 4 MiB syncs at what
  // this machine's disk allows (BENCHMARKS.md).
  uint64_t buffer_size = 0;
  // Not a key: how far consumers read past the oldest event not yet done, in frame bytes (they
  // stop there, overshooting by at most one batch, until it is done). A batch that keeps failing
  // thus holds back at most this much of later deliveries, which are all delivered again after a
  // crash (the state file records only the index below the oldest undone event). 0 means
  // DiskReadAhead's default.
  uint64_t read_ahead = 0;
  // Not a key: the largest event the inputs hand the queue, set by the config (the largest of
  // what the enabled inputs accept). The queue trusts a frame's length only up to this, or up to
  // the longest event it was given or recovered: a longer length is checked piece by piece, so
  // that a damaged one claims no more memory than a real event could.
  uint32_t max_event_bytes = 64 << 20;
  // The event loop and wait strategy, as MemoryOptions (shipper.queue.disk.flush.*,
  // ...wait_strategy).
  size_t flush_min_events = 1;
  absl::Duration flush_timeout = absl::Milliseconds(5);
  WaitStrategy wait_strategy = WaitStrategy::kBlocking;
  absl::Duration sleep_min = absl::Microseconds(50);
  absl::Duration sleep_max = absl::Milliseconds(10);
  // Not a key: the file system, through which the queue does all its I/O. Tests give a
  // testing::FaultyDiskIo. Must outlive the queue.
  DiskIo* io = DiskIo::Posix();
};

// The segment_size in effect (see DiskOptions::segment_size).
uint64_t DiskSegmentSize(const DiskOptions& options);
// The buffer_size in effect (see DiskOptions::buffer_size).
uint64_t DiskBufferSize(const DiskOptions& options);

// The read_ahead in effect: max(segment_size, 4 * buffer_size), room for several workers' batches
// in flight (a worker holding a batch long does not slow the others until it is that far behind)
// that stays a fraction of a queue sized by the defaults (1 GiB: a segment, 100 MiB).
uint64_t DiskReadAhead(const DiskOptions& options);

// Every problem in `options` that the options show by themselves: an empty path, the sizes, the
// flush and wait settings. Reads nothing else. Each message starts with the option key. Empty
// when the options are good.
std::vector<absl::Status> ValidateDiskOptions(const DiskOptions& options);
// Whether the nearest existing ancestor of `options.path` (or the path itself) is a writable
// directory, in which Create can make what is missing; creates and writes nothing. The message
// starts with the option key. OK for an empty path, which ValidateDiskOptions reports.
absl::Status PreflightDiskPath(const DiskOptions& options);

}  // namespace shipper::queue

#endif  // SHIPPER_QUEUE_DISK_OPTIONS_H_
