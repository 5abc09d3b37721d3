#include "shipper/output/queued_events.h"

#include "absl/time/clock.h"
#include "glog/logging.h"
#include "queue/memory_queue.h"

namespace shipper {

QueuedEvents::QueuedEvents(std::vector<elastic::agent::shipper::v1::messages::Event> events)
    : events_(std::move(events)), bytes_([this] {
        std::vector<std::string> bytes;
        for (const auto& event : events_) bytes.push_back(event.SerializeAsString());
        return bytes;
      }()) {
  queue::MemoryOptions options;
  options.max_events = events_.size() + 1;
  options.max_bytes = 0;
  queue_ = *queue::MemoryQueue::Create(options);
  producer_ = queue_->NewProducer(nullptr);
  std::vector<queue::Event> handles;
  for (const std::string& event : bytes_) {
    handles.emplace_back(event.data(), static_cast<uint32_t>(event.size()), nullptr);
  }
  CHECK_EQ(producer_->TryPublish(absl::MakeSpan(handles)).accepted, events_.size());
}

queue::Batch QueuedEvents::Take(size_t max) { return queue_->Get(max, absl::Now()); }

}  // namespace shipper
