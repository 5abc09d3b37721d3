// Publish → persisted latency, per publish call: from the moment a call's events are accepted to
// the moment the persisted index reaches the last of them. Queue entries carry no timestamp, so
// this is the one place that remembers (last accepted index, time) for calls in flight.
//
// Costs one short lock per publish call and per persisted-index advance, never per event. At most
// kMaxPending calls are tracked at once; calls accepted while that many wait are not measured.
//
// Thread safety: every method may be called from any thread.
#ifndef SHIPPER_SHIPPER_METRICS_PERSIST_LATENCY_H_
#define SHIPPER_SHIPPER_METRICS_PERSIST_LATENCY_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/mutex.h"
#include "shipper/metrics/metric.h"

namespace shipper::metrics {

class PersistLatency {
 public:
  static constexpr size_t kMaxPending = 4096;

  // Observations go into `histogram`, which must outlive this.
  explicit PersistLatency(Histogram* histogram);

  // A publish call that started at `start` had its events accepted up to queue index
  // `last_index`. Observes at once when they are already persisted.
  void Accepted(uint64_t last_index, absl::Time start, absl::Time now = absl::Now());
  // Every event up to `persisted_index` is persisted: observes each call that ended at or below.
  void Persisted(uint64_t persisted_index, absl::Time now = absl::Now());

 private:
  Histogram* const histogram_;

  runtime::Mutex mu_;
  uint64_t persisted_index_ ABSL_GUARDED_BY(mu_) = 0;
  // (last index, start), capacity kMaxPending reserved once.
  std::vector<std::pair<uint64_t, absl::Time>> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shipper::metrics

#endif  // SHIPPER_SHIPPER_METRICS_PERSIST_LATENCY_H_
