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
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "rapidjson/stringbuffer.h"

namespace shipper {

// Appends the JSON document of `event` (canonical wire bytes) and a newline to `out`.
void AppendEventJson(absl::string_view event, uint64_t index, rapidjson::StringBuffer* out);

// Whether a document carries its `@metadata` object.
enum class Metadata { kInclude, kOmit };

// The same for many events into one buffer, reusing what the encoder keeps from event to event.
//
// One pass over the wire bytes writes the document straight into `out`: room is claimed a
// window at a time and checked once per value or run of plain bytes, commas are placed by the
// structure rather than tracked per value, strings are scanned and copied 16 bytes at a time
// (SSE2), a timestamp's date is worked out once per second, and numbers are written as
// rapidjson's Writer writes them.
class EventJsonWriter {
 public:
  explicit EventJsonWriter(rapidjson::StringBuffer* out, Metadata metadata = Metadata::kInclude)
      : out_(out), metadata_(metadata) {}
  EventJsonWriter(const EventJsonWriter&) = delete;
  EventJsonWriter& operator=(const EventJsonWriter&) = delete;

  // Appends the JSON document of `event` (canonical wire bytes) and a newline to the buffer.
  void Append(absl::string_view event, uint64_t index);

 private:
  class Encoder;  // one document's encoding

  // A Struct entry: its key and its Value's wire bytes.
  struct Entry {
    absl::string_view key;
    absl::string_view value;
  };

  rapidjson::StringBuffer* const out_;
  const Metadata metadata_;
  std::vector<Entry> shadowed_;  // of the event being written
  // The last timestamp's whole seconds and them as "YYYY-MM-DDTHH:MM:SS": consecutive events
  // mostly fall in the same second, and working out a date costs more than copying it.
  int64_t date_time_seconds_ = std::numeric_limits<int64_t>::min();
  char date_time_[19];
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_EVENT_EVENT_JSON_H_
