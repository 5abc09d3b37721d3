// Format strings with references to event fields, as Beats writes them: "logs-%{[data_stream.
// dataset]}" or "%{[fields.app]:unknown}" (after the colon: the text used when the field is
// missing).
//
// A reference names a path of keys: data_stream.{type,dataset,namespace}, source.{input_id,
// stream_id}, @metadata.<path> (the event's metadata), or any other path into the event's fields.
// Strings are used as they are; numbers and booleans are written out; anything else (a map, a
// list, a timestamp, null) counts as missing.
//
// Thread safety: a FieldFormat is immutable after Parse; Format from any thread.
#ifndef SHIPPER_SHIPPER_EVENT_FIELD_FORMAT_H_
#define SHIPPER_SHIPPER_EVENT_FIELD_FORMAT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shipper {

class FieldFormat {
 public:
  // INVALID_ARGUMENT, naming `setting`, for an unterminated or empty reference.
  static absl::StatusOr<FieldFormat> Parse(absl::string_view format, absl::string_view setting);

  // The string for `event` (canonical wire bytes, wire_event.h). NOT_FOUND names the field when
  // a reference without a default is missing or not a scalar.
  absl::StatusOr<std::string> Format(absl::string_view event) const;

 private:
  struct Part {
    std::string text;                     // literal text, or the reference's path
    std::vector<std::string> path;        // empty for literal text
    std::optional<std::string> fallback;  // for a reference: its default
  };
  std::vector<Part> parts_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_EVENT_FIELD_FORMAT_H_
