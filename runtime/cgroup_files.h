// The cgroup plumbing that CPU-quota and memory-limit detection share: files re-read in place,
// the cgroup directories of one controller for this process (v1 or v2, found through
// /proc/self/mountinfo and mapped under an injectable cgroup root so that tests run on fixture
// trees), and integers as cgroupfs writes them.
//
// Internal to runtime/ (cpu_quota.cc, memory_limit.cc).
//
// Thread safety: the functions are stateless; a ReopenableFile is used by one thread at a time.
#ifndef SHIPPER_RUNTIME_CGROUP_FILES_H_
#define SHIPPER_RUNTIME_CGROUP_FILES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shipper::runtime::internal {

// A file opened once and re-read from offset 0 on every Read (cgroupfs and procfs regenerate the
// content on each read from 0). Opening is retried on every Read until it succeeds.
class ReopenableFile {
 public:
  explicit ReopenableFile(std::string path) : path_(std::move(path)) {}
  ReopenableFile(const ReopenableFile&) = delete;
  ReopenableFile& operator=(const ReopenableFile&) = delete;
  ~ReopenableFile();

  const std::string& path() const { return path_; }

  // The whole content, or why not, naming the path: NOT_FOUND (ENOENT), PERMISSION_DENIED,
  // OUT_OF_RANGE (larger than 1 MiB), UNAVAILABLE (any other errno).
  absl::StatusOr<std::string> Read();

 private:
  absl::Status Error(absl::string_view what);

  const std::string path_;
  int fd_ = -1;
};

// ReopenableFile(path).Read().
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// A decimal integer with surrounding whitespace; INVALID_ARGUMENT naming `path` and quoting the
// text otherwise.
absl::StatusOr<int64_t> ParseInteger(absl::string_view text, absl::string_view path);

// Where one controller's files are for this process.
struct CgroupDirs {
  int version = 0;  // 1 or 2; 0 when none was found (dirs is empty, reason says why)
  // Our cgroup directory first, then each ancestor up to the mount point, under cgroup_root.
  std::vector<std::string> dirs;
  std::string reason;  // why none was found, or notes on what was skipped; empty when clean
};

// Finds `controller` ("cpu", "memory") from the text of <proc_root>/self/cgroup
// (`memberships`, whose path `memberships_path` names it in reasons) and
// <proc_root>/self/mountinfo: a v1 hierarchy carrying the controller wins over cgroup v2 (on
// hybrid hosts the cgroup2 mount lacks the controllers v1 has, as in Go and Rust), then the v2
// unified hierarchy. Mount points under /sys/fs/cgroup are looked up under `cgroup_root`.
CgroupDirs FindCgroupDirs(absl::string_view memberships, absl::string_view memberships_path,
                          absl::string_view controller, const std::string& proc_root,
                          const std::string& cgroup_root);

}  // namespace shipper::runtime::internal

#endif  // SHIPPER_RUNTIME_CGROUP_FILES_H_
