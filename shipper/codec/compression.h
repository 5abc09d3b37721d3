// The one compression library of Shipper: decoding what senders compressed (OTLP/gRPC's gzip,
// OTLP/HTTP's Content-Encoding gzip, deflate and zstd) without trusting it, and encoding what
// Shipper sends (the OTLP output's and the Elasticsearch output's gzip).
//
// Decoding is bounded and charged: the output stops once it passes a limit, so that a small bomb
// costs at most the limit and the CPU to find it; what the output grows by is charged by the
// caller (Decode below, or the sink of a Decoder) before it is made, and zstd's state, whose size
// the sender's frame chooses (its window, up to 128 MiB), is charged to a memory budget before it
// is allocated. zlib's state is fixed (about 45 KiB) and not charged, like a connection's buffers:
// so a body compressed with gzip or deflate needs the room of the same body sent plain.
//
// Thread safety: the functions are stateless (call from any thread); one thread uses a Decoder or
// an Encoder at a time.
#ifndef SHIPPER_SHIPPER_CODEC_COMPRESSION_H_
#define SHIPPER_SHIPPER_CODEC_COMPRESSION_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/memory_budget.h"

namespace shipper {

// The codings Shipper decodes and encodes, as HTTP's Content-Encoding names them.
//   gzip     RFC 1952: one member, or several one after the other
//   deflate  RFC 9110: zlib's format (RFC 1950); a raw deflate stream is decoded too, as browsers
//            and curl send it
//   zstd     RFC 8878: one frame, or several one after the other
enum class ContentCoding { kIdentity, kGzip, kDeflate, kZstd };

// The coding a Content-Encoding header names (absent or empty: identity), case-insensitively;
// nullopt for any other, or for more than one coding.
std::optional<ContentCoding> ParseContentEncoding(absl::string_view header);

// Whether `bytes` start as a gzip stream does (RFC 1952: 1f 8b). No protobuf message starts so:
// 0x1f is field 3 with wire type 7, which does not exist.
bool LooksLikeGzip(absl::string_view bytes);

// Decodes one compressed body as it arrives, in pieces, into a sink.
class Decoder {
 public:
  // Called with each piece of output (a view of the decoder's own buffer, until it returns);
  // false stops the decoding.
  using Sink = absl::FunctionRef<bool(const char* data, size_t size)>;

  // Output beyond `max_bytes` is RESOURCE_EXHAUSTED naming `limit_key`. A zstd frame may ask for
  // a window as large as a body of max_bytes needs (at least 8 MiB, what zstd's level 19 and the
  // Go encoder ask for, at most 128 MiB); a larger one is INVALID_ARGUMENT naming `limit_key`.
  // zstd's state is charged to `budget` before it is allocated and given back by the destructor.
  // REQUIRES: `coding` is not identity; `budget` outlives the decoder.
  Decoder(ContentCoding coding, size_t max_bytes, absl::string_view limit_key,
          runtime::MemoryBudget* budget);
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Decodes `compressed`, the next bytes of the body, into `sink`. RESOURCE_EXHAUSTED as above;
  // UNAVAILABLE when the budget has no room for zstd's state now; INVALID_ARGUMENT when
  // the body is damaged or data follows its end; CANCELLED when the sink returned false. After an
  // error, call nothing but the destructor.
  absl::Status Feed(absl::string_view compressed, Sink sink);
  // After the last Feed(): INVALID_ARGUMENT when the body ended early.
  absl::Status Finish();

  // The output so far.
  size_t decoded() const;

  class Codec;  // a coding's library, behind Feed() and Finish()

 private:
  std::unique_ptr<Codec> codec_;
};

// Decodes the whole body `compressed` into `out` (appended to), as Decoder does. `charge(n)` is
// called before `out` grows by n bytes; when it returns false, the rest is decoded into a small
// scratch buffer to tell UNAVAILABLE (it would fit once there is room) from RESOURCE_EXHAUSTED
// (too large ever to fit). What was charged is the caller's to give back: the sum of the n it was
// called with. On an error `out` is emptied. REQUIRES: `coding` is not identity.
absl::Status Decode(ContentCoding coding, absl::string_view compressed, size_t max_bytes,
                    absl::string_view limit_key, runtime::MemoryBudget* budget,
                    absl::FunctionRef<bool(size_t)> charge, std::string* out);

// Pieces compressed as they are added into one body: one gzip member (a header, the deflate
// stream, a trailer), one zlib stream, or one zstd frame. The output grows in steps as it is
// written, never sized for the worst case up front.
class Encoder {
 public:
  // `level`: gzip and deflate 0-9 (0 stores), zstd 1-19. REQUIRES: `coding` is not identity and
  // `level` is within its range.
  Encoder(ContentCoding coding, int level);
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  void Add(absl::string_view piece);
  // The compressed body; INTERNAL if the library failed. Call once, after the last Add().
  absl::StatusOr<std::string> Finish();

  class Codec;

 private:
  const ContentCoding coding_;
  std::unique_ptr<Codec> codec_;
};

// `plain` encoded in one body, as an Encoder with one Add().
absl::StatusOr<std::string> Encode(ContentCoding coding, absl::string_view plain, int level);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CODEC_COMPRESSION_H_
