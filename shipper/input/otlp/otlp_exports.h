// What every OTLP export does with its request, whichever transport took it (gRPC's
// LogsService/Export and its trace and metrics siblings, HTTP's POST /v1/logs, /v1/traces and
// /v1/metrics): the one contract both transports call, for the three signals alike.
//
// Export() takes the protobuf bytes of one Export*ServiceRequest of a signal (decompressed
// already) and:
//   0. with ack: persisted, joins a retry to its export: a request identical (by a 128-bit keyed
//      hash of its bytes) to an export still waiting to persist is answered with it, one
//      identical to an export persisted within shipper.otlp.retry_window (at most 16,384
//      remembered) is answered OK now; neither is queued again (records counted as joined);
//      the signal is part of what is compared;
//   1. converts every record (LogRecord, Span, data point) into one queued event, in the queued
//      form the Producer API's events have (canonical wire bytes of
//      elastic.agent.shipper.v1.messages.Event, shipper/event/wire_event.h; the mapping is
//      otlp_conversion.h's and otlp_signals.h's), all of them into one buffer;
//   2. charges what it holds to the memory budget before it is made (the same budget as the
//      Producer API's): the conversion's bookkeeping as it grows, then the buffer and the events
//      pointing into it; the buffer's charge goes back once the queue released the last of its
//      records, the rest's once Export() returns;
//   3. publishes the records whole or not at all (queue::Producer::TryPublishAll);
//   4. calls `done` exactly once with the outcome.
//
// The outcome, and what each transport answers with it:
//   OK                  taken: with ack: persisted once every record is persisted, with ack:
//                       queued once queued. rejected_records > 0 (with error_message) when
//                       some records can never be taken (each larger, converted, than
//                       max_message_size or the queue's byte limit); the rest were taken. The
//                       transport sets partial_success only then.
//   UNAVAILABLE         nothing of it was taken, try again after retry_delay: the queue or the
//                       budget has no room for all of it now, or Shipper is shutting down
//                       (gRPC: RetryInfo in the status details; HTTP: 503 with Retry-After).
//   RESOURCE_EXHAUSTED  too large ever to be taken (more bytes than max_message_size, more
//                       records or bytes than the queue holds at all, or more held at once
//                       than ceiling()): the sender must not retry it (gRPC: no RetryInfo;
//                       HTTP: 413).
//   INVALID_ARGUMENT    not an Export*ServiceRequest of the signal, or one Shipper refuses
//                       (invalid UTF-8, nesting too deep); the message says what and where
//                       (HTTP: 400).
//
// Metrics, labelled with the transport's input (otlp_grpc, otlp_http) and the signal (logs,
// traces, metrics): Export() counts records in shipper_input_records_total where their outcome
// is decided (a retry's records as retry or joined, never again as rejected); the transport
// counts each request, once, as it answers it (CountAnswer: shipper_input_requests_total and
// the reply-time histogram).
//
// Threading. Export() may be called from any number of threads at once and never blocks or waits
// for room. `done` runs on one of:
//   - the thread calling Export(), before Export() returns: every outcome but a persisted OK;
//   - the queue's ACK path (queue.h AckCallback: a consumer thread inside Batch::Done() for the
//     memory queue, the disk queue's sync thread), with ack: persisted, once the last record of
//     the export is persisted;
//   - the thread calling Drained(): UNAVAILABLE for every export still waiting then.
// `done` must be quick and must not block: it runs where the queue acknowledges events, often
// with other exports' callbacks after it. It must not call into OtlpExports or the queue.
// Starting an asynchronous reply (a gRPC async Finish, posting to an HTTP event loop) is what it
// is for. A transport whose call ended early (deadline, cancellation) still gets its `done`, and
// keeps what `done` touches alive until then.
//
// Thread safety: every method from any thread, but StopAccepting, Drained and the destructor,
// which the input calls from the pipeline's thread (shipper/input/input.h).
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_EXPORTS_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_EXPORTS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "queue/queue.h"
#include "runtime/memory_budget.h"
#include "shipper/input/otlp/otlp_settings.h"
#include "shipper/input/otlp/otlp_signals.h"

namespace shipper {

// What became of one export (see above).
struct ExportOutcome {
  absl::Status status;
  absl::Duration retry_delay = absl::ZeroDuration();  // with UNAVAILABLE
  // With OK: partial_success (rejected_log_records, rejected_spans, rejected_data_points) when
  // > 0.
  int64_t rejected_records = 0;
  std::string error_message;  // with rejected_records
};

// Which transport took an export: the metrics' input label (otlp_grpc, otlp_http).
enum class OtlpTransport { kGrpc, kHttp };

class OtlpExports {
 public:
  using Done = absl::AnyInvocable<void(const ExportOutcome&)>;

