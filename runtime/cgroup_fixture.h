// Test helper: a throw-away tree with proc/ and sys/fs/cgroup/ below a temp dir, to point
// CpuQuotaOptions::proc_root and cgroup_root at. Files are rewritten in place (same inode), as the
// kernel does, so readers that keep them open see the new content.
#ifndef SHIPPER_RUNTIME_CGROUP_FIXTURE_H_
#define SHIPPER_RUNTIME_CGROUP_FIXTURE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace shipper::runtime {

class CgroupFixture {
 public:
  CgroupFixture();   // a fresh dir under $TEST_TMPDIR
  ~CgroupFixture();  // removes it
  CgroupFixture(const CgroupFixture&) = delete;
  CgroupFixture& operator=(const CgroupFixture&) = delete;

  const std::string& proc_root() const { return proc_root_; }
  const std::string& cgroup_root() const { return cgroup_root_; }

  // relative: "self/cgroup" under proc_root, "cpu/a/cpu.cfs_quota_us" under cgroup_root.
  void WriteProc(absl::string_view relative, absl::string_view content);
  void WriteCgroup(absl::string_view relative, absl::string_view content);
  void RemoveCgroup(absl::string_view relative);
  // Replaces a file by a directory of the same name: it opens but cannot be read (EISDIR).
  void MakeUnreadable(absl::string_view relative);

  // v1 cpu,cpuacct and memory hierarchies mounted at /sys/fs/cgroup/cpu,cpuacct and
  // /sys/fs/cgroup/memory with the given root, a
  // cgroup2 mount at /sys/fs/cgroup/unified (hybrid) when `unified`, and /proc/self/cgroup saying
  // we are in `path`.
  void SetUpV1(absl::string_view mount_root, absl::string_view path, bool unified = false);
  // Pure v2: cgroup2 at /sys/fs/cgroup with the given root; we are in `path`.
  void SetUpV2(absl::string_view mount_root, absl::string_view path);
  // v1 cfs files in cgroup_root/cpu,cpuacct/<dir>.
  void SetV1Quota(absl::string_view dir, absl::string_view quota, absl::string_view period);
  // v2 cpu.max in cgroup_root/<dir>.
  void SetV2Max(absl::string_view dir, absl::string_view cpu_max);
  // v1 memory.limit_in_bytes in cgroup_root/memory/<dir>; v2 memory.max in cgroup_root/<dir>.
  void SetV1MemoryLimit(absl::string_view dir, absl::string_view limit);
  void SetV2MemoryMax(absl::string_view dir, absl::string_view memory_max);

 private:
  static void WriteFile(const std::string& path, absl::string_view content);

  std::string dir_;
  std::string proc_root_;
  std::string cgroup_root_;
};

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_CGROUP_FIXTURE_H_
