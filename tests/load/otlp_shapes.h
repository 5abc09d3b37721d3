// The event shapes of event_shapes.h as OTLP log records, for the OTLP benchmarks: the same
// content, so that OTLP figures compare with the Producer API's.
//
// The seq-th record of a shape carries the seq-th event's timestamp as time_unix_nano, its
// "message" field as a string body and every other field as an attribute (structs as kvlists,
// lists as arrays, integers as int_value, timestamps as their Unix nanoseconds).
//
// Thread safety: pure functions; call them from any thread.
#ifndef SHIPPER_TESTS_LOAD_OTLP_SHAPES_H_
#define SHIPPER_TESTS_LOAD_OTLP_SHAPES_H_

#include <cstdint>
#include <string>

#include "tests/load/event_shapes.h"

namespace shipper::load {

// A serialized ExportLogsServiceRequest of `records` records of `shape`, seq first_seq onwards,
// under one resource (service.name "shipper-bench") and one scope.
std::string MakeOtlpRequest(EventShape shape, uint64_t first_seq, int records);

}  // namespace shipper::load

#endif  // SHIPPER_TESTS_LOAD_OTLP_SHAPES_H_
