#include "shipper/event/date_time.h"

#include <cstdint>
#include <random>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace shipper {
namespace {

std::string Absl(int64_t seconds, int32_t nanos) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ",
                          absl::FromUnixSeconds(seconds) + absl::Nanoseconds(nanos),
                          absl::UTCTimeZone());
}

std::string Ours(int64_t seconds, int32_t nanos) {
  char text[kRfc3339Max];
  return std::string(text, FormatRfc3339(seconds, nanos, text));
}

TEST(DateTimeTest, Rfc3339IsWhatAbslWritesAcrossTheCalendar) {
  EXPECT_EQ(Ours(0, 0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(Ours(1714979289, 123000000), "2024-05-06T07:08:09.123Z");
  EXPECT_EQ(Ours(1714979289, 1), "2024-05-06T07:08:09.000000001Z");
  EXPECT_EQ(Ours(-1, 999999999), "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(Ours(951782400, 0), "2000-02-29T00:00:00Z");
  // The first and last instants of four-digit years.
  EXPECT_EQ(Ours(-30610224000, 0), "1000-01-01T00:00:00Z");
  EXPECT_EQ(Ours(253402300799, 999999999), "9999-12-31T23:59:59.999999999Z");
  std::mt19937_64 random(42);
  std::uniform_int_distribution<int64_t> seconds(-30610224000, 253402300799);
  std::uniform_int_distribution<int32_t> nanos(0, 999999999);
  for (int i = 0; i < 100000; ++i) {
    const int64_t s = seconds(random);
    // Whole seconds, milliseconds and full nanoseconds alike.
    const int32_t n = i % 3 == 0   ? 0
                      : i % 3 == 1 ? nanos(random) / 1000000 * 1000000
                                   : nanos(random);
    ASSERT_EQ(Ours(s, n), Absl(s, n)) << s << "s " << n << "ns";
  }
}

TEST(DateTimeTest, WhatAbslWritesInAnotherShapeIsLeftToIt) {
  char text[kRfc3339Max];
  EXPECT_EQ(FormatRfc3339(-30610224001, 0, text), 0u);  // 999-12-31: three digits
  EXPECT_EQ(FormatRfc3339(253402300800, 0, text), 0u);  // 10000-01-01: five
  EXPECT_EQ(FormatRfc3339(0, -1, text), 0u);
  EXPECT_EQ(FormatRfc3339(0, 1000000000, text), 0u);
}

}  // namespace
}  // namespace shipper
