// How much memory the container lets Shipper use: the cgroup memory limit (v2 memory.max, v1
// memory.limit_in_bytes), the tightest from our cgroup up the hierarchy.
//
// The kernel OOM-kills the process when its cgroup's memory (RSS plus page cache it cannot
// reclaim) reaches the limit, so every budget Shipper keeps in memory is sized from this
// (shipper/config/config.h: Config::memory_limit) or checked against it.
//
// Detection never fails: missing files and permission errors are treated as "no limit" and the
// reason is recorded in MemoryLimit::reason for the caller to log; a file that holds garbage is
// ignored the same way, its reason saying so ("treated as no limit"), since a wrong guess in
// either direction (OOM kills, or budgets too small to work) is worse than today's defaults.
//
// Thread safety: DetectMemoryLimit is thread-safe.
#ifndef SHIPPER_RUNTIME_MEMORY_LIMIT_H_
#define SHIPPER_RUNTIME_MEMORY_LIMIT_H_

#include <cstdint>
#include <string>

namespace shipper::runtime {

struct MemoryLimit {
  // "cgroup2" | "cgroup1": a limit binds; "none": no limit found (or none could be read).
  std::string source = "none";
  // The tightest limit in bytes; -1 without one (v2 "max", v1's "unlimited" near 2^63, or
  // unreadable).
  int64_t bytes = -1;
  // The cgroup directory whose limit binds (under cgroup_root); empty without a limit.
  std::string cgroup_dir;
  // Why a limit could not be read, or what was ignored; empty when everything read cleanly.
  std::string reason;

  bool limited() const { return bytes >= 0; }
  // "source=cgroup2 limit=268435456 dir=/sys/fs/cgroup/pod/c1", limit=max without one.
  std::string ToString() const;
};

struct MemoryLimitOptions {
  // As CpuQuotaOptions' (cpu_quota.h): where /proc and /sys/fs/cgroup are, for fixture trees.
  std::string proc_root = "/proc";
  std::string cgroup_root = "/sys/fs/cgroup";
};

MemoryLimit DetectMemoryLimit(const MemoryLimitOptions& options = {});

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_MEMORY_LIMIT_H_
