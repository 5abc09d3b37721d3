// Publish -> persisted latency bookkeeping for the load generator.
//
// For every PublishEvents call the generator records when it sent the call and the accepted_index
// of its reply. When the PersistedIndex stream reports persisted >= that index, the call's latency
// is (now - sent). Replies and persisted updates race (the server may persist before the client
// has read the reply), so a reply whose index is already persisted is completed at once.
//
// Latencies are per call, not per event: every event of a call shares its call's latency.
// Indexes are assumed to come from one server process (one uuid); a restart is not handled.
#ifndef SHIPPER_TESTS_LOAD_LATENCY_TRACKER_H_
#define SHIPPER_TESTS_LOAD_LATENCY_TRACKER_H_

#include <cstdint>
#include <queue>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shipper::load {

// Percentiles of a set of durations (nearest rank: the p-th percentile is the smallest sample
// that is >= p percent of all samples). All zero when count == 0.
struct LatencySummary {
  uint64_t count = 0;
  absl::Duration p50;
  absl::Duration p90;
  absl::Duration p99;
  absl::Duration max;
};

// Collects durations, keeping every sample (8 bytes each: a few MB for a long run).
// Thread safety: not thread-safe; LatencyTracker guards its recorders.
class LatencyRecorder {
 public:
  void Add(absl::Duration d) { samples_ns_.push_back(absl::ToInt64Nanoseconds(d)); }
  uint64_t count() const { return samples_ns_.size(); }
  void Clear() { samples_ns_.clear(); }
  // Sorts a copy; O(n log n).
  LatencySummary Summarize() const;

 private:
  std::vector<int64_t> samples_ns_;
};

// The nearest-rank p-th percentile (0 < p <= 100) of sorted samples; 0 if empty.
int64_t NearestRankPercentile(const std::vector<int64_t>& sorted, double p);

// Thread safety: safe for concurrent use from any number of threads.
class LatencyTracker {
 public:
  struct Counts {
    uint64_t accepted_events = 0;
    uint64_t persisted_events = 0;  // events of calls whose index has been persisted
    uint64_t highest_accepted_index = 0;
    uint64_t persisted_index = 0;  // highest value the stream has reported
    uint64_t pending_calls = 0;    // accepted, not yet persisted
    absl::Time last_accepted;      // when the last accepted reply arrived
    absl::Time last_persisted;     // when persisted_events last grew
  };

  // A call sent at `sent` came back at `now` with `count` accepted events, the last of them at
  // `accepted_index`. Calls that accepted nothing are not recorded.
  void OnAccepted(uint64_t accepted_index, uint64_t count, absl::Time sent, absl::Time now);

  // The PersistedIndex stream reported `persisted_index` at `now`. Values lower than one already
  // seen are ignored.
  void OnPersisted(uint64_t persisted_index, absl::Time now);

  Counts GetCounts() const;

  // All latencies recorded so far.
  LatencySummary Summary() const;

  // Latencies recorded since the previous call (for a live display).
  LatencySummary TakeWindow();

 private:
  struct Pending {
    uint64_t index;
    uint64_t count;
    absl::Time sent;
    bool operator>(const Pending& o) const { return index > o.index; }
  };

  void CompleteLocked(const Pending& p, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  Counts counts_ ABSL_GUARDED_BY(mu_);
  // Min-heap by index: replies from different channels arrive out of index order.
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending_
      ABSL_GUARDED_BY(mu_);
  LatencyRecorder all_ ABSL_GUARDED_BY(mu_);
  LatencyRecorder window_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shipper::load

#endif  // SHIPPER_TESTS_LOAD_LATENCY_TRACKER_H_
