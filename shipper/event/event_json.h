// The JSON document of an event, as every output writes it.
//
// Written straight from the event's canonical wire bytes (wire_event.h), in their order. One
// object per event: the event's `fields` at the top level, then `@timestamp` (RFC 3339, UTC,
// nanoseconds), `data_stream` {type, dataset, namespace} when set, and `@metadata` with the
// event's metadata plus `input_id`, `stream_id` and the queue `index`. Where a field (or metadata
// entry) has the name of one of these keys, ours wins and that entry moves to
// `@metadata.shadowed`: nothing is lost and no name appears twice. Values keep their types
// exactly: 64-bit integers as JSON integers, timestamps as RFC 3339 strings, non-finite floats
// as null.
//
// Destinations that index the document itself (Elasticsearch) take it without `@metadata`, as
// Beats sends it: Metadata::kOmit leaves out that object, and with it what was shadowed.
//
// Thread safety: AppendEventJson is stateless; call it from any thread with distinct buffers.
// One thread uses an EventJsonWriter.
#ifndef SHIPPER_SHIPPER_EVENT_EVENT_JSON_H_
#define SHIPPER_SHIPPER_EVENT_EVENT_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace shipper {

// Appends the JSON document of `event` (canonical wire bytes) and a newline to `out`.
void AppendEventJson(absl::string_view event, uint64_t index, rapidjson::StringBuffer* out);

namespace event_json_internal {

// rapidjson's Writer, copying strings that need no escaping (most) whole rather than byte by
// byte.
class Writer : public rapidjson::Writer<rapidjson::StringBuffer> {
 public:
  using rapidjson::Writer<rapidjson::StringBuffer>::Writer;

  // A string: a value, or a key in an object.
  void Str(absl::string_view s);
};

// A Struct entry: its key and its Value's wire bytes.
struct Entry {
  absl::string_view key;
  absl::string_view value;
};

}  // namespace event_json_internal

// Whether a document carries its `@metadata` object.
enum class Metadata { kInclude, kOmit };

// The same for many events into one buffer: the JSON writer and its allocations are reused from
// event to event (a writer per event costs two allocations and frees of its level stack).
class EventJsonWriter {
 public:
  explicit EventJsonWriter(rapidjson::StringBuffer* out, Metadata metadata = Metadata::kInclude)
      : out_(out), metadata_(metadata), writer_(*out) {}
  EventJsonWriter(const EventJsonWriter&) = delete;
  EventJsonWriter& operator=(const EventJsonWriter&) = delete;

  // Appends the JSON document of `event` (canonical wire bytes) and a newline to the buffer.
  void Append(absl::string_view event, uint64_t index);

 private:
  rapidjson::StringBuffer* const out_;
  const Metadata metadata_;
  event_json_internal::Writer writer_;
  std::vector<event_json_internal::Entry> shadowed_;  // of the event being written
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_EVENT_EVENT_JSON_H_
