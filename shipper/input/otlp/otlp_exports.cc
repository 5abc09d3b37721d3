#include "shipper/input/otlp/otlp_exports.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "shipper/input/otlp/otlp_conversion.h"
#include "shipper/metrics/shipper_metrics.h"

namespace shipper {
namespace {

using metrics::RecordOutcome;

// Exports remembered as persisted for shipper.otlp.retry_window, at most: about 100 bytes each.
constexpr size_t kMaxRemembered = 16384;

// A request's bytes by a 128-bit hash: two 64-bit hashes keyed with numbers drawn at start, so
// that no sender can make its request collide with another's on purpose.
struct RequestHash {
  uint64_t first = 0;
  uint64_t second = 0;

  bool operator==(const RequestHash& other) const {
    return first == other.first && second == other.second;
  }
  template <typename H>
  friend H AbslHashValue(H h, const RequestHash& hash) {
    return H::combine(std::move(h), hash.first, hash.second);
  }
};

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
  Impl(OtlpExports* exports, queue::Queue* queue, absl::Duration retry_window)
      : exports_(exports),
        retry_window_(retry_window),
        producer_(queue->NewProducer(
            [this](uint64_t, uint64_t persisted_index) { Persisted(persisted_index); })) {
    absl::BitGen random;
    keys_[0] = absl::Uniform<uint64_t>(random);
    keys_[1] = absl::Uniform<uint64_t>(random);
  }

  // An export whose records are queued, waiting for them to be persisted.
  struct Waiting {
    ExportOutcome outcome;  // OK, with what was rejected
    Done done;
    RequestHash hash;
    size_t records = 0;        // taken into the queue
    std::vector<Done> joined;  // identical requests that came while it waited
  };

  queue::Producer* producer() { return producer_.get(); }

  // The same bytes of two signals are two requests.
  RequestHash Hash(OtlpSignal signal, absl::string_view request) const {
    using Keyed = std::tuple<uint64_t, OtlpSignal, absl::string_view>;
    return RequestHash{absl::Hash<Keyed>()(Keyed(keys_[0], signal, request)),
                       absl::Hash<Keyed>()(Keyed(keys_[1], signal, request))};
  }

  // A sender's retry: when an export with the same request waits to persist, `done` is answered
  // with it; when one persisted within retry_window, OK now (as it was answered then). True if
  // so; false when the request is new (and `done` untouched).
  bool Join(const RequestHash& hash, OtlpTransport transport, OtlpSignal signal, Done& done) {
    std::optional<ExportOutcome> persisted_outcome;  // set when it persisted already
    size_t records = 0;
    {
      absl::MutexLock lock(&mu_);
      if (drained_) return false;
      if (auto it = waiting_by_hash_.find(hash); it != waiting_by_hash_.end()) {
        Waiting& waiting = it->second->second;
        waiting.joined.push_back(std::move(done));
        records = waiting.records;
      } else {
        ForgetLocked(absl::Now());
        auto persisted = persisted_by_hash_.find(hash);
        if (persisted == persisted_by_hash_.end()) return false;
        persisted_outcome = persisted->second.outcome;
        records = persisted->second.records;
      }
    }
    metrics::ShipperMetrics::Get().InputRecords(InputLabel(transport), RecordOutcome::kJoined,
                                                records, SignalName(signal));
    if (persisted_outcome) done(*persisted_outcome);
    return true;
  }

  // Answers `waiting` once the queue persisted up to `last_index`: now if it did already.
  void Wait(uint64_t last_index, Waiting waiting) {
    {
      absl::MutexLock lock(&mu_);
      if (last_index > persisted_ && !drained_) {
        const RequestHash hash = waiting.hash;
        auto it = waiting_.emplace(last_index, std::move(waiting));
        waiting_by_hash_.emplace(hash, it);  // the first of identical ones, if several
        return;
      }
      if (last_index > persisted_) {
        waiting.outcome = exports_->Outcome(absl::UnavailableError(kDrained));
      } else {
        RememberLocked(waiting, absl::Now());
      }
    }
    waiting.done(waiting.outcome);
  }

  // UNAVAILABLE to every export still waiting; later ones get it at once.
  void Drain() {
    std::multimap<uint64_t, Waiting> left;
    {
      absl::MutexLock lock(&mu_);
      drained_ = true;
      left.swap(waiting_);
      waiting_by_hash_.clear();
    }
    const ExportOutcome outcome = exports_->Outcome(absl::UnavailableError(kDrained));
    for (auto& [index, waiting] : left) {
      waiting.outcome = outcome;
      Answer(waiting);
    }
  }

  void StopAccepting() {
    accepting_.store(false, std::memory_order_relaxed);
    producer_->Cancel();
  }
  bool accepting() const { return accepting_.load(std::memory_order_relaxed); }

