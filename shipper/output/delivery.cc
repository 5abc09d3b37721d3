#include "shipper/output/delivery.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "glog/logging.h"
#include "shipper/output/backoff.h"

namespace shipper {

Delivery::Delivery(queue::Queue* queue, std::unique_ptr<Output> output,
                   std::unique_ptr<DeadLetters> dead_letters, const Options& options)
    : queue_(queue),
      output_(std::move(output)),
      dead_letters_(std::move(dead_letters)),
      options_(options),
      metrics_(metrics::ShipperMetrics::Get().Output(options.name)) {}

void Delivery::Run() {
  const absl::Time end = absl::Now() + options_.poll;
  std::optional<Flight> finishing;  // written; finished once the next batch is written
  for (queue::Batch batch = queue_->Get(options_.batch_max_events, end); !batch.empty();
       batch = queue_->Get(options_.batch_max_events, absl::Now())) {
    Flight flight = Begin(std::move(batch));
    if (finishing) End(*finishing);
    finishing.reset();
    if (!flight.outcome.finish || absl::Now() >= end) {
      End(flight);
      return;
    }
    finishing.emplace(std::move(flight));
  }
  if (finishing) End(*finishing);
}

namespace {

// Calls f, adding the time it took to *busy.
template <typename F>
absl::Status Timed(absl::Duration* busy, F f) {
  const absl::Time start = absl::Now();
  absl::Status status = f();
  *busy += absl::Now() - start;
  return status;
}

}  // namespace

Delivery::Flight Delivery::Begin(queue::Batch batch) {
  Flight flight{std::move(batch)};
  metrics_.batch_events.Observe(flight.batch.size());
  flight.status =
      Timed(&flight.busy, [&] { return output_->Write(Events(flight.batch), &flight.outcome); });
  return flight;
}

void Delivery::End(Flight& flight) {
  queue::Batch& batch = flight.batch;
  Outcome& outcome = flight.outcome;
  absl::Status status = std::move(flight.status);
  absl::Duration busy = flight.busy;
  if (outcome.finish) status = Timed(&busy, [&] { return outcome.Finish(); });
  std::optional<Backoff> backoff;  // only failing batches pay for its random generator
  // The batch positions of the last attempt; empty: all of them (the first attempt).
  std::vector<uint32_t> pending, still_pending;
  while (true) {
    absl::Duration asked = absl::ZeroDuration();  // by the destination, before the retry
    metrics_.write_seconds.ObserveDuration(busy);
    const Events events = pending.empty() ? Events(batch) : Events(batch, pending);
    if (status.ok()) {
      // Rejected events that could not be recorded are tried again, with those that failed.
      if (!outcome.rejected.empty()) {
        status = dead_letters_->Record(events, outcome.rejected);
        if (status.ok()) {
          metrics_.dead_lettered.Add(outcome.rejected.size());
        } else {
          for (const Rejection& r : outcome.rejected) outcome.failed.push_back(r.event);
          std::sort(outcome.failed.begin(), outcome.failed.end());
          outcome.failure = std::string(status.message());
        }
      }
      if (outcome.failed.empty()) {
        batch.Done();
        return;
      }
      still_pending.clear();
      for (size_t i : outcome.failed) still_pending.push_back(events.position(i));
      pending.swap(still_pending);
      status = absl::UnavailableError(outcome.failure);
      asked = std::min(outcome.retry_after, options_.backoff_max);
    }
    metrics_.errors.Add();
    if (!backoff) backoff.emplace(options_.backoff_init, options_.backoff_max);
    const absl::Duration wait = std::max(backoff->Next(), asked);
    const size_t retrying = pending.empty() ? batch.size() : pending.size();
    LOG(WARNING) << "output failed, retrying " << retrying << " of " << batch.size()
                 << " events (indexes " << batch.first_index() << ".."
                 << batch.first_index() + batch.size() - 1 << ") in " << wait << ": " << status;
    if (give_up_.WaitForNotificationWithTimeout(wait)) {
      batch.Abandon();
      return;
    }
    metrics_.retries.Add();
    busy = absl::ZeroDuration();
    status = Attempt(pending.empty() ? Events(batch) : Events(batch, pending), &outcome, &busy);
  }
}

absl::Status Delivery::Attempt(const Events& events, Outcome* outcome, absl::Duration* busy) {
  outcome->Clear();
  absl::Status status = Timed(busy, [&] { return output_->Write(events, outcome); });
  if (outcome->finish) status = Timed(busy, [&] { return outcome->Finish(); });
  return status;
}

void Delivery::GiveUp() {
  if (giving_up_.exchange(true)) return;
  give_up_.Notify();
  output_->Cancel();
}

}  // namespace shipper
