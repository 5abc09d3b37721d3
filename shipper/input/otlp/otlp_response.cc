#include "shipper/input/otlp/otlp_response.h"

#include "glog/logging.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"

namespace shipper {
namespace {

namespace collector = opentelemetry::proto::collector;

// `SetRejected(partial, n)` sets the signal's count of rejected records.
template <typename Response, typename SetRejected>
std::unique_ptr<google::protobuf::Message> Make(const ExportOutcome& outcome,
                                                SetRejected set_rejected) {
  auto response = std::make_unique<Response>();
  if (outcome.rejected_records > 0) {
    auto* partial = response->mutable_partial_success();
    set_rejected(partial, outcome.rejected_records);
    partial->set_error_message(outcome.error_message);
  }
  return response;
}

}  // namespace

std::unique_ptr<google::protobuf::Message> ExportResponse(OtlpSignal signal,
                                                          const ExportOutcome& outcome) {
  CHECK(outcome.status.ok());
  switch (signal) {
    case OtlpSignal::kLogs:
      return Make<collector::logs::v1::ExportLogsServiceResponse>(
          outcome, [](auto* partial, int64_t n) { partial->set_rejected_log_records(n); });
    case OtlpSignal::kTraces:
      return Make<collector::trace::v1::ExportTraceServiceResponse>(
          outcome, [](auto* partial, int64_t n) { partial->set_rejected_spans(n); });
    case OtlpSignal::kMetrics:
      break;
  }
  return Make<collector::metrics::v1::ExportMetricsServiceResponse>(
      outcome, [](auto* partial, int64_t n) { partial->set_rejected_data_points(n); });
}

}  // namespace shipper
