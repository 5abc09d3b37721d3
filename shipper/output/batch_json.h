// A batch encoded once, as NDJSON, by the one event encoder (shipper/event/event_json.h).
//
// Outputs that write the whole batch take ndjson(); outputs that send events one by one (Redis)
// take document(i). Either way each event is encoded exactly once. Metadata::kOmit encodes the
// documents without `@metadata` (event_json.h).
//
// Thread safety: one thread uses a BatchJson; outputs keep one per worker thread and reuse its
// buffer from batch to batch.
#ifndef SHIPPER_SHIPPER_OUTPUT_BATCH_JSON_H_
#define SHIPPER_SHIPPER_OUTPUT_BATCH_JSON_H_

#include <cstddef>
#include <vector>

#include "absl/strings/string_view.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/event/event_json.h"
#include "shipper/output/output.h"

namespace shipper {

class BatchJson {
 public:
  explicit BatchJson(Metadata metadata = Metadata::kInclude) : writer_(&buffer_, metadata) {}

  // Encodes every one of `events`, replacing what was encoded before.
  void Encode(const Events& events);

  size_t size() const { return ends_.size(); }
  // Every document, each followed by '\n'.
  absl::string_view ndjson() const { return {buffer_.GetString(), buffer_.GetSize()}; }
  // The i-th event's line: its document and the '\n' after it. REQUIRES: i < size().
  absl::string_view line(size_t i) const;
  // The i-th event's document alone. REQUIRES: i < size().
  absl::string_view document(size_t i) const;

 private:
  rapidjson::StringBuffer buffer_;
  EventJsonWriter writer_;
  std::vector<size_t> ends_;  // offset just past each event's '\n'
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_BATCH_JSON_H_
