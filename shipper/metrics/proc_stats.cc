#include "shipper/metrics/proc_stats.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shipper::metrics {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InternalError(absl::StrCat("cannot read ", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

absl::Status Unparsable(const std::string& path, absl::string_view what) {
  return absl::InternalError(absl::StrCat(path, ": cannot parse ", what));
}

// The value of the line "<key> <number>" in a "key value" per line file such as cpu.stat.
bool FindField(absl::string_view text, absl::string_view key, uint64_t* value) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, ' ');
    if (kv.first == key) return absl::SimpleAtoi(kv.second, value);
  }
  return false;
}

}  // namespace

absl::StatusOr<ProcessStats> ReadProcessStats(const std::string& proc_root) {
  const std::string stat_path = absl::StrCat(proc_root, "/self/stat");
  absl::StatusOr<std::string> stat = ReadFile(stat_path);
  if (!stat.ok()) return stat.status();
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its ')'.
  size_t paren = stat->rfind(')');
  if (paren == std::string::npos) return Unparsable(stat_path, "the command name");
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::string_view(*stat).substr(paren + 1), ' ', absl::SkipEmpty());
  auto field = [&](int number, uint64_t* value) {  // proc(5) numbering: state is field 3
    return number - 3 < static_cast<int>(f.size()) && absl::SimpleAtoi(f[number - 3], value);
  };
  uint64_t utime, stime, threads, start_ticks, rss_pages;
  if (!field(14, &utime) || !field(15, &stime) || !field(20, &threads) ||
      !field(22, &start_ticks) || !field(24, &rss_pages)) {
    return Unparsable(stat_path, "utime, stime, num_threads, starttime or rss");
  }
  const std::string boot_path = absl::StrCat(proc_root, "/stat");
  absl::StatusOr<std::string> boot = ReadFile(boot_path);
  if (!boot.ok()) return boot.status();
  uint64_t boot_time;
  if (!FindField(*boot, "btime", &boot_time)) return Unparsable(boot_path, "btime");

  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  ProcessStats stats;
  stats.resident_bytes = rss_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  stats.threads = threads;
  stats.cpu_seconds = static_cast<double>(utime + stime) / ticks;
  stats.start_time_seconds = static_cast<double>(boot_time) + start_ticks / ticks;

  const std::string fd_path = absl::StrCat(proc_root, "/self/fd");
  DIR* dir = opendir(fd_path.c_str());
  if (dir == nullptr) return absl::InternalError(absl::StrCat("cannot list ", fd_path));
  const std::string own_fd = absl::StrCat(dirfd(dir));  // the listing's own, not the process's
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.' && entry->d_name != own_fd) ++stats.open_fds;
  }
  closedir(dir);
  return stats;
}

absl::StatusOr<CpuThrottling> ReadCpuThrottling(const std::string& cgroup_dir) {
  const std::string path = absl::StrCat(cgroup_dir, "/cpu.stat");
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  CpuThrottling throttling;
  uint64_t throttled;
  if (!FindField(*text, "nr_periods", &throttling.periods) ||
      !FindField(*text, "nr_throttled", &throttling.throttled_periods)) {
    return Unparsable(path, "nr_periods and nr_throttled");
  }
  if (FindField(*text, "throttled_usec", &throttled)) {  // cgroup v2
    throttling.throttled_seconds = throttled / 1e6;
  } else if (FindField(*text, "throttled_time", &throttled)) {  // cgroup v1
    throttling.throttled_seconds = throttled / 1e9;
  } else {
    return Unparsable(path, "throttled_usec (v2) or throttled_time (v1)");
  }
  return throttling;
}

}  // namespace shipper::metrics
