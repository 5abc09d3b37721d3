// Outputs: where batches of events go once they leave the queue.
//
// Delivery (delivery.h) takes a batch from the queue and calls Write(). Three outcomes:
//   - OK with no rejections: every event is written, durable by the output's policy;
//   - OK with rejections: the output refused those events for good (e.g. Redis WRONGTYPE) and
//     wrote all the others; the refused ones go to the dead-letter file;
//   - an error: a transient failure (server down, disk full, timeout). Nothing of the batch
//     counts as written, and Delivery retries the whole batch with backoff, so an output may see
//     the same events again (at-least-once).
// The batch is marked done only after that, so the persisted index never runs ahead of what an
// output confirmed.
//
// Thread safety: Write() may be called from several workers at once (concurrent batches
// pipeline); an output serialises internally what must be serialised. Cancel() may be called
// from any thread, also while Write() runs.
#ifndef SHIPPER_SHIPPER_OUTPUT_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_OUTPUT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "queue/queue.h"
#include "shipper/config.h"

namespace shipper {

// An event an output refuses for good: retrying would fail the same way.
struct Rejection {
  size_t position;     // in the batch: event(position)
  std::string reason;  // what the output said, for the dead-letter file
};

class Output {
 public:
  virtual ~Output() = default;

  // Writes the events of `batch` (each an elastic.agent.shipper.v1.messages.Event). On OK,
  // appends to `rejected` the events refused for good, in ascending position; all others are
  // written. An error means nothing of the batch may count as written.
  // REQUIRES: `rejected` is empty.
  virtual absl::Status Write(const queue::Batch& batch, std::vector<Rejection>* rejected) = 0;

  // Makes running and later Write() calls return an error promptly instead of waiting on a
  // peer; called once the drain deadline has passed at shutdown. Outputs that never wait long
  // need not override it.
  virtual void Cancel() {}
};

// The output `config` selects. Errors say which setting to fix.
absl::StatusOr<std::unique_ptr<Output>> NewOutput(const Config& config);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OUTPUT_H_
