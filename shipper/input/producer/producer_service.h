// The Producer gRPC service (proto/producer.proto, the archived Go shipper's API): PublishEvents
// puts a request's events into the queue (publish_calls.h), PersistedIndex streams how far they
// are persisted (index_streams.h). The queue's ACK callback of the publishing producer is where
// the persisted index reaches both the streams and the metrics.
//
// PublishEvents, the hot path, is served from a completion queue by threads the caller sizes
// (Serve()); PersistedIndex, which does little work, uses gRPC's callback API.
//
// Thread safety: gRPC calls the service from its threads; Serve() from any number of threads;
// StopAccepting() from any thread; the rest from the thread that drives the server.
#ifndef SHIPPER_SHIPPER_INPUT_PRODUCER_PRODUCER_SERVICE_H_
#define SHIPPER_SHIPPER_INPUT_PRODUCER_PRODUCER_SERVICE_H_

#include <cstddef>
#include <string>

#include "grpcpp/server_builder.h"
#include "proto/producer.grpc.pb.h"
#include "queue/queue.h"
#include "runtime/memory_budget.h"
#include "runtime/worker_pool.h"
#include "shipper/input/producer/index_streams.h"
#include "shipper/input/producer/publish_calls.h"
#include "shipper/input/producer/request_validation.h"

namespace shipper {

class ProducerService final
    : public elastic::agent::shipper::v1::Producer::WithGenericMethod_PublishEvents<
          elastic::agent::shipper::v1::Producer::WithCallbackMethod_PersistedIndex<
              elastic::agent::shipper::v1::Producer::Service>> {
 public:
  // `queue` and `budget` must outlive the service.
  ProducerService(queue::Queue* queue, runtime::MemoryBudget* budget, std::string uuid,
                  RequestLimits limits, size_t max_receive_memory);

  // Registers this service and what serves its PublishEvents calls (PublishCalls::RegisterWith).
  void RegisterWith(grpc::ServerBuilder* builder);
  // As PublishCalls' Start, Serve, StopAccepting (which also ends nothing: streams keep
  // reporting the persisted index), Shutdown and Finish.
  void StartServing() { publish_.Start(); }
  void Serve(const runtime::WorkerPool::Worker& worker) { publish_.Serve(worker); }
  void StopAccepting() { publish_.StopAccepting(); }
  void ShutdownServing() { publish_.Shutdown(); }
  void FinishServing() { publish_.Finish(); }
  // Sends every stream the final persisted index and ends it. Call before the server shuts down.
  void EndStreams() { streams_.End(queue_->persisted_index()); }

  grpc::ServerWriteReactor<elastic::agent::shipper::v1::messages::PersistedIndexReply>*
  PersistedIndex(
      grpc::CallbackServerContext* context,
      const elastic::agent::shipper::v1::messages::PersistedIndexRequest* request) override;

 private:
  // The queue's ACK callback: more of the published events are persisted, every event up to
  // `persisted` among them.
  void OnPersisted(uint64_t persisted);

  queue::Queue* const queue_;
  // Before publish_: its producer's ACK callback reaches the streams until it is destroyed.
  IndexStreams streams_;
  PublishCalls publish_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_PRODUCER_PRODUCER_SERVICE_H_
