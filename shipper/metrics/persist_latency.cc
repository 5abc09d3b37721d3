#include "shipper/metrics/persist_latency.h"

#include <algorithm>

#include "runtime/mutex.h"

namespace shipper::metrics {

PersistLatency::PersistLatency(Histogram* histogram) : histogram_(histogram) {
  pending_.reserve(kMaxPending);
}

void PersistLatency::Accepted(uint64_t last_index, absl::Time start, absl::Time now) {
  runtime::MutexLock lock(&mu_);
  if (last_index <= persisted_index_) {
    histogram_->ObserveDuration(now - start);  // a fast output beat the publish call's return
  } else if (pending_.size() < kMaxPending) {
    pending_.emplace_back(last_index, start);
  }
}

void PersistLatency::Persisted(uint64_t persisted_index, absl::Time now) {
  runtime::MutexLock lock(&mu_);
  persisted_index_ = std::max(persisted_index_, persisted_index);
  // Calls finish their publish in any order, so pending_ is not sorted: scan it all.
  auto done = std::remove_if(pending_.begin(), pending_.end(), [&](const auto& call) {
    if (call.first > persisted_index) return false;
    histogram_->ObserveDuration(now - call.second);
    return true;
  });
  pending_.erase(done, pending_.end());
}

}  // namespace shipper::metrics
