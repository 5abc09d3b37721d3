// Helpers for the queue's tests: owners that count releases, and event factories.
#ifndef SHIPPER_QUEUE_TEST_UTIL_H_
#define SHIPPER_QUEUE_TEST_UTIL_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "queue/memory_queue.h"
#include "queue/queue.h"

namespace shipper::queue::testing {

// Counts Release() calls. Safe from any thread.
class CountingOwner final : public EventOwner {
 public:
  void Release() override { released_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t released() const { return released_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> released_{0};
};

// Events whose data pointer is the tag itself (so tests can tell them apart) and `bytes` bytes.
inline std::vector<Event> MakeEvents(uint64_t first_tag, size_t count, EventOwner* owner,
                                     uint32_t bytes = 1) {
  std::vector<Event> events;
  events.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    events.emplace_back(reinterpret_cast<const void*>(first_tag + i), bytes, owner);
  }
  return events;
}

inline uint64_t Tag(const Event& event) { return reinterpret_cast<uint64_t>(event.data()); }

// Takes every event `queue` holds now, on a thread of its own as an output worker would, marks
// each batch done, and returns how many.
inline size_t DeliverAll(Queue* queue) {
  size_t n = 0;
  std::thread([&] {
    for (Batch b = queue->Get(1000, absl::Now()); !b.empty(); b = queue->Get(1000, absl::Now())) {
      n += b.size();
      b.Done();
    }
  }).join();
  return n;
}

// Every combination the behavioural tests run against: event loop x wait strategy.
struct Variant {
  bool buffered;
  WaitStrategy strategy;
};

inline std::vector<Variant> AllVariants() {
  std::vector<Variant> variants;
  for (bool buffered : {false, true}) {
    for (WaitStrategy s :
         {WaitStrategy::kBlocking, WaitStrategy::kPhased, WaitStrategy::kSleeping}) {
      variants.push_back({buffered, s});
    }
  }
  return variants;
}

inline std::string VariantName(const Variant& v) {
  return absl::StrCat(v.buffered ? "Buffered" : "Direct", "_",
                      std::string(WaitStrategyName(v.strategy)));
}

// MemoryOptions for `v`; buffered queues flush at 8 events or after 50 ms.
inline MemoryOptions VariantOptions(const Variant& v) {
  MemoryOptions options;
  options.wait_strategy = v.strategy;
  options.sleep_min = absl::Microseconds(20);
  options.sleep_max = absl::Milliseconds(2);
  if (v.buffered) {
    options.flush_min_events = 8;
    options.flush_timeout = absl::Milliseconds(50);
  }
  return options;
}

}  // namespace shipper::queue::testing

#endif  // SHIPPER_QUEUE_TEST_UTIL_H_
