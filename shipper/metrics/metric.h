// Shipper's metrics registry: counters and fixed-bucket histograms updated lock-free on hot paths,
// labeled children created once and then kept by their users, and the Prometheus text exposition
// format (version 0.0.4) they are scraped in.
//
// Hot paths pay one relaxed atomic add per update (three per histogram observation), never a lock
// or an allocation. Values are collected at scrape time into MetricFamily values, which both the
// /metrics page and the periodic log summary read; gauges are computed then too (queue fill, CPU
// quota, /proc), so nothing keeps them current between scrapes.
//
// Thread safety: Counter, Histogram and Family are safe for concurrent use from any thread.
// A collection (MetricFamily values) is a plain value.
#ifndef SHIPPER_SHIPPER_METRICS_METRIC_H_
#define SHIPPER_SHIPPER_METRICS_METRIC_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/mutex.h"

namespace shipper::metrics {

// A count that only goes up.
class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Observations counted in fixed buckets. Observations are whole numbers in the histogram's own
// unit (nanoseconds, events); `scale` converts them to the exposed unit (1e-9: seconds).
class Histogram {
 public:
  // REQUIRES: `bounds` ascending (the inclusive upper bounds, in observation units).
  Histogram(std::vector<uint64_t> bounds, double scale);

  void Observe(uint64_t value);
  void ObserveDuration(absl::Duration d) { Observe(absl::ToInt64Nanoseconds(d)); }

  struct Snapshot {
    std::vector<double> bounds;        // scaled upper bounds, without +Inf
    std::vector<uint64_t> cumulative;  // per bound, observations <= it
    uint64_t count = 0;                // every observation (the +Inf bucket)
    double sum = 0;                    // scaled
  };
  // Buckets and count agree with each other; sum may include an observation they miss.
  Snapshot Read() const;

 private:
  const std::vector<uint64_t> bounds_;
  const double scale_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1, the last is +Inf
  std::atomic<uint64_t> sum_{0};
};

// `{a="x",b="y"}` with Prometheus escaping (backslash, quote, newline); "" for no labels.
std::string FormatLabels(std::initializer_list<std::pair<absl::string_view, absl::string_view>>);

// The children of one labeled metric, keyed by their formatted labels (FormatLabels). Get()
// locks: callers on hot paths look their child up once and keep the reference, which stays valid
// for the family's life. T must be default-constructible.
template <typename T>
class Family {
 public:
  T& Get(const std::string& labels) {
    runtime::MutexLock lock(&mu_);
    std::unique_ptr<T>& child = children_[labels];
    if (child == nullptr) child = std::make_unique<T>();
    return *child;
  }

  // Calls fn(labels, child) for every child, in label order.
  void ForEach(const std::function<void(const std::string&, const T&)>& fn) const {
    runtime::MutexLock lock(&mu_);
    for (const auto& [labels, child] : children_) fn(labels, *child);
  }

 private:
  mutable runtime::Mutex mu_;
  std::map<std::string, std::unique_ptr<T>> children_ ABSL_GUARDED_BY(mu_);
};

// One metric as collected at scrape time.
struct MetricFamily {
  enum class Type { kCounter, kGauge, kHistogram };
  struct Sample {
    std::string labels;  // FormatLabels() output
    double value = 0;
  };
  struct HistogramSample {
    std::string labels;
    Histogram::Snapshot snapshot;
  };

  std::string name;
  std::string help;
  Type type = Type::kGauge;
  // Whether the periodic log line reports its changes (see summary.h): false for counters that
  // move even when Shipper is idle, such as CPU time.
  bool summarized = true;
  std::vector<Sample> samples;              // counters and gauges
  std::vector<HistogramSample> histograms;  // histograms
};

// Builds a collection of families for Collect(): each Add starts a family; Sample and Histogram
// add to the last one. A plain value; one thread at a time.
class Collection {
 public:
  Collection& Add(absl::string_view name, absl::string_view help, MetricFamily::Type type) {
    families_.emplace_back();
    families_.back().name = std::string(name);
    families_.back().help = std::string(help);
    families_.back().type = type;
    return *this;
  }
  // Leaves the last family out of the periodic log line.
  Collection& Unsummarized() {
    families_.back().summarized = false;
    return *this;
  }
  Collection& Sample(double value, std::string labels = "") {
    families_.back().samples.push_back({std::move(labels), value});
    return *this;
  }
  Collection& Histogram(const metrics::Histogram& histogram, std::string labels = "") {
    families_.back().histograms.push_back({std::move(labels), histogram.Read()});
    return *this;
  }
  std::vector<MetricFamily> Take() { return std::move(families_); }

 private:
  std::vector<MetricFamily> families_;
};

// The Prometheus text exposition format, version 0.0.4: HELP and TYPE lines, then the samples.
// Families without samples are left out.
std::string ToText(const std::vector<MetricFamily>& families);

// The Content-Type that goes with ToText().
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace shipper::metrics

#endif  // SHIPPER_SHIPPER_METRICS_METRIC_H_
