// Inputs: how events come into the queue, and how each input declares its settings.
//
// An input takes requests from agents (the Producer API, OTLP), checks them, puts their events
// into the queue and answers each client once its events are accepted or persisted. Every input
// feeds the same queue and charges the same memory budget; it never knows which output runs.
//
// Each input lives in a folder of its own (shipper/input/<name>/) with its settings (a struct
// deriving from InputSettings, whose member initializers are its defaults), its keys, its checks
// and its factory, and is listed once in registry.cc.
//
// The pipeline (shipper/shipper.h) drives every enabled input through the same steps, from one
// thread: Build, RegisterWith (before the shared gRPC server on shipper.server.server is built),
// Start (once it serves), Retune whenever the CPU quota changes, then at shutdown StopAccepting,
// Drained (once the queue drained into the output or the shutdown timeout passed) and Stop (once
// the shared server has shut down). An input's own threads call into the queue and the budget.
//
// Thread safety: the steps are called from one thread at a time; threads() from any thread.
// InputSettings and InputType are immutable once built; use them from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_INPUT_H_
#define SHIPPER_SHIPPER_INPUT_INPUT_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/server_builder.h"
#include "queue/queue.h"
#include "runtime/memory_budget.h"
#include "shipper/config/key.h"
#include "shipper/config/problems.h"
#include "shipper/server/server_settings.h"

namespace shipper {

// What every input is built with. Everything pointed to outlives the input.
struct InputContext {
  queue::Queue* queue = nullptr;
  // What the copies of requests (and so every queued event) are charged to:
  // shipper.queue.mem.bytes.
  runtime::MemoryBudget* budget = nullptr;
  std::string uuid;                        // this process's, as replies report it
  const ServerSettings* server = nullptr;  // shipper.server.*
  // What gRPC may hold for requests being received (shipper.server.max_receive_memory): the
  // shared server's quota, which an input's own gRPC server shares, so that one bound holds.
  grpc::ResourceQuota* grpc_quota = nullptr;
  int cpus = 1;  // the CPU quota at start, to size threads by
};

class Input {
 public:
  virtual ~Input() = default;

  // Adds the input's services to the shared gRPC server. Inputs that serve on listeners of
  // their own add nothing.
  virtual void RegisterWith(grpc::ServerBuilder* builder) {}
  // Starts serving. REQUIRES: the shared server has started.
  virtual absl::Status Start() = 0;
  // Resizes the input's threads for a new CPU quota.
  virtual void Retune(int cpus) {}
  // Threads serving the input's requests now, for the metrics.
  virtual int threads() const { return 0; }

  // Refuses new events from now on (UNAVAILABLE); requests in flight still finish.
  virtual void StopAccepting() = 0;
  // The queue drained, or the shutdown timeout passed: answers every client still waiting with
  // the final state and ends its streams.
  virtual void Drained() = 0;
  // Stops the input's threads and listeners. REQUIRES: the shared server has shut down.
  virtual void Stop() = 0;
};

// One input's settings, as its keys set them.
class InputSettings {
 public:
  virtual ~InputSettings() = default;

  // What no single key can check alone. Pure: reads nothing but the settings. Adds each
  // problem, naming the key to fix. Called for every input, enabled or not.
  virtual void Validate(Problems* problems) const {}
  // What the machine must allow (shipper/config/preflight.h). Creates, binds and writes nothing.
  virtual void Preflight(Problems* problems) const {}
  // Builds the input. REQUIRES: Validate() and Preflight() found no problem.
  virtual absl::StatusOr<std::unique_ptr<Input>> Build(const InputContext& context) const = 0;
  // Where it takes events from, for the start line: "Producer API on 127.0.0.1:50051".
  virtual std::string Source(const ServerSettings& server) const = 0;
  // The largest event, in bytes as queued, the input hands the queue with these settings and the
  // shared server's. The disk queue trusts frame lengths up to the largest of every enabled
  // input's (queue::DiskOptions::max_event_bytes). By default shipper.server.max_message_size:
  // an event is part of a request the shared server took. An input whose queued events can be
  // larger (a request of its own size limit, or events that grow when converted) says so here.
  virtual size_t max_event_bytes(const ServerSettings& server) const {
    return server.limits.max_message_size;
  }

  bool enabled = false;  // set by the input's own key, or always on
};

// An input as the table lists it.
struct InputType {
  std::string name;  // its metrics' input label
  std::function<std::unique_ptr<InputSettings>()> defaults;
  std::vector<Key<InputSettings>> keys;  // every key of the input, its switch included
};

// The InputType of settings S (default-constructible, deriving from InputSettings).
template <typename S>
InputType MakeInputType(std::string name, const std::vector<Key<S>>& keys) {
  return InputType{std::move(name), [] { return std::make_unique<S>(); },
                   KeysWithin<InputSettings>(keys)};
}

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_INPUT_H_
