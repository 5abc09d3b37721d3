// A Producer API client that behaves as the wire API asks an agent to (../shared/docs/wire-api.md),
// for the invariant test: it publishes test events with unique seqs 0, 1, 2, ... at a steady
// rate, resends what a reply did not accept or a call failed on, and when Shipper answers with a
// new uuid (it restarted) rewinds: everything the old process had not reported persisted is sent
// again. It remembers, per process (uuid), which seq each reply gave which index, and a thread of
// its own follows the persisted index, so that a test can ask which seqs a persisted index covers.
//
// Thread safety: every method may be called from any thread; the publishing and following happen
// on the object's own two threads between construction and destruction.
#ifndef SHIPPER_TESTS_INVARIANT_PUBLISHER_H_
#define SHIPPER_TESTS_INVARIANT_PUBLISHER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/producer.grpc.pb.h"

namespace shipper::testing {

// A persisted index as one Shipper process reported it.
struct PersistedSample {
  std::string uuid;
  uint64_t index = 0;
};

class Publisher {
 public:
  using EventMaker = std::function<elastic::agent::shipper::v1::messages::Event(uint64_t seq)>;

  // Publishes make_event(0), make_event(1), ... to `address` in requests of up to `batch`
  // events, `events_per_second` new ones at most (resends do not count).
  Publisher(const std::string& address, EventMaker make_event, int batch, double events_per_second);
  // Stops both threads.
  ~Publisher();

  // No new seqs from now on; what was published is still resent until it is persisted.
  void StopNewEvents();
  // How many seqs were published (0 .. published() - 1); final after StopNewEvents().
  uint64_t published() const;
  // True once StopNewEvents() was called and every published seq is reported persisted, by the
  // process that runs now or, before a restart, by the one that accepted it.
  bool AllPersisted() const;
  // The persisted index read last.
  PersistedSample LastPersisted() const;
  // The seqs that process `sample.uuid` gave an index at or below `sample.index`, as far as its
  // replies told (a reply lost with its process leaves its events out).
  std::vector<uint64_t> SeqsCoveredBy(const PersistedSample& sample) const;
  // How many times a reply showed a new process (the first contact included).
  int processes_seen() const;

 private:
  // What one Shipper process told: (index, seq) in ascending index, its highest persisted index.
  struct Process {
    std::vector<std::pair<uint64_t, uint64_t>> accepted;
    uint64_t persisted = 0;
  };

  void PublishLoop();
  void FollowLoop();
  // Queues again, first, every seq `uuid_` had not reported persisted; forgets uuid_.
  void Rewind() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const EventMaker make_event_;
  const int batch_;
  const double events_per_second_;
  const absl::Time start_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<elastic::agent::shipper::v1::Producer::Stub> stub_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_new_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<uint64_t> to_send_ ABSL_GUARDED_BY(mu_);  // accepted by no running process
  std::string uuid_ ABSL_GUARDED_BY(mu_);              // the process publishing goes to
  std::map<std::string, Process> processes_ ABSL_GUARDED_BY(mu_);
  PersistedSample last_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* following_ ABSL_GUARDED_BY(mu_) = nullptr;  // to cancel at stop

  std::thread publish_thread_;
  std::thread follow_thread_;
};

}  // namespace shipper::testing

#endif  // SHIPPER_TESTS_INVARIANT_PUBLISHER_H_
