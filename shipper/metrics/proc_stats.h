// What the kernel says about this process and its cgroup's CPU throttling, read from /proc and
// /sys at scrape time. The roots are parameters so tests read fixture files.
//
// Thread safety: the functions are thread-safe (they only read files).
#ifndef SHIPPER_SHIPPER_METRICS_PROC_STATS_H_
#define SHIPPER_SHIPPER_METRICS_PROC_STATS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace shipper::metrics {

struct ProcessStats {
  uint64_t resident_bytes = 0;
  uint64_t threads = 0;
  uint64_t open_fds = 0;
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // since the Unix epoch
};

// Reads <proc_root>/self/stat, <proc_root>/stat (boot time) and counts <proc_root>/self/fd.
// INTERNAL names the file that could not be read or parsed.
absl::StatusOr<ProcessStats> ReadProcessStats(const std::string& proc_root = "/proc");

// CFS bandwidth statistics of one cgroup since it was created.
struct CpuThrottling {
  uint64_t periods = 0;            // nr_periods: enforcement periods with runnable threads
  uint64_t throttled_periods = 0;  // nr_throttled: of those, periods the quota ran out
  double throttled_seconds = 0;    // total time its threads were held back
};

// Reads <cgroup_dir>/cpu.stat, in either cgroup v2 (throttled_usec) or v1 (throttled_time, in
// nanoseconds) form. INTERNAL names the file when it is missing or lacks nr_periods.
absl::StatusOr<CpuThrottling> ReadCpuThrottling(const std::string& cgroup_dir);

}  // namespace shipper::metrics

#endif  // SHIPPER_SHIPPER_METRICS_PROC_STATS_H_
