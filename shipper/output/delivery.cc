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
  queue::Batch batch = queue_->Get(options_.bulk_max_size, absl::Now() + options_.poll);
  if (!batch.empty()) Deliver(batch);
}

void Delivery::Deliver(queue::Batch& batch) {
  std::optional<Backoff> backoff;  // only failing batches pay for its random generator
  // The batch positions still to write; empty: all of them (the first attempt).
  std::vector<uint32_t> pending, still_pending;
  Outcome outcome;
  metrics_.batch_events.Observe(batch.size());
  while (true) {
    const Events events = pending.empty() ? Events(batch) : Events(batch, pending);
    outcome.Clear();
    const absl::Time start = absl::Now();
    absl::Status status = output_->Write(events, &outcome);
    metrics_.write_seconds.ObserveDuration(absl::Now() - start);
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
    }
    metrics_.errors.Add();
    if (!backoff) backoff.emplace(options_.backoff_init, options_.backoff_max);
    const absl::Duration wait = backoff->Next();
    const size_t retrying = pending.empty() ? batch.size() : pending.size();
    LOG(WARNING) << "output failed, retrying " << retrying << " of " << batch.size()
                 << " events (indexes " << batch.first_index() << ".."
                 << batch.first_index() + batch.size() - 1 << ") in " << wait << ": " << status;
    if (give_up_.WaitForNotificationWithTimeout(wait)) {
      batch.Abandon();
      return;
    }
    metrics_.retries.Add();
  }
}

void Delivery::GiveUp() {
  if (giving_up_.exchange(true)) return;
  give_up_.Notify();
  output_->Cancel();
}

}  // namespace shipper
