// The Producer API input (proto/producer.proto: the archived Go shipper's API, which Beats'
// shipper output spoke): PublishEvents puts a request's events into the queue, PersistedIndex
// streams how far they are persisted. Always on, served on the shared gRPC server
// (shipper.server.*, shipper/server/server_settings.h) by threads sized from the CPU quota.
//
// Its own keys keep the names the archived shipper gave them:
// shipper.server.max_events_per_request, shipper.server.max_nesting_depth and shipper.strict_mode.
//
// Thread safety: as InputSettings and Input (shipper/input/input.h).
#ifndef SHIPPER_SHIPPER_INPUT_PRODUCER_PRODUCER_INPUT_H_
#define SHIPPER_SHIPPER_INPUT_PRODUCER_PRODUCER_INPUT_H_

#include <memory>
#include <string>

#include "shipper/input/input.h"
#include "shipper/input/producer/request_validation.h"

namespace shipper {

struct ProducerSettings final : InputSettings {
  ProducerSettings() { enabled = true; }

  // What one request may carry; its max_message_size is the server's (shipper.server.*), set
  // when the input is built.
  RequestLimits limits;

  void Validate(Problems* problems) const override;
  absl::StatusOr<std::unique_ptr<Input>> Build(const InputContext& context) const override;
  std::string Source(const ServerSettings& server) const override;
};

InputType ProducerInputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_PRODUCER_PRODUCER_INPUT_H_
