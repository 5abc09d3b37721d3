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
// dead-letter file); any other error reply (OOM, LOADING) fails that command for now: only those
// events are retried. A timeout or a lost connection leaves every reply unknown: the connection
// is dropped, the whole batch retried, and the next attempt connects anew, trying the hosts in
// turn. A PUBLISH that reached no subscriber is written, as Beats takes it (Redis keeps
// nothing of it), and counted: shipper_output_items_total{output="redis",outcome="no_subscriber"},
// beside outcome="published" for those that reached one.
//
// Thread safety: Write() from several threads at once.
#ifndef SHIPPER_SHIPPER_OUTPUT_REDIS_REDIS_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_REDIS_REDIS_OUTPUT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shipper/output/output.h"

namespace shipper {

// How the Redis output stores each event: RPUSH onto a list, PUBLISH to a channel, XADD to a
// stream.
enum class RedisDatatype { kList, kChannel, kStream };

// shipper.output.redis.*
struct RedisSettings final : OutputSettings {
  std::vector<std::string> hosts = {"127.0.0.1:6379"};  // host:port; the next on failure
  std::string key = "shipper";  // may hold %{[field.path]} or %{[field.path]:default}
  RedisDatatype datatype = RedisDatatype::kList;
  size_t db = 0;
  std::string password;  // empty: no AUTH
  absl::Duration timeout = absl::Seconds(5);

  void Validate(Problems* problems) const override;
  // Connects to nothing: Redis may come up later.
  absl::StatusOr<std::unique_ptr<Output>> Build() const override;
  std::string Destination() const override;
};

// The registry's entry (registry.cc).
OutputType RedisOutputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_REDIS_REDIS_OUTPUT_H_
