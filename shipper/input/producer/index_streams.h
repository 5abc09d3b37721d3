// The PersistedIndex streams of the Producer API: each tells its client the persisted index now,
// then every time it changes, at most once per the polling interval the client asked for (a zero
// interval: one reply). Streams are gRPC callback reactors; a thread of their own (the
// broadcaster) writes to those whose interval held a change back.
//
// Every stream's state is guarded by one mutex; each transition goes through Stream::Next, and the
// gRPC call it decides on is made after the mutex is released, so that no lock is held across a
// reactor callback.
//
// Thread safety: every method may be called from any thread. Open() from gRPC's callback threads;
// Persisted() from the thread that advanced the index (the queue's ACK callback).
#ifndef SHIPPER_SHIPPER_INPUT_PRODUCER_INDEX_STREAMS_H_
#define SHIPPER_SHIPPER_INPUT_PRODUCER_INDEX_STREAMS_H_

#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/messages.pb.h"

namespace shipper {

class IndexStreams {
 public:
  // Replies carry `uuid`.
  explicit IndexStreams(std::string uuid);
  ~IndexStreams();  // End()s with the last index it was told
  IndexStreams(const IndexStreams&) = delete;
  IndexStreams& operator=(const IndexStreams&) = delete;

  // A reactor for a new PersistedIndex call, `persisted` being the index now. gRPC owns it.
  grpc::ServerWriteReactor<elastic::agent::shipper::v1::messages::PersistedIndexReply>* Open(
      const elastic::agent::shipper::v1::messages::PersistedIndexRequest& request,
      uint64_t persisted);

  // The persisted index is now `persisted`: streams that may write now are written from the
  // calling thread (a hop to the broadcaster would add a wake-up to every reply's latency); those
  // still inside their interval are the broadcaster's.
  void Persisted(uint64_t persisted);

  // Sends every stream `persisted`, the final index, and ends it; later streams get one reply.
  // Idempotent. Call before the server shuts down.
  void End(uint64_t persisted);

 private:
  class Stream;
  // What a stream does next; decided under mu_, done after it is released. kCancel finishes with
  // CANCELLED: decided under mu_, since the stream's cancelled_ may change after.
  enum class Action { kNone, kWrite, kWriteAndFinish, kFinish, kCancel };
  using Actions = absl::InlinedVector<std::pair<Stream*, Action>, 8>;

  // What each stream should do now (see Stream::Next); when the next one is due.
  absl::Time Due(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Act(const Actions& actions);
  // Sends streams the persisted index as it changes, each at most once per its interval.
  void BroadcastLoop();

  const std::string uuid_;

  absl::Mutex mu_;
  uint64_t persisted_ ABSL_GUARDED_BY(mu_) = 0;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;   // the broadcaster has something to look at
  bool ending_ ABSL_GUARDED_BY(mu_) = false;  // End() was called
  std::vector<Stream*> streams_ ABSL_GUARDED_BY(mu_);

  std::thread broadcaster_;  // last: starts once the rest is built
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_PRODUCER_INDEX_STREAMS_H_
