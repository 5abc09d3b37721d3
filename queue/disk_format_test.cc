#include "queue/disk_format.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace shipper::queue::internal {
namespace {

// Frames with payloads of the given sizes, sequence numbers from 1, checksums sealed.
std::string Frames(const std::vector<uint32_t>& sizes) {
  std::string out;
  uint64_t seq = 1;
  for (uint32_t size : sizes) {
    char header[kFrameHeaderBytes];
    EncodeFrameHeader(header, size, 1000, seq);
    out.append(header, kFrameHeaderBytes);
    out += std::string(size, static_cast<char>('a' + seq++ % 26));
  }
  SealFrames(out.data(), out.size());
  return out;
}

struct Scan {
  Scanned stop;
  std::vector<std::pair<size_t, uint64_t>> frames;  // offset, seq
  std::vector<std::pair<size_t, size_t>> damage;
};

Scan ScanAll(absl::string_view data, uint64_t file_left, uint32_t max_payload) {
  Scan scan;
  scan.stop = ScanFrames(
      data, file_left, max_payload,
      [&](size_t offset, const Frame& frame) {
        scan.frames.push_back({offset, frame.seq});
        return true;
      },
      [&](size_t offset, size_t end) {
        scan.damage.push_back({offset, end});
      });
  return scan;
}

TEST(DiskFormatTest, FramesWithinTheLimitAreRead) {
  const std::string data = Frames({10, 100, 1000});
  const Scan scan = ScanAll(data, data.size(), 1000);
  EXPECT_EQ(scan.stop.offset, data.size());
  EXPECT_FALSE(scan.stop.oversized);
  ASSERT_EQ(scan.frames.size(), 3);
  EXPECT_EQ(scan.frames[2].first, 2 * kFrameHeaderBytes + 110);
  EXPECT_TRUE(scan.damage.empty());
  // The data ends in the middle of the last frame: the caller reads on from its start.
  const Scan part = ScanAll(absl::string_view(data).substr(0, data.size() - 1), data.size(), 1000);
  EXPECT_EQ(part.stop.offset, 2 * kFrameHeaderBytes + 110);
  EXPECT_FALSE(part.stop.oversized);
}

// A damaged length in a large segment claimed the rest of it: the scan asked for more data until
// it had read up to 2.5 GiB. Past the limit, it stops at the header at once.
TEST(DiskFormatTest, ALengthPastTheLimitIsOversizedNotAReasonToReadMore) {
  std::string data = Frames({10, 10, 10});
  const size_t second = kFrameHeaderBytes + 10;
  const uint32_t claimed = uint32_t{5} << 29;  // 2.5 GiB
  std::memcpy(&data[second + 8], &claimed, sizeof(claimed));
  const uint64_t file_left = uint64_t{3} << 30;  // a 3 GiB segment
  const Scan scan = ScanAll(data, file_left, 1 << 20);
  EXPECT_TRUE(scan.stop.oversized);
  EXPECT_EQ(scan.stop.offset, second);
  EXPECT_EQ(scan.frames.size(), 1);
  // Taken for a damaged byte, the scan goes on to the next frame.
  const Scan after = ScanAll(absl::string_view(data).substr(second + 1), file_left, 1 << 20);
  ASSERT_EQ(after.damage.size(), 1);
  EXPECT_EQ(after.damage[0].second, kFrameHeaderBytes + 10 - 1);
  ASSERT_EQ(after.frames.size(), 1);
  EXPECT_EQ(after.frames[0].second, 3);
  // Within the file but past the data, a resync candidate past the limit stops the scan too.
  std::string junk = "xxxx" + data.substr(second);
  const Scan resync = ScanAll(junk, file_left, 1 << 20);
  EXPECT_TRUE(resync.stop.oversized);
  EXPECT_EQ(resync.stop.offset, 4);
  EXPECT_EQ(resync.damage, (std::vector<std::pair<size_t, size_t>>{{0, 4}}));
}

TEST(DiskFormatTest, FrameCheckTakesTheChecksumInPieces) {
  const std::string data = Frames({1000});
  const absl::string_view payload = absl::string_view(data).substr(kFrameHeaderBytes);
  FrameCheck check(data);
  for (size_t at = 0; at < payload.size(); at += 300) check.Add(payload.substr(at, 300));
  EXPECT_TRUE(check.Holds());
  EXPECT_EQ(DecodeFrameHeader(data).len, 1000);
  EXPECT_EQ(DecodeFrameHeader(data).seq, 1);

  std::string damaged = data;
  damaged[kFrameHeaderBytes + 999] ^= 1;
  FrameCheck bad(damaged);
  bad.Add(absl::string_view(damaged).substr(kFrameHeaderBytes));
  EXPECT_FALSE(bad.Holds());
}

// The edge of the int that ISA-L's CRC call takes: a payload of 2 GiB is checksummed whole, its
// last byte included (a length cast to int left it, and every byte past 2 GiB, unchecked). The
// memory is mapped, never written but for the header and one byte: reading it costs no RAM.
TEST(DiskFormatTest, APayloadOf2GiBIsChecksummedToItsLastByte) {
  const uint32_t len = uint32_t{1} << 31;
  const size_t size = kFrameHeaderBytes + len;
  void* mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  char* frame = static_cast<char*>(mapped);
  EncodeFrameHeader(frame, len, 1000, 7);
  SealFrames(frame, size);
  const absl::string_view data(frame, size);
  Scan scan = ScanAll(data, size, len);
  ASSERT_EQ(scan.frames.size(), 1);
  EXPECT_EQ(scan.frames[0].second, 7);

  frame[size - 1] = 1;
  FrameCheck check(data);
  check.Add(data.substr(kFrameHeaderBytes));
  EXPECT_FALSE(check.Holds());
  uint32_t crc_before;
  std::memcpy(&crc_before, frame + 4, sizeof(crc_before));
  SealFrames(frame, size);
  uint32_t crc_after;
  std::memcpy(&crc_after, frame + 4, sizeof(crc_after));
  EXPECT_NE(crc_after, crc_before) << "the last byte is in the checksum";
  munmap(mapped, size);
}

}  // namespace
}  // namespace shipper::queue::internal
