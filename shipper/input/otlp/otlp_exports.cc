#include "shipper/input/otlp/otlp_exports.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "shipper/input/otlp/otlp_conversion.h"
#include "shipper/metrics/shipper_metrics.h"

namespace shipper {
namespace {

using metrics::RecordOutcome;

// More records than this in one export are refused as too large: the records' bookkeeping is
// bounded before the budget is charged, and the Collector's exporter sends 8192 at most by
// default.
constexpr size_t kMaxRecordsPerExport = 65536;

absl::string_view InputLabel(OtlpTransport transport) {
  return transport == OtlpTransport::kGrpc ? "otlp_grpc" : "otlp_http";
}

// The records of one export: its converted events in one buffer, charged to the budget until
// the queue released the last of them.
class ExportRecords final : public queue::EventOwner {
 public:
  ExportRecords(runtime::MemoryBudget* budget, size_t bytes)
      : budget_(budget), bytes_(bytes), buffer_(new char[bytes]) {}

  char* buffer() { return buffer_.get(); }
  void AddRefs(int64_t n) { refs_.fetch_add(n, std::memory_order_relaxed); }
  // Once per queued event, and once by the export.
  void Release() override {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  ~ExportRecords() {
    buffer_.reset();
    budget_->Release(bytes_);
  }

  runtime::MemoryBudget* const budget_;
  const size_t bytes_;
  std::unique_ptr<char[]> buffer_;
  std::atomic<int64_t> refs_{1};
};

}  // namespace

constexpr absl::string_view kShuttingDown = "shipper is shutting down";
constexpr absl::string_view kDrained =
    "shipper is shutting down and could not persist the records in time";

class OtlpExports::Impl {
 public:
  Impl(OtlpExports* exports, queue::Queue* queue)
      : exports_(exports), producer_(queue->NewProducer([this](uint64_t, uint64_t persisted_index) {
          Persisted(persisted_index);
        })) {}

  // An export whose records are queued, waiting for them to be persisted.
  struct Waiting {
    OtlpTransport transport;
    absl::Time arrival;
    ExportOutcome outcome;  // OK, with what was rejected
    Done done;
  };

  queue::Producer* producer() { return producer_.get(); }

  // Answers `waiting` once the queue persisted up to `last_index`: now if it did already.
  void Wait(uint64_t last_index, Waiting waiting) {
    {
      absl::MutexLock lock(&mu_);
      if (last_index > persisted_ && !drained_) {
        waiting_.emplace(last_index, std::move(waiting));
        return;
      }
      if (last_index > persisted_) {
        waiting.outcome = exports_->Outcome(absl::UnavailableError(kDrained));
      }
    }
    exports_->Finish(waiting.transport, waiting.arrival, waiting.outcome, waiting.done);
  }

  // UNAVAILABLE to every export still waiting; later ones get it at once.
  void Drain() {
    std::multimap<uint64_t, Waiting> left;
    {
      absl::MutexLock lock(&mu_);
      drained_ = true;
      left.swap(waiting_);
    }
    const ExportOutcome outcome = exports_->Outcome(absl::UnavailableError(kDrained));
    for (auto& [index, waiting] : left) {
      exports_->Finish(waiting.transport, waiting.arrival, outcome, waiting.done);
    }
  }

  void StopAccepting() {
    accepting_.store(false, std::memory_order_relaxed);
    producer_->Cancel();
  }
  bool accepting() const { return accepting_.load(std::memory_order_relaxed); }

 private:
  // The queue's ACK callback: answers every export whose records are all persisted now.
  void Persisted(uint64_t persisted_index) {
    std::vector<Waiting> ready;
    {
      absl::MutexLock lock(&mu_);
      persisted_ = std::max(persisted_, persisted_index);
      auto end = waiting_.upper_bound(persisted_);
      for (auto it = waiting_.begin(); it != end; ++it) ready.push_back(std::move(it->second));
      waiting_.erase(waiting_.begin(), end);
    }
    for (Waiting& w : ready) exports_->Finish(w.transport, w.arrival, w.outcome, w.done);
  }

  OtlpExports* const exports_;
  std::atomic<bool> accepting_{true};

  absl::Mutex mu_;
  uint64_t persisted_ ABSL_GUARDED_BY(mu_) = 0;  // as the ACK callback last said
  bool drained_ ABSL_GUARDED_BY(mu_) = false;
  // By the index of each export's last record.
  std::multimap<uint64_t, Waiting> waiting_ ABSL_GUARDED_BY(mu_);

