#include "shipper/event/wire_event.h"

namespace shipper::wire {

EventParts::EventParts(absl::string_view event) {
  Reader reader(event);
  Field field;
  while (reader.Next(&field)) {
    if (field.tag == (event::kOtelSignal << 3 | kVarint)) {
      otel_signal = field.scalar;
      continue;
    }
    if (field.type() != kLength) continue;
    switch (field.number()) {
      case event::kTimestamp:
        has_timestamp = true;
        timestamp = field.bytes;
        break;
      case event::kSource:
        has_source = true;
        source = field.bytes;
        break;
      case event::kDataStream:
        has_data_stream = true;
        data_stream = field.bytes;
        break;
      case event::kMetadata:
        metadata = field.bytes;
        break;
      case event::kFields:
        fields = field.bytes;
        break;
    }
  }
}

void ValueParts::ReadFields(absl::string_view value) {
  Reader reader(value);
  Field field;
  while (reader.Next(&field)) {
    if (!IsValueKind(field)) continue;
    kind = field.number();
    scalar = field.scalar;
    bytes = field.bytes;
  }
}

TimestampParts::TimestampParts(absl::string_view timestamp) {
  Reader reader(timestamp);
  Field field;
  while (reader.Next(&field)) {
    if (field.type() != kVarint) continue;
    if (field.number() == 1) seconds = static_cast<int64_t>(field.scalar);
    if (field.number() == 2) nanos = static_cast<int32_t>(field.scalar);
  }
}

}  // namespace shipper::wire
