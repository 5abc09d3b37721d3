// A PublishRequest as it arrived: its bytes in one buffer of their own (a ByteBuffer's slices
// end anywhere, also inside an event) and the events the scan found in them
// (request_validation.h). The events point into the buffer, which lives as long as this object.
//
// Thread safety: one thread at a time; const methods from any thread once Take() returned.
#ifndef SHIPPER_SHIPPER_INPUT_PRODUCER_RECEIVED_REQUEST_H_
#define SHIPPER_SHIPPER_INPUT_PRODUCER_RECEIVED_REQUEST_H_

#include <memory>

#include "absl/status/status.h"
#include "grpcpp/support/byte_buffer.h"
#include "shipper/input/producer/request_validation.h"

namespace shipper {

class ReceivedRequest {
 public:
  // Copies the bytes of `received`, so that gRPC's buffer can go before the scan; OK, or
  // RESOURCE_EXHAUSTED naming shipper.server.max_message_size when they are more than
  // limits.max_message_size. Call once.
  absl::Status Take(const grpc::ByteBuffer& received, const RequestLimits& limits);
  // Scans the copied bytes; the status of the scan. REQUIRES: Take() returned OK. Call once.
  absl::Status Scan(const RequestLimits& limits);

  // REQUIRES: Scan() returned OK.
  const ScannedRequest& scanned() const { return scanned_; }

 private:
  std::unique_ptr<char[]> bytes_;
  size_t size_ = 0;
  ScannedRequest scanned_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_PRODUCER_RECEIVED_REQUEST_H_
