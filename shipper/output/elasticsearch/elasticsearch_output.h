// The Elasticsearch output: events go to the `_bulk` API (NDJSON, gzip), with Beats' rules.
//
// Each Write() encodes its events once (the file output's document without `@metadata`), gives
// each a `create` action naming its index (the `index` format, by default the data stream the
// event's data_stream fields name) and sends them in requests of at most `bulk_max_size` events.
// The event's metadata may set `_id`, `op_type` (create or index) and `pipeline`, as in Beats.
//
// What Elasticsearch answers decides each event's fate (Beats' rules):
//   item 2xx                    written
//   item 409 on create          already indexed (a retry's duplicate): written
//   item 429, 5xx               failed for now: only those events are retried, with backoff
//   item other 4xx              rejected for good: the dead-letter file, with error.type/reason
//   request 413                 split in halves, each sent again (one event alone: rejected)
//   request 429, 5xx, no answer an error status: Delivery retries with backoff
//   request 401, 403            the same, and an ERROR line naming the credential keys
// Requests spread over `hosts` round-robin; a host that fails is skipped (backing off) while
// another is available. The first request to a host, and the first after it failed, is `GET /`:
// it logs the cluster's name and version and refuses majors below 7 as a failing host.
//
// The room's parts: elasticsearch_settings.h (the keys, their checks, what Build() makes of them),
// elasticsearch_bulk.h (action lines, request bodies, the per-item rules), elasticsearch_pool.h
// (the connections, their hosts' health); this file's .cc writes a batch with them.
//
// Thread safety: Write() from several threads at once; at most `worker` requests are in flight
// per host (the others wait for a free connection). Cancel() from any thread aborts requests in
// flight within about a second (libcurl's progress callback) and makes later Write() calls fail.
#ifndef SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_OUTPUT_H_

#include "shipper/output/output.h"

namespace shipper {

// The registry's entry (registry.cc): the name, and the keys of ElasticsearchSettings
// (elasticsearch_settings.h).
OutputType ElasticsearchOutputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_OUTPUT_H_
