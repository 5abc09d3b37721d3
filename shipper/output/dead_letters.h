// The dead-letter file: events an output rejected for good, so one bad event never blocks the
// rest and is never silently lost.
//
// One NDJSON line per event: {"reason": "<what the output said>", "event": <the event's document,
// as the file output writes it>}. Each Record() is flushed to disk (fdatasync) before it returns,
// because a recorded event counts as handed off for the persisted index. Without a path the
// events are logged at ERROR, document and reason, instead.
//
// Thread safety: Record() may be called from several threads at once.
#ifndef SHIPPER_SHIPPER_OUTPUT_DEAD_LETTERS_H_
#define SHIPPER_SHIPPER_OUTPUT_DEAD_LETTERS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/mutex.h"
#include "shipper/output/output.h"

namespace shipper {

class DeadLetters {
 public:
  // Opens (creating it 0600, and its directory) `path` for appending, and flushes the directory
  // that holds it, whose entry may be new; an empty path logs instead. INVALID_ARGUMENT names
  // shipper.dead_letter.path when the file cannot be opened, UNAVAILABLE (naming it too) when the
  // directory cannot be flushed.
  static absl::StatusOr<std::unique_ptr<DeadLetters>> Open(const std::string& path);
  ~DeadLetters();

  // Records the `rejected` ones of `events`. An error (disk full, ...) means none counts as
  // recorded: the caller retries them.
  absl::Status Record(const Events& events, absl::Span<const Rejection> rejected);

 private:
  DeadLetters(int fd, std::string path, uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}

  // Constant after construction.
  const int fd_;  // -1: log instead
  const std::string path_;

  runtime::Mutex mu_;  // keeps each Record's lines together
  // The file's whole lines, all flushed: a Record that fails is cut back to this, its lines
  // written again by the retry (a failed fdatasync may have lost them, and reports that once).
  uint64_t size_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_DEAD_LETTERS_H_
