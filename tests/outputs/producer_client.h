// A Producer API client for output tests: publishes numbered test events with resends (partial
// acceptance, restarts) and follows the persisted index.
//
// Thread safety: one thread uses a ProducerClient; use one per thread.
#ifndef SHIPPER_TESTS_OUTPUTS_PRODUCER_CLIENT_H_
#define SHIPPER_TESTS_OUTPUTS_PRODUCER_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "proto/producer.grpc.pb.h"

namespace shipper::testing {

// The seq-th test event: a realistic Filebeat event (dataset nginx.access) plus "test_seq".
elastic::agent::shipper::v1::messages::Event TestEvent(uint64_t seq);

// The test_seq of a JSON document as outputs write it; -1 when it has none.
int64_t TestSeq(const std::string& json);

class ProducerClient {
 public:
  explicit ProducerClient(const std::string& address);

  // Publishes events [first, first + count) in requests of `batch`, resending what was not
  // accepted, until `deadline`. Returns how many were accepted; the highest accepted index is
  // last_index().
  uint64_t Publish(uint64_t first, uint64_t count, int batch, absl::Time deadline);
  uint64_t last_index() const { return last_index_; }
  const std::string& uuid() const { return uuid_; }

  // Follows the PersistedIndex stream until it reports `index` or `deadline` passes; returns
  // the last value seen. Each value is also stored in `*seen` when given (for a watcher thread).
  uint64_t AwaitPersisted(uint64_t index, absl::Time deadline,
                          std::atomic<uint64_t>* seen = nullptr);

 private:
  std::unique_ptr<elastic::agent::shipper::v1::Producer::Stub> stub_;
  std::string uuid_;
  uint64_t last_index_ = 0;
};

}  // namespace shipper::testing

#endif  // SHIPPER_TESTS_OUTPUTS_PRODUCER_CLIENT_H_
