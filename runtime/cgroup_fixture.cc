#include "runtime/cgroup_fixture.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace shipper::runtime {

CgroupFixture::CgroupFixture() {
  const char* tmp = getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/cgroup_fixture.XXXXXX");
  CHECK(mkdtemp(pattern.data()) != nullptr) << pattern;
  dir_ = pattern;
  proc_root_ = dir_ + "/proc";
  cgroup_root_ = dir_ + "/sys/fs/cgroup";
  std::filesystem::create_directories(proc_root_ + "/self");
  std::filesystem::create_directories(cgroup_root_);
}

CgroupFixture::~CgroupFixture() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void CgroupFixture::WriteFile(const std::string& path, absl::string_view content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  PCHECK(fd >= 0) << path;
  PCHECK(write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
  close(fd);
}

void CgroupFixture::WriteProc(absl::string_view relative, absl::string_view content) {
  WriteFile(absl::StrCat(proc_root_, "/", relative), content);
}

void CgroupFixture::WriteCgroup(absl::string_view relative, absl::string_view content) {
  WriteFile(absl::StrCat(cgroup_root_, "/", relative), content);
}

void CgroupFixture::RemoveCgroup(absl::string_view relative) {
  std::filesystem::remove_all(absl::StrCat(cgroup_root_, "/", relative));
}

void CgroupFixture::MakeUnreadable(absl::string_view relative) {
  RemoveCgroup(relative);
  std::filesystem::create_directories(absl::StrCat(cgroup_root_, "/", relative));
}

void CgroupFixture::SetUpV1(absl::string_view mount_root, absl::string_view path, bool unified) {
  std::string mountinfo = absl::StrCat(
      "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
      "31 22 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "34 31 0:31 ",
      mount_root,
      " /sys/fs/cgroup/cpuset rw,relatime shared:14 - cgroup cgroup rw,cpuset\n"
      "32 31 0:29 ",
      mount_root,
      " /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup "
      "rw,cpu,cpuacct\n"
      "35 31 0:32 ",
      mount_root,
      " /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup "
      "rw,memory\n",
      unified ? "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n" : "");
  WriteProc("self/mountinfo", mountinfo);
  WriteProc("self/cgroup", absl::StrCat("12:pids:/\n", "4:memory:", path, "\n", "3:cpuset:", path,
                                        "\n", "2:cpu,cpuacct:", path, "\n", "1:name=systemd:", path,
                                        "\n", unified ? "0::/user.slice\n" : ""));
}

void CgroupFixture::SetUpV2(absl::string_view mount_root, absl::string_view path) {
  WriteProc("self/mountinfo",
            absl::StrCat("22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
                         "30 22 0:26 ",
                         mount_root,
                         " /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 "
                         "cgroup2 rw,nsdelegate,memory_recursiveprot\n"));
  WriteProc("self/cgroup", absl::StrCat("0::", path, "\n"));
}

void CgroupFixture::SetV1Quota(absl::string_view dir, absl::string_view quota,
                               absl::string_view period) {
  std::string base = absl::StrCat("cpu,cpuacct", dir == "/" ? "" : dir);
  WriteCgroup(base + "/cpu.cfs_quota_us", absl::StrCat(quota, "\n"));
  WriteCgroup(base + "/cpu.cfs_period_us", absl::StrCat(period, "\n"));
}

void CgroupFixture::SetV2Max(absl::string_view dir, absl::string_view cpu_max) {
  WriteCgroup(absl::StrCat(dir == "/" ? "" : dir.substr(1), dir == "/" ? "" : "/", "cpu.max"),
              absl::StrCat(cpu_max, "\n"));
}

void CgroupFixture::SetV1MemoryLimit(absl::string_view dir, absl::string_view limit) {
  WriteCgroup(absl::StrCat("memory", dir == "/" ? "" : dir, "/memory.limit_in_bytes"),
              absl::StrCat(limit, "\n"));
}

void CgroupFixture::SetV2MemoryMax(absl::string_view dir, absl::string_view memory_max) {
  WriteCgroup(absl::StrCat(dir == "/" ? "" : dir.substr(1), dir == "/" ? "" : "/", "memory.max"),
              absl::StrCat(memory_max, "\n"));
}

}  // namespace shipper::runtime
