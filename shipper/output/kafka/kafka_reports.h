// The delivery reports of one Write()'s messages, and what they make of its events.
//
// Write() produces each event's message with Expect()'s opaque; librdkafka hands the opaque
// back with the message's delivery report, on the output's poller thread, to Report(). Write()'s
// finish awaits every report (Await()) and SettleKafkaWrite() turns them, with what Write()
// itself refused, into the events' outcome:
//   - delivered: written;
//   - refused for good (KafkaErrorIsPermanent): rejected, with librdkafka's error text;
//   - any other error: failed for now, retried after the backoff.
//
// A KafkaReports is shared by Write()'s finish and each report still to come, and freed by
// whichever lets go of it last: the finish once every report came, or the last report of a
// finish that gave up at Cancel() (purged messages in flight are reported only when their
// requests end, and the finish does not wait for that).
//
// Thread safety: Expect() and Refused() from the producing thread, before Await(); Report() from
// any thread; Await() once, from the thread that created it. SettleKafkaWrite() is pure.
#ifndef SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_REPORTS_H_
#define SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_REPORTS_H_

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "librdkafka/rdkafka.h"
#include "runtime/mutex.h"
#include "shipper/output/output.h"

namespace shipper {

class KafkaReports {
 public:
  // The reports of `events` messages, held by the caller until it calls Await().
  static KafkaReports* New(size_t events) { return new KafkaReports(events); }

  KafkaReports(const KafkaReports&) = delete;
  KafkaReports& operator=(const KafkaReports&) = delete;

  // A report is to come for event i's message: the opaque to produce it with
  // (RD_KAFKA_V_OPAQUE). REQUIRES: i < events, and once per event.
  void* Expect(size_t i) ABSL_LOCKS_EXCLUDED(mu_);
  // librdkafka refused to produce event i's message after Expect(i): no report comes, and `err`
  // is its result.
  void Refused(size_t i, rd_kafka_resp_err_t err) ABSL_LOCKS_EXCLUDED(mu_);
  // The delivery report of the message produced with `opaque`; may free the KafkaReports.
  static void Report(void* opaque, rd_kafka_resp_err_t err);

  // Waits for every report to come, then frees the KafkaReports and returns each event's result
  // (RD_KAFKA_RESP_ERR_NO_ERROR: delivered, or never produced). Once `cancelled` is set, lets go
  // instead, within about 100 ms: UNAVAILABLE, naming how many reports had not come.
  absl::StatusOr<std::vector<rd_kafka_resp_err_t>> Await(const std::atomic<bool>& cancelled)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A message's opaque: its KafkaReports and its event.
  struct Slot {
    KafkaReports* reports;
    size_t event;
  };

  explicit KafkaReports(size_t events);
  ~KafkaReports() = default;

  // Drops one holder; true when it was the last, and the caller must delete this.
  bool Release() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return --holders_ == 0; }
  bool AllReported() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return holders_ == 1; }

  std::vector<Slot> slots_;  // constant after construction, so the opaques stay valid
  runtime::Mutex mu_;
  runtime::CondVar all_reported_;         // AllReported() became true
  int holders_ ABSL_GUARDED_BY(mu_) = 1;  // Await()'s caller, and each report still to come
  std::vector<rd_kafka_resp_err_t> results_ ABSL_GUARDED_BY(mu_);
};

// Whether a delivery error would come back on every retry. An unknown topic or partition is
// not among them: Kafka reports it while a new topic's metadata propagates and until an
// operator creates the topic, and dropping events then would lose them.
bool KafkaErrorIsPermanent(rd_kafka_resp_err_t err);

// "kafka: <name>: <text>", for the dead-letter file and the log.
std::string KafkaErrorText(rd_kafka_resp_err_t err);

// Fills `outcome` for the events of one Write(): events from `unproduced` on were never produced
// (cancelled); a non-empty refusals[i] rejected event i before it was produced; the others have
// their report in results[i]. UNAVAILABLE when the Write() was cut short by a cancel: events left
// unproduced, or messages purged while `cancelled`. (Purged without a cancel means a producer
// replaced after a fatal error: those events failed for now, and the rest is written.)
// REQUIRES: results, refusals of one size; `outcome` empty.
absl::Status SettleKafkaWrite(const std::vector<rd_kafka_resp_err_t>& results,
                              const std::vector<std::string>& refusals, size_t unproduced,
                              bool cancelled, Outcome* outcome);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_KAFKA_KAFKA_REPORTS_H_
