// The OTLP output: events go to an OTLP receiver (the Collector, Elasticsearch's /_otlp, a
// vendor's intake, another Shipper's OTLP input) as log records, spans and data points, over
// OTLP/gRPC or OTLP/HTTP (protobuf or JSON), and count as written only once the receiver accepted
// them.
//
// Each Write() maps its events to OTLP (otlp_record.h: an event the OTLP input took goes back as
// the log record, span or data point it was), splits them into requests of one signal each and of
// at most max_request_bytes (otlp_request.h), sends those concurrently, at most max_in_flight at
// once (otlp_transport.h), and reads each answer by the OTLP specification's rules (otlp_answer.h):
//   accepted                  written; partial_success's rejected count goes to
//                             shipper_output_items_total{output="otlp",outcome="rejected_by_receiver"}
//                             and its error_message is logged once per distinct message
//   retryable, no answer      failed for now: Delivery retries those events with backoff
//   too large, invalid        the request's records sent again in halves; a record alone too
//                             large or invalid is a dead letter with the receiver's message (OTLP
//                             names no record at fault: halving finds it and spares the others)
//   any other refusal         the request's records are dead letters, with the receiver's message
// A record whose encoding alone is above max_request_bytes is a dead letter without being sent.
// The longest delay a receiver asked for (RetryInfo, Retry-After; capped) is the least wait
// before Delivery retries (Outcome::retry_after), and named in the failure it logs.
//
// The room's parts: otlp_output_settings.h (the keys, their checks), otlp_record.h (what an
// event becomes), otlp_request.h (requests: split, grouped, encoded), otlp_answer.h (what an
// answer means), otlp_transport.h (gRPC and HTTP); this file's .cc writes a batch with them.
//
// Thread safety: Write() from several threads at once; Cancel() from any thread ends requests in
// flight (as failed for now) and makes later Write() calls fail.
#ifndef SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_OUTPUT_H_

#include "shipper/output/output.h"

namespace shipper {

// The registry's entry (registry.cc): the name, and the keys of OtlpOutputSettings
// (otlp_output_settings.h).
OutputType OtlpOutputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_OUTPUT_H_
