#include "queue/disk_recovery.h"

#include <algorithm>
#include <utility>

namespace shipper::queue::internal {

absl::StatusOr<Recovery> Recover(absl::string_view state, absl::Span<const uint64_t> ids,
                                 ScanSegment scan) {
  Recovery r;
  const std::optional<uint64_t> delivered = DecodeState(state);
  if (!delivered) {
    r.rewrite_state = true;
    r.state_lost = !ids.empty() || !state.empty();
  }
  uint64_t last_seq = delivered.value_or(0);
  uint64_t first_seq = 0;                            // of the first undelivered event
  std::vector<std::pair<uint64_t, uint32_t>> marks;  // by sequence number
  for (size_t i = 0; i < ids.size(); ++i) {
    Segment segment{ids[i], 0, 0, 0, 0, 0};
    bool any = false;
    uint64_t valid_end = 0;
    std::vector<std::pair<uint64_t, uint64_t>> damage;
    const absl::StatusOr<uint64_t> size = scan(
        ids[i],
        [&](uint64_t offset, const FrameHeader& frame) {
          valid_end = offset + kFrameHeaderBytes + frame.len;
          r.max_payload = std::max(r.max_payload, frame.len);
          // Not ascending: delivered already, or a stale copy; either way not again.
          if (frame.seq <= last_seq) return;
          if (!any) segment.read_from = offset;
          if (first_seq == 0) first_seq = frame.seq;
          any = true;
          last_seq = frame.seq;
          segment.bytes = valid_end;
          if (marks.empty() || marks.back().second < frame.time) {
            marks.push_back({frame.seq, frame.time});
          }
        },
        [&](uint64_t offset, uint64_t end) {
          if (!damage.empty() && damage.back().second == offset) {
            damage.back().second = end;
          } else {
            damage.push_back({offset, end});
          }
        });
    if (!size.ok()) return size.status();
    uint64_t file_bytes = *size;
    // Bytes after the last frame of the last segment: a frame torn by a crash. Cut, so that the
    // files hold frames only.
    if (i + 1 == ids.size() && !damage.empty() && damage.back().second == *size) {
      r.cut = Recovery::Cut{ids[i], valid_end, *size - valid_end};
      file_bytes = valid_end;
      damage.pop_back();
    }
    for (const auto& [offset, end] : damage) {
      r.damage.push_back({ids[i], offset, end});
      segment.damage_known = end;
    }
    if (!any) {
      // Delivered, or nothing readable: nothing in it will ever be read.
      r.delete_ids.push_back(ids[i]);
      continue;
    }
    segment.last_index = last_seq;  // a sequence number until seq_base is known
    segment.file_bytes = file_bytes;
    r.bytes += file_bytes;
    r.segments.push_back(segment);
  }
  // New events continue the sequence, and their segments' names lie past every existing one.
  r.seq_base = first_seq != 0 ? first_seq - 1 : std::max(last_seq, ids.empty() ? 0 : ids.back());
  r.last_index = first_seq != 0 ? last_seq - r.seq_base : 0;
  for (Segment& s : r.segments) s.last_index -= r.seq_base;
  for (const auto& [seq, time] : marks) r.marks.push_back({seq - r.seq_base, time});
  return r;
}

}  // namespace shipper::queue::internal
