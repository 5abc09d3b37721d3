// What a PublishRequest must satisfy before its events enter the queue, and how its bytes are
// decoded so that hostile input costs bounded time, memory and stack.
//
// Every refusal is INVALID_ARGUMENT with a message that names the limit's config key (or says
// why the bytes are not a PublishRequest), for the service to return to the client as is.
//
// Thread safety: stateless functions; call from any thread.
#ifndef SHIPPER_SHIPPER_REQUEST_VALIDATION_H_
#define SHIPPER_SHIPPER_REQUEST_VALIDATION_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/messages.pb.h"

namespace shipper {

struct RequestLimits {
  size_t max_events_per_request = 65536;  // shipper.server.max_events_per_request
  size_t max_nesting_depth = 64;          // shipper.server.max_nesting_depth
};

// Decodes a request from its bytes, given in order as `chunks` (a gRPC ByteBuffer's slices, or
// one buffer), and validates it with ValidatePublishRequest. Before decoding, it counts the
// events on the wire and refuses more than max_events_per_request, so that millions of tiny
// events cost no allocation each. Protobuf's parser recurses once per nested message and refuses
// more than its recursion limit (100 by default, which a Struct reaches at about 32 levels,
// before max_nesting_depth's default of 64); this parses with a limit just above what
// max_nesting_depth allows, so validation gives the precise refusal and anything far deeper stops
// the parser early. Truncated or non-protobuf bytes and strings that are not UTF-8 get one
// message that lists these causes.
absl::Status DecodePublishRequest(absl::Span<const absl::string_view> chunks,
                                  const RequestLimits& limits,
                                  elastic::agent::shipper::v1::messages::PublishRequest* request);

// Refuses a request with more events than max_events_per_request or an event whose fields or
// metadata nest Struct/ListValue deeper than max_nesting_depth (the event's fields are level 1).
// Walks values iteratively: no recursion however deep the message.
absl::Status ValidatePublishRequest(
    const elastic::agent::shipper::v1::messages::PublishRequest& request,
    const RequestLimits& limits);

// Protobuf logs an ERROR line for every non-UTF-8 string it parses, and any client can send
// those (DecodePublishRequest refuses them): this routes protobuf's log through glog, keeping one
// such line in 1000 and every other message. Replaces protobuf's process-wide log handler: call
// once, at start.
void RateLimitProtobufUtf8Errors();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_REQUEST_VALIDATION_H_
