// What both queues share of the interface: batches and the wait strategies' names.
#include "queue/queue.h"

#include <utility>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"

namespace shipper::queue {

absl::StatusOr<WaitStrategy> ParseWaitStrategy(absl::string_view name) {
  for (WaitStrategy s : {WaitStrategy::kBlocking, WaitStrategy::kPhased, WaitStrategy::kSleeping}) {
    if (name == WaitStrategyName(s)) return s;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "shipper.queue.mem.wait_strategy: want blocking, phased or sleeping, got \"", name, "\""));
}

absl::string_view WaitStrategyName(WaitStrategy strategy) {
  switch (strategy) {
    case WaitStrategy::kBlocking:
      return "blocking";
    case WaitStrategy::kPhased:
      return "phased";
    case WaitStrategy::kSleeping:
      return "sleeping";
  }
  return "unknown";
}

Batch Queue::MakeBatch(Queue* queue, const void* slots, uint64_t mask, uint64_t first_index,
                       size_t size) {
  Batch batch;
  batch.queue_ = queue;
  batch.slots_ = static_cast<const char*>(slots);
  batch.mask_ = mask;
  batch.first_index_ = first_index;
  batch.size_ = size;
  return batch;
}

Batch::Batch(Batch&& other) noexcept
    : queue_(other.queue_),
      slots_(other.slots_),
      mask_(other.mask_),
      first_index_(other.first_index_),
      size_(std::exchange(other.size_, 0)) {}

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    ABSL_RAW_CHECK(empty(), "a Batch was overwritten before Done()");
    queue_ = other.queue_;
    slots_ = other.slots_;
    mask_ = other.mask_;
    first_index_ = other.first_index_;
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Batch::~Batch() { ABSL_RAW_CHECK(empty(), "a Batch was destroyed before Done()"); }

void Batch::Done() {
  if (size_ == 0) return;
  queue_->Done(first_index_, std::exchange(size_, 0));
}

}  // namespace shipper::queue