 private:
  // An export answered persisted, remembered for retry_window_.
  struct Remembered {
    ExportOutcome outcome;
    size_t records;
  };

  // The queue's ACK callback: answers every export whose records are all persisted now.
  void Persisted(uint64_t persisted_index) {
    std::vector<Waiting> ready;
    {
      absl::MutexLock lock(&mu_);
      persisted_ = std::max(persisted_, persisted_index);
      auto end = waiting_.upper_bound(persisted_);
      const absl::Time now = absl::Now();
      for (auto it = waiting_.begin(); it != end; ++it) {
        auto by_hash = waiting_by_hash_.find(it->second.hash);
        if (by_hash != waiting_by_hash_.end() && by_hash->second == it) {
          waiting_by_hash_.erase(by_hash);
        }
        RememberLocked(it->second, now);
        ready.push_back(std::move(it->second));
      }
      waiting_.erase(waiting_.begin(), end);
    }
    for (Waiting& w : ready) Answer(w);
  }

  // `waiting`'s outcome to it and to every request that joined it.
  void Answer(Waiting& waiting) {
    waiting.done(waiting.outcome);
    for (Done& joined : waiting.joined) joined(waiting.outcome);
  }

  void RememberLocked(const Waiting& waiting, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (retry_window_ <= absl::ZeroDuration()) return;
    ForgetLocked(now);
    if (remembered_.size() >= kMaxRemembered) {
      persisted_by_hash_.erase(remembered_.front().second);
      remembered_.pop_front();
    }
    if (persisted_by_hash_.try_emplace(waiting.hash, Remembered{waiting.outcome, waiting.records})
            .second) {
      remembered_.emplace_back(now, waiting.hash);
    }
  }

  // Forgets what persisted longer than retry_window_ ago.
  void ForgetLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!remembered_.empty() && remembered_.front().first + retry_window_ < now) {
      persisted_by_hash_.erase(remembered_.front().second);
      remembered_.pop_front();
    }
  }

  OtlpExports* const exports_;
  const absl::Duration retry_window_;
  uint64_t keys_[2];  // constant after construction
  std::atomic<bool> accepting_{true};

  absl::Mutex mu_;
  uint64_t persisted_ ABSL_GUARDED_BY(mu_) = 0;  // as the ACK callback last said
  bool drained_ ABSL_GUARDED_BY(mu_) = false;
  // By the index of each export's last record.
  std::multimap<uint64_t, Waiting> waiting_ ABSL_GUARDED_BY(mu_);
  // The first of waiting_'s exports with each request.
  absl::flat_hash_map<RequestHash, std::multimap<uint64_t, Waiting>::iterator> waiting_by_hash_
      ABSL_GUARDED_BY(mu_);
  // Persisted within retry_window_, oldest first, at most kMaxRemembered.
  std::deque<std::pair<absl::Time, RequestHash>> remembered_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<RequestHash, Remembered> persisted_by_hash_ ABSL_GUARDED_BY(mu_);

  // Last: destroyed first, so that its callback never runs into the members above once gone.
  const std::unique_ptr<queue::Producer> producer_;
};

OtlpExports::OtlpExports(queue::Queue* queue, runtime::MemoryBudget* budget,
                         const OtlpSettings& settings)
    : budget_(budget),
      settings_(settings),
      impl_(std::make_unique<Impl>(this, queue, settings.retry_window)) {}

OtlpExports::~OtlpExports() { impl_->Drain(); }

