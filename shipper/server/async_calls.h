// What the inputs served with gRPC's async generic API share (the Producer API's PublishEvents,
// OTLP's Export): how many calls to post ahead of time, and the loops that serve their
// completion queue.
//
// A call's address is its tag on the completion queue, and each event is handed to the call's
// Proceed(ok): a Call type with `void Proceed(bool ok)`.
//
// Thread safety: ServeCalls from any number of threads at once; FinishCalls from one, once none
// serves.
#ifndef SHIPPER_SHIPPER_SERVER_ASYNC_CALLS_H_
#define SHIPPER_SHIPPER_SERVER_ASYNC_CALLS_H_

#include <algorithm>
#include <cstddef>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/completion_queue.h"
#include "runtime/worker_pool.h"

namespace shipper {

// Calls to post to gRPC ahead of time, so that arriving calls rarely wait to be matched. gRPC
// reads the whole message of a posted call: as many as `max_receive_memory` holds messages of
// `max_message_size`, at least 1 and at most 32.
inline int PostedCalls(size_t max_receive_memory, size_t max_message_size) {
  constexpr size_t kMaxPostedCalls = 32;
  return static_cast<int>(std::clamp<size_t>(
      max_receive_memory / std::max<size_t>(max_message_size, 1), 1, kMaxPostedCalls));
}

// Hands each event of `cq` to its call until `worker` is asked to stop or `cq` is shut down and
// empty. An idle thread checks every 500 ms whether its pool shrank.
template <typename Call>
void ServeCalls(grpc::CompletionQueue* cq, const runtime::WorkerPool::Worker& worker) {
  constexpr absl::Duration kServePoll = absl::Milliseconds(500);
  while (!worker.stopping()) {
    void* tag;
    bool ok;
    switch (cq->AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + kServePoll))) {
      case grpc::CompletionQueue::SHUTDOWN:
        return;
      case grpc::CompletionQueue::GOT_EVENT:
        static_cast<Call*>(tag)->Proceed(ok);
        break;
      case grpc::CompletionQueue::TIMEOUT:
        break;
    }
  }
}

// After `cq` was shut down and once no ServeCalls runs: hands the events left to their calls,
// so that each ends.
template <typename Call>
void FinishCalls(grpc::CompletionQueue* cq) {
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) static_cast<Call*>(tag)->Proceed(ok);
}

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_SERVER_ASYNC_CALLS_H_
