#include "shipper/metrics/metric.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace shipper::metrics {
namespace {

// Shortest text that reads back as the same double, with Prometheus's spelling of infinities.
std::string FormatValue(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  char buffer[32];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  CHECK(error == std::errc()) << "a double always fits 32 characters";
  return std::string(buffer, end);
}

// Label escaping: backslash, double quote and line feed. HELP escapes only backslash and line
// feed.
std::string Escape(absl::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

// `labels` with `le="bound"` added as the last label.
std::string WithLe(const std::string& labels, absl::string_view le) {
  if (labels.empty()) return absl::StrCat("{le=\"", le, "\"}");
  return absl::StrCat(labels.substr(0, labels.size() - 1), ",le=\"", le, "\"}");
}

absl::string_view TypeName(MetricFamily::Type type) {
  switch (type) {
    case MetricFamily::Type::kCounter:
      return "counter";
    case MetricFamily::Type::kGauge:
      return "gauge";
    case MetricFamily::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

Histogram::Histogram(std::vector<uint64_t> bounds, double scale)
    : bounds_(std::move(bounds)),
      scale_(scale),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  CHECK(std::is_sorted(bounds_.begin(), bounds_.end())) << "histogram bounds must ascend";
}

void Histogram::Observe(uint64_t value) {
  size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snapshot;
  snapshot.bounds.reserve(bounds_.size());
  snapshot.cumulative.reserve(bounds_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    snapshot.bounds.push_back(static_cast<double>(bounds_[i]) * scale_);
    snapshot.cumulative.push_back(running);
  }
  snapshot.count = running + buckets_[bounds_.size()].load(std::memory_order_relaxed);
  snapshot.sum = static_cast<double>(sum_.load(std::memory_order_relaxed)) * scale_;
  return snapshot;
}

std::string FormatLabels(
    std::initializer_list<std::pair<absl::string_view, absl::string_view>> labels) {
  if (labels.size() == 0) return "";
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    if (out.size() > 1) out += ',';
    absl::StrAppend(&out, name, "=\"", Escape(value, /*quotes=*/true), "\"");
  }
  out += '}';
  return out;
}

std::string ToText(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& family : families) {
    if (family.samples.empty() && family.histograms.empty()) continue;
    absl::StrAppend(&out, "# HELP ", family.name, " ", Escape(family.help, /*quotes=*/false),
                    "\n# TYPE ", family.name, " ", TypeName(family.type), "\n");
    for (const MetricFamily::Sample& sample : family.samples) {
      absl::StrAppend(&out, family.name, sample.labels, " ", FormatValue(sample.value), "\n");
    }
    for (const MetricFamily::HistogramSample& h : family.histograms) {
      const Histogram::Snapshot& s = h.snapshot;
      for (size_t i = 0; i < s.bounds.size(); ++i) {
        absl::StrAppend(&out, family.name, "_bucket", WithLe(h.labels, FormatValue(s.bounds[i])),
                        " ", s.cumulative[i], "\n");
      }
      absl::StrAppend(&out, family.name, "_bucket", WithLe(h.labels, "+Inf"), " ", s.count, "\n",
                      family.name, "_sum", h.labels, " ", FormatValue(s.sum), "\n", family.name,
                      "_count", h.labels, " ", s.count, "\n");
    }
  }
  return out;
}

}  // namespace shipper::metrics
