// The Producer gRPC service (proto/producer.proto, the archived Go shipper's API): PublishEvents
// puts a request's events into the queue, PersistedIndex streams how far they are handed off.
//
// PublishEvents hands the request's bytes themselves to the queue: each accepted event is the
// slice of them that encodes it (wire_event.h), never decoded into messages, and the request is
// freed when its last event is acknowledged. When the queue is full it accepts a prefix
// (waiting briefly if nothing fits) and the client resends the rest.
//
// Each request's copy counts against the memory budget (runtime/memory_budget.h) from before it
// is copied until the request is freed. When the budget cannot take a request, it waits as for
// room in the queue and then replies that none of it was accepted (the client resends), so
// memory never grows past the budget; a request larger than the whole budget is refused with
// RESOURCE_EXHAUSTED naming shipper.queue.mem.bytes.
//
// PublishEvents, the hot path, uses gRPC's async API so that it runs on threads we size from the
// CPU quota (a WorkerPool calling Serve()); gRPC's callback threads are sized from the host's
// cores and cannot be bounded. It is served as a generic method (RegisterWith), so that gRPC
// reads a request's message only once a posted call takes it, and at most
// max_receive_memory / max_message_size calls are posted. PersistedIndex, which does little
// work, uses the callback API.
//
// PublishEvents takes the request as raw bytes and scans it itself (request_validation.h), so
// bad input gets INVALID_ARGUMENT saying what is wrong and which limit it broke, where gRPC's own
// decoding answers INTERNAL "Unable to parse request" whatever the cause.
//
// Thread safety: gRPC calls the service from its threads; Serve() from any number of threads;
// the other methods from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_PRODUCER_PRODUCER_SERVICE_H_
#define SHIPPER_SHIPPER_INPUT_PRODUCER_PRODUCER_SERVICE_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/server_builder.h"
#include "proto/producer.grpc.pb.h"
#include "queue/queue.h"
#include "runtime/memory_budget.h"
#include "runtime/worker_pool.h"
#include "shipper/input/producer/received_request.h"
#include "shipper/input/producer/request_validation.h"

namespace shipper {

class ProducerService final
    : public elastic::agent::shipper::v1::Producer::WithGenericMethod_PublishEvents<
          elastic::agent::shipper::v1::Producer::WithCallbackMethod_PersistedIndex<
              elastic::agent::shipper::v1::Producer::Service>> {
 public:
  // `queue` and `budget` must outlive the service. gRPC is given at most max_receive_memory /
  // limits.max_message_size calls to read requests into at once (at least 1, at most 32).
  ProducerService(queue::Queue* queue, runtime::MemoryBudget* budget, std::string uuid,
                  RequestLimits limits, size_t max_receive_memory);
  ~ProducerService() override;

  // Registers with `builder` this service, the generic service that takes its PublishEvents
  // calls and the completion queue they arrive on.
  void RegisterWith(grpc::ServerBuilder* builder);
  // Starts taking PublishEvents calls. REQUIRES: the server was built with RegisterWith().
  void StartServing();
  // Handles PublishEvents calls until `worker` is asked to stop or the completion queue is shut
  // down and empty.
  void Serve(const runtime::WorkerPool::Worker& worker);
  // Shuts the completion queue down. REQUIRES: the server has shut down.
  void ShutdownServing();
  // After ShutdownServing() and once no Serve() runs: ends what is left in the completion queue.
  void FinishServing();

  // Refuses publishes from now on (UNAVAILABLE); streams keep reporting the persisted index.
  void StopAccepting();
  // Sends every stream the final persisted index and ends it. Call before the server shuts down.
  void EndStreams();

  grpc::ServerWriteReactor<elastic::agent::shipper::v1::messages::PersistedIndexReply>*
  PersistedIndex(
      grpc::CallbackServerContext* context,
      const elastic::agent::shipper::v1::messages::PersistedIndexRequest* request) override;

 private:
  class IndexStream;
  class PublishCall;
  class Request;

  // Charges the memory budget for `bytes` (waiting until `deadline` at most) and copies and
  // scans them into the request. False when the call is decided already: *status (and, when OK,
  // the reply: none accepted) is what to send.
  bool Receive(const grpc::ByteBuffer& bytes, absl::Time deadline, Request& request,
               grpc::Status* status);
  // Puts the received request's events into the queue (waiting until `deadline` at most when
  // none fits) and fills the reply; the status to send.
  grpc::Status Publish(absl::Time deadline, Request& request);

  // What a PersistedIndex stream does next; decided under mu_, done after it is released.
  // kCancel finishes with CANCELLED: decided under mu_, since cancelled_ may change after.
  enum class StreamAction { kNone, kWrite, kWriteAndFinish, kFinish, kCancel };
  using StreamActions = absl::InlinedVector<std::pair<IndexStream*, StreamAction>, 8>;

  // Sends streams that may write now the new persisted index (from the queue's ACK callback).
  void OnPersisted();
  // What each stream should do now (see IndexStream::Next); when the next one is due.
  absl::Time DueStreams(StreamActions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends streams the persisted index as it changes, each at most once per its interval.
  void BroadcastLoop();

  // Constant after construction.
  queue::Queue* const queue_;
  runtime::MemoryBudget* const budget_;
  const std::string uuid_;
  const RequestLimits limits_;
  const int waiting_calls_;  // PublishEvents calls posted to gRPC ahead of time
  std::unique_ptr<queue::Producer> producer_;
  grpc::AsyncGenericService generic_;                // PublishEvents
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;  // set once by RegisterWith
  std::atomic<bool> accepting_{true};

  absl::Mutex mu_;
  absl::CondVar changed_;
  uint64_t persisted_ ABSL_GUARDED_BY(mu_) = 0;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;   // the broadcaster has something to look at
  bool ending_ ABSL_GUARDED_BY(mu_) = false;  // EndStreams() was called
  std::vector<IndexStream*> streams_ ABSL_GUARDED_BY(mu_);

  std::thread broadcaster_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_PRODUCER_PRODUCER_SERVICE_H_
