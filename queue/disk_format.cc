#include "queue/disk_format.h"

#include <algorithm>
#include <cstring>

#include "isa-l/crc.h"

namespace shipper::queue::internal {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the formats are little-endian");

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <typename T>
void Store(char* p, T v) {
  std::memcpy(p, &v, sizeof(v));
}

constexpr uint32_t kCrcInit = 0xFFFFFFFF;

// Extends `crc` over `size` bytes. crc32_iscsi takes an int length: a frame's may be more.
uint32_t ExtendCrc(uint32_t crc, const char* data, uint64_t size) {
  constexpr uint64_t kPiece = uint64_t{1} << 30;
  for (;;) {
    const uint64_t n = std::min(size, kPiece);
    crc = crc32_iscsi(reinterpret_cast<unsigned char*>(const_cast<char*>(data)),
                      static_cast<int>(n), crc);
    if (n == size) return crc;
    data += n;
    size -= n;
  }
}

uint32_t Crc32c(const char* data, uint64_t size) { return ExtendCrc(kCrcInit, data, size); }

enum class Check { kValid, kInvalid, kNeedMore, kOversized };

// Whether a valid frame starts at `data[offset]`.
Check CheckFrame(absl::string_view data, uint64_t file_left, uint32_t max_payload, size_t offset,
                 Frame* frame) {
  const size_t have = data.size() - offset;
  const uint64_t left = file_left - offset;
  if (left < kFrameHeaderBytes) return Check::kInvalid;
  if (have < kFrameHeaderBytes) return Check::kNeedMore;
  const char* p = data.data() + offset;
  if (Load<uint32_t>(p) != kFrameMagic) return Check::kInvalid;
  const uint32_t len = Load<uint32_t>(p + 8);
  if (kFrameHeaderBytes + uint64_t{len} > left) return Check::kInvalid;
  if (len > max_payload) return Check::kOversized;
  if (kFrameHeaderBytes + uint64_t{len} > have) return Check::kNeedMore;
  if (Crc32c(p + 8, kFrameHeaderBytes - 8 + len) != Load<uint32_t>(p + 4)) return Check::kInvalid;
  frame->time = Load<uint32_t>(p + 12);
  frame->seq = Load<uint64_t>(p + 16);
  frame->payload = absl::string_view(p + kFrameHeaderBytes, len);
  return Check::kValid;
}

}  // namespace

void EncodeFrameHeader(char* out, uint32_t len, uint32_t time, uint64_t seq) {
  Store<uint32_t>(out, kFrameMagic);
  Store<uint32_t>(out + 4, 0);
  Store<uint32_t>(out + 8, len);
  Store<uint32_t>(out + 12, time);
  Store<uint64_t>(out + 16, seq);
}

FrameHeader DecodeFrameHeader(absl::string_view header) {
  const char* p = header.data();
  return {Load<uint32_t>(p + 4), Load<uint32_t>(p + 8), Load<uint32_t>(p + 12),
          Load<uint64_t>(p + 16)};
}

FrameCheck::FrameCheck(absl::string_view header)
    : want_(Load<uint32_t>(header.data() + 4)),
      crc_(Crc32c(header.data() + 8, kFrameHeaderBytes - 8)) {}

void FrameCheck::Add(absl::string_view payload) {
  crc_ = ExtendCrc(crc_, payload.data(), payload.size());
}

bool FrameCheck::Holds() const { return crc_ == want_; }

void SealFrames(char* frames, size_t size) {
  for (size_t at = 0; at < size;) {
    const uint32_t len = Load<uint32_t>(frames + at + 8);
    Store<uint32_t>(frames + at + 4, Crc32c(frames + at + 8, kFrameHeaderBytes - 8 + len));
    at += kFrameHeaderBytes + len;
  }
}

Scanned ScanFrames(absl::string_view data, uint64_t file_left, uint32_t max_payload,
                   absl::FunctionRef<bool(size_t offset, const Frame& frame)> on_frame,
                   absl::FunctionRef<void(size_t offset, size_t end)> on_damage) {
  size_t at = 0;
  Frame frame;
  while (at < data.size()) {
    switch (CheckFrame(data, file_left, max_payload, at, &frame)) {
      case Check::kValid:
        if (!on_frame(at, frame)) return {at, false};
        at += kFrameHeaderBytes + frame.payload.size();
        continue;
      case Check::kNeedMore:
        return {at, false};
      case Check::kOversized:
        return {at, true};
      case Check::kInvalid:
        break;
    }
    // Resync: the next offset holding the magic and a frame whose checksum holds.
    const char magic[4] = {'S', 'S', 'Q', '1'};
    size_t next = at + 1;
    for (;;) {
      const void* hit = next < data.size()
                            ? memmem(data.data() + next, data.size() - next, magic, sizeof(magic))
                            : nullptr;
      if (hit == nullptr) {
        // A magic may straddle the end of the data; only the file's end ends the damage.
        if (data.size() == file_left)
          next = data.size();
        else
          next = std::max(at, data.size() - std::min(data.size(), sizeof(magic) - 1));
        break;
      }
      next = static_cast<const char*>(hit) - data.data();
      const Check check = CheckFrame(data, file_left, max_payload, next, &frame);
      if (check != Check::kInvalid) break;
      ++next;
    }
    if (next > at) on_damage(at, next);
    if (next == at) return {at, false};
    at = next;
  }
  return {at, false};
}

void EncodeState(char* out, uint64_t delivered_seq) {
  Store<uint32_t>(out, kStateMagic);
  Store<uint64_t>(out + 8, delivered_seq);
  Store<uint32_t>(out + 4, Crc32c(out + 8, kStateBytes - 8));
}

std::optional<uint64_t> DecodeState(absl::string_view data) {
  if (data.size() != kStateBytes || Load<uint32_t>(data.data()) != kStateMagic ||
      Load<uint32_t>(data.data() + 4) != Crc32c(data.data() + 8, kStateBytes - 8)) {
    return std::nullopt;
  }
  return Load<uint64_t>(data.data() + 8);
}

}  // namespace shipper::queue::internal
