// Outputs: where batches of events go once they leave the queue, and how each output declares
// its settings.
//
// Delivery (delivery.h) takes a batch from the queue and calls Write() with its events. Per
// event, Write() says one of three things:
//   - written (durable by the output's policy): the default, nothing to say;
//   - rejected for good (Outcome::rejected; e.g. Redis WRONGTYPE, a Kafka message too large):
//     retrying would fail the same way, so it goes to the dead-letter file;
//   - failed for now (Outcome::failed; e.g. a Kafka partition without a leader, an
//     Elasticsearch item answered 429): Delivery calls Write() again after a backoff with only
//     the events that failed, so what was written is not written again.
// An error status means the call failed as a whole (server down, disk full, timeout): nothing it
// was given counts as written, and all of it is retried. An output may thus see the same events
// again (at-least-once). The batch is marked done only when every event is written or recorded
// as a dead letter, so the persisted index never runs ahead of what an output confirmed. An
// output that waits after writing (for fdatasync, for a broker's acks) may return that wait as
// Outcome::finish, so that its worker writes the next batch meanwhile.
//
// Each output lives in a folder of its own (shipper/output/<name>/) with its settings (a struct
// deriving from OutputSettings, whose member initializers are its defaults), its keys
// (shipper.output.<name>.*), its checks and its factory, and is listed once in registry.cc.
//
// Thread safety: Write() may be called from several workers at once (concurrent batches
// pipeline); an output serialises internally what must be serialised. Cancel() may be called
// from any thread, also while Write() runs. OutputSettings and OutputType are immutable once
// built; use them from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_OUTPUT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "queue/queue.h"
#include "shipper/config/key.h"
#include "shipper/config/problems.h"
#include "shipper/event/wire_event.h"
#include "shipper/metrics/metric.h"

namespace shipper {

// The events one Write() call is to write: all of a batch's, or those of it still unwritten.
// A view: the batch (and the positions) must outlive it.
class Events {
 public:
  explicit Events(const queue::Batch& batch) : batch_(&batch), size_(batch.size()) {}
  // The events of `batch` at `positions`, ascending.
  Events(const queue::Batch& batch, absl::Span<const uint32_t> positions)
      : batch_(&batch), positions_(positions), size_(positions.size()) {}

  size_t size() const { return size_; }
  // REQUIRES: i < size() for all three.
  // The i-th event's position in its batch.
  size_t position(size_t i) const { return positions_.empty() ? i : positions_[i]; }
  // Its wire bytes (shipper/event/wire_event.h).
  absl::string_view bytes(size_t i) const { return wire::Bytes(batch_->event(position(i))); }
  // Its index in the queue (the document's @metadata.index).
  uint64_t index(size_t i) const { return batch_->first_index() + position(i); }

 private:
  const queue::Batch* batch_;
  absl::Span<const uint32_t> positions_;  // empty: every event of the batch
  size_t size_;
};

// An event an output refuses for good.
struct Rejection {
  size_t event;        // i in the Events that Write() was given
  std::string reason;  // what the output said, for the dead-letter file
};

// What Write() says of the events it did not write.
struct Outcome {
  std::vector<Rejection> rejected;  // for good; ascending
  std::vector<size_t> failed;       // for now, as i in the Events; ascending
  std::string failure;              // why they failed (one reason, for the log)
  // The least wait before the failed ones are retried, when the destination asked for one (an
  // OTLP receiver's RetryInfo or Retry-After); Delivery waits the longer of it, capped at
  // shipper.output.backoff.max, and its own backoff.
  absl::Duration retry_after = absl::ZeroDuration();
  // Set by a Write() that left the rest of its work for later (the file output's fdatasync,
  // Kafka's delivery reports), and then nothing else of the outcome is. Delivery calls it once,
  // with an empty outcome, after the worker has written its next batch, so that the output's wait
  // overlaps that work; what it returns and fills in stands for the whole Write(), and until it
  // has returned none of the events counts as written. It runs on the thread that called Write()
  // and must not use the Events, which may be gone by then.
  std::function<absl::Status(Outcome*)> finish;

  void Fail(size_t event, absl::string_view reason) {
    if (failed.empty()) failure = std::string(reason);
    failed.push_back(event);
  }
  void Clear() {
    rejected.clear();
    failed.clear();
    failure.clear();
    retry_after = absl::ZeroDuration();
    finish = nullptr;
  }
  // Calls `finish` on this outcome, cleared for it to fill. REQUIRES: `finish` is set.
  absl::Status Finish() {
    const std::function<absl::Status(Outcome*)> end = std::move(finish);
    Clear();
    return end(this);
  }
};

class Output {
 public:
  virtual ~Output() = default;

  // Writes `events` (each an elastic.agent.shipper.v1.messages.Event's canonical wire bytes).
  // On OK, fills `outcome` with the events it did not write; all others are written. An error
  // means nothing of `events` may count as written.
  // REQUIRES: `outcome` is empty.
  virtual absl::Status Write(const Events& events, Outcome* outcome) = 0;

  // Makes running and later Write() (and finish) calls return an error promptly instead of waiting
  // on a peer; called once the drain deadline has passed at shutdown. Outputs that never wait long
  // need not override it.
  virtual void Cancel() {}
};

// One output's settings, as its keys set them.
class OutputSettings {
 public:
  virtual ~OutputSettings() = default;

  // What no single key can check alone, such as settings that go together. Pure: it reads
  // nothing but the settings. Adds each problem, naming the key to fix. Called for every
  // output, enabled or not, so that a mistake is refused before anyone enables the output.
  virtual void Validate(Problems* problems) const {}
  // What the machine must allow (preflight.h): files readable, directories writable. Creates,
  // binds and writes nothing.
  virtual void Preflight(Problems* problems) const {}
  // Builds the output. REQUIRES: Validate() and Preflight() found no problem.
  virtual absl::StatusOr<std::unique_ptr<Output>> Build() const = 0;
  // Where the events go, for the start line: "file ./data/shipper.ndjson".
  virtual std::string Destination() const = 0;

  bool enabled = false;  // shipper.output.<name>.enabled
};

// An output as the registry lists it.
struct OutputType {
  std::string name;  // the <name> in shipper.output.<name>.*, and its metrics' output label
  std::string help;  // what it does: the help of shipper.output.<name>.enabled
  std::function<std::unique_ptr<OutputSettings>()> defaults;
  std::vector<Key<OutputSettings>> keys;  // every shipper.output.<name>.* but `enabled`
  // Adds the output's own metrics to a scrape while it is the active output, beside the
  // per-output families every output has (shipper/metrics/shipper_metrics.h); null: none.
  std::function<void(metrics::Collection*)> collect;
};

// The OutputType of settings S (default-constructible, deriving from OutputSettings).
template <typename S>
OutputType MakeOutputType(std::string name, std::string help, const std::vector<Key<S>>& keys,
                          std::function<void(metrics::Collection*)> collect = nullptr) {
  return OutputType{std::move(name), std::move(help), [] { return std::make_unique<S>(); },
                    KeysWithin<OutputSettings>(keys), std::move(collect)};
}

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OUTPUT_H_
