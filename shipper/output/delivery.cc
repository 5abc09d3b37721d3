#include "shipper/output/delivery.h"

#include <optional>
#include <utility>
#include <vector>

#include "glog/logging.h"
#include "shipper/output/backoff.h"

namespace shipper {

absl::StatusOr<std::unique_ptr<Delivery>> Delivery::Create(const Config& config,
                                                           queue::Queue* queue) {
  absl::StatusOr<std::unique_ptr<Output>> output = NewOutput(config);
  if (!output.ok()) return output.status();
  absl::StatusOr<std::unique_ptr<DeadLetters>> dead_letters =
      DeadLetters::Open(config.dead_letter_path);
  if (!dead_letters.ok()) return dead_letters.status();
  Options options;
  options.bulk_max_size = config.bulk_max_size;
  options.backoff_init = config.backoff_init;
  options.backoff_max = config.backoff_max;
  options.name = std::string(OutputName(config.output));
  return std::make_unique<Delivery>(queue, *std::move(output), *std::move(dead_letters),
                                    options);
}

Delivery::Delivery(queue::Queue* queue, std::unique_ptr<Output> output,
                   std::unique_ptr<DeadLetters> dead_letters, const Options& options)
    : queue_(queue),
      output_(std::move(output)),
      dead_letters_(std::move(dead_letters)),
      options_(options),
      metrics_(metrics::ShipperMetrics::Get().Output(options.name)) {}

void Delivery::Run(const runtime::WorkerPool::Worker&) {
  queue::Batch batch = queue_->Get(options_.bulk_max_size, absl::Now() + options_.poll);
  if (!batch.empty()) Deliver(batch);
}

void Delivery::Deliver(queue::Batch& batch) {
  std::optional<Backoff> backoff;  // only failing batches pay for its random generator
  std::vector<Rejection> rejected;
  metrics_.batch_events.Observe(batch.size());
  while (true) {
    rejected.clear();
    const absl::Time start = absl::Now();
    absl::Status status = output_->Write(batch, &rejected);
    metrics_.write_seconds.ObserveDuration(absl::Now() - start);
    if (status.ok() && !rejected.empty()) status = dead_letters_->Record(batch, rejected);
    if (status.ok()) {
      metrics_.dead_lettered.Add(rejected.size());
      batch.Done();
      return;
    }
    metrics_.errors.Add();
    if (!backoff) backoff.emplace(options_.backoff_init, options_.backoff_max);
    const absl::Duration wait = backoff->Next();
    LOG(WARNING) << "output failed, retrying " << batch.size() << " events (indexes "
                 << batch.first_index() << ".." << batch.first_index() + batch.size() - 1
                 << ") in " << wait << ": " << status;
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
