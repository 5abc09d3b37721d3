#include "shipper/metrics/persist_latency.h"

#include "gtest/gtest.h"

namespace shipper::metrics {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

class PersistLatencyTest : public ::testing::Test {
 protected:
  // Buckets at 1, 2, 5 ms.
  Histogram histogram_{{1000000, 2000000, 5000000}, 1e-9};
  PersistLatency latency_{&histogram_};
};

TEST_F(PersistLatencyTest, ObservesEachCallWhenThePersistedIndexPassesItsLastEvent) {
  latency_.Accepted(10, kT0, kT0);
  latency_.Accepted(20, kT0 + absl::Milliseconds(1), kT0 + absl::Milliseconds(1));
  latency_.Persisted(15, kT0 + absl::Milliseconds(2));  // covers the first call only
  Histogram::Snapshot s = histogram_.Read();
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{0, 1, 1}));  // 2 ms

  latency_.Persisted(20, kT0 + absl::Milliseconds(5));
  s = histogram_.Read();
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{0, 1, 2}));  // + 4 ms
  EXPECT_NEAR(s.sum, 0.006, 1e-12);

  latency_.Persisted(30, kT0 + absl::Seconds(1));  // nothing left to observe
  EXPECT_EQ(histogram_.Read().count, 2u);
}

TEST_F(PersistLatencyTest, CallsFinishingOutOfIndexOrderAreEachObserved) {
  latency_.Accepted(20, kT0, kT0);
  latency_.Accepted(10, kT0, kT0);
  latency_.Persisted(10, kT0 + absl::Microseconds(500));
  EXPECT_EQ(histogram_.Read().cumulative[0], 1u);
  latency_.Persisted(20, kT0 + absl::Milliseconds(3));
  EXPECT_EQ(histogram_.Read().cumulative, (std::vector<uint64_t>{1, 1, 2}));
}

TEST_F(PersistLatencyTest, AlreadyPersistedCallIsObservedAtOnce) {
  latency_.Persisted(50, kT0);
  latency_.Accepted(40, kT0 - absl::Microseconds(300), kT0);  // the output beat the reply
  Histogram::Snapshot s = histogram_.Read();
  EXPECT_EQ(s.count, 1u);
  EXPECT_NEAR(s.sum, 0.0003, 1e-12);
}

TEST_F(PersistLatencyTest, CallsBeyondTheLimitAreNotMeasured) {
  for (size_t i = 1; i <= PersistLatency::kMaxPending + 10; ++i) latency_.Accepted(i, kT0, kT0);
  latency_.Persisted(PersistLatency::kMaxPending + 10, kT0 + absl::Milliseconds(1));
  EXPECT_EQ(histogram_.Read().count, PersistLatency::kMaxPending);
  // The next calls are measured again.
  latency_.Accepted(PersistLatency::kMaxPending + 11, kT0, kT0);
  latency_.Persisted(PersistLatency::kMaxPending + 11, kT0 + absl::Milliseconds(1));
  EXPECT_EQ(histogram_.Read().count, PersistLatency::kMaxPending + 1);
}

}  // namespace
}  // namespace shipper::metrics
