// What a PublishRequest must satisfy before its events enter the queue, checked on its wire
// bytes without decoding them into messages (see wire_event.h), so that hostile input costs
// bounded time, memory and stack.
//
// Every refusal is INVALID_ARGUMENT with a message that names the limit's config key (or says
// why the bytes are not a PublishRequest), for the service to return to the client as is.
//
// Thread safety: stateless functions; call from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_PRODUCER_REQUEST_VALIDATION_H_
#define SHIPPER_SHIPPER_INPUT_PRODUCER_REQUEST_VALIDATION_H_

#include <cstddef>
#include <list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shipper {

struct RequestLimits {
  size_t max_message_size = 64 << 20;     // shipper.server.max_message_size: bytes as sent
  size_t max_events_per_request = 65536;  // shipper.server.max_events_per_request
  size_t max_nesting_depth = 64;          // shipper.server.max_nesting_depth (config: <= 1000)
  // shipper.strict_mode: every event needs a timestamp, a source with an input_id and a
  // data_stream with type, dataset and namespace (the archived Go shipper's rule and words).
  bool strict_mode = false;
};

// A request's events, each as the wire bytes of one Event in canonical form (wire_event.h).
struct ScannedRequest {
  absl::string_view uuid;                 // the last uuid field, as protobuf would keep
  std::vector<absl::string_view> events;  // into the scanned bytes, or into `rewritten`
  // Events that were valid but not canonical (a repeated singular field, a Value with two
  // kinds, a Struct key twice: what no ordinary client sends), decoded by protobuf and
  // encoded anew so that they mean exactly what protobuf makes of them. A list: its elements
  // never move, and an empty one allocates nothing (a deque does, per request).
  std::list<std::string> rewritten;
};

// Scans the serialized PublishRequest `bytes`: refuses more events than max_events_per_request
// (counted without reading them), bytes that are not a PublishRequest (truncated, malformed), a
// string or map key that is not UTF-8, and fields or metadata nesting Struct/ListValue deeper
// than max_nesting_depth (the event's fields are level 1), and with strict_mode an event missing
// what that mode requires (the message names the event's position); it recurses a few frames per
// level of nesting, so the depth allowed bounds its stack. On success `out` holds views into
// `bytes`, which must outlive them. `out` must be empty.
absl::Status ScanPublishRequest(absl::string_view bytes, const RequestLimits& limits,
                                ScannedRequest* out);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_PRODUCER_REQUEST_VALIDATION_H_
