// PublishEvents of the Producer API: each call's request goes into the queue and the reply says
// how many of its events were accepted, up to which index.
//
// PublishEvents hands the request's bytes themselves to the queue: each accepted event is the
// slice of them that encodes it (wire_event.h), never decoded into messages, and the request is
// freed when its last event is acknowledged. When the queue is full it accepts a prefix
// (waiting briefly if nothing fits) and the client resends the rest.
//
// Each request's copy counts against the memory budget (runtime/memory_budget.h) from before it
// is copied until the request is freed. When the budget cannot take a request, it waits as for
// room in the queue and then replies that none of it was accepted, with accepted_index the index
// of the last event accepted so far (the client resends), so memory never grows past the budget;
// a request larger than the whole budget is refused with RESOURCE_EXHAUSTED naming
// shipper.queue.mem.bytes.
//
// Waiting never holds a serving thread: a call that finds no room (in the budget, or nothing of
// it fits in the queue) parks on a grpc::Alarm on the completion queue and tries again, without
// blocking, every few milliseconds (2 ms doubling to 20 ms) until min(its deadline, 500 ms after
// its request arrived), then replies as above. So a request that needs no room (a wrong uuid, a
// bad request) is answered at once however many calls wait. A call parked for the budget still
// holds gRPC's buffer and its place among the posted calls; the next call is posted once its
// request is copied (before it is scanned, so that the next read overlaps the scan) or refused.
// After StopAccepting() a parked call answers UNAVAILABLE at its next try; an alarm that fires
// cancelled (!ok) makes the call decide at once.
//
// The calls are served with gRPC's async API so that they run on threads sized from the CPU
// quota (a WorkerPool calling Serve()); gRPC's callback threads are sized from the host's cores
// and cannot be bounded. PublishEvents is a generic method (RegisterWith), so that gRPC reads a
// request's message only once a posted call takes it, and at most
// max_receive_memory / max_message_size calls are posted.
//
// Requests are taken as raw bytes and scanned here (request_validation.h), so bad input gets
// INVALID_ARGUMENT saying what is wrong and which limit it broke, where gRPC's own decoding
// answers INTERNAL "Unable to parse request" whatever the cause.
//
// Thread safety: Serve() from any number of threads; StopAccepting() from any thread; the rest
// from the thread that drives the server.
#ifndef SHIPPER_SHIPPER_INPUT_PRODUCER_PUBLISH_CALLS_H_
#define SHIPPER_SHIPPER_INPUT_PRODUCER_PUBLISH_CALLS_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/server_builder.h"
#include "queue/queue.h"
#include "runtime/memory_budget.h"
#include "runtime/worker_pool.h"
#include "shipper/input/producer/request_validation.h"
#include "shipper/server/async_calls.h"

namespace shipper {

class PublishCalls {
 public:
  // `queue` and `budget` must outlive the calls; `on_ack` is the queue producer's (queue.h).
  // gRPC is given at most max_receive_memory / limits.max_message_size calls to read requests
  // into at once (at least 1, at most 32).
  PublishCalls(queue::Queue* queue, runtime::MemoryBudget* budget, std::string uuid,
               RequestLimits limits, size_t max_receive_memory, queue::AckCallback on_ack);
  PublishCalls(const PublishCalls&) = delete;
  PublishCalls& operator=(const PublishCalls&) = delete;

  // Registers the generic service that takes PublishEvents calls, and the completion queue they
  // arrive on. Call once, before the server is built.
  void RegisterWith(grpc::ServerBuilder* builder);
  // Starts taking calls. REQUIRES: the server was built and started.
  void Start();
  // Handles calls until `worker` is asked to stop or the completion queue is shut down and empty.
  void Serve(const runtime::WorkerPool::Worker& worker);
  // Refuses publishes from now on (UNAVAILABLE).
  void StopAccepting();
  // Posts no more calls, waits until every call answered or was cancelled (parked calls answer
  // at their next try), then shuts the completion queue down (AsyncCalls::Shutdown).
  // REQUIRES: the server has shut down, and Serve() still runs.
  void Shutdown();
  // After Shutdown() and once no Serve() runs: empties the completion queue.
  void Finish();

 private:
  class Call;
  class Request;

  // What a non-blocking step of a call came to.
  enum class Outcome {
    kReceived,  // Receive: the request is copied and charged; go on to Scan and Publish
    kDecided,   // *status (and, when OK, the reply) is what to send
    kWait,      // no room yet: try again later (only when the step was told it may wait)
  };

  // Charges the memory budget for `bytes` if they fit now, and copies them into the request.
  // When they do not fit: kWait if `may_wait`, else decided: none accepted, with the index of
  // the last event accepted so far (as a full queue's reply).
  Outcome Receive(const grpc::ByteBuffer& bytes, bool may_wait, Request& request,
                  grpc::Status* status);
  // Scans the received request (request_validation.h); false and *status if it is refused.
  bool Scan(Request& request, grpc::Status* status);
  // Puts what fits now of the received request's events into the queue and fills the reply.
  // When none fits: kWait if `may_wait`, else decided: none accepted.
  Outcome Publish(bool may_wait, Request& request, grpc::Status* status);
  static grpc::Status ShuttingDown();

  // Constant after construction.
  queue::Queue* const queue_;
  runtime::MemoryBudget* const budget_;
  const std::string uuid_;
  const RequestLimits limits_;
  const std::unique_ptr<queue::Producer> producer_;

  std::atomic<bool> accepting_{true};
  // Last: its calls use the members above until Shutdown() ended them.
  AsyncCalls calls_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_PRODUCER_PUBLISH_CALLS_H_
