// Realistic events for load tests, benchmarks and end-to-end tests.
//
// Every shape is deterministic in (shape, seq): the same arguments always give the same event, so a
// test can regenerate what it sent and compare. Consecutive seq values differ in their variable
// fields (message text, offsets, sizes, timestamps) the way consecutive log lines do, so
// compressing or deduplicating outputs do not see one repeated event.
//
// Thread safety: all functions are pure and safe to call from any thread.
#ifndef SHIPPER_TESTS_LOAD_EVENT_SHAPES_H_
#define SHIPPER_TESTS_LOAD_EVENT_SHAPES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/messages.pb.h"

namespace shipper::load {

enum class EventShape {
  // A Filebeat event for one nginx access-log line: its fields are about 540 bytes as JSON
  // (about 800 for the whole document Shipper writes, with @timestamp, data_stream and
  // @metadata; about 700 bytes of protobuf), 15 leaf fields of mixed kinds (strings,
  // int32/int64/uint64, double, bool, timestamp, list, nested structs).
  kFilebeat,
  // Timestamp plus a short message: measures per-event overhead.
  kTiny,
  // A Java stack trace (about 4 KiB) plus some 60 fields (about 8 KiB as JSON): measures bytes.
  kLarge,
};

// "filebeat", "tiny" or "large".
absl::string_view EventShapeName(EventShape shape);

// The inverse of EventShapeName; INVALID_ARGUMENT, naming the valid shapes, for anything else.
absl::StatusOr<EventShape> ParseEventShape(absl::string_view name);

// Overwrites *event with the seq-th event of `shape`.
void MakeEvent(EventShape shape, uint64_t seq, elastic::agent::shipper::v1::messages::Event* event);

// The seq-th event of `shape`, serialized as a PublishRequest.events entry (field 2, tag and length
// included): concatenations of these after an optional uuid field are valid PublishRequests.
std::string MakeSerializedEventEntry(EventShape shape, uint64_t seq);

}  // namespace shipper::load

#endif  // SHIPPER_TESTS_LOAD_EVENT_SHAPES_H_
