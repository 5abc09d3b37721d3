// Test support: real queue batches holding real events, for output unit tests.
//
// Thread safety: one thread uses a QueuedEvents.
#ifndef SHIPPER_SHIPPER_OUTPUT_QUEUED_EVENTS_H_
#define SHIPPER_SHIPPER_OUTPUT_QUEUED_EVENTS_H_

#include <memory>
#include <string>
#include <vector>

#include "proto/messages.pb.h"
#include "queue/queue.h"

namespace shipper {

class QueuedEvents {
 public:
  // Publishes `events`, as their wire bytes, into a fresh queue large enough for all of them; the
  // first gets index 1.
  explicit QueuedEvents(std::vector<elastic::agent::shipper::v1::messages::Event> events);

  // The next up to `max` events as a batch (empty when none are left).
  queue::Batch Take(size_t max);
  queue::Queue& queue() { return *queue_; }
  // The event with queue index `index`.
  const elastic::agent::shipper::v1::messages::Event& at(uint64_t index) const {
    return events_[index - 1];
  }

 private:
  const std::vector<elastic::agent::shipper::v1::messages::Event> events_;
  const std::vector<std::string> bytes_;  // of each event
  std::unique_ptr<queue::Queue> queue_;
  std::unique_ptr<queue::Producer> producer_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_QUEUED_EVENTS_H_
