#include "shipper/output/otlp/otlp_output.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "runtime/mutex.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/output/otlp/otlp_output_settings.h"
#include "shipper/output/otlp/otlp_record.h"
#include "shipper/output/otlp/otlp_request.h"
#include "shipper/output/otlp/otlp_transport.h"
#include "shipper/output/otlp/otlp_wire_writer.h"

namespace shipper {
namespace {

// Distinct partial-success messages remembered, so that each is logged once; past it, no more.
constexpr size_t kMaxRememberedMessages = 1000;
// The least a batch's requests are filled to before the batch is split for max_in_flight.
constexpr size_t kMinFillBytes = 64 << 10;
// Room in each share for its Resource* and Scope* messages.
constexpr size_t kGroupsAllowance = 4 << 10;

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
    thread_local std::vector<OtlpRecord> records;
    if (records.size() < events.size()) records.resize(events.size());
    // Events of one client's batch share their resource: each is written once per run of them.
    std::optional<wire::EventParts> before;
    for (size_t i = 0; i < events.size(); ++i) {
      const wire::EventParts parts(events.bytes(i));
      MapEvent(parts, &records[i], before ? &*before : nullptr, i == 0 ? nullptr : &records[i - 1]);
      before = parts;
    }
    const absl::Span<const OtlpRecord> mapped(records.data(), events.size());

    RequestPlan plan = PlanRequests(mapped, config_.max_request_bytes, FillBytes(mapped));
    for (size_t i : plan.too_large) {
      outcome->rejected.push_back({i, absl::StrCat("otlp: the record alone is larger than ",
                                                   OtlpOutputKey("max_request_bytes"), " (",
                                                   config_.max_request_bytes, " bytes)")});
    }
    std::vector<std::vector<size_t>> pending = std::move(plan.requests);
    while (!pending.empty()) {
      std::vector<std::vector<size_t>> halves;
      // At most max_in_flight requests are encoded at once, the ones sent together: a batch's
      // requests beyond them would wait encoded, holding the batch's size again.
      for (size_t first = 0; first < pending.size(); first += config_.max_in_flight) {
        const size_t end = std::min(pending.size(), first + config_.max_in_flight);
        // A request holds one signal's records (PlanRequests()): its first record's.
        const auto signal = [&](size_t r) { return mapped[pending[r].front()].signal; };
        std::vector<ExportRequest> bodies;
        for (size_t r = first; r < end; ++r) {
          bodies.push_back({signal(r), EncodeRequest(mapped, pending[r])});
        }
        const std::vector<ExportAnswer> answers = transport_->Send(std::move(bodies));
        for (size_t r = first; r < end; ++r)
          Judge(answers[r - first], signal(r), pending[r], &halves, outcome);
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

  // How full a request of the batch `mapped` gets: an equal share of it per request in flight,
  // so that a whole batch's requests go out together rather than one after the other (and smaller
  // requests pass the receiver's HTTP/2 flow-control window sooner); at least kMinFillBytes, so
  // that small batches are not cut into tiny requests, and at most max_request_bytes.
  size_t FillBytes(absl::Span<const OtlpRecord> mapped) const {
    // As PlanRequests() counts: each record with its tag and length, and room for its groups.
    size_t total = 0;
    for (const OtlpRecord& r : mapped) total += r.record.size() + WireWriter::kFieldOverhead;
    const size_t share = total / config_.max_in_flight + total / 64 + kGroupsAllowance;
    return std::min(config_.max_request_bytes, std::max(kMinFillBytes, share));
  }

  // What the answer to the request of the records `which` means for them: written, failed for
  // now, refused, or (too large, invalid) sent again as two halves, added to `halves`. `signal`:
  // the request's, which its messages name the URL or method of.
  void Judge(const ExportAnswer& answer, OtlpSignal signal, const std::vector<size_t>& which,
             std::vector<std::vector<size_t>>* halves, Outcome* outcome) {
    metrics::ShipperMetrics::Get().OutputRequests("otlp", answer.status).Add();
    switch (answer.verdict) {
      case ExportAnswer::kWritten:
        if (answer.rejected > 0 || !answer.rejected_message.empty()) PartialSuccess(answer, signal);
        break;
      case ExportAnswer::kRetry:
        for (size_t i : which) outcome->Fail(i, Failure(answer, signal));
        outcome->retry_after = std::max(outcome->retry_after, answer.retry_delay);
        break;
      case ExportAnswer::kTooLarge:
      case ExportAnswer::kInvalid:
        if (which.size() > 1) {
          const auto middle = which.begin() + which.size() / 2;
          halves->emplace_back(which.begin(), middle);
          halves->emplace_back(middle, which.end());
          break;
        }
        [[fallthrough]];
      case ExportAnswer::kRefused:
        for (size_t i : which) {
          outcome->rejected.push_back(
              {i, absl::StrCat("otlp ", config_.Target(signal), ": ", answer.message)});
        }
        break;
    }
  }

  std::string Failure(const ExportAnswer& answer, OtlpSignal signal) const {
    std::string failure = absl::StrCat("otlp ", config_.Target(signal), ": ", answer.message);
    if (answer.retry_delay > absl::ZeroDuration()) {
      absl::StrAppend(&failure, " (the receiver asked to retry after ",
                      absl::FormatDuration(answer.retry_delay), ")");
    }
    return failure;
  }

  // Counts what the receiver took but dropped, and logs its message once per distinct message.
  void PartialSuccess(const ExportAnswer& answer, OtlpSignal signal) {
    rejected_by_receiver_.Add(static_cast<uint64_t>(std::max<int64_t>(answer.rejected, 0)));
    {
      runtime::MutexLock lock(&mu_);
      if (logged_.size() >= kMaxRememberedMessages ||
          !logged_.insert(answer.rejected_message).second) {
        return;
      }
    }
    LOG(WARNING) << "otlp " << config_.Target(signal)
                 << ": the receiver accepted a request but dropped " << answer.rejected
                 << " of its records (partial success; counted, not "
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
      "send events as OTLP log records, spans and data points (gRPC or HTTP) to a Collector, "
      "Elasticsearch's /_otlp, a "
      "vendor or another Shipper",
      OtlpOutputKeys());
}

}  // namespace shipper
