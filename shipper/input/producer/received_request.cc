#include "shipper/input/producer/received_request.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace shipper {

absl::Status ReceivedRequest::Take(const grpc::ByteBuffer& received, const RequestLimits& limits) {
  if (received.Length() > limits.max_message_size) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "request of ", received.Length(), " bytes is larger than shipper.server.max_message_size (",
        limits.max_message_size, " bytes): send fewer events per request"));
  }
  std::vector<grpc::Slice> slices;  // references, not copies
  if (!received.Dump(&slices).ok()) return absl::InvalidArgumentError("request unreadable");
  size_t size = 0;
  for (const grpc::Slice& slice : slices) size += slice.size();
  bytes_.reset(new char[size]);  // not zeroed: every byte is written next
  size_ = size;
  char* out = bytes_.get();
  for (const grpc::Slice& slice : slices) {
    std::memcpy(out, slice.begin(), slice.size());
    out += slice.size();
  }
  return absl::OkStatus();
}

absl::Status ReceivedRequest::Scan(const RequestLimits& limits) {
  return ScanPublishRequest({bytes_.get(), size_}, limits, &scanned_);
}

}  // namespace shipper
