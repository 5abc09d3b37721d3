// The sizing rule: every pool Shipper controls is sized from CpuQuota::effective_cpus.
#ifndef SHIPPER_RUNTIME_EXECUTOR_SIZING_H_
#define SHIPPER_RUNTIME_EXECUTOR_SIZING_H_

#include <algorithm>

namespace shipper::runtime {

inline constexpr int kGrpcThreadsPerCpu = 2;

inline int OutputWorkers(int effective_cpus) { return std::max(1, effective_cpus); }
inline int GrpcMaxThreads(int effective_cpus) {
  return kGrpcThreadsPerCpu * std::max(1, effective_cpus);
}

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_EXECUTOR_SIZING_H_
