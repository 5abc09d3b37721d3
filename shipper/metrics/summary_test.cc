#include "shipper/metrics/summary.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace shipper::metrics {
namespace {

MetricFamily Family(std::string name, MetricFamily::Type type,
                    std::vector<MetricFamily::Sample> samples) {
  MetricFamily family;
  family.name = std::move(name);
  family.type = type;
  family.samples = std::move(samples);
  return family;
}

MetricFamily HistogramFamily(std::string name, const Histogram& h) {
  MetricFamily family = Family(std::move(name), MetricFamily::Type::kHistogram, {});
  family.histograms = {{"", h.Read()}};
  return family;
}

using Type = MetricFamily::Type;

TEST(SummaryLineTest, SilentWhenNoCounterChanged) {
  std::vector<MetricFamily> before = {
      Family("shipper_events_received_total", Type::kCounter, {{"", 10}}),
      Family("shipper_queue_events", Type::kGauge, {{"", 3}})};
  std::vector<MetricFamily> after = {
      Family("shipper_events_received_total", Type::kCounter, {{"", 10}}),
      Family("shipper_queue_events", Type::kGauge, {{"", 7}})};  // gauges are not summarized
  EXPECT_EQ(SummaryLine(before, after, absl::Seconds(30)), "");
}

TEST(SummaryLineTest, ReportsCounterDeltasWithShortNamesAndLabels) {
  std::vector<MetricFamily> before = {
      Family("shipper_events_received_total", Type::kCounter, {{"", 10}}),
      Family("shipper_grpc_requests_total", Type::kCounter, {{R"({code="OK"})", 4}})};
  std::vector<MetricFamily> after = {
      Family("shipper_events_received_total", Type::kCounter, {{"", 1510}}),
      Family("shipper_grpc_requests_total", Type::kCounter,
             {{R"({code="OK"})", 7}, {R"({code="UNAVAILABLE"})", 1}})};  // a new child
  EXPECT_EQ(SummaryLine(before, after, absl::Seconds(30)),
            R"(metrics in the last 30s: events_received +1500, grpc_requests{code="OK"} +3, )"
            R"(grpc_requests{code="UNAVAILABLE"} +1)");
}

TEST(SummaryLineTest, ReportsHistogramCountAndMeanOfTheNewObservations) {
  Histogram h({10}, 1);
  h.Observe(100);
  std::vector<MetricFamily> before = {HistogramFamily("shipper_batch_events", h)};
  h.Observe(4);
  h.Observe(6);
  std::vector<MetricFamily> after = {HistogramFamily("shipper_batch_events", h)};
  EXPECT_EQ(SummaryLine(before, after, absl::Seconds(1)),
            "metrics in the last 1s: batch_events 2 (mean 5)");
}

TEST(SummaryLineTest, ShowsTheMeanOfSecondsAsADuration) {
  Histogram h({1000000}, 1e-9);
  std::vector<MetricFamily> before = {HistogramFamily("shipper_persist_duration_seconds", h)};
  h.ObserveDuration(absl::Microseconds(1500));
  h.ObserveDuration(absl::Microseconds(500));
  std::vector<MetricFamily> after = {HistogramFamily("shipper_persist_duration_seconds", h)};
  EXPECT_EQ(SummaryLine(before, after, absl::Seconds(30)),
            "metrics in the last 30s: persist_duration_seconds 2 (mean 1ms)");
}

TEST(SummaryLineTest, LeavesOutUnsummarizedFamilies) {
  MetricFamily before = Family("process_cpu_seconds_total", Type::kCounter, {{"", 1}});
  MetricFamily after = Family("process_cpu_seconds_total", Type::kCounter, {{"", 2}});
  before.summarized = after.summarized = false;
  EXPECT_EQ(SummaryLine({before}, {after}, absl::Seconds(30)), "");
}

TEST(SummaryTest, CollectsEveryPeriodAndStopsPromptly) {
  std::atomic<int> collections{0};
  absl::Notification third;
  {
    Summary summary(absl::Milliseconds(10), [&] {
      if (++collections == 3) third.Notify();
      return std::vector<MetricFamily>{};
    });
    EXPECT_TRUE(third.WaitForNotificationWithTimeout(absl::Seconds(10)));
  }
  EXPECT_GE(collections.load(), 3);
}

TEST(SummaryTest, DestructionDoesNotWaitForThePeriod) {
  const absl::Time start = absl::Now();
  {
    Summary summary(absl::Hours(1), [] { return std::vector<MetricFamily>{}; });
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace shipper::metrics
