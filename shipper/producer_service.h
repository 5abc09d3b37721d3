// The Producer gRPC service (see shared wire-api): PublishEvents puts a request's events into the
// queue, PersistedIndex streams how far they are handed off.
//
// PublishEvents hands the decoded request itself to the queue: each accepted event is a pointer
// into the request's arena, and the request is freed when its last event is acknowledged, so no
// event is copied. When the queue is full it accepts a prefix (waiting briefly if nothing fits)
// and the client resends the rest.
//
// Thread safety: gRPC calls the service from its threads; Shutdown() from any thread.
#ifndef SHIPPER_SHIPPER_PRODUCER_SERVICE_H_
#define SHIPPER_SHIPPER_PRODUCER_SERVICE_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/producer.grpc.pb.h"
#include "queue/queue.h"

namespace shipper {

class ProducerService final : public elastic::agent::shipper::v1::Producer::CallbackService {
 public:
  // `queue` must outlive the service.
  ProducerService(queue::Queue* queue, std::string uuid);
  ~ProducerService() override;

  // Refuses publishes from now on (UNAVAILABLE); streams keep reporting the persisted index.
  void StopAccepting();
  // Sends every stream the final persisted index and ends it. Call before the server shuts down.
  void EndStreams();

  grpc::ServerUnaryReactor* PublishEvents(
      grpc::CallbackServerContext* context,
      const elastic::agent::shipper::v1::messages::PublishRequest* request,
      elastic::agent::shipper::v1::messages::PublishReply* reply) override;

  grpc::ServerWriteReactor<elastic::agent::shipper::v1::messages::PersistedIndexReply>*
  PersistedIndex(
      grpc::CallbackServerContext* context,
      const elastic::agent::shipper::v1::messages::PersistedIndexRequest* request) override;

 private:
  class IndexStream;
  class RequestAllocator;

  // Notes a new persisted index (from the queue's ACK callback) for the streams.
  void OnPersisted();
  // Sends streams the persisted index as it changes, each at most once per its interval.
  void BroadcastLoop();

  // Constant after construction.
  queue::Queue* const queue_;
  const std::string uuid_;
  std::unique_ptr<RequestAllocator> allocator_;
  std::unique_ptr<queue::Producer> producer_;
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

#endif  // SHIPPER_SHIPPER_PRODUCER_SERVICE_H_
