#include "tests/load/latency_tracker.h"

#include <algorithm>
#include <cmath>

namespace shipper::load {

int64_t NearestRankPercentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  // Rank ceil(p/100 * n), 1-based; clamp for p <= 0 and rounding above n.
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

LatencySummary LatencyRecorder::Summarize() const {
  LatencySummary s;
  if (samples_ns_.empty()) return s;
  std::vector<int64_t> sorted = samples_ns_;
  std::sort(sorted.begin(), sorted.end());
  s.count = sorted.size();
  s.p50 = absl::Nanoseconds(NearestRankPercentile(sorted, 50));
  s.p90 = absl::Nanoseconds(NearestRankPercentile(sorted, 90));
  s.p99 = absl::Nanoseconds(NearestRankPercentile(sorted, 99));
  s.max = absl::Nanoseconds(sorted.back());
  return s;
}

void LatencyTracker::OnAccepted(uint64_t accepted_index, uint64_t count, absl::Time sent,
                                absl::Time now) {
  if (count == 0) return;
  absl::MutexLock lock(&mu_);
  counts_.accepted_events += count;
  counts_.highest_accepted_index = std::max(counts_.highest_accepted_index, accepted_index);
  counts_.last_accepted = now;
  Pending p{accepted_index, count, sent};
  if (accepted_index <= counts_.persisted_index) {
    CompleteLocked(p, now);
  } else {
    pending_.push(p);
    counts_.pending_calls = pending_.size();
  }
}

void LatencyTracker::OnPersisted(uint64_t persisted_index, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (persisted_index <= counts_.persisted_index) return;
  counts_.persisted_index = persisted_index;
  while (!pending_.empty() && pending_.top().index <= persisted_index) {
    CompleteLocked(pending_.top(), now);
    pending_.pop();
  }
  counts_.pending_calls = pending_.size();
}

void LatencyTracker::CompleteLocked(const Pending& p, absl::Time now) {
  const absl::Duration d = std::max(now - p.sent, absl::ZeroDuration());
  all_.Add(d);
  window_.Add(d);
  counts_.persisted_events += p.count;
  counts_.last_persisted = now;
}

LatencyTracker::Counts LatencyTracker::GetCounts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

LatencySummary LatencyTracker::Summary() const {
  absl::MutexLock lock(&mu_);
  return all_.Summarize();
}

LatencySummary LatencyTracker::TakeWindow() {
  absl::MutexLock lock(&mu_);
  LatencySummary s = window_.Summarize();
  window_.Clear();
  return s;
}

}  // namespace shipper::load
