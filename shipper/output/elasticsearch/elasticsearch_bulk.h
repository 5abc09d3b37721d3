// The `_bulk` API as the Elasticsearch output speaks it: each event's action line, a request's
// NDJSON body, and what the answer says of each item.
//
// An event's action is `create` (or `index` when its @metadata.op_type says so), naming its
// `_index` (the index format, lowercased as Beats does), and the `_id` and `pipeline` the
// event's metadata sets (the pipeline format when it sets none).
//
// ReadItems() applies Beats' per-item rules (libbeat's bulkCollectPublishFails) to a 2xx answer:
//   2xx                  written
//   409 on create        already indexed (a retry's duplicate): written
//   429, 5xx             failed for now: retried with backoff
//   any other status     rejected for good: the dead-letter file, with error.type and reason
// Beats counts a 409 as a duplicate whatever the action; here it is one only for `create`: an
// `index` overwrites, so a 409 answers a real conflict. `"errors": false` vouches for every item
// once the answer holds one item per event of the request. An answer that cannot be read item
// by item (not JSON, an item without a status, not one item per event) fails the whole request
// for now: nothing the answer does not vouch for counts as written. (Beats acknowledges every
// event of an answer that is not JSON, has an item without a status, or holds too few items.)
//
// Thread safety: BulkActions is immutable (use it from any thread); the functions are pure.
#ifndef SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_BULK_H_
#define SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_BULK_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "shipper/event/field_format.h"
#include "shipper/output/batch_json.h"
#include "shipper/output/output.h"

namespace shipper {

// Keeps answers small: the per-item status and error, not the ids and shards of every item.
inline constexpr char kBulkPath[] = "/_bulk?filter_path=errors,items.*.status,items.*.error";

// One event as a bulk request carries it.
struct BulkItem {
  size_t event;        // i in the Events of Write()
  bool create;         // the action: create (409: already there) or index
  std::string action;  // its action line, with the newline
};

// The action lines of events.
class BulkActions {
 public:
  // `index` and `pipeline` (nullopt: none), the output's formats.
  BulkActions(FieldFormat index, std::optional<FieldFormat> pipeline);

  // The item of `event` (its wire bytes), event i of a Write(); an error (a field a format
  // names is missing) rejects the event.
  absl::StatusOr<BulkItem> Item(absl::string_view event, size_t i) const;

 private:
  const FieldFormat index_;
  const std::optional<FieldFormat> pipeline_;
  // What the event's metadata may set, as in Beats; empty when it does not.
  const FieldFormat metadata_id_;
  const FieldFormat metadata_op_type_;
  const FieldFormat metadata_pipeline_;
};

// The NDJSON body of a request of `items`, their documents from `json`; gzipped at
// `gzip_level` unless it is 0, as it is assembled: the body is never held uncompressed.
absl::StatusOr<std::string> BulkBody(const BatchJson& json, absl::Span<const BulkItem> items,
                                     int gzip_level);

// How many items of an answer went which way, for the metrics.
struct BulkCounts {
  size_t created = 0;
  size_t duplicate = 0;
  size_t retried = 0;
  size_t dead_lettered = 0;
};

// Applies the per-item rules above to `body`, the 2xx answer of `host` to a request of `items`:
// adds the failed and the rejected items' events to `outcome` (reasons naming `host`, the status,
// and the item's error.type and error.reason) and counts every item in `counts`. UNAVAILABLE
// when the answer cannot be read item by item; then `outcome` and `counts` are left as they
// were, and none of `items` is written.
absl::Status ReadItems(absl::string_view host, absl::string_view body,
                       absl::Span<const BulkItem> items, Outcome* outcome, BulkCounts* counts);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_BULK_H_
