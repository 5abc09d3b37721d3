// The periodic metrics log line (logging.metrics.period, like Beats' logging.metrics): every
// period, one INFO line with how much each counter grew and what the histograms observed since
// the last line, e.g.
//   metrics in the last 30s: events_received +5000, events_accepted +5000, ...
// and nothing at all when none of them changed, so an idle Shipper stays quiet.
//
// Thread safety: Summary runs `collect` on its own thread; destroying it stops and joins that
// thread. SummaryLine is a pure function.
#ifndef SHIPPER_SHIPPER_METRICS_SUMMARY_H_
#define SHIPPER_SHIPPER_METRICS_SUMMARY_H_

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "shipper/metrics/metric.h"

namespace shipper::metrics {

// The line for what changed from `before` to `after` (two collections `period` apart), or "" when
// no summarized counter or histogram changed. Gauges and families with summarized == false are
// left out.
std::string SummaryLine(const std::vector<MetricFamily>& before,
                        const std::vector<MetricFamily>& after, absl::Duration period);

class Summary {
 public:
  // REQUIRES: period > 0.
  Summary(absl::Duration period, std::function<std::vector<MetricFamily>()> collect);
  ~Summary();

 private:
  void Run();

  const absl::Duration period_;
  const std::function<std::vector<MetricFamily>()> collect_;
  absl::Notification stop_;
  std::thread thread_;  // started last
};

}  // namespace shipper::metrics

#endif  // SHIPPER_SHIPPER_METRICS_SUMMARY_H_
