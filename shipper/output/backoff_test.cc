#include "shipper/output/backoff.h"

#include "gtest/gtest.h"

namespace shipper {
namespace {

TEST(BackoffTest, DoublesUpToMaxWithEqualJitter) {
  Backoff backoff(absl::Milliseconds(100), absl::Milliseconds(700));
  const absl::Duration ceilings[] = {absl::Milliseconds(100), absl::Milliseconds(200),
                                     absl::Milliseconds(400), absl::Milliseconds(700),
                                     absl::Milliseconds(700)};
  for (absl::Duration ceiling : ceilings) {
    absl::Duration wait = backoff.Next();
    EXPECT_GE(wait, ceiling / 2);
    EXPECT_LE(wait, ceiling);
  }
}

TEST(BackoffTest, JitterSpreadsWaits) {
  Backoff a(absl::Seconds(1), absl::Seconds(1));
  int distinct = 0;
  absl::Duration previous = a.Next();
  for (int i = 0; i < 20; ++i) {
    absl::Duration wait = a.Next();
    distinct += wait != previous;
    previous = wait;
  }
  EXPECT_GT(distinct, 15) << "waits drawn from [0.5s, 1s] at nanosecond grain rarely repeat";
}

TEST(BackoffTest, ZeroInitNeverWaits) {
  Backoff backoff(absl::ZeroDuration(), absl::ZeroDuration());
  EXPECT_EQ(backoff.Next(), absl::ZeroDuration());
  EXPECT_EQ(backoff.Next(), absl::ZeroDuration());
}

}  // namespace
}  // namespace shipper
