// What the Kafka output's end-to-end tests check a shipper and a topic with, against the mock
// cluster or a real Kafka: a stream of test events published while the persisted index is
// followed, the /metrics page, and every event's copies in what a consumer read back.
//
// Thread safety: a Stream's accessors may be called from any thread; the rest, from one.
#ifndef SHIPPER_TESTS_KAFKA_DELIVERY_CHECKS_H_
#define SHIPPER_TESTS_KAFKA_DELIVERY_CHECKS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/kafka/kafka_client.h"
#include "tests/outputs/producer_client.h"
#include "tests/testing/shipper_process.h"

namespace shipper::testing {

// A shipper's arguments for the Kafka output into `topic` at `bootstraps`: a 5 s
// shipper.output.kafka.timeout, short output backoffs, a 16384-event memory queue.
std::vector<std::string> KafkaShipperArgs(const std::string& bootstraps, const std::string& topic);

// A new empty directory `name` under the test's temp dir.
std::string TempDir(absl::string_view name);

// How many copies of each test_seq the messages hold; -1 counts what is not a test event.
std::map<int64_t, int> Copies(const std::vector<KafkaMessage>& messages);

// Fails for every seq in [0, events) without a copy; returns the duplicates.
int CheckNothingLost(const std::map<int64_t, int>& copies, uint64_t events);

// The shipper's /metrics page; empty when it does not answer.
std::string MetricsPage(const ShipperProcess& shipper);

// The samples of `metric` on a /metrics page, by their labels.
std::map<std::string, double> Samples(const std::string& page, absl::string_view metric);

// Publishes events [0, count) from one thread while another follows the persisted index (one
// publisher, one process: the events get indexes 1..count).
class Stream {
 public:
  Stream(const ShipperProcess& shipper, uint64_t count) : publisher_(shipper.address()) {
    publish_ = std::thread([this, count] {
      EXPECT_EQ(publisher_.Publish(0, count, 200, absl::Now() + absl::Seconds(180)), count);
    });
    watch_ = std::thread([this, count, address = shipper.address()] {
      ProducerClient watcher(address);
      watcher.AwaitPersisted(count, absl::Now() + absl::Seconds(240), &persisted_);
    });
  }
  ~Stream() { Join(); }

  uint64_t persisted() const { return persisted_; }
  // Waits until the persisted index reaches `index`, for a minute at most.
  void AwaitPersisted(uint64_t index) const {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (persisted_ < index && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  }
  // Waits until every event is accepted and the watcher is done.
  void Join() {
    if (publish_.joinable()) publish_.join();
    if (watch_.joinable()) watch_.join();
  }
  // Join(), then waits (a minute at most) until every event is persisted.
  void Finish(const ShipperProcess& shipper) {
    Join();
    ProducerClient checker(shipper.address());
    ASSERT_EQ(checker.AwaitPersisted(publisher_.last_index(), absl::Now() + absl::Seconds(60)),
              publisher_.last_index())
        << shipper.Log();
  }
  const ProducerClient& publisher() const { return publisher_; }

 private:
  ProducerClient publisher_;
  std::atomic<uint64_t> persisted_{0};
  std::thread publish_;
  std::thread watch_;
};
}  // namespace shipper::testing

#endif  // SHIPPER_TESTS_KAFKA_DELIVERY_CHECKS_H_
