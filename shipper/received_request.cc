#include "shipper/received_request.h"

#include <cstring>
#include <vector>

namespace shipper {

absl::Status ReceivedRequest::Take(const grpc::ByteBuffer& received, const RequestLimits& limits) {
  std::vector<grpc::Slice> slices;  // references, not copies
  if (!received.Dump(&slices).ok()) return absl::InvalidArgumentError("request unreadable");
  size_t size = 0;
  for (const grpc::Slice& slice : slices) size += slice.size();
  bytes_.reset(new char[size]);  // not zeroed: every byte is written next
  char* out = bytes_.get();
  for (const grpc::Slice& slice : slices) {
    std::memcpy(out, slice.begin(), slice.size());
    out += slice.size();
  }
  return ScanPublishRequest({bytes_.get(), size}, limits, &scanned_);
}

}  // namespace shipper
