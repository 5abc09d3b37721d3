#include "tests/load/latency_tracker.h"

#include <vector>

#include "gtest/gtest.h"

namespace shipper::load {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);
absl::Time At(int ms) { return kT0 + absl::Milliseconds(ms); }

TEST(NearestRankPercentileTest, MatchesTheDefinition) {
  std::vector<int64_t> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(NearestRankPercentile(v, 50), 50);
  EXPECT_EQ(NearestRankPercentile(v, 90), 90);
  EXPECT_EQ(NearestRankPercentile(v, 99), 99);
  EXPECT_EQ(NearestRankPercentile(v, 100), 100);
  EXPECT_EQ(NearestRankPercentile(v, 0), 1);
  EXPECT_EQ(NearestRankPercentile({}, 50), 0);
  EXPECT_EQ(NearestRankPercentile({7}, 99), 7);
  // Ranks round up: for 3 samples the median is the 2nd, p99 the 3rd.
  EXPECT_EQ(NearestRankPercentile({10, 20, 30}, 50), 20);
  EXPECT_EQ(NearestRankPercentile({10, 20, 30}, 99), 30);
  EXPECT_EQ(NearestRankPercentile({10, 20, 30}, 33), 10);
}

TEST(LatencyRecorderTest, SummarizesUnsortedSamples) {
  LatencyRecorder r;
  EXPECT_EQ(r.Summarize().count, 0u);
  EXPECT_EQ(r.Summarize().max, absl::ZeroDuration());
  for (int i = 1000; i >= 1; --i) r.Add(absl::Microseconds(i));
  LatencySummary s = r.Summarize();
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.p50, absl::Microseconds(500));
  EXPECT_EQ(s.p90, absl::Microseconds(900));
  EXPECT_EQ(s.p99, absl::Microseconds(990));
  EXPECT_EQ(s.max, absl::Microseconds(1000));
}

TEST(LatencyTrackerTest, CompletesCallsWhenTheirIndexIsPersisted) {
  LatencyTracker t;
  t.OnAccepted(/*accepted_index=*/100, /*count=*/100, /*sent=*/At(0), /*now=*/At(1));
  t.OnAccepted(200, 100, At(2), At(3));
  t.OnPersisted(150, At(5));  // covers the first call only
  LatencyTracker::Counts c = t.GetCounts();
  EXPECT_EQ(c.accepted_events, 200u);
  EXPECT_EQ(c.persisted_events, 100u);
  EXPECT_EQ(c.pending_calls, 1u);
  EXPECT_EQ(c.highest_accepted_index, 200u);
  EXPECT_EQ(c.persisted_index, 150u);
  t.OnPersisted(200, At(12));
  LatencySummary s = t.Summary();
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.p50, absl::Milliseconds(5));   // 5 - 0
  EXPECT_EQ(s.max, absl::Milliseconds(10));  // 12 - 2
  EXPECT_EQ(t.GetCounts().persisted_events, 200u);
  EXPECT_EQ(t.GetCounts().last_persisted, At(12));
}

TEST(LatencyTrackerTest, RepliesArrivingOutOfIndexOrder) {
  LatencyTracker t;
  t.OnAccepted(300, 100, At(0), At(4));  // a later index replied first (another channel)
  t.OnAccepted(100, 100, At(1), At(5));
  t.OnAccepted(200, 100, At(2), At(6));
  t.OnPersisted(200, At(10));
  EXPECT_EQ(t.GetCounts().persisted_events, 200u);
  EXPECT_EQ(t.GetCounts().pending_calls, 1u);
  t.OnPersisted(300, At(20));
  LatencySummary s = t.Summary();
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.max, absl::Milliseconds(20));
  EXPECT_EQ(s.p50, absl::Milliseconds(9));  // samples 8, 9, 20
}

TEST(LatencyTrackerTest, PersistedBeforeTheReplyCompletesAtTheReply) {
  LatencyTracker t;
  t.OnPersisted(500, At(3));  // the stream overtook the reply
  t.OnAccepted(500, 50, At(0), At(4));
  EXPECT_EQ(t.GetCounts().persisted_events, 50u);
  EXPECT_EQ(t.GetCounts().pending_calls, 0u);
  EXPECT_EQ(t.Summary().p50, absl::Milliseconds(4));
}

TEST(LatencyTrackerTest, IgnoresEmptyCallsAndStalePersistedValues) {
  LatencyTracker t;
  t.OnAccepted(10, 0, At(0), At(1));  // nothing accepted: not a sample
  EXPECT_EQ(t.GetCounts().pending_calls, 0u);
  t.OnPersisted(20, At(2));
  t.OnPersisted(5, At(3));
  EXPECT_EQ(t.GetCounts().persisted_index, 20u);
  EXPECT_EQ(t.Summary().count, 0u);
}

TEST(LatencyTrackerTest, WindowHoldsOnlyTheLatestSamples) {
  LatencyTracker t;
  t.OnAccepted(1, 1, At(0), At(1));
  t.OnPersisted(1, At(2));
  EXPECT_EQ(t.TakeWindow().count, 1u);
  EXPECT_EQ(t.TakeWindow().count, 0u);
  t.OnAccepted(2, 1, At(10), At(11));
  t.OnPersisted(2, At(17));
  LatencySummary w = t.TakeWindow();
  EXPECT_EQ(w.count, 1u);
  EXPECT_EQ(w.max, absl::Milliseconds(7));
  EXPECT_EQ(t.Summary().count, 2u);  // the whole run keeps everything
}

}  // namespace
}  // namespace shipper::load
