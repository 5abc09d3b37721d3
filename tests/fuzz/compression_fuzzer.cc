// Fuzz target: a compressed body as a sender sends it, through the one decoder of both OTLP
// transports (shipper/codec/compression.h). The first byte picks the coding (gzip, deflate or
// zstd), the rest is the body. Finds crashes and memory errors on hostile input, and checks what
// the decoder promises: it never hands out more than its limit, refuses only with the codes its
// header names, gives back every byte it charged, and what it takes encodes and decodes back to
// itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/memory_budget.h"
#include "shipper/codec/compression.h"

namespace {

constexpr size_t kLimit = 1 << 20;

constexpr shipper::ContentCoding kCodings[] = {
    shipper::ContentCoding::kGzip, shipper::ContentCoding::kDeflate, shipper::ContentCoding::kZstd};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > (1 << 20)) return 0;
  const shipper::ContentCoding coding = kCodings[data[0] % 3];
  const absl::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Room for zstd's state at the smallest window a frame may ask for (8 MiB), not for a larger:
  // a frame asking more must be refused, not allocated.
  shipper::runtime::MemoryBudget budget(16 << 20);
  std::string out;
  absl::Status status;
  {
    shipper::Decoder decoder(coding, kLimit, "limit", &budget);
    // In two pieces, as a body arrives.
    const size_t half = body.size() / 2;
    const auto sink = [&](const char* piece, size_t n) {
      out.append(piece, n);
      return true;
    };
    status = decoder.Feed(body.substr(0, half), sink);
    if (status.ok()) status = decoder.Feed(body.substr(half), sink);
    if (status.ok()) status = decoder.Finish();
    if (out.size() > kLimit) abort();
    if (decoder.decoded() < out.size()) abort();
  }
  if (budget.in_use() != 0) abort();  // the decoder gave back what it charged
  switch (status.code()) {
    case absl::StatusCode::kOk:
      break;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kUnavailable:
      return 0;
    default:
      abort();
  }
  const absl::StatusOr<std::string> encoded = shipper::Encode(coding, out, 1);
  if (!encoded.ok()) abort();
  std::string back;
  const auto charge = [](size_t) { return true; };
  if (!shipper::Decode(coding, *encoded, kLimit, "limit", &budget, charge, &back).ok()) abort();
  if (back != out) abort();
  return 0;
}
