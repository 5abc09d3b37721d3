// What an OTLP receiver's answer to one export request means for its records: the rules of the
// OTLP specification (docs/specification.md, "Failures" and "Throttling") in one place, for gRPC
// and HTTP alike.
//
//   gRPC OK, HTTP 2xx                        written; partial_success.rejected_log_records
//                                            (_spans, _data_points) counted (the receiver does not
//                                            say which)
//   gRPC UNAVAILABLE, DEADLINE_EXCEEDED,     failed for now: retried with backoff
//   ABORTED, OUT_OF_RANGE, DATA_LOSS,
//   CANCELLED, RESOURCE_EXHAUSTED with
//   RetryInfo; HTTP 429, 502, 503, 504; no
//   answer (connection refused or cut, timeout)
//   gRPC RESOURCE_EXHAUSTED without          too large: split in halves and sent again; a
//   RetryInfo; HTTP 413                      single record refused for good
//   gRPC INVALID_ARGUMENT, HTTP 400          refused for what it holds: halves sent again, so
//                                            that only the records at fault (alone refused) are
//                                            dead letters
//   anything else (401, 403, 404, 500,       refused for good: dead letters, with the receiver's
//   UNAUTHENTICATED, UNIMPLEMENTED ...)      message
// A delay the receiver asks for (RetryInfo's retry_delay, Retry-After) is read, capped at
// kMaxRetryDelay.
//
// Thread safety: stateless functions; call from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_ANSWER_H_
#define SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_ANSWER_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace shipper {

inline constexpr absl::Duration kMaxRetryDelay = absl::Seconds(30);

struct ExportAnswer {
  enum Verdict { kWritten, kRetry, kTooLarge, kInvalid, kRefused };
  Verdict verdict = kRetry;
  std::string status;            // for the requests metric: "OK", "UNAVAILABLE", "200", "none"
  std::string message;           // what the receiver said, or why there was no answer
  int64_t rejected = 0;          // partial_success.rejected_{log_records,spans,data_points}
  std::string rejected_message;  // partial_success.error_message
  absl::Duration retry_delay;    // asked for by the receiver, capped; zero: none
};

// A gRPC call's end: its status code (grpc::StatusCode), message, binary error details (a
// serialized google.rpc.Status) and, when OK, the serialized Export*ServiceResponse.
ExportAnswer GrpcAnswer(int code, absl::string_view message, absl::string_view details,
                        absl::string_view response);

// An HTTP request's end: the status (0: no answer, `error` says why), the answer's Content-Type,
// Retry-After and body (an Export*ServiceResponse or a google.rpc.Status, protobuf or JSON).
ExportAnswer HttpAnswer(long status, absl::string_view error, absl::string_view content_type,
                        absl::string_view retry_after, absl::string_view body);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_ANSWER_H_
