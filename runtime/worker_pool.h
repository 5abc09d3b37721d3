// N identical worker threads running the same loop, resizable at run time without losing work.
//
// Each worker calls `loop(self)` on its own thread, again and again while !self.stopping(). A loop
// may run until stopping() itself or do one unit of work per call; either way it must wait with a
// deadline when idle (e.g. each blocking queue Get with ~0.5 s) and check stopping() between units
// of work, so a stop takes effect within that deadline. Stopping never interrupts a loop: a worker
// asked to stop finishes what it holds and returns; nothing is handed back or done twice.
//
// Resize(n) starts workers, or asks the newest surplus workers to stop and returns without waiting
// for them (they are joined by a later Resize or by Stop). Threads are named "<name>-<id>" (cut to
// 15 bytes) so `top -H` shows them.
//
// Thread safety: Resize, size, live_threads and Stop may be called from any thread, including a
// CpuMonitor listener, but not from inside `loop` (Stop from a worker would join itself).
#ifndef SHIPPER_RUNTIME_WORKER_POOL_H_
#define SHIPPER_RUNTIME_WORKER_POOL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "runtime/mutex.h"

namespace shipper::runtime {

class WorkerPool {
 public:
  class Worker {
   public:
    // 0-based, unique among the workers alive at the same time, reused after a worker has ended.
    int id() const { return id_; }
    // True once this worker should return from `loop` (shrink or Stop). Cheap: an atomic load.
    bool stopping() const { return stopping_.load(std::memory_order_acquire); }

   private:
    friend class WorkerPool;
    explicit Worker(int id) : id_(id) {}

    const int id_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> finished_{false};
    std::thread thread_;
  };

  // REQUIRES: size >= 0.
  WorkerPool(std::string name, int size, std::function<void(const Worker&)> loop);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  // Stop().
  ~WorkerPool();

  // Sets the number of running workers. After Stop(), does nothing. REQUIRES: size >= 0.
  void Resize(int size);
  // The number of workers asked to run (not counting those still finishing after a shrink).
  int size() const;
  // Threads that have not yet returned: size() plus stopping ones still finishing their work.
  int live_threads() const;
  // Asks every worker to stop and joins them all. Idempotent.
  void Stop();

 private:
  void StartWorkerLocked(int id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void JoinFinishedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int FreeIdLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const std::string name_;
  const std::function<void(const Worker&)> loop_;

  // runtime::Mutex: see runtime/mutex.h (TSan cannot see Debian's uninstrumented absl::Mutex).
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Worker>> running_ ABSL_GUARDED_BY(mu_);   // in start order
  std::vector<std::unique_ptr<Worker>> retiring_ ABSL_GUARDED_BY(mu_);  // asked to stop
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Serializes Stop() so a second caller returns only after everything is joined.
  Mutex stop_mu_;
};

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_WORKER_POOL_H_
