#include "shipper/input/producer/producer_service.h"

#include <utility>

#include "shipper/metrics/shipper_metrics.h"

namespace shipper {

namespace pb = elastic::agent::shipper::v1::messages;

ProducerService::ProducerService(queue::Queue* queue, runtime::MemoryBudget* budget,
                                 std::string uuid, RequestLimits limits, size_t max_receive_memory)
    : queue_(queue),
      streams_(uuid),
      publish_(queue, budget, uuid, limits, max_receive_memory,
               [this](uint64_t, uint64_t persisted) { OnPersisted(persisted); }) {}

void ProducerService::RegisterWith(grpc::ServerBuilder* builder) {
  builder->RegisterService(this);
  publish_.RegisterWith(builder);
}

void ProducerService::OnPersisted(uint64_t persisted) {
  metrics::ShipperMetrics::Get().Persisted(persisted);
  streams_.Persisted(persisted);
}

grpc::ServerWriteReactor<pb::PersistedIndexReply>* ProducerService::PersistedIndex(
    grpc::CallbackServerContext*, const pb::PersistedIndexRequest* request) {
  return streams_.Open(*request, queue_->persisted_index());
}

}  // namespace shipper
