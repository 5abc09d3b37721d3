// The Redis output (hiredis): each event's document goes to Redis by `datatype`:
//   list:    RPUSH <key> <document>
//   channel: PUBLISH <key> <document>
//   stream:  XADD <key> * event <document>
// `key` may take parts from each event (field_format.h). A batch is pipelined on one connection:
// every command is sent, then every reply read. Each worker uses its own connection from a small
// pool, so batches pipeline across workers too.
//
// A batch is written once Redis has replied to each of its commands. A WRONGTYPE reply (the key
// holds another type) and an event missing a field the key needs are rejections for good (the
// dead-letter file); any other error reply, a timeout or a lost connection is transient: the
// connection is dropped, the whole batch retried, and the next attempt connects anew, trying the
// hosts in turn.
//
// Thread safety: Write() from several threads at once.
#ifndef SHIPPER_SHIPPER_OUTPUT_REDIS_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_REDIS_OUTPUT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "shipper/config.h"
#include "shipper/output/output.h"

namespace shipper {

// Checks the settings without connecting (Redis may come up later). INVALID_ARGUMENT names the
// setting to fix.
absl::StatusOr<std::unique_ptr<Output>> NewRedisOutput(const Config::RedisOutput& config);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_REDIS_OUTPUT_H_
