// The disk queue's recovery (disk_queue.h, "Restart"): from what its files hold to what the queue
// starts with. Internal to queue/.
//
// Pure: the queue lists the segments, reads the state file and scans each segment (its I/O), and
// afterwards deletes, cuts, logs and rewrites what Recover's answer says. Every rule is here, so
// that each can be tested on bytes in memory:
//
// - Only what was read can be judged. A segment that could not be opened or read whole makes
//   Recover fail with that error, and the queue then changes nothing: cutting or deleting what it
//   could not read would lose events, and passing a segment by would make its events look
//   delivered on the next start (their sequence numbers lie below those of the events after).
// - The state file holds the sequence number up to which every event was delivered. If it is
//   missing or damaged, nothing counts as delivered: every segment's events come again.
// - Segments are read in the order of their ids, frame by frame. A frame whose sequence number is
//   not above every one before it (the delivered one included) was delivered already, or is a
//   stale copy: skipped.
// - Bytes after the last frame of the last segment are a frame torn by a crash: they are cut, and
//   are not damage. Any other run of bytes that holds no valid frame (its checksum proves it) is
//   damage: it costs those bytes only, reading resumes at the next frame whose checksum holds.
// - A segment without an undelivered frame is deleted.
// - Recovered events get indexes 1..N in sequence order. New events continue the sequence, and
//   their segments' ids lie past every existing one.
//
// Thread safety: Recover is a function of its arguments; call it from any thread.
#ifndef SHIPPER_QUEUE_DISK_RECOVERY_H_
#define SHIPPER_QUEUE_DISK_RECOVERY_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "queue/disk_format.h"

namespace shipper::queue::internal {

// A segment file with undone events, as the disk queue's writer and reader see it.
struct Segment {
  uint64_t id;
  uint64_t last_index;    // of its last event
  uint64_t bytes;         // written and synced: what the reader may read
  uint64_t read_from;     // where its undelivered frames start
  uint64_t damage_known;  // recovery reported damage before this offset already
  // Its file's size, what deleting it frees: at recovery more than `bytes` when bytes no frame
  // of it is read from follow (damage, frames delivered before); Recovery::bytes is their sum.
  uint64_t file_bytes;
};

// When an event was published, kept for the first index of each second only: enough for the oldest
// event's age, whatever the backlog.
struct Mark {
  uint64_t index;
  uint32_t time;
};

// Scans segment `id` from its start: calls on_frame(offset, header) for every valid frame in order,
// and on_damage(offset, end) for the bytes in between that hold no valid frame (a run may come in
// pieces), each only for bytes it read. Returns the file's size, or the error that kept it from
// reading the file whole.
using ScanSegment = absl::FunctionRef<absl::StatusOr<uint64_t>(
    uint64_t id, absl::FunctionRef<void(uint64_t offset, const FrameHeader& header)> on_frame,
    absl::FunctionRef<void(uint64_t offset, uint64_t end)> on_damage)>;

struct Recovery {
  // What the queue starts with.
  uint64_t seq_base = 0;         // index + seq_base = sequence number
  uint64_t last_index = 0;       // the recovered events have indexes 1..last_index
  std::deque<Segment> segments;  // those with undelivered events, in order
  std::deque<Mark> marks;        // of the recovered events
  uint64_t bytes = 0;            // in those segments' files, once cut
  uint32_t max_payload = 0;      // the longest valid frame's payload

  // What the queue does to the files.
  struct Cut {
    uint64_t id;
    uint64_t size;  // the file is cut to this
    uint64_t torn;  // bytes cut off
  };
  std::optional<Cut> cut;            // the torn tail of the last segment
  std::vector<uint64_t> delete_ids;  // segments without an undelivered frame
  // The state file held no valid state: it is written with seq_base, so that a missing one always
  // means a lost one. `state_lost`: and there was one to lose (the directory was not new), so the
  // events are all delivered again.
  bool rewrite_state = false;
  bool state_lost = false;

  // What it found: each run counts as one damaged frame.
  struct Damage {
    uint64_t id;
    uint64_t offset;
    uint64_t end;
  };
  std::vector<Damage> damage;
};

// `state`: the state file's bytes (none for a new one). `ids`: every segment file's, ascending.
// `scan` reads segment files for Recover; the first error it returns is Recover's.
absl::StatusOr<Recovery> Recover(absl::string_view state, absl::Span<const uint64_t> ids,
                                 ScanSegment scan);

}  // namespace shipper::queue::internal

#endif  // SHIPPER_QUEUE_DISK_RECOVERY_H_
