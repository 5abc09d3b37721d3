// The one call plumbing of the inputs served with gRPC's async generic API (the Producer API's
// PublishEvents, OTLP's LogsService/Export): posting calls, a call's states, sending its reply,
// and the order in which they end at shutdown.
//
// Posting. gRPC reads a generic call's message only once a call was posted for it, so the number
// of posted calls bounds what gRPC holds for requests: PostedCalls() of them are posted at
// Start(), and each call posts its successor once (PostNext()) when it no longer holds gRPC's
// buffer (its request copied, or refused).
//
// A call's states, each event of the completion queue handed to the call it tags:
//   arriving   the call came (!ok: the server is shutting down: the call ends); a method the
//              input does not serve is refused (UNIMPLEMENTED, AsyncCalls' `method_check`)
//   reading    its message was read (!ok: none came: INVALID_ARGUMENT); OnRequest() has it
//   handling   the input's: it answers with Reply()/Fail(), at once or later from any thread,
//              or parks the call on an alarm (Park(); OnWake() when it fires)
//   finishing  the reply was sent (ok or not): the call is deleted
//
// Shutdown never starts an operation on a shut-down completion queue (gRPC asserts on it): a
// call is counted from its posting to its deletion, and Shutdown() stops posting, waits until
// every call ended (the server's shutdown having cancelled what was still open, so that each
// operation completes; the serving threads still serve, so that running conversions and parked
// calls answer), and only then shuts the completion queue down.
//
// Thread safety: Serve() from any number of threads at once; a call's methods from the thread
// handling its event (Reply/Fail from any one thread, once); the rest from the thread that drives
// the server, in the order RegisterWith, Start, Shutdown, Finish.
#ifndef SHIPPER_SHIPPER_SERVER_ASYNC_CALLS_H_
#define SHIPPER_SHIPPER_SERVER_ASYNC_CALLS_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/server_builder.h"
#include "runtime/worker_pool.h"

namespace shipper {

// Calls to post to gRPC ahead of time, so that arriving calls rarely wait to be matched. gRPC
// reads the whole message of a posted call: as many as `max_receive_memory` holds messages of
// `max_message_size`, at least 1 and at most 32.
int PostedCalls(size_t max_receive_memory, size_t max_message_size);

// What gRPC may receive of one message when requests up to `max_message_size` are taken: that
// size plus what compression can add to incompressible data (zlib's deflateBound is below a
// thousandth of it plus a few bytes), at most INT_MAX. An input checks max_message_size itself,
// naming its key, also for what a compressed request inflates to.
int ReceiveLimit(size_t max_message_size);

class AsyncCalls;

// One call, from its posting to its reply sent. Its address is its tag on the completion queue.
// An input derives its call from this, and AsyncCalls' `new_call` makes one.
class AsyncCall {
 public:
  virtual ~AsyncCall();
  AsyncCall(const AsyncCall&) = delete;
  AsyncCall& operator=(const AsyncCall&) = delete;

  // The completion queue's event for this call; may delete it.
  void Proceed(bool ok);

 protected:
  explicit AsyncCall(AsyncCalls* calls);

  // The request's message, on a serving thread. Must end in one Reply()/Fail() (now, or later
  // from any thread) or Park(). `message` is the call's own; the input may move from it.
  virtual void OnRequest(grpc::ByteBuffer& message) = 0;
  // A parked call's alarm fired (!ok: it was cancelled: decide now). As OnRequest.
  virtual void OnWake(bool ok) {}

  // Lets the next call take this one's place. Idempotent.
  void PostNext();
  // Sends `reply` with OK, or `status`. Nothing of `this` may be touched after either: the
  // reply's completion deletes the call, possibly on another thread before they return.
  template <typename Message>
  void Reply(const Message& reply) {
    grpc::ByteBuffer bytes;
    bool own_buffer;
    SerializeOrDie(grpc::SerializationTraits<Message>::Serialize(reply, &bytes, &own_buffer));
    Send(std::move(bytes));
  }
  void Fail(const grpc::Status& status);
  // Frees this serving thread; OnWake() runs at `wake`.
  void Park(absl::Time wake);

  const grpc::GenericServerContext& context() const { return context_; }

 private:
  friend class AsyncCalls;
  enum class State { kArriving, kReading, kHandling, kWaiting, kFinishing };

  static void SerializeOrDie(const grpc::Status& serialized);
  void Send(grpc::ByteBuffer bytes);

  AsyncCalls* const calls_;
  grpc::GenericServerContext context_;
  grpc::GenericServerAsyncReaderWriter stream_;
  grpc::ByteBuffer message_;
  State state_ = State::kArriving;
  bool posted_next_ = false;
  std::unique_ptr<grpc::Alarm> alarm_;  // set while parked; a new one for every wait
};

class AsyncCalls {
 public:
  // `name` names the calls in logs. `method_check` says whether a method is served (OK) or how
  // to refuse it. `new_call` makes a call (new SomeCall(...)), which AsyncCalls then posts.
  AsyncCalls(std::string name, int posted_calls,
             std::function<grpc::Status(absl::string_view method)> method_check,
             std::function<AsyncCall*()> new_call);
  ~AsyncCalls();
  AsyncCalls(const AsyncCalls&) = delete;
  AsyncCalls& operator=(const AsyncCalls&) = delete;

  // Registers the generic service and the completion queue its calls arrive on. Once, before the
  // server is built.
  void RegisterWith(grpc::ServerBuilder* builder);
  // Posts the first calls. REQUIRES: the server was built and started.
  void Start();
  // Hands each event to its call until `worker` is asked to stop or the completion queue is shut
  // down and empty. An idle thread checks every 500 ms whether its pool shrank.
  void Serve(const runtime::WorkerPool::Worker& worker);
  // Posts no call from now on, waits until every call ended, then shuts the completion queue
  // down. REQUIRES: the server has shut down (its open calls cancelled), and Serve() still runs
  // on at least one thread until this returns.
  void Shutdown();
  // After Shutdown() and once no Serve() runs: empties the completion queue, as gRPC requires.
  void Finish();

  // Calls alive now (posted and not yet deleted).
  int live() const;

 private:
  friend class AsyncCall;

  // Posts one call, unless Shutdown() began.
  void Post();
  void Ended();

  // Constant after construction.
  const std::string name_;
  const int posted_calls_;
  const std::function<grpc::Status(absl::string_view)> method_check_;
  const std::function<AsyncCall*()> new_call_;
  grpc::AsyncGenericService generic_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;  // set once by RegisterWith

  mutable absl::Mutex mu_;
  int live_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_SERVER_ASYNC_CALLS_H_
