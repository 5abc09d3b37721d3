// How the OTLP output's requests reach the receiver: OTLP/gRPC ({Logs,Trace,Metrics}Service/Export
// through a generic stub's callback API) or OTLP/HTTP (POST to the signal's URL through libcurl's
// multi interface). Both send a
// call's requests concurrently, at most max_in_flight at once, from the calling thread without a
// thread per request, and answer each with its ExportAnswer (otlp_answer.h).
//
// Thread safety: Send() from several threads at once (each call has its own requests in flight);
// Cancel() from any thread: requests in flight end at once (HTTP: within about a second, libcurl's
// progress callback) as failed for now, and later Send() calls fail without sending.
#ifndef SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_TRANSPORT_H_
#define SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_TRANSPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shipper/output/otlp/otlp_answer.h"
#include "shipper/output/otlp/otlp_output_settings.h"

namespace shipper {

// A serialized Export*ServiceRequest of `signal`.
struct ExportRequest {
  OtlpSignal signal;
  std::string body;
};

class OtlpTransport {
 public:
  virtual ~OtlpTransport() = default;

  // Sends each of `requests`, waits for every answer and returns them in the same order. Takes
  // the requests: their bodies go out as they are, without a copy.
  virtual std::vector<ExportAnswer> Send(std::vector<ExportRequest> requests) = 0;
  virtual void Cancel() = 0;
};

// REQUIRES for both: `settings` passed Validate(). Read the PEM files; connect to nothing.
absl::StatusOr<std::unique_ptr<OtlpTransport>> NewGrpcTransport(const OtlpOutputSettings& settings);
absl::StatusOr<std::unique_ptr<OtlpTransport>> NewHttpTransport(const OtlpOutputSettings& settings);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_TRANSPORT_H_