  // More records (log records, spans, data points) than this in one export are refused as too large
  // (RESOURCE_EXHAUSTED): the records' bookkeeping is bounded before the budget is charged, and the
  // Collector's exporter sends 8192 at most by default.
  static constexpr size_t kMaxRecords = 65536;
  // With shipper.queue.mem.bytes: 0 (no budget) one request holds at most this multiple of
  // shipper.otlp.max_message_size at once, everything counted (ceiling()): its body (JSON, or
  // protobuf, decompressed), its JSON decoding, the conversion's bookkeeping, its records and
  // their events. A request that would hold more is refused as too large (RESOURCE_EXHAUSTED)
  // before it does.
  static constexpr size_t kUnbudgetedMultiple = 16;

  // `queue` and `budget` must outlive this object.
  OtlpExports(queue::Queue* queue, runtime::MemoryBudget* budget, const OtlpSettings& settings);
  // Answers every export still waiting UNAVAILABLE (as Drained()).
  // REQUIRES: no Export() in flight.
  ~OtlpExports();
  OtlpExports(const OtlpExports&) = delete;
  OtlpExports& operator=(const OtlpExports&) = delete;

  // Takes the serialized Export*ServiceRequest of `signal` `request`, which needs to live only
  // until Export() returns, received at `arrival` (the records' timestamp when they carry none).
  // Calls `done` once, as described above. `charged`: what the transport holds charged to budget()
  // for `request` while Export() runs (its flattened, inflated or decoded copy), so that an export
  // whose copy and what converting it holds could never fit together (ceiling()) is refused as
  // too large (RESOURCE_EXHAUSTED) rather than asked to retry for ever. For the verdict not to
  // depend on how the request was sent, it is the copy's own size, never a reservation made while
  // its size was not known; and the request counts as held for at least its own size (in gRPC's
  // buffer when it is not copied).
  void Export(OtlpTransport transport, OtlpSignal signal, absl::string_view request,
              absl::Time arrival, Done done, size_t charged = 0);

  // The outcomes a transport answers an export with when it refuses it itself, before or
  // instead of calling Export(). Pure: they build the outcome and count nothing.
  //   Refused: `status` (not OK), with retry_delay when it is UNAVAILABLE (a gzip stream that
  //            does not inflate, a Content-Type it does not take, ...).
  //   TooLarge: a request of `bytes` (after decompression) larger than max_message_size():
  //            RESOURCE_EXHAUSTED naming shipper.otlp.max_message_size.
  //   Unavailable: the budget has no room now for what the transport would hold, or Shipper is
  //            shutting down: UNAVAILABLE with retry_delay, saying `why`.
  ExportOutcome Refused(absl::Status status) const;
  ExportOutcome TooLarge(size_t bytes) const;
  ExportOutcome Unavailable(absl::string_view why) const;

  // Counts one request in shipper_input_requests_total and the reply-time histogram. The one
  // place each request is counted is where its transport answers it, once, whatever decided
  // its outcome (Export(), a joined wait, or the transport itself); Export() counts only the
  // records (shipper_input_records_total), where their outcome is decided.
  static void CountAnswer(OtlpTransport transport, OtlpSignal signal, absl::Time arrival,
                          const ExportOutcome& outcome);

  // What the transport holds to call Export() (a flattened or decompressed copy of a request)
  // it charges to this budget before it makes it, and gives back once Export() returned; when
  // the budget has no room it answers Unavailable().
  runtime::MemoryBudget* budget() const { return budget_; }
  // The most one request may hold at once, everything counted (its body or copy, what decoding
  // or converting it holds, its records and their events): the budget's capacity, or
  // kUnbudgetedMultiple x max_message_size without a budget (shipper.queue.mem.bytes: 0).
  size_t ceiling() const;
  // RESOURCE_EXHAUSTED, naming the key that bounds it, when `bytes`, what `what` holds at once,
  // are more than ceiling(): the request could never be taken. OK otherwise.
  absl::Status Fits(size_t bytes, absl::string_view what) const;
  size_t max_message_size() const { return settings_.max_message_size; }

  // Refuses exports from now on (UNAVAILABLE with retry_delay); exports waiting to be persisted
  // still get OK as their records persist during the drain.
  void StopAccepting();
  // The queue drained, or shipper.shutdown_timeout passed: answers every export still waiting
  // UNAVAILABLE (its sender retries with the next Shipper).
  void Drained();

 private:
  class Impl;

  // `status` with retry_delay when it is UNAVAILABLE.
  ExportOutcome Outcome(absl::Status status) const;

  runtime::MemoryBudget* const budget_;
  const OtlpSettings settings_;
  const std::unique_ptr<Impl> impl_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_EXPORTS_H_
