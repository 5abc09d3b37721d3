// The disk queue's file formats: frames in segment files, and the state file. Internal to queue/.
//
// A segment is frames back to back, nothing else. A frame is a 24-byte header and the event's
// bytes:
//
//   offset  size  field
//        0     4  magic  kFrameMagic: what a resync after damage looks for
//        4     4  crc    CRC32C (ISA-L's crc32_iscsi) of bytes 8 .. 24 + len
//        8     4  len    the event's bytes
//       12     4  time   unix seconds when the event was published (the oldest event's age)
//       16     8  seq    the event's sequence number: ascends by one, across restarts too
//
// A frame's length is trusted only up to the largest event the queue expects (`max_payload`): a
// damaged length could otherwise claim up to the rest of the segment, which a reader would have to
// read whole before it could tell. A longer frame is checked piece by piece (FrameCheck) before
// anything of it is kept. Lengths of any size are checksummed whole (no int overflow), so segments
// may be of any size.
//
// The state file is 16 bytes, rewritten in place: magic kStateMagic, CRC32C of bytes 8..16, and the
// highest sequence number up to which every event was delivered. A torn or damaged state is told by
// its checksum. Integers are little-endian, the byte order of every host Shipper builds for
// (checked at compile time).
#ifndef SHIPPER_QUEUE_DISK_FORMAT_H_
#define SHIPPER_QUEUE_DISK_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace shipper::queue::internal {

inline constexpr size_t kFrameHeaderBytes = 24;
inline constexpr uint32_t kFrameMagic = 0x31515353;  // "SSQ1" on disk
inline constexpr size_t kStateBytes = 16;
inline constexpr uint32_t kStateMagic = 0x53515353;  // "SSQS" on disk

struct Frame {
  uint64_t seq;
  uint32_t time;
  absl::string_view payload;
};

// What a frame's header says.
struct FrameHeader {
  uint32_t crc;
  uint32_t len;
  uint32_t time;
  uint64_t seq;
};

// REQUIRES: header.size() >= kFrameHeaderBytes.
FrameHeader DecodeFrameHeader(absl::string_view header);

// Checks the checksum of a frame fed in pieces, for a frame too long to hold at once.
class FrameCheck {
 public:
  // REQUIRES: header.size() >= kFrameHeaderBytes.
  explicit FrameCheck(absl::string_view header);
  // The next bytes of the payload.
  void Add(absl::string_view payload);
  // Whether the checksum holds. REQUIRES: all of the payload was added.
  bool Holds() const;

 private:
  uint32_t want_;
  uint32_t crc_;
};

// Writes a frame header with a zero checksum to `out`: SealFrames fills it in later, so that
// publishers only copy bytes under their mutex.
void EncodeFrameHeader(char* out, uint32_t len, uint32_t time, uint64_t seq);
// Fills the checksum of every frame in `frames`: whole encoded frames, back to back.
void SealFrames(char* frames, size_t size);

struct Scanned {
  size_t offset;   // where the scan stopped
  bool oversized;  // there: a header whose length passes max_payload
};

// Scans the frames in `data`, which holds the next data.size() of `file_left` bytes left in the
// file. Calls on_frame(offset, frame) for each valid frame in order; when it returns false the scan
// stops before that frame. Calls on_damage(offset, end) for bytes that are no valid frame: a valid
// frame resumes at `end` (or the data ends there), found by looking for the next magic whose header
// and checksum hold. Returns where the scan stopped: data.size(), a frame on_frame refused, a frame
// (or a resync) that needs bytes past data.size(), which the caller reads on from, or an oversized
// frame header (a length past max_payload, within the file), which the caller checks with
// FrameCheck or takes for a damaged byte. Never needs more than kFrameHeaderBytes + max_payload
// bytes at once. Bytes that are no frame up to the file's end are reported as damage: whether that
// is a torn tail the caller knows.
Scanned ScanFrames(absl::string_view data, uint64_t file_left, uint32_t max_payload,
                   absl::FunctionRef<bool(size_t offset, const Frame& frame)> on_frame,
                   absl::FunctionRef<void(size_t offset, size_t end)> on_damage);

void EncodeState(char* out, uint64_t delivered_seq);
// The delivered sequence number, or nullopt if `data` is no valid state.
std::optional<uint64_t> DecodeState(absl::string_view data);

}  // namespace shipper::queue::internal

#endif  // SHIPPER_QUEUE_DISK_FORMAT_H_
