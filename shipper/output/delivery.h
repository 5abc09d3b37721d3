// Delivery: the output workers' loop. Takes batches from the queue, writes them to the one
// output, retries what failed for now with backoff (shared by all outputs, without limit): the
// whole batch when Write() failed as a whole, else only the events it said failed, waiting at
// least as long as the output's Outcome::retry_after asks. Events
// rejected for good go to the dead-letter file. A batch is marked done only once every event is
// written or recorded.
//
// The WorkerPool calls Run() again and again on each output worker thread; concurrent workers
// pipeline batches through the output. A worker whose output left the end of a Write() for later
// (Outcome::finish: a sync, a broker's acks) writes its next batch, if one is ready, before it
// finishes the previous one, so that the output's wait overlaps the worker's next work. At
// shutdown, once the queue's drain deadline has passed, GiveUp() makes workers abandon batches they
// cannot deliver, so their events are never reported persisted and their clients resend them.
//
// Thread safety: Run() from any number of worker threads at once; GiveUp() from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_DELIVERY_H_
#define SHIPPER_SHIPPER_OUTPUT_DELIVERY_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "queue/queue.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/output/dead_letters.h"
#include "shipper/output/output.h"

namespace shipper {

class Delivery {
 public:
  // The config keys of the retry policy are shipper.output.{batch_max_events,backoff.*}; their
  // defaults are config.h's.
  struct Options {
    size_t batch_max_events;  // events per batch
    absl::Duration backoff_init;
    absl::Duration backoff_max;
    // How long an idle worker waits for a batch before it returns to the pool (which checks
    // whether the worker should stop).
    absl::Duration poll = absl::Milliseconds(500);
    // The output label of its metrics: the <name> of shipper.output.<name>.
    std::string name;
  };

  // `queue` must outlive the Delivery.
  Delivery(queue::Queue* queue, std::unique_ptr<Output> output,
           std::unique_ptr<DeadLetters> dead_letters, const Options& options);

  // One unit of a worker's work: waits up to options.poll for a batch and delivers it, and the
  // batches it can write while the output finishes one (for up to options.poll in all).
  void Run();

  // The drain deadline passed: batches that fail from now on are abandoned, and waiting outputs
  // are cancelled. Idempotent.
  void GiveUp();

 private:
  // A batch and the result of its first Write(), not yet finished.
  struct Flight {
    queue::Batch batch;
    absl::Status status;
    Outcome outcome;
    absl::Duration busy;  // spent in the output so far
  };

  // The first Write() of the batch.
  Flight Begin(queue::Batch batch);
  // Finishes the flight's Write(), retries what failed until it is written or recorded as a
  // dead letter (or given up), and marks the batch done.
  void End(Flight& flight);
  // Calls the output for `events`, timed into *busy: Write() and, if it left it, finish.
  absl::Status Attempt(const Events& events, Outcome* outcome, absl::Duration* busy);

  // Constant after construction.
  queue::Queue* const queue_;
  const std::unique_ptr<Output> output_;
  const std::unique_ptr<DeadLetters> dead_letters_;
  const Options options_;
  metrics::OutputMetrics& metrics_;  // options_.name's

  std::atomic<bool> giving_up_{false};  // makes GiveUp() idempotent
  absl::Notification give_up_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_DELIVERY_H_
