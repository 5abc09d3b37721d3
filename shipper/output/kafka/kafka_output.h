// The Kafka output (librdkafka): each event's document (exactly the file output's line without
// its newline) becomes one message of `topic`, keyed by `key`, both format strings
// (field_format.h).
//
// An event counts as written only once librdkafka reports the message delivered, which with
// required_acks -1 means every in-sync replica has it. One idempotent producer (acks=all,
// enable.idempotence) serves every worker, so librdkafka's own retries neither duplicate nor
// reorder within a partition. Write() produces; its finish (Outcome::finish) awaits the reports,
// so that a worker produces its next batch while the brokers confirm the last. Per message, the
// delivery report decides:
//   - delivered: written;
//   - refused for good (message too large, invalid or corrupt record, topic authorization, an
//     invalid topic name): rejected, with librdkafka's error text, to the dead-letter file;
//   - anything else (no leader, timeouts, brokers down past `timeout`): failed for now, and only
//     those events are produced again after the backoff.
// Events whose topic or key names a missing field, or whose document is larger than
// max_message_bytes, are rejected before they are produced.
//
// librdkafka gets one produce request in flight per broker unless shipper.output.kafka.librdkafka
// says otherwise: with more, it may report a message delivered that a failed request never wrote
// ("implicit ack"; kafka_settings.cc says when). After a fatal error (rd_kafka_fatal_error, e.g.
// the idempotent producer's sequence numbers out of step with a broker's), which leaves a producer
// refusing everything, a new producer replaces it (logged at ERROR); what the old one held is
// purged, failed for now and produced again, never reported written.
//
// Cancel() purges what librdkafka still holds (queued or in flight) and makes Write() and its
// finish return an error: whatever was not confirmed is never reported written.
//
// The room's parts: kafka_settings.h (the keys, their checks, the librdkafka properties they
// make), kafka_reports.h (a Write()'s delivery reports and the outcome they make),
// kafka_statistics.h (librdkafka's statistics) and kafka_metrics.h (the output's own metrics);
// this file's .cc runs the producer.
//
// Thread safety: Write() from several threads at once; Cancel() from any thread. Delivery
// reports, statistics and errors are served, and a failed producer replaced, on a thread of the
// output's own.
#ifndef SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_OUTPUT_H_

#include "shipper/output/output.h"

namespace shipper {

// The registry's entry (registry.cc): the name, and the keys of KafkaSettings
// (kafka_settings.h).
OutputType KafkaOutputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_OUTPUT_H_
