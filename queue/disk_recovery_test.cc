#include "queue/disk_recovery.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "queue/disk_format.h"

namespace shipper::queue::internal {
namespace {

constexpr uint32_t kPayload = 10;
constexpr uint64_t kFrame = kFrameHeaderBytes + kPayload;

// The frames of sequence numbers first..last, published at `time`.
std::string Frames(uint64_t first, uint64_t last, uint32_t time = 1000) {
  std::string out;
  for (uint64_t seq = first; seq <= last; ++seq) {
    char header[kFrameHeaderBytes];
    EncodeFrameHeader(header, kPayload, time, seq);
    out.append(header, kFrameHeaderBytes);
    out += absl::StrFormat("event %04d", seq);
  }
  SealFrames(out.data(), out.size());
  return out;
}

std::string State(uint64_t delivered_seq) {
  char state[kStateBytes];
  EncodeState(state, delivered_seq);
  return std::string(state, kStateBytes);
}

// A queue's directory in memory: each segment's bytes by id; an error for one that cannot be
// read.
using Segments = std::map<uint64_t, absl::StatusOr<std::string>>;

// Recovers from `state` and `segments`, scanning each whole.
absl::StatusOr<Recovery> TryRecoverFrom(const std::string& state, const Segments& segments) {
  std::vector<uint64_t> ids;
  for (const auto& [id, bytes] : segments) ids.push_back(id);
  return Recover(
      state, ids, [&](uint64_t id, auto on_frame, auto on_damage) -> absl::StatusOr<uint64_t> {
        const absl::StatusOr<std::string>& bytes = segments.at(id);
        if (!bytes.ok()) return bytes.status();
        ScanFrames(
            *bytes, bytes->size(), kPayload,
            [&](size_t offset, const Frame& frame) {
              on_frame(offset, FrameHeader{0, static_cast<uint32_t>(frame.payload.size()),
                                           frame.time, frame.seq});
              return true;
            },
            [&](size_t offset, size_t end) { on_damage(offset, end); });
        return bytes->size();
      });
}

Recovery RecoverFrom(const std::string& state, const Segments& segments) {
  absl::StatusOr<Recovery> r = TryRecoverFrom(state, segments);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : Recovery();
}

TEST(DiskRecoveryTest, ANewDirectoryHoldsNothingAndGetsAState) {
  const Recovery r = RecoverFrom("", {});
  EXPECT_EQ(r.seq_base, 0);
  EXPECT_EQ(r.last_index, 0);
  EXPECT_TRUE(r.segments.empty());
  EXPECT_TRUE(r.rewrite_state);
  EXPECT_FALSE(r.state_lost);  // nothing to warn about
  EXPECT_FALSE(r.cut);
  EXPECT_TRUE(r.damage.empty());
  EXPECT_TRUE(r.delete_ids.empty());
}

TEST(DiskRecoveryTest, EventsAfterTheDeliveredOneGetIndexesFromOne) {
  const Recovery r = RecoverFrom(State(3), {{1, Frames(1, 5)}, {6, Frames(6, 10)}});
  EXPECT_EQ(r.seq_base, 3);
  EXPECT_EQ(r.last_index, 7);
  ASSERT_EQ(r.segments.size(), 2);
  EXPECT_EQ(r.segments[0].id, 1);
  EXPECT_EQ(r.segments[0].read_from, 3 * kFrame);  // past the delivered frames
  EXPECT_EQ(r.segments[0].bytes, 5 * kFrame);
  EXPECT_EQ(r.segments[0].last_index, 2);
  EXPECT_EQ(r.segments[1].id, 6);
  EXPECT_EQ(r.segments[1].read_from, 0);
  EXPECT_EQ(r.segments[1].last_index, 7);
  EXPECT_EQ(r.bytes, 10 * kFrame);
  EXPECT_EQ(r.max_payload, kPayload);
  EXPECT_FALSE(r.rewrite_state);
  EXPECT_TRUE(r.delete_ids.empty());
}

TEST(DiskRecoveryTest, DeliveredSegmentsAreSkippedAndDeleted) {
  const Recovery r =
      RecoverFrom(State(10), {{1, Frames(1, 5)}, {6, Frames(6, 10)}, {11, Frames(11, 15)}});
  EXPECT_EQ(r.delete_ids, (std::vector<uint64_t>{1, 6}));
  ASSERT_EQ(r.segments.size(), 1);
  EXPECT_EQ(r.segments[0].id, 11);
  EXPECT_EQ(r.segments[0].read_from, 0);
  EXPECT_EQ(r.segments[0].last_index, 5);
  EXPECT_EQ(r.seq_base, 10);
  EXPECT_EQ(r.last_index, 5);
  EXPECT_EQ(r.bytes, 5 * kFrame);  // deleted segments count no more
}

TEST(DiskRecoveryTest, WithEverythingDeliveredNewEventsContinuePastEverySegment) {
  Recovery r = RecoverFrom(State(5), {{1, Frames(1, 5)}});
  EXPECT_EQ(r.delete_ids, std::vector<uint64_t>{1});
  EXPECT_TRUE(r.segments.empty());
  EXPECT_EQ(r.last_index, 0);
  EXPECT_EQ(r.seq_base, 5);
  // A segment named past its frames (its writer started it with that number): new segments'
  // names must still sort after it.
  r = RecoverFrom(State(5), {{20, Frames(1, 5)}});
  EXPECT_EQ(r.seq_base, 20);
}

TEST(DiskRecoveryTest, StaleFramesAreNotDeliveredAgain) {
  // The second segment repeats 4 and 5 before going on.
  const Recovery r = RecoverFrom(State(0), {{1, Frames(1, 5)}, {4, Frames(4, 7)}});
  EXPECT_EQ(r.last_index, 7);
  ASSERT_EQ(r.segments.size(), 2);
  EXPECT_EQ(r.segments[1].read_from, 2 * kFrame);
  EXPECT_EQ(r.segments[1].last_index, 7);
}

TEST(DiskRecoveryTest, TornTailIsCutAndNotCountedAsDamage) {
  const std::string torn = Frames(1, 5) + Frames(6, 6).substr(0, 30);
  const Recovery r = RecoverFrom(State(0), {{1, torn}});
  ASSERT_TRUE(r.cut);
  EXPECT_EQ(r.cut->id, 1);
  EXPECT_EQ(r.cut->size, 5 * kFrame);
  EXPECT_EQ(r.cut->torn, 30);
  EXPECT_TRUE(r.damage.empty());
  EXPECT_EQ(r.last_index, 5);
  ASSERT_EQ(r.segments.size(), 1);
  EXPECT_EQ(r.segments[0].bytes, 5 * kFrame);
  EXPECT_EQ(r.bytes, 5 * kFrame);  // as cut
}

TEST(DiskRecoveryTest, OnlyTheLastSegmentHasATornTail) {
  // Bytes after the last frame of an earlier segment were there when later ones were written.
  const std::string tail = Frames(6, 6).substr(0, 30);
  const Recovery r = RecoverFrom(State(0), {{1, Frames(1, 5) + tail}, {7, Frames(7, 8)}});
  EXPECT_FALSE(r.cut);
  ASSERT_EQ(r.damage.size(), 1);
  EXPECT_EQ(r.damage[0].id, 1);
  EXPECT_EQ(r.damage[0].offset, 5 * kFrame);
  EXPECT_EQ(r.damage[0].end, 5 * kFrame + 30);
  EXPECT_EQ(r.segments[0].damage_known, 5 * kFrame + 30);
  EXPECT_EQ(r.bytes, 7 * kFrame + 30);  // the file, as it stays
  // What deleting each segment frees, as recovery counted it.
  ASSERT_EQ(r.segments.size(), 2);
  EXPECT_EQ(r.segments[0].bytes, 5 * kFrame);
  EXPECT_EQ(r.segments[0].file_bytes, 5 * kFrame + 30);
  EXPECT_EQ(r.segments[1].file_bytes, 2 * kFrame);
}

TEST(DiskRecoveryTest, DamagedFrameMidSegmentCostsOnlyItself) {
  std::string bytes = Frames(1, 10);
  bytes[3 * kFrame + kFrameHeaderBytes + 2] ^= 0x5a;  // the payload of the fourth frame
  const Recovery r = RecoverFrom(State(0), {{1, bytes}});
  ASSERT_EQ(r.damage.size(), 1);
  EXPECT_EQ(r.damage[0].id, 1);
  EXPECT_EQ(r.damage[0].offset, 3 * kFrame);
  EXPECT_EQ(r.damage[0].end, 4 * kFrame);
  EXPECT_FALSE(r.cut);
  // The lost frame's index stays in the range: the reader steps over the gap.
  EXPECT_EQ(r.seq_base, 0);
  EXPECT_EQ(r.last_index, 10);
  ASSERT_EQ(r.segments.size(), 1);
  EXPECT_EQ(r.segments[0].bytes, 10 * kFrame);
  EXPECT_EQ(r.segments[0].damage_known, 4 * kFrame);  // the reader does not report it again
}

TEST(DiskRecoveryTest, DamageReportedInPiecesIsOneRun) {
  const std::string bytes = Frames(1, 3);
  const std::vector<uint64_t> ids = {1};
  const absl::StatusOr<Recovery> r =
      Recover(State(0), ids, [&](uint64_t, auto on_frame, auto on_damage) {
        on_damage(0, 10);  // a read that ended in the middle of the damage, and the next one
        on_damage(10, kFrame);
        on_frame(kFrame, FrameHeader{0, kPayload, 1000, 2});
        return absl::StatusOr<uint64_t>(2 * kFrame);
      });
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->damage.size(), 1);
  EXPECT_EQ(r->damage[0].offset, 0);
  EXPECT_EQ(r->damage[0].end, kFrame);
}

TEST(DiskRecoveryTest, MissingOrDamagedStateDeliversEverythingAgain) {
  std::string damaged = State(5);
  damaged[9] ^= 0x5a;
  for (const std::string& state : {std::string(""), damaged, State(5).substr(0, 7)}) {
    SCOPED_TRACE(absl::StrFormat("%d bytes", state.size()));
    const Recovery r = RecoverFrom(state, {{1, Frames(1, 5)}, {6, Frames(6, 10)}});
    EXPECT_TRUE(r.rewrite_state);
    EXPECT_TRUE(r.state_lost);
    EXPECT_EQ(r.seq_base, 0);
    EXPECT_EQ(r.last_index, 10);
    ASSERT_EQ(r.segments.size(), 2);
    EXPECT_EQ(r.segments[0].read_from, 0);
    EXPECT_TRUE(r.delete_ids.empty());
  }
}

TEST(DiskRecoveryTest, ASegmentThatCannotBeReadStopsRecovery) {
  // Passed by, its events would look delivered next time: 11 and on count from seq_base 10.
  const absl::Status eio = absl::UnavailableError("read /q/6.seg: Input/output error");
  const absl::StatusOr<Recovery> r =
      TryRecoverFrom(State(5), {{1, Frames(1, 5)}, {6, eio}, {11, Frames(11, 15)}});
  EXPECT_EQ(r.status(), eio);
}

TEST(DiskRecoveryTest, MarksKeepTheFirstIndexOfEachSecond) {
  const Recovery r =
      RecoverFrom(State(2), {{1, Frames(1, 4, 100) + Frames(5, 5, 101)}, {6, Frames(6, 7, 103)}});
  ASSERT_EQ(r.marks.size(), 3);
  EXPECT_EQ(r.marks[0].index, 1);  // sequence number 3: the first undelivered
  EXPECT_EQ(r.marks[0].time, 100);
  EXPECT_EQ(r.marks[1].index, 3);
  EXPECT_EQ(r.marks[1].time, 101);
  EXPECT_EQ(r.marks[2].index, 4);
  EXPECT_EQ(r.marks[2].time, 103);
}

}  // namespace
}  // namespace shipper::queue::internal
