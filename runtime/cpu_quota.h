// How many CPUs Shipper may really use: the container's CPU limit (cgroup v1 or v2 CFS quota,
// tightest up the hierarchy), the affinity mask / cpuset, or an operator override.
//
// A sidecar limited to half a CPU on a 64-core node that sizes its pools from the host's cores
// runs 64 busy threads and spends most of each CFS period throttled. Every pool Shipper controls
// takes its size from CpuQuota::effective_cpus instead (see executor_sizing.h).
//
// Detection never fails: missing files, permission errors, zero periods and garbage are treated
// as "no limit" and the reason is recorded in CpuQuota::reason for the caller to log.
//
// Thread safety: the free functions are thread-safe. A CpuQuotaReader is used by one thread at a
// time (CpuMonitor serializes it).
#ifndef SHIPPER_RUNTIME_CPU_QUOTA_H_
#define SHIPPER_RUNTIME_CPU_QUOTA_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shipper::runtime {

// How a fractional quota (quota / period, e.g. 1.5) becomes a thread count.
//
// kFloor (default, minimum 1): Shipper's workers are CPU-bound while there is work (decode,
// enqueue, encode, write), and gRPC keeps a few threads of its own that we do not size (see
// executor_sizing.h). With ceil, a 1.5-CPU quota gets 2 busy workers plus gRPC's threads that
// together ask for more than 1.5 CPUs of every period, so CFS throttles the whole process for the
// rest of the period and every in-flight request waits: that tail latency is what floor
// avoids. With floor, our busy threads stay below the quota and the fraction left over absorbs
// gRPC's own threads, the monitor and logging. The cost is at most one CPU's worth of unused
// quota when the quota is fractional, and the minimum of 1 keeps a 0.5-CPU sidecar working
// (it is throttled half the time whatever we do). automaxprocs makes the same choice (floor,
// minimum 1); the JDK rounds up (ceilf(quota / period)), which suits its many mostly-idle threads.
// kCeil suits deployments whose workers mostly wait on I/O (slow remote outputs), where an extra
// thread overlaps waiting rather than competing for CPU.
enum class Rounding { kFloor, kCeil };

// "floor" | "ceil" (case-sensitive, as in the config). INVALID_ARGUMENT otherwise.
absl::StatusOr<Rounding> ParseRounding(absl::string_view text);

// How the effective CPU count was derived. Loggable; the same fields become metrics.
struct CpuQuota {
  // "cgroup2" | "cgroup1": a CFS quota binds; "cpuset": the affinity mask binds (it is smaller than
  // the quota, or there is no quota and it is smaller than the host); "override": --cpus /
  // SHIPPER_CPUS; "none": no limit found, effective_cpus is the host's CPU count.
  std::string source = "none";
  // The tightest CFS quota found up the hierarchy, in microseconds per period; -1 when there is
  // none (v1 -1, v2 "max", or unreadable). With source "override" these are still what was found.
  int64_t quota_us = -1;
  int64_t period_us = 0;
  // The cgroup directory whose quota binds (absolute, under cgroup_root); empty without quota.
  std::string cgroup_dir;
  int cpuset_cpus = 0;  // CPUs in the affinity mask (sched_getaffinity)
  int host_cpus = 0;    // online CPUs: what pools would be sized from without a quota
  int effective_cpus = 1;
  // Why a limit could not be read (missing/unreadable files, garbage, zero period, path outside
  // the mount), or notes on the override. Empty when everything read cleanly.
  std::string reason;

  // Fractional CPUs granted by the quota (quota/period), or 0 when there is no quota.
  double quota_cpus() const;

  // "source=cgroup1 quota=50000 period=100000 cpuset=2 effective_cpus=1", with quota=max and
  // period=0 when there is no quota. The reason is not included: log it separately.
  std::string ToString() const;

  bool operator==(const CpuQuota& other) const;
  bool operator!=(const CpuQuota& other) const { return !(*this == other); }
};

struct CpuQuotaOptions {
  // Where /proc and /sys/fs/cgroup are. Mount points read from <proc_root>/self/mountinfo that lie
  // under /sys/fs/cgroup are looked up under cgroup_root instead, so tests run on fixture trees.
  std::string proc_root = "/proc";
  std::string cgroup_root = "/sys/fs/cgroup";
  Rounding rounding = Rounding::kFloor;
  // > 0: use this many CPUs whatever the limits say (--cpus / SHIPPER_CPUS); it also turns
  // CpuMonitor's re-tuning off. It is not capped by the cpuset (the operator knows best) but a
  // note goes into CpuQuota::reason when it exceeds it.
  int override_cpus = 0;
  // Test hooks. Unset: sched_getaffinity(0) and sysconf(_SC_NPROCESSORS_ONLN).
  std::function<int()> affinity_cpus;
  std::function<int()> host_cpus;
};

// Reads SHIPPER_CPUS. Unset or empty: 0 (no override). A positive integer: that many CPUs.
// Anything else: INVALID_ARGUMENT, which main should report and exit on (a typo must not silently
// fall back to detection). Precedence is main's: --cpus, then SHIPPER_CPUS, then detection.
absl::StatusOr<int> OverrideFromEnv(const char* variable = "SHIPPER_CPUS");

// Parses a --cpus / SHIPPER_CPUS value: a positive integer, or "" / "0" for none.
absl::StatusOr<int> ParseCpusOverride(absl::string_view text);

// Re-reads the limit on demand, keeping the cgroup files it found open between reads (one pread
// each per Read). It re-resolves the cgroup path, and reopens, only when <proc_root>/self/cgroup
// changes (the process was moved); files that could not be opened are retried on every Read.
class CpuQuotaReader {
 public:
  static std::unique_ptr<CpuQuotaReader> Create(CpuQuotaOptions options);
  virtual ~CpuQuotaReader() = default;

  virtual CpuQuota Read() = 0;
};

// One-shot detection: CpuQuotaReader::Create(options)->Read().
CpuQuota DetectCpuQuota(const CpuQuotaOptions& options);

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_CPU_QUOTA_H_
