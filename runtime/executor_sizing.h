// The sizing rule: every thread pool Shipper controls takes its size from
// CpuQuota::effective_cpus (CpuMonitor), and is resized when it changes.
//
//   output workers (WorkerPool "output")       OutputWorkers(cpus)       = cpus
//   PublishEvents threads (WorkerPool "grpc")  GrpcWorkers(cpus)         = cpus
//   gRPC sync-server threads (ResourceQuota)   GrpcSyncServerMaxThreads  = max(2, 2 * cpus)
//
// Output workers are CPU-bound while there is work (take a batch, encode, write), so one per CPU
// keeps the runnable count at the quota; more would only queue behind the CFS throttle.
//
// Why k = 2 for grpc::ResourceQuota::SetMaxThreads(k * cpus): the limit counts every thread of
// the sync server's ThreadManager, pollers included. When the thread that picked up a request was
// the last poller and no new thread may be allocated, gRPC answers that request with
// RESOURCE_EXHAUSTED instead of running it (ThreadManager::MainWorkLoop). One poller plus one
// worker per CPU is the least that never refuses work while keeping runnable threads near the
// quota, hence 2 per CPU and never fewer than 2. SetMaxThreads may be called again at run time;
// call it from the CpuMonitor listener.
//
// What that bound does NOT cover (measured on Debian 12's gRPC 1.51 with the callback API). gRPC
// sizes these from sysconf(_SC_NPROCESSORS_CONF), i.e. the host's cores, ignoring the quota and
// the affinity mask, and offers no API to bound or resize them:
//   - "nexting_thread": clamp(host_cores / 2, 2, 16) threads draining the callback-alternative
//     completion queue. Every callback-API reactor (PublishEvents, PersistedIndex) and the
//     protobuf parsing of its request run here: on a 64-core node, 16 threads. This is the hot
//     path, and it is outside ResourceQuota.
//   - "default-executo" (iomgr executor, grows on demand up to 2 * host_cores), "resolver-execut",
//     "grpc_global_tim" / "timer_manager" (timers), "event_engine" (EventEngine pool).
// ResourceQuota::SetMaxThreads bounds only "grpcpp_sync_ser" threads, which serve the sync
// services registered (server reflection), not the Producer service.
//
// That is why PublishEvents, the hot path, uses the async API instead: one server completion
// queue drained by WorkerPool("grpc", GrpcWorkers(cpus)) whose loop calls cq->AsyncNext with a
// ~0.5 s deadline (ProducerService::Serve). Several threads may drain one completion queue, so
// Resize needs nothing else, and a retiring worker finishes the tag it holds. The callback
// threads above now run only PersistedIndex streams, which do little work.
#ifndef SHIPPER_RUNTIME_EXECUTOR_SIZING_H_
#define SHIPPER_RUNTIME_EXECUTOR_SIZING_H_

#include <algorithm>

namespace shipper::runtime {

inline constexpr int kGrpcThreadsPerCpu = 2;

// Output workers for `effective_cpus` CPUs.
inline int OutputWorkers(int effective_cpus) { return std::max(1, effective_cpus); }

// Threads serving PublishEvents from the server completion queue: decoding, validating and
// enqueueing are CPU-bound, one per CPU.
inline int GrpcWorkers(int effective_cpus) { return std::max(1, effective_cpus); }

// For grpc::ResourceQuota::SetMaxThreads.
inline int GrpcSyncServerMaxThreads(int effective_cpus) {
  return std::max(2, kGrpcThreadsPerCpu * effective_cpus);
}

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_EXECUTOR_SIZING_H_
