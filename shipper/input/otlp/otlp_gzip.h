// Inflating a gzip request body (gRPC's grpc-encoding: gzip, HTTP's Content-Encoding: gzip)
// without trusting it: the output is bounded, so that a small gzip bomb costs at most the limit,
// and every byte it grows by is charged before it is made.
//
// Thread safety: stateless; call from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_GZIP_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_GZIP_H_

#include <cstddef>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shipper {

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
