// The CPU time this process has used so far, for the load generators and benchmark helpers
// that report CPU-seconds per million events.
//
// Thread safety: call from any thread.
#ifndef SHIPPER_TESTS_LOAD_PROCESS_CPU_H_
#define SHIPPER_TESTS_LOAD_PROCESS_CPU_H_

#include <sys/resource.h>

namespace shipper::load {

// User plus system CPU of every thread of the process, in seconds.
inline double ProcessCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace shipper::load

#endif  // SHIPPER_TESTS_LOAD_PROCESS_CPU_H_
