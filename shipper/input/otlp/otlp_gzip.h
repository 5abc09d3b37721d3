// Inflating a gzip request body (gRPC's grpc-encoding: gzip, HTTP's Content-Encoding: gzip)
// without trusting it: the output is bounded, so that a small gzip bomb costs at most the limit,
// and every byte it grows by is charged before it is made.
//
// Thread safety: stateless; call from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_GZIP_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_GZIP_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shipper {

// The Content-Encodings of OTLP/HTTP bodies Shipper takes (gRPC's grpc-encoding gzip is gRPC's
// to inflate). The Collector's otlphttp exporter offers zstd too: not taken here (415) until a
// zstd library is among Shipper's packages.
enum class ContentCoding { kIdentity, kGzip, kDeflate };

// The coding a Content-Encoding header names (absent or empty: identity), case-insensitively;
// nullopt for any other, or for more than one coding.
std::optional<ContentCoding> ParseContentEncoding(absl::string_view header);

// Inflates one compressed body as it arrives, in pieces, into a sink, without trusting it: it
// stops once the output passes a limit, so that a small bomb costs at most the limit and the
// CPU to find it. The one inflater of both transports (Gunzip below is made of it).
class Inflater {
 public:
  // Called with each piece of output (a view of the inflater's own buffer, until it returns);
  // false stops the inflating.
  using Sink = absl::FunctionRef<bool(const char* data, size_t size)>;

  // `coding` gzip (RFC 1952, one member or several one after the other) or deflate (RFC 9110:
  // zlib's format, RFC 1950; a raw deflate stream is taken too, as browsers and curl do).
  // Output beyond `max_bytes` is RESOURCE_EXHAUSTED naming `limit_key`.
  Inflater(ContentCoding coding, size_t max_bytes, absl::string_view limit_key);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Inflates `compressed`, the next bytes of the body, into `sink`. RESOURCE_EXHAUSTED once the
  // output passes max_bytes; INVALID_ARGUMENT when it is damaged or data follows its end;
  // CANCELLED when the sink returned false. After an error, call nothing but the destructor.
  absl::Status Feed(absl::string_view compressed, Sink sink);
  // After the last Feed(): INVALID_ARGUMENT when the stream ended early.
  absl::Status Finish();

  size_t inflated() const { return inflated_; }

 private:
  absl::Status Init(int window_bits);

  const ContentCoding coding_;
  const size_t max_bytes_;
  const std::string limit_key_;
  void* z_ = nullptr;     // z_stream, out of the header
  bool ended_ = false;    // the last member ended, no byte after it yet
  bool started_ = false;  // the first bytes were seen (deflate decides zlib or raw on them)
  size_t inflated_ = 0;
};

// Whether `bytes` start as a gzip stream does (RFC 1952: 1f 8b). No protobuf message starts so:
// 0x1f is field 3 with wire type 7, which does not exist.
bool LooksLikeGzip(absl::string_view bytes);

// Inflates the gzip stream `compressed` (one member, or several one after the other) into `out`
// (appended to). RESOURCE_EXHAUSTED naming `limit_key` when it inflates to more than `max_bytes`
// (it stops there); INVALID_ARGUMENT when it is not gzip, is damaged or ends early.
// `charge(n)` is called before `out` grows by n bytes; when it returns false, the rest is
// inflated into a small scratch buffer to tell UNAVAILABLE (it would fit once there is room)
// from RESOURCE_EXHAUSTED (too large ever to fit). What was charged is the caller's to give back:
// the sum of the n it was called with. On an error `out` is emptied.
absl::Status Gunzip(absl::string_view compressed, size_t max_bytes, absl::string_view limit_key,
                    absl::FunctionRef<bool(size_t)> charge, std::string* out);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_GZIP_H_
