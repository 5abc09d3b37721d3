#include "shipper/metrics/summary.h"

#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "glog/logging.h"

namespace shipper::metrics {
namespace {

// "shipper_events_received_total" reads "events_received" in the line.
absl::string_view ShortName(absl::string_view name) {
  absl::ConsumePrefix(&name, "shipper_");
  absl::ConsumeSuffix(&name, "_total");
  return name;
}

// What a summarized family held, by "<name><labels>": counter values, histogram counts and sums.
struct Totals {
  std::map<std::string, double> values;
  std::map<std::string, std::pair<uint64_t, double>> histograms;
};

Totals Index(const std::vector<MetricFamily>& families) {
  Totals totals;
  for (const MetricFamily& family : families) {
    if (!family.summarized) continue;
    for (const MetricFamily::Sample& sample : family.samples) {
      if (family.type == MetricFamily::Type::kCounter) {
        totals.values[absl::StrCat(family.name, sample.labels)] = sample.value;
      }
    }
    for (const MetricFamily::HistogramSample& h : family.histograms) {
      totals.histograms[absl::StrCat(family.name, h.labels)] = {h.snapshot.count, h.snapshot.sum};
    }
  }
  return totals;
}

}  // namespace

std::string SummaryLine(const std::vector<MetricFamily>& before,
                        const std::vector<MetricFamily>& after, absl::Duration period) {
  const Totals old_totals = Index(before);
  std::vector<std::string> parts;
  for (const MetricFamily& family : after) {
    if (!family.summarized) continue;
    for (const MetricFamily::Sample& sample : family.samples) {
      if (family.type != MetricFamily::Type::kCounter) continue;
      auto old = old_totals.values.find(absl::StrCat(family.name, sample.labels));
      const double delta = sample.value - (old == old_totals.values.end() ? 0 : old->second);
      if (delta != 0)
        parts.push_back(absl::StrCat(ShortName(family.name), sample.labels, " +", delta));
    }
    for (const MetricFamily::HistogramSample& h : family.histograms) {
      auto old = old_totals.histograms.find(absl::StrCat(family.name, h.labels));
      const auto [count, sum] =
          old == old_totals.histograms.end() ? std::pair<uint64_t, double>{0, 0} : old->second;
      const uint64_t observed = h.snapshot.count - count;
      if (observed == 0) continue;
      const double mean = (h.snapshot.sum - sum) / observed;
      parts.push_back(absl::StrCat(ShortName(family.name), h.labels, " ", observed, " (mean ",
                                   absl::EndsWith(family.name, "_seconds")
                                       ? absl::FormatDuration(absl::Seconds(mean))
                                       : absl::StrCat(mean),
                                   ")"));
    }
  }
  if (parts.empty()) return "";
  return absl::StrCat("metrics in the last ", absl::FormatDuration(period), ": ",
                      absl::StrJoin(parts, ", "));
}

Summary::Summary(absl::Duration period, std::function<std::vector<MetricFamily>()> collect)
    : period_(period), collect_(std::move(collect)), thread_([this] { Run(); }) {
  CHECK_GT(period, absl::ZeroDuration());
}

Summary::~Summary() {
  stop_.Notify();
  thread_.join();
}

void Summary::Run() {
  std::vector<MetricFamily> before = collect_();
  while (!stop_.WaitForNotificationWithTimeout(period_)) {
    std::vector<MetricFamily> after = collect_();
    std::string line = SummaryLine(before, after, period_);
    if (!line.empty()) LOG(INFO) << line;
    before = std::move(after);
  }
}

}  // namespace shipper::metrics