void OtlpExports::Export(OtlpTransport transport, OtlpSignal signal, absl::string_view request,
                         absl::Time arrival, Done done, size_t charged) {
  metrics::ShipperMetrics& metrics = metrics::ShipperMetrics::Get();
  const absl::string_view input = InputLabel(transport);
  const absl::string_view signal_name = SignalName(signal);
  if (!impl_->accepting()) {
    return done(Outcome(absl::UnavailableError(kShuttingDown)));
  }
  if (request.size() > settings_.max_message_size) return done(TooLarge(request.size()));
  // With ack: persisted, a sender's retry of an export (after its deadline) joins the export.
  RequestHash hash;
  if (settings_.ack == OtlpAck::kPersisted) {
    hash = impl_->Hash(signal, request);
    if (impl_->Join(hash, transport, signal, done)) return;
  }
  // A record the budget (shipper.queue.mem.bytes) could never hold is rejected with the others
  // that are too large, rather than make the whole export fail for ever.
  size_t max_record_bytes = settings_.max_message_size;
  if (budget_->capacity() != 0) max_record_bytes = std::min(max_record_bytes, budget_->capacity());
  // The request's bytes are held while it is converted: in the transport's charged copy, or in
  // gRPC's own buffer when it came in one piece; counted alike, so that the verdict does not
  // depend on which.
  const size_t request_held = std::max(charged, request.size());
  OtlpConversion conversion(signal, budget_);
  if (absl::Status scanned = conversion.Scan(request, arrival, max_record_bytes, kMaxRecords,
                                             ceiling() - std::min(ceiling(), request_held));
      !scanned.ok()) {
    return done(Outcome(std::move(scanned)));
  }
  ExportOutcome ok;
  if (conversion.rejected() > 0) {
    ok.rejected_records = static_cast<int64_t>(conversion.rejected());
    ok.error_message =
        absl::StrCat(conversion.rejected(), " of the ", SignalRecords(signal),
                     " too large to be taken, the largest ", conversion.largest_rejected(),
                     " bytes once converted (at most ", max_record_bytes,
                     " bytes: shipper.otlp.max_message_size, shipper.queue.mem.bytes)");
  }
  // The records too large to be taken are counted once the export is decided for good, not
  // again at each retry of it.
  const auto count_rejected = [&] {
    metrics.InputRecords(input, RecordOutcome::kRejected, conversion.rejected(), signal_name);
  };
  const size_t n = conversion.records();
  if (n == 0) {
    count_rejected();
    return done(ok);
  }

  // Decides an export none of whose records were taken.
  const auto refuse = [&](absl::Status status) {
    const bool retry = absl::IsUnavailable(status);
    metrics.InputRecords(input, retry ? RecordOutcome::kRetry : RecordOutcome::kRejected, n,
                         signal_name);
    if (!retry) count_rejected();
    done(Outcome(std::move(status)));
  };
  // Everything the export holds at once, counted before the records and their events are
  // allocated (the bookkeeping was, as Scan went): the request, the conversion's bookkeeping,
  // the records (each copying its resource's and scope's entries: a 1 MiB resource over 65,000
  // empty records would be 64 GiB) and the events pointing into them.
  const size_t bytes = conversion.bytes();
  const size_t events_bytes = n * sizeof(queue::Event);
  if (absl::Status fits = Fits(request_held + conversion.bookkeeping_bytes() + bytes + events_bytes,
                               "converting the export");
      !fits.ok()) {
    return refuse(std::move(fits));
  }
  if (!conversion.kept() || !budget_->TryAcquire(bytes + events_bytes)) {
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
  std::vector<queue::Event>().swap(events);
  budget_->Release(events_bytes);
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
  metrics.InputRecords(input, RecordOutcome::kAccepted, n, signal_name);
  count_rejected();
  if (settings_.ack == OtlpAck::kQueued) return done(ok);
  impl_->Wait(published.last_index, Impl::Waiting{std::move(ok), std::move(done), hash, n, {}});
}

ExportOutcome OtlpExports::Refused(absl::Status status) const {
  CHECK(!status.ok());
  return Outcome(std::move(status));
}

ExportOutcome OtlpExports::TooLarge(size_t bytes) const {
  return Outcome(absl::ResourceExhaustedError(absl::StrCat(
      "the export request is ", bytes, " bytes, more than shipper.otlp.max_message_size (",
      settings_.max_message_size, " bytes): send fewer records per export")));
}

ExportOutcome OtlpExports::Unavailable(absl::string_view why) const {
  return Outcome(absl::UnavailableError(why));
}

size_t OtlpExports::ceiling() const {
  return budget_->capacity() != 0 ? budget_->capacity()
                                  : kUnbudgetedMultiple * settings_.max_message_size;
}

absl::Status OtlpExports::Fits(size_t bytes, absl::string_view what) const {
  if (bytes <= ceiling()) return absl::OkStatus();
  if (budget_->capacity() != 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " holds ", bytes, " bytes at once, more than the whole memory budget ",
        "shipper.queue.mem.bytes (", ceiling(), " bytes): send fewer records per export"));
  }
  return absl::ResourceExhaustedError(
      absl::StrCat(what, " holds ", bytes, " bytes at once, more than ", kUnbudgetedMultiple,
                   " x shipper.otlp.max_message_size (", ceiling(),
                   " bytes; shipper.queue.mem.bytes is 0): send fewer records per export"));
}

void OtlpExports::CountAnswer(OtlpTransport transport, OtlpSignal signal, absl::Time arrival,
                              const ExportOutcome& outcome) {
  metrics::ShipperMetrics::Get().InputRequest(InputLabel(transport), outcome.status.code(),
                                              absl::Now() - arrival, SignalName(signal));
}

void OtlpExports::StopAccepting() { impl_->StopAccepting(); }

void OtlpExports::Drained() { impl_->Drain(); }

ExportOutcome OtlpExports::Outcome(absl::Status status) const {
  ExportOutcome outcome{std::move(status)};
  if (absl::IsUnavailable(outcome.status)) outcome.retry_delay = settings_.retry_delay;
  return outcome;
}

}  // namespace shipper
