// Test helper: bodies compressed as OTLP senders compress them, for the tests of what inflates
// them (otlp_gzip.h) on either transport.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_COMPRESS_TESTING_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_COMPRESS_TESTING_H_

#include <zlib.h>

#include <string>

#include "glog/logging.h"

namespace shipper::testing {

// `plain` compressed by zlib at `level`: gzip (window_bits 16 + 15), zlib's deflate (15) or raw
// deflate (-15).
inline std::string Compress(const std::string& plain, int window_bits = 16 + MAX_WBITS,
                            int level = 9) {
  z_stream z{};
  CHECK_EQ(deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, plain.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  CHECK_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace shipper::testing

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_COMPRESS_TESTING_H_
