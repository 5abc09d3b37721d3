#include "tests/load/otlp_shapes.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"

namespace shipper::load {
namespace {

namespace metrics = opentelemetry::proto::metrics::v1;

TEST(OtlpShapesTest, NamesParseBackAndUnknownOnesAreNamed) {
  for (const char* name : {"filebeat", "tiny", "large", "span", "gauge", "histogram"}) {
    absl::StatusOr<OtlpShape> shape = ParseOtlpShape(name);
    ASSERT_TRUE(shape.ok()) << name << ": " << shape.status();
    EXPECT_EQ(OtlpShapeName(*shape), name);
  }
  absl::StatusOr<OtlpShape> unknown = ParseOtlpShape("sum");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("\"sum\""), std::string::npos) << unknown.status();
  EXPECT_NE(unknown.status().message().find("histogram"), std::string::npos) << unknown.status();
}

TEST(OtlpShapesTest, EachShapeIsAnExportOfItsSignal) {
  EXPECT_EQ(ShapeSignal(EventShape::kTiny), OtlpSignal::kLogs);
  EXPECT_EQ(ShapeSignal(OtlpShape(OtlpShape::Kind::kSpan)), OtlpSignal::kTraces);
  EXPECT_EQ(ShapeSignal(OtlpShape(OtlpShape::Kind::kGauge)), OtlpSignal::kMetrics);
  EXPECT_EQ(ShapeSignal(OtlpShape(OtlpShape::Kind::kHistogram)), OtlpSignal::kMetrics);
  opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest logs;
  ASSERT_TRUE(logs.ParseFromString(MakeOtlpRequest(EventShape::kTiny, 0, 3)));
  EXPECT_EQ(logs.resource_logs(0).scope_logs(0).log_records_size(), 3);
}

TEST(OtlpShapesTest, SpansHaveTenAttributesTwoEventsAndDifferentIds) {
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
  ASSERT_TRUE(request.ParseFromString(MakeOtlpRequest(OtlpShape(OtlpShape::Kind::kSpan), 100, 5)));
  ASSERT_EQ(request.resource_spans_size(), 1);
  const auto& spans = request.resource_spans(0).scope_spans(0).spans();
  ASSERT_EQ(spans.size(), 5);
  for (const auto& span : spans) {
    EXPECT_EQ(span.attributes_size(), 10);
    EXPECT_EQ(span.events_size(), 2);
    EXPECT_EQ(span.trace_id().size(), 16u);
    EXPECT_EQ(span.span_id().size(), 8u);
    EXPECT_EQ(span.parent_span_id().size(), 8u);
    EXPECT_GT(span.end_time_unix_nano(), span.start_time_unix_nano());
  }
  EXPECT_NE(spans[0].span_id(), spans[1].span_id());
  // Deterministic in seq: the same arguments make the same bytes.
  EXPECT_EQ(MakeOtlpRequest(OtlpShape(OtlpShape::Kind::kSpan), 100, 5),
            request.SerializeAsString());
}

TEST(OtlpShapesTest, GaugeAndHistogramAreOnePointAMetric) {
  metrics::Metric gauge, histogram;
  for (auto [kind, metric] : {std::pair{OtlpShape::Kind::kGauge, &gauge},
                              std::pair{OtlpShape::Kind::kHistogram, &histogram}}) {
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
    ASSERT_TRUE(request.ParseFromString(MakeOtlpRequest(OtlpShape(kind), 7, 4)));
    const auto& metrics = request.resource_metrics(0).scope_metrics(0).metrics();
    ASSERT_EQ(metrics.size(), 4);
    *metric = metrics[0];
  }
  ASSERT_TRUE(gauge.has_gauge());
  ASSERT_EQ(gauge.gauge().data_points_size(), 1);
  EXPECT_EQ(gauge.gauge().data_points(0).value_case(), metrics::NumberDataPoint::kAsDouble);
  ASSERT_TRUE(histogram.has_histogram());
  ASSERT_EQ(histogram.histogram().data_points_size(), 1);
  const metrics::HistogramDataPoint& point = histogram.histogram().data_points(0);
  EXPECT_EQ(point.bucket_counts_size(), 20);
  EXPECT_EQ(point.explicit_bounds_size(), 19);
  uint64_t count = 0;
  for (uint64_t n : point.bucket_counts()) count += n;
  EXPECT_EQ(point.count(), count);
}

}  // namespace
}  // namespace shipper::load
