// The shipper output: forwards batches to the next Shipper over the Producer API (aggregator
// tiers: sidecars forwarding to a per-node or per-cluster Shipper).
//
// Write() publishes the batch, resending what a reply did not accept (partial acceptance), and
// returns only once the next Shipper reports, on its PersistedIndex stream, that everything up
// to the batch's last accepted index is persisted there: upstream acknowledges nothing the next
// hop could still lose. The next Shipper's uuid is tracked: when it changes before the batch is
// persisted (the next Shipper restarted and lost its queue), or any call fails, Write() returns
// a transient error and the whole batch is resent. Concurrent Write() calls pipeline batches.
//
// Thread safety: Write() from several threads at once; Cancel() from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_SHIPPER_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_SHIPPER_OUTPUT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "shipper/config.h"
#include "shipper/output/output.h"

namespace shipper {

// Starts following the next Shipper's persisted index (it may come up later).
absl::StatusOr<std::unique_ptr<Output>> NewShipperOutput(const Config::ShipperOutput& config);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_SHIPPER_OUTPUT_H_