  // Last: destroyed first, so that its callback never runs into the members above once gone.
  const std::unique_ptr<queue::Producer> producer_;
};

OtlpExports::OtlpExports(queue::Queue* queue, runtime::MemoryBudget* budget,
                         const OtlpSettings& settings)
    : budget_(budget), settings_(settings), impl_(std::make_unique<Impl>(this, queue)) {}

OtlpExports::~OtlpExports() { impl_->Drain(); }

void OtlpExports::Export(OtlpTransport transport, absl::string_view request, absl::Time arrival,
                         Done done, size_t charged) {
  metrics::ShipperMetrics& metrics = metrics::ShipperMetrics::Get();
  const absl::string_view input = InputLabel(transport);
  if (!impl_->accepting()) {
    return Finish(transport, arrival, Outcome(absl::UnavailableError(kShuttingDown)), done);
  }
  if (request.size() > settings_.max_message_size) {
    return done(TooLarge(transport, request.size(), arrival));
  }
  // A record the budget (shipper.queue.mem.bytes) could never hold is rejected with the others
  // that are too large, rather than make the whole export fail for ever.
  size_t max_record_bytes = settings_.max_message_size;
  if (budget_->capacity() != 0) max_record_bytes = std::min(max_record_bytes, budget_->capacity());
  LogsConversion conversion;
  if (absl::Status scanned =
          conversion.Scan(request, arrival, max_record_bytes, kMaxRecordsPerExport);
      !scanned.ok()) {
    return Finish(transport, arrival, Outcome(std::move(scanned)), done);
  }
  ExportOutcome ok;
  if (conversion.rejected() > 0) {
    ok.rejected_log_records = static_cast<int64_t>(conversion.rejected());
    ok.error_message = absl::StrCat(
        conversion.rejected(), " log record(s) too large to be taken, the largest ",
        conversion.largest_rejected(), " bytes once converted (at most ", max_record_bytes,
        " bytes: shipper.otlp.max_message_size, shipper.queue.mem.bytes)");
    metrics.InputRecords(input, RecordOutcome::kRejected, conversion.rejected());
  }
  const size_t n = conversion.records();
  if (n == 0) return Finish(transport, arrival, ok, done);

  // Decides an export none of whose records were taken.
  const auto refuse = [&](absl::Status status) {
    metrics.InputRecords(
        input, absl::IsUnavailable(status) ? RecordOutcome::kRetry : RecordOutcome::kRejected, n);
    Finish(transport, arrival, Outcome(std::move(status)), done);
  };
  const size_t bytes = conversion.bytes();
  if (budget_->capacity() != 0 && bytes + charged > budget_->capacity()) {
    return refuse(absl::ResourceExhaustedError(absl::StrCat(
        "the export's records take ", bytes, " bytes once converted",
        charged != 0 ? absl::StrCat(" (and its request ", charged, " more while converted)") : "",
        ", more than the memory budget shipper.queue.mem.bytes (", budget_->capacity(),
        " bytes): send fewer records per export")));
  }
  if (!budget_->TryAcquire(bytes)) {
    return refuse(absl::UnavailableError(
        "the memory budget (shipper.queue.mem.bytes) has no room for the export now"));
  }
  auto* records = new ExportRecords(budget_, bytes);
  std::vector<queue::Event> events;
  events.reserve(n);
  conversion.Write(records->buffer(), [&](absl::string_view event) {
    events.emplace_back(event.data(), static_cast<uint32_t>(event.size()), records);
  });
  records->AddRefs(static_cast<int64_t>(events.size()));
  const queue::PublishResult published = impl_->producer()->TryPublishAll(absl::MakeSpan(events));
  records->Release();  // the export's own reference: the queued events hold the rest
  if (absl::IsResourceExhausted(published.status)) {
    return refuse(absl::UnavailableError("the queue has no room for the export now"));
  }
  if (absl::IsOutOfRange(published.status)) {
    return refuse(absl::ResourceExhaustedError(
        absl::StrCat("the export's ", n, " records (", bytes,
                     " bytes once converted) are more than the queue holds at once "
                     "(shipper.queue.*): send fewer records per export")));
  }
  if (!published.status.ok()) return refuse(absl::UnavailableError(kShuttingDown));
  metrics.InputRecords(input, RecordOutcome::kAccepted, n);
  if (settings_.ack == OtlpAck::kQueued) return Finish(transport, arrival, ok, done);
  impl_->Wait(published.last_index,
              Impl::Waiting{transport, arrival, std::move(ok), std::move(done)});
}

ExportOutcome OtlpExports::Refused(OtlpTransport transport, absl::Status status,
                                   absl::Time arrival) {
  CHECK(!status.ok());
  ExportOutcome outcome = Outcome(std::move(status));
  metrics::ShipperMetrics::Get().InputRequest(InputLabel(transport), outcome.status.code(),
                                              absl::Now() - arrival);
  return outcome;
}

ExportOutcome OtlpExports::TooLarge(OtlpTransport transport, size_t bytes, absl::Time arrival) {
  return Refused(
      transport,
      absl::ResourceExhaustedError(absl::StrCat(
          "the export request is ", bytes, " bytes, more than shipper.otlp.max_message_size (",
          settings_.max_message_size, " bytes): send fewer records per export")),
      arrival);
}

ExportOutcome OtlpExports::Unavailable(OtlpTransport transport, absl::string_view why,
                                       absl::Time arrival) {
  return Refused(transport, absl::UnavailableError(why), arrival);
}

void OtlpExports::StopAccepting() { impl_->StopAccepting(); }

void OtlpExports::Drained() { impl_->Drain(); }

ExportOutcome OtlpExports::Outcome(absl::Status status) const {
  ExportOutcome outcome{std::move(status)};
  if (absl::IsUnavailable(outcome.status)) outcome.retry_delay = settings_.retry_delay;
  return outcome;
}

void OtlpExports::Finish(OtlpTransport transport, absl::Time arrival, const ExportOutcome& outcome,
                         Done& done) {
  metrics::ShipperMetrics::Get().InputRequest(InputLabel(transport), outcome.status.code(),
                                              absl::Now() - arrival);
  done(outcome);
}

}  // namespace shipper
