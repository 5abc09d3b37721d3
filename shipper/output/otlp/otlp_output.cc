#include "shipper/output/otlp/otlp_output.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "runtime/mutex.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/output/otlp/otlp_log_record.h"
#include "shipper/output/otlp/otlp_output_settings.h"
#include "shipper/output/otlp/otlp_request.h"
#include "shipper/output/otlp/otlp_transport.h"

namespace shipper {
namespace {

// Distinct partial-success messages remembered, so that each is logged once; past it, no more.
constexpr size_t kMaxRememberedMessages = 1000;

class OtlpOutput final : public Output {
 public:
  OtlpOutput(const OtlpOutputSettings& config, std::unique_ptr<OtlpTransport> transport)
      : config_(config),
        rejected_by_receiver_(
            metrics::ShipperMetrics::Get().OutputItems("otlp", "rejected_by_receiver")),
        transport_(std::move(transport)) {}

  absl::Status Write(const Events& events, Outcome* outcome) override {
    if (cancelled()) return absl::CancelledError("otlp: shutting down");
    // Reused by the worker from batch to batch: the records' buffers keep their capacity.
    thread_local std::vector<OtlpLogRecord> records;
    if (records.size() < events.size()) records.resize(events.size());
    for (size_t i = 0; i < events.size(); ++i) MapEvent(events.bytes(i), &records[i]);
    const absl::Span<const OtlpLogRecord> mapped(records.data(), events.size());

    RequestPlan plan = PlanRequests(mapped, config_.max_request_bytes);
    for (size_t i : plan.too_large) {
      outcome->rejected.push_back({i, absl::StrCat("otlp: the record alone is larger than ",
                                                   OtlpOutputKey("max_request_bytes"), " (",
                                                   config_.max_request_bytes, " bytes)")});
    }
    std::vector<std::vector<size_t>> pending = std::move(plan.requests);
    while (!pending.empty()) {
      std::vector<std::string> bodies;
      bodies.reserve(pending.size());
      for (const std::vector<size_t>& which : pending)
        bodies.push_back(EncodeRequest(mapped, which));
      const std::vector<ExportAnswer> answers = transport_->Send(bodies);
      std::vector<std::vector<size_t>> halves;
      for (size_t r = 0; r < pending.size(); ++r) {
        const ExportAnswer& answer = answers[r];
        const std::vector<size_t>& which = pending[r];
        metrics::ShipperMetrics::Get().OutputRequests("otlp", answer.status).Add();
        switch (answer.verdict) {
          case ExportAnswer::kWritten:
            if (answer.rejected > 0 || !answer.rejected_message.empty()) PartialSuccess(answer);
            break;
          case ExportAnswer::kRetry:
            for (size_t i : which) outcome->Fail(i, Failure(answer));
            outcome->retry_after = std::max(outcome->retry_after, answer.retry_delay);
            break;
          case ExportAnswer::kTooLarge:
          case ExportAnswer::kInvalid:
            if (which.size() > 1) {
              const auto middle = which.begin() + which.size() / 2;
              halves.emplace_back(which.begin(), middle);
              halves.emplace_back(middle, which.end());
              break;
            }
            [[fallthrough]];
          case ExportAnswer::kRefused:
            for (size_t i : which) {
              outcome->rejected.push_back(
                  {i, absl::StrCat("otlp ", config_.Target(), ": ", answer.message)});
            }
            break;
        }
      }
      pending = std::move(halves);
    }
    const auto by_event = [](const Rejection& a, const Rejection& b) { return a.event < b.event; };
    std::sort(outcome->rejected.begin(), outcome->rejected.end(), by_event);
    std::sort(outcome->failed.begin(), outcome->failed.end());
    return absl::OkStatus();
  }

  void Cancel() override {
    {
      runtime::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    transport_->Cancel();
  }

 private:
  bool cancelled() {
    runtime::MutexLock lock(&mu_);
    return cancelled_;
  }

  std::string Failure(const ExportAnswer& answer) const {
    std::string failure = absl::StrCat("otlp ", config_.Target(), ": ", answer.message);
    if (answer.retry_delay > absl::ZeroDuration()) {
      absl::StrAppend(&failure, " (the receiver asked to retry after ",
                      absl::FormatDuration(answer.retry_delay), ")");
    }
    return failure;
  }

  // Counts what the receiver took but dropped, and logs its message once per distinct message.
  void PartialSuccess(const ExportAnswer& answer) {
    rejected_by_receiver_.Add(static_cast<uint64_t>(std::max<int64_t>(answer.rejected, 0)));
    {
      runtime::MutexLock lock(&mu_);
      if (logged_.size() >= kMaxRememberedMessages ||
          !logged_.insert(answer.rejected_message).second) {
        return;
      }
    }
    LOG(WARNING) << "otlp " << config_.Target() << ": the receiver accepted a request but dropped "
                 << answer.rejected << " of its log records (partial success; counted, not "
                 << "retried): " << answer.rejected_message;
  }

  // Constant after construction.
  const OtlpOutputSettings config_;
  metrics::Counter& rejected_by_receiver_;
  const std::unique_ptr<OtlpTransport> transport_;

  runtime::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<std::string> logged_ ABSL_GUARDED_BY(mu_);  // partial-success messages
};

}  // namespace

absl::StatusOr<std::unique_ptr<Output>> OtlpOutputSettings::Build() const {
  absl::StatusOr<std::unique_ptr<OtlpTransport>> transport =
      protocol == OtlpProtocol::kGrpc ? NewGrpcTransport(*this) : NewHttpTransport(*this);
  if (!transport.ok()) return transport.status();
  return std::make_unique<OtlpOutput>(*this, *std::move(transport));
}

OutputType OtlpOutputType() {
  return MakeOutputType<OtlpOutputSettings>(
      "otlp",
      "send events as OTLP log records (gRPC or HTTP) to a Collector, Elasticsearch's /_otlp, a "
      "vendor or another Shipper",
      OtlpOutputKeys());
}

}  // namespace shipper
