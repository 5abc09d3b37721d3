// Outputs: where batches of events go once they leave the queue.
//
// Output workers take a batch from the queue, call Write() and mark the batch done only once
// Write() returns OK, so the persisted index never runs ahead of what an output confirmed.
//
// Thread safety: Write() may be called from several workers at once; an output serialises
// internally what must be serialised.
#ifndef SHIPPER_SHIPPER_OUTPUT_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_OUTPUT_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "queue/queue.h"
#include "shipper/config.h"

namespace shipper {

class Output {
 public:
  virtual ~Output() = default;

  // Writes every event of `batch` (each an elastic.agent.shipper.v1.messages.Event) and makes it
  // durable by the output's policy. An error means nothing of the batch may count as written;
  // the caller retries the whole batch.
  virtual absl::Status Write(const queue::Batch& batch) = 0;
};

// The output `config` selects. Errors say which setting to fix.
absl::StatusOr<std::unique_ptr<Output>> NewOutput(const Config& config);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OUTPUT_H_
