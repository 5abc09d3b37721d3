// The disk queue: the Queue interface (queue.h) over segment files, so that events survive a
// restart and an output outage longer than memory could hold.
//
// Persisted means durable. Publish copies each event's bytes into a write buffer and returns; the
// queue's writer thread writes the buffer to the current segment, and its sync thread fdatasyncs
// what was written, then calls the ACK callbacks and advances persisted_index() (group commit:
// everything written during one sync shares the next). The writer writes the next buffer while
// the last one is in fdatasync, so that producers rarely wait for the device. Consumers Get only
// persisted events: the newest buffer_size of them straight from the written buffers, older ones
// read back from the segments. A batch's events point into the buffer they were read from, freed
// once no batch points into it.
//
// Delivered progress. Done() is in any order, as with the memory queue; the highest index up to
// which every event is done is recorded, as its sequence number, in the state file (`state`,
// fdatasynced) at most every 200 ms and at shutdown, and a segment is deleted once all its events
// are done. Delivery is at-least-once: after a crash, every event after the recorded index is
// delivered again: the last 200 ms of deliveries while batches are done in order, and everything
// done after the oldest batch not yet done when they are not (one that keeps failing holds the
// recorded index back for as long). Consumers read at most DiskReadAhead bytes of frames past the
// oldest batch not yet done (plus the batch being read), then wait for it: a batch that keeps
// failing holds back, and a crash delivers again, no more than that.
//
// Restart. Create recovers from the files: it scans every segment, skips what the state file says
// was delivered, cuts a torn frame at the end of the last segment (a crash mid-write), and steps
// over a damaged frame anywhere else to the next frame whose checksum holds, which costs that frame
// only; damage is logged with file and offset and counted (DiskStats). A frame's length is trusted
// up to DiskOptions::max_event_bytes (or the longest event the queue was given or found), and a
// longer one is checked in pieces, so a damaged length holds no more memory than an event could. A
// missing or damaged state file is rebuilt from the segments: their events are all delivered again.
// Nothing the files hold can stop Create or the queue, but what cannot be read does: Create reads a
// file again after an error, a few times, then refuses with an error naming it and changes nothing,
// since cutting, deleting or passing by what it could not read would lose events (disk_recovery.h).
// Recovered events get indexes 1..N of the new process and count as persisted; their producers are
// gone, so they are acknowledged to nobody.
//
// Uuid. The process should take a new uuid on every start, as it does with the memory queue: events
// accepted but not yet synced when it died are lost from the files, and only a new uuid makes every
// client rewind to its persisted index and resend them. Keeping the uuid would need every accepted
// event durable before Publish returns, a sync per request instead of shared ones. Recovered events
// are delivered whatever the uuid.
//
// Full. When the files would pass max_size, or the write buffer is full because the disk is slow or
// failing (ENOSPC, EIO), publishes accept a prefix as with the memory queue: TryPublish returns
// RESOURCE_EXHAUSTED, Publish waits. Nothing accepted is dropped: the writer (or the syncer) keeps
// its buffer, logs the error once, exposes it in DiskStats::last_error and retries with backoff
// until it succeeds (after a failed sync, everything not yet synced is written again: the kernel
// may have dropped those pages); space on disk comes back a whole segment at a time, as outputs
// finish them.
//
// Thread safety: as Queue. The queue runs three threads of its own: the writer; the syncer, which
// calls the ACK callbacks; and the recorder, which deletes delivered segments and writes the state
// file. A segment is cut back a few MiB at a time before it is unlinked, so that syncs do not wait
// behind one long delete (on a file system mounted with `discard`, unlinking 100 MB at once held
// the device for 35 ms). Nothing else may write in `path` while the queue is open; a second queue
// on the same directory, in this process or another, is refused (an flock on the directory).
#ifndef SHIPPER_QUEUE_DISK_QUEUE_H_
#define SHIPPER_QUEUE_DISK_QUEUE_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "queue/disk_options.h"
#include "queue/queue.h"

namespace shipper::queue {

struct DiskStats {
  uint64_t bytes = 0;           // in segment files, written or about to be
  uint64_t segments = 0;        // segment files
  absl::Duration oldest_age;    // since the oldest undone event was published; 0 if none
  uint64_t syncs = 0;           // fdatasyncs of segments
  absl::Duration sync_time;     // their total duration
  uint64_t damaged_frames = 0;  // runs of damaged bytes stepped over, at recovery or read
  absl::Status last_error;      // the last write or sync error until that call succeeds; else OK
};

class DiskQueue : public Queue {
 public:
  // Checks `options` as PreflightDiskPath and ValidateDiskOptions do (INVALID_ARGUMENT naming
  // every bad key), creates the directory if needed and recovers what it holds.
  // FAILED_PRECONDITION if another queue has the directory open; other errors are the file
  // system's, naming the file (the directory cannot be listed, a segment cannot be read).
  static absl::StatusOr<std::unique_ptr<DiskQueue>> Create(const DiskOptions& options);

  virtual DiskStats disk_stats() const = 0;
};

}  // namespace shipper::queue

#endif  // SHIPPER_QUEUE_DISK_QUEUE_H_
