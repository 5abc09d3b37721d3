// The JSON document of an event, as every output writes it.
//
// One object per event: the event's `fields` at the top level, then `@timestamp` (RFC 3339, UTC,
// nanoseconds), `data_stream` {type, dataset, namespace} when set, and `@metadata` with the
// event's metadata plus `input_id`, `stream_id` and the queue `index`. Where a field (or metadata
// entry) has the name of one of these keys, ours wins and that entry moves to
// `@metadata.shadowed`: nothing is lost and no name appears twice. Values keep their types
// exactly: 64-bit integers as JSON integers, timestamps as RFC 3339 strings, non-finite floats
// as null.
//
// Thread safety: stateless functions; call from any thread with distinct buffers.
#ifndef SHIPPER_SHIPPER_EVENT_JSON_H_
#define SHIPPER_SHIPPER_EVENT_JSON_H_

#include <cstdint>

#include "proto/messages.pb.h"
#include "rapidjson/stringbuffer.h"

namespace shipper {

// Appends the event's JSON document and a newline to `out`.
void AppendEventJson(const elastic::agent::shipper::v1::messages::Event& event, uint64_t index,
                     rapidjson::StringBuffer* out);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_EVENT_JSON_H_
