#include "shipper/input/otlp/otlp_gzip.h"

#include <zlib.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace shipper {
namespace {

// Gunzip's output grows by this much at a time (or what is left of max_bytes).
constexpr size_t kStep = 256 << 10;
// What the inflater writes into at once.
constexpr size_t kOutputBuffer = 16 << 10;

z_stream* Z(void* z) { return static_cast<z_stream*>(z); }

}  // namespace

std::optional<ContentCoding> ParseContentEncoding(absl::string_view header) {
  const std::string coding = absl::AsciiStrToLower(absl::StripAsciiWhitespace(header));
  if (coding.empty() || coding == "identity") return ContentCoding::kIdentity;
  if (coding == "gzip" || coding == "x-gzip") return ContentCoding::kGzip;
  if (coding == "deflate") return ContentCoding::kDeflate;
  return std::nullopt;
}

Inflater::Inflater(ContentCoding coding, size_t max_bytes, absl::string_view limit_key)
    : coding_(coding), max_bytes_(max_bytes), limit_key_(limit_key), z_(new z_stream{}) {}

Inflater::~Inflater() {
  if (started_) inflateEnd(Z(z_));
  delete Z(z_);
}

absl::Status Inflater::Init(int window_bits) {
  if (inflateInit2(Z(z_), window_bits) != Z_OK) return absl::InternalError("inflateInit2 failed");
  started_ = true;
  return absl::OkStatus();
}

absl::Status Inflater::Feed(absl::string_view compressed, Sink sink) {
  if (compressed.empty()) return absl::OkStatus();
  z_stream* z = Z(z_);
  if (!started_) {
    int bits = 16 + MAX_WBITS;  // gzip only
    if (coding_ == ContentCoding::kDeflate) {
      // zlib's header: compression method 8, a window of at most 32 KiB. Else raw deflate.
      const auto first = static_cast<unsigned char>(compressed[0]);
      bits = (first & 0x0f) == 8 && (first >> 4) <= 7 ? MAX_WBITS : -MAX_WBITS;
    }
    if (absl::Status s = Init(bits); !s.ok()) return s;
  }
  z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z->avail_in = static_cast<uInt>(compressed.size());
  unsigned char out[kOutputBuffer];
  for (;;) {
    if (ended_) {
      if (z->avail_in == 0) break;
      if (coding_ != ContentCoding::kGzip) {
        return absl::InvalidArgumentError("data follows the end of the deflate stream");
      }
      inflateReset(z);  // another gzip member follows
      ended_ = false;
    }
    z->next_out = out;
    z->avail_out = sizeof out;
    const int rc = inflate(z, Z_NO_FLUSH);
    const size_t produced = sizeof out - z->avail_out;
    if (produced > 0) {
      inflated_ += produced;
      if (inflated_ > max_bytes_) {
        return absl::ResourceExhaustedError(absl::StrCat("the request inflates to more than ",
                                                         limit_key_, " (", max_bytes_, " bytes)"));
      }
      if (!sink(reinterpret_cast<const char*>(out), produced)) {
        return absl::CancelledError("the sink took no more");
      }
    }
    if (rc == Z_STREAM_END) {
      ended_ = true;
      continue;
    }
    if (rc == Z_BUF_ERROR && produced == 0) break;  // wants more input
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the request is not a valid ", coding_ == ContentCoding::kGzip ? "gzip" : "deflate",
          " stream: ", z->msg != nullptr ? z->msg : "damaged"));
    }
    if (z->avail_in == 0 && z->avail_out != 0) break;  // all input taken, all output out
  }
  return absl::OkStatus();
}

absl::Status Inflater::Finish() {
  if (ended_) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("the request is not a valid ",
                   coding_ == ContentCoding::kGzip ? "gzip" : "deflate", " stream: it ends early"));
}

bool LooksLikeGzip(absl::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

absl::Status Gunzip(absl::string_view compressed, size_t max_bytes, absl::string_view limit_key,
                    absl::FunctionRef<bool(size_t)> charge, std::string* out) {
  Inflater inflater(ContentCoding::kGzip, max_bytes, limit_key);
  const size_t start = out->size();
  size_t charged = 0;
  bool no_room = false;
  absl::Status status = inflater.Feed(compressed, [&](const char* data, size_t size) {
    if (no_room) return true;  // inflated only to be measured
    const size_t need = out->size() - start + size;
    if (need > charged) {
      const size_t grow = std::min(std::max(kStep, need - charged), max_bytes - charged);
      if (!charge(grow)) {
        // The rest is inflated only to tell a request that would fit once there is room
        // (UNAVAILABLE) from one too large ever to fit (RESOURCE_EXHAUSTED, a bomb among them).
        no_room = true;
        return true;
      }
      charged += grow;
      out->reserve(start + charged);
    }
    out->append(data, size);
    return true;
  });
  if (status.ok()) status = inflater.Finish();
  if (status.ok() && no_room) {
    status = absl::UnavailableError(
        "the memory budget (shipper.queue.mem.bytes) has no room to inflate the request now");
  }
  if (!status.ok()) *out = std::string();
  return status;
}

}  // namespace shipper
