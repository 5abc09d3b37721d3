// What every OTLP export does with its request, whichever transport took it (gRPC's
// LogsService/Export, HTTP's POST /v1/logs): the one contract both transports call.
//
// Export() takes the protobuf bytes of one ExportLogsServiceRequest (decompressed already) and:
//   0. with ack: persisted, joins a retry to its export: a request identical (by a 128-bit keyed
//      hash of its bytes) to an export still waiting to persist is answered with it, one
//      identical to an export persisted within shipper.otlp.retry_window (at most 16,384
//      remembered) is answered OK now; neither is queued again (records counted as joined);
//   1. converts every LogRecord into one queued event, in the queued form the Producer API's
//      events have (canonical wire bytes of elastic.agent.shipper.v1.messages.Event,
//      shipper/event/wire_event.h; the mapping is otlp_conversion.h), all of them into one
//      buffer;
//   2. charges that buffer to the memory budget before it is made (the same budget as the
//      Producer API's; it goes back once the queue released the last of its records);
//   3. publishes the records whole or not at all (queue::Producer::TryPublishAll);
//   4. calls `done` exactly once with the outcome.
//
// The outcome, and what each transport answers with it:
//   OK                  taken: with ack: persisted once every record is persisted, with ack:
//                       queued once queued. rejected_log_records > 0 (with error_message) when
//                       some records can never be taken (each larger, converted, than
//                       max_message_size or the queue's byte limit); the rest were taken. The
//                       transport sets partial_success only then.
//   UNAVAILABLE         nothing of it was taken, try again after retry_delay: the queue or the
//                       budget has no room for all of it now, or Shipper is shutting down
//                       (gRPC: RetryInfo in the status details; HTTP: 503 with Retry-After).
//   RESOURCE_EXHAUSTED  too large ever to be taken (more bytes than max_message_size, or more
//                       records or bytes than the queue or the budget holds at all): the sender
//                       must not retry it (gRPC: no RetryInfo; HTTP: 413).
//   INVALID_ARGUMENT    not an ExportLogsServiceRequest, or one Shipper refuses (invalid UTF-8,
//                       nesting too deep); the message says what and where (HTTP: 400).
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

namespace shipper {

// What became of one export (see above).
struct ExportOutcome {
  absl::Status status;
  absl::Duration retry_delay = absl::ZeroDuration();  // with UNAVAILABLE
  int64_t rejected_log_records = 0;                   // with OK: partial_success when > 0
  std::string error_message;                          // with rejected_log_records
};

// Which transport took an export: the metrics' input label (otlp_grpc, otlp_http).
enum class OtlpTransport { kGrpc, kHttp };

class OtlpExports {
 public:
  using Done = absl::AnyInvocable<void(const ExportOutcome&)>;

  // More log records than this in one export are refused as too large (RESOURCE_EXHAUSTED): the
  // records' bookkeeping is bounded before the budget is charged, and the Collector's exporter
  // sends 8192 at most by default.
  static constexpr size_t kMaxRecords = 65536;
  // With shipper.queue.mem.bytes: 0 (no budget) an export whose records take more than this
  // many times shipper.otlp.max_message_size once converted is refused as too large
  // (RESOURCE_EXHAUSTED) before they are made, and OTLP/HTTP refuses a JSON body whose decoding
  // would hold more: so a request holds at most about this multiple of max_message_size.
  static constexpr size_t kUnbudgetedMultiple = 16;

  // `queue` and `budget` must outlive this object.
  OtlpExports(queue::Queue* queue, runtime::MemoryBudget* budget, const OtlpSettings& settings);
  // Answers every export still waiting UNAVAILABLE (as Drained()).
  // REQUIRES: no Export() in flight.
  ~OtlpExports();
  OtlpExports(const OtlpExports&) = delete;
  OtlpExports& operator=(const OtlpExports&) = delete;

  // Takes the serialized ExportLogsServiceRequest `request`, which needs to live only until
  // Export() returns, received at `arrival` (the records' timestamp when they carry none, and
  // the start of the reply-time histogram). Calls `done` once, as described above. `charged`:
  // what the transport holds charged to budget() for `request` while Export() runs (its
  // flattened, inflated or decoded copy), so that an export whose copy and records together
  // could never fit in the budget is refused as too large (RESOURCE_EXHAUSTED) rather than
  // asked to retry for ever. For the verdict not to depend on how the request was sent, it is
  // the copy's own size, never a reservation made while its size was not known.
  void Export(OtlpTransport transport, absl::string_view request, absl::Time arrival, Done done,
              size_t charged = 0);

  // An export the transport refused itself before calling Export() (a body larger than
  // max_message_size, a gzip stream that does not inflate, ...): counts it in the metrics as
  // Export() counts its own, and returns the outcome to answer. `status` is not OK.
  ExportOutcome Refused(OtlpTransport transport, absl::Status status, absl::Time arrival);
  // The outcome of a request of `bytes` (after decompression) larger than max_message_size():
  // RESOURCE_EXHAUSTED naming shipper.otlp.max_message_size. Counted as Refused().
  ExportOutcome TooLarge(OtlpTransport transport, size_t bytes, absl::Time arrival);

  // What the transport holds to call Export() (a flattened or decompressed copy of a request)
  // it charges to this budget before it makes it, and gives back once Export() returned; when
  // the budget has no room it answers Unavailable().
  runtime::MemoryBudget* budget() const { return budget_; }
  // The outcome when the budget has no room for what the transport would hold, or Shipper is
  // shutting down: UNAVAILABLE with retry_delay. Counted as Refused().
  ExportOutcome Unavailable(OtlpTransport transport, absl::string_view why, absl::Time arrival);
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
  // Counts the request in the metrics and calls `done`.
  void Finish(OtlpTransport transport, absl::Time arrival, const ExportOutcome& outcome,
              Done& done);

  runtime::MemoryBudget* const budget_;
  const OtlpSettings settings_;
  const std::unique_ptr<Impl> impl_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_EXPORTS_H_
