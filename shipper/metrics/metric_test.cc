#include "shipper/metrics/metric.h"

#include <limits>

#include "gtest/gtest.h"

namespace shipper::metrics {
namespace {

TEST(HistogramTest, BoundsAreInclusiveUpperBoundsAndTheRestGoesToInf) {
  Histogram h({10, 100}, 0.5);
  for (uint64_t v : {0, 10, 11, 100, 101, 5000}) h.Observe(v);
  Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.bounds, (std::vector<double>{5, 50}));  // scaled
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 4}));
  EXPECT_EQ(s.count, 6u);
  EXPECT_DOUBLE_EQ(s.sum, (0 + 10 + 11 + 100 + 101 + 5000) * 0.5);
}

TEST(HistogramTest, DurationsAreObservedInNanoseconds) {
  Histogram h({1000000}, 1e-9);  // 1 ms
  h.ObserveDuration(absl::Microseconds(500));
  h.ObserveDuration(absl::Seconds(2));
  Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.cumulative, std::vector<uint64_t>{1});
  EXPECT_EQ(s.count, 2u);
  EXPECT_DOUBLE_EQ(s.sum, 2.0005);
}

TEST(FormatLabelsTest, EscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(FormatLabels({}), "");
  EXPECT_EQ(FormatLabels({{"a", "x"}, {"b", "say \"hi\"\\\n"}}), R"({a="x",b="say \"hi\"\\\n"})");
}

TEST(FamilyTest, GetReturnsTheSameChildForTheSameLabels) {
  Family<Counter> family;
  Counter& a = family.Get(R"({x="1"})");
  a.Add(2);
  family.Get(R"({x="2"})").Add(5);
  EXPECT_EQ(&family.Get(R"({x="1"})"), &a);
  std::vector<std::pair<std::string, uint64_t>> seen;
  family.ForEach(
      [&](const std::string& labels, const Counter& c) { seen.emplace_back(labels, c.value()); });
  EXPECT_EQ(seen,
            (std::vector<std::pair<std::string, uint64_t>>{{R"({x="1"})", 2}, {R"({x="2"})", 5}}));
}

TEST(ToTextTest, WritesTheTextFormat) {
  Histogram h({1, 2}, 1);
  h.Observe(2);
  std::vector<MetricFamily> families(4);
  families[0].name = "a_total";
  families[0].help = "Line one\nback\\slash";
  families[0].type = MetricFamily::Type::kCounter;
  families[0].samples = {{R"({k="v"})", 12345678901234}, {R"({k="w"})", 0}};
  families[1].name = "empty";  // no samples: left out
  families[2].name = "g";
  families[2].help = "A gauge.";
  families[2].samples = {{"", 0.25}, {R"({x="inf"})", std::numeric_limits<double>::infinity()}};
  families[3].name = "h_seconds";
  families[3].help = "A histogram.";
  families[3].type = MetricFamily::Type::kHistogram;
  families[3].histograms = {{R"({o="f"})", h.Read()}};
  EXPECT_EQ(ToText(families), R"(# HELP a_total Line one\nback\\slash
# TYPE a_total counter
a_total{k="v"} 12345678901234
a_total{k="w"} 0
# HELP g A gauge.
# TYPE g gauge
g 0.25
g{x="inf"} +Inf
# HELP h_seconds A histogram.
# TYPE h_seconds histogram
h_seconds_bucket{o="f",le="1"} 0
h_seconds_bucket{o="f",le="2"} 1
h_seconds_bucket{o="f",le="+Inf"} 1
h_seconds_sum{o="f"} 2
h_seconds_count{o="f"} 1
)");
}

TEST(ToTextTest, HistogramWithoutLabelsGetsOnlyLe) {
  Histogram h({5}, 1e-3);
  MetricFamily family;
  family.name = "x_seconds";
  family.help = "h";
  family.type = MetricFamily::Type::kHistogram;
  family.histograms = {{"", h.Read()}};
  EXPECT_NE(ToText({family}).find("x_seconds_bucket{le=\"0.005\"} 0\n"), std::string::npos)
      << ToText({family});
}

}  // namespace
}  // namespace shipper::metrics
