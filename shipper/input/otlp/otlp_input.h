// The OTLP input: the exports (otlp_exports.h) and the transports that feed them, each serving
// on a listener of its own: OTLP/gRPC on shipper.otlp.grpc.server, OTLP/HTTP on
// shipper.otlp.http.server, whichever are enabled.
//
// Thread safety: as Input (shipper/input/input.h).
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_INPUT_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_INPUT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "shipper/input/input.h"
#include "shipper/input/otlp/otlp_settings.h"

namespace shipper {

// REQUIRES: settings.Validate() and Preflight() found no problem.
absl::StatusOr<std::unique_ptr<Input>> BuildOtlpInput(const OtlpSettings& settings,
                                                      const InputContext& context);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_INPUT_H_
