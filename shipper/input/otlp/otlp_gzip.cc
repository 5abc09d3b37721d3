#include "shipper/input/otlp/otlp_gzip.h"

#include <zlib.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shipper {
namespace {

// The output grows by this much at a time (or what is left of max_bytes).
constexpr size_t kStep = 256 << 10;

// What to answer when the budget has no room for the rest: inflates it into a scratch buffer
// to tell a request that would fit later (UNAVAILABLE) from one too large ever to fit
// (RESOURCE_EXHAUSTED, a gzip bomb among them), at the cost of the CPU gRPC would have spent.
absl::Status Measure(z_stream* z, size_t left, absl::string_view limit_key) {
  unsigned char scratch[16 << 10];
  size_t more = 0;
  for (;;) {
    z->next_out = scratch;
    z->avail_out = sizeof scratch;
    const int rc = inflate(z, Z_NO_FLUSH);
    more += sizeof scratch - z->avail_out;
    if (more > left) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the request inflates to more than ", limit_key));
    }
    if (rc == Z_STREAM_END && z->avail_in == 0) break;
    if (rc == Z_STREAM_END) {
      inflateReset(z);
      continue;
    }
    if (rc != Z_OK) {
      return absl::InvalidArgumentError("the request is not a valid gzip stream");
    }
  }
  return absl::UnavailableError(
      "the memory budget (shipper.queue.mem.bytes) has no room to inflate the request now");
}

}  // namespace

bool LooksLikeGzip(absl::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

absl::Status Gunzip(absl::string_view compressed, size_t max_bytes, absl::string_view limit_key,
                    absl::FunctionRef<bool(size_t)> charge, std::string* out) {
  z_stream z{};
  // 16 + MAX_WBITS: gzip only, never zlib's or raw deflate.
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  const size_t start = out->size();
  absl::Status status;
  for (;;) {
    if (z.avail_out == 0) {
      const size_t inflated = out->size() - start;
      if (inflated >= max_bytes) {
        // Full: one more byte would be one too many.
        unsigned char probe;
        z.next_out = &probe;
        z.avail_out = 1;
        const int rc = inflate(&z, Z_NO_FLUSH);
        if ((rc == Z_STREAM_END || rc == Z_OK || rc == Z_BUF_ERROR) && z.avail_out == 0) {
          status = absl::ResourceExhaustedError(absl::StrCat(
              "the request inflates to more than ", limit_key, " (", max_bytes, " bytes)"));
          break;
        }
        z.avail_out = 0;  // the probe's room is not the output's
        if (rc == Z_STREAM_END && z.avail_in == 0) break;
        if (rc == Z_STREAM_END) {
          inflateReset(&z);
          continue;
        }
        status = absl::InvalidArgumentError(
            absl::StrCat("the gzip stream is damaged: ", z.msg != nullptr ? z.msg : "ends early"));
        break;
      }
      const size_t grow = std::min(kStep, max_bytes - inflated);
      if (!charge(grow)) {
        status = Measure(&z, max_bytes - (out->size() - start), limit_key);
        break;
      }
      const size_t used = out->size();
      out->resize(used + grow);
      z.next_out = reinterpret_cast<Bytef*>(out->data() + used);
      z.avail_out = static_cast<uInt>(grow);
    }
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // another member follows
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && z.avail_out == 0) continue;  // wants room
    status = absl::InvalidArgumentError(
        absl::StrCat("the request is not a valid gzip stream: ",
                     z.msg != nullptr ? z.msg : (z.avail_in == 0 ? "it ends early" : "damaged")));
    break;
  }
  // Unused room goes; its charge stays with the caller, who gives back what it was charged.
  if (status.ok()) out->resize(out->size() - z.avail_out);
  if (!status.ok()) *out = std::string();
  inflateEnd(&z);
  return status;
}

}  // namespace shipper
