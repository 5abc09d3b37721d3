// The forwarding output (shipper.output.shipper): forwards batches to the next Shipper over the
// Producer API (aggregator tiers: sidecars forwarding to a per-node or per-cluster Shipper).
//
// Write() publishes the batch, resending what a reply did not accept (partial acceptance), and
// returns only once the next Shipper reports, on its PersistedIndex stream, that everything up
// to the batch's last accepted index is persisted there: upstream acknowledges nothing the next
// hop could still lose. The next Shipper's uuid is tracked: when it changes before the batch is
// persisted (the next Shipper restarted and lost its queue), or any call fails, Write() returns
// a transient error and the whole batch is resent. A request the next Shipper refuses for what it
// holds (an event its checks refuse, or a request larger than its max_message_size) is sent
// again in halves, so that only the events it refuses alone are rejected for good: they go to the
// dead letters, and the rest of the batch is forwarded. Each PublishEvents call has the deadline
// shipper.output.shipper.timeout; the channel pings a connection silent for as long, so that a
// next Shipper frozen or gone behind a half-open connection ends the PersistedIndex stream, and
// with it every Write() still waiting on it (its batch resent): no worker waits for good.
// Concurrent Write() calls pipeline batches.
//
// Thread safety: Write() from several threads at once; Cancel() from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_SHIPPER_SHIPPER_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_SHIPPER_SHIPPER_OUTPUT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shipper/config/tls.h"
#include "shipper/output/output.h"

namespace shipper {

// shipper.output.shipper.*
struct ShipperOutputSettings final : OutputSettings {
  std::string server;                          // the next Shipper: host:port or unix:///path
  absl::Duration timeout = absl::Seconds(30);  // per PublishEvents call
  // TLS to the next Shipper when enabled (a client's shipper.output.shipper.ssl block, tls.h):
  // its certificate verified against certificate_authorities (empty: gRPC's default roots) as
  // verification_mode says; certificate and key, both or neither, this client's own for mTLS.
  TlsSettings ssl;

  void Validate(Problems* problems) const override;
  void Preflight(Problems* problems) const override;  // the PEM files
  // Starts following the next Shipper's persisted index (it may come up later).
  absl::StatusOr<std::unique_ptr<Output>> Build() const override;
  std::string Destination() const override;
};

// The registry's entry (registry.cc): the output named "shipper", as in the archived Go
// shipper's keys.
OutputType ShipperOutputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_SHIPPER_SHIPPER_OUTPUT_H_
