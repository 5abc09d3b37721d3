#include "runtime/cpu_quota.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shipper::runtime {
namespace {

constexpr absl::string_view kDefaultCgroupRoot = "/sys/fs/cgroup";
constexpr int64_t kDefaultPeriodUs = 100000;  // cgroup v2's default when cpu.max has one field

// A file opened once and re-read from offset 0 on every Read (cgroupfs and procfs regenerate the
// content on each read from 0).
class ReopenableFile {
 public:
  explicit ReopenableFile(std::string path) : path_(std::move(path)) {}
  ReopenableFile(const ReopenableFile&) = delete;
  ReopenableFile& operator=(const ReopenableFile&) = delete;
  ~ReopenableFile() {
    if (fd_ >= 0) close(fd_);
  }

  const std::string& path() const { return path_; }

  // The whole content, or the errno of the failed open/read.
  absl::StatusOr<std::string> Read() {
    if (fd_ < 0) {
      fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) return Error("open");
    }
    std::string content;
    char buffer[4096];
    for (;;) {
      ssize_t n = pread(fd_, buffer, sizeof(buffer), content.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return Error("read");
      }
      if (n == 0) break;
      content.append(buffer, n);
      if (content.size() > (1 << 20)) {
        return absl::OutOfRangeError(absl::StrCat(path_, ": larger than 1 MiB"));
      }
    }
    return content;
  }

 private:
  absl::Status Error(absl::string_view what) {
    int error = errno;
    std::string message = absl::StrCat("cannot ", what, " ", path_, ": ", strerror(error));
    if (error == ENOENT) return absl::NotFoundError(message);
    if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
    return absl::UnavailableError(message);
  }

  const std::string path_;
  int fd_ = -1;
};

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  return ReopenableFile(path).Read();
}

// A quota of one level, or none.
struct Limit {
  bool limited = false;
  int64_t quota_us = -1;
  int64_t period_us = 0;
};

// True when a is strictly tighter than b (a smaller share of a CPU).
bool Tighter(const Limit& a, const Limit& b) {
  if (!a.limited) return false;
  if (!b.limited) return true;
  return static_cast<__int128>(a.quota_us) * b.period_us <
         static_cast<__int128>(b.quota_us) * a.period_us;
}

absl::StatusOr<int64_t> ParseInteger(absl::string_view text, absl::string_view path) {
  int64_t value;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an integer: \"", absl::CHexEscape(text.substr(0, 64)), "\""));
  }
  return value;
}

// cgroup v2 cpu.max: "max", "max 100000", "50000" (period 100000), "50000 100000".
absl::StatusOr<Limit> ParseCpuMax(absl::string_view text, absl::string_view path) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  if (fields.empty() || fields.size() > 2) {
    return absl::InvalidArgumentError(absl::StrCat(path,
                                                   ": expected \"<quota|max> [period]\", got \"",
                                                   absl::CHexEscape(text.substr(0, 64)), "\""));
  }
  Limit limit;
  limit.period_us = kDefaultPeriodUs;
  if (fields.size() == 2) {
    absl::StatusOr<int64_t> period = ParseInteger(fields[1], path);
    if (!period.ok()) return period.status();
    limit.period_us = *period;
  }
  if (fields[0] == "max") return Limit{};
  absl::StatusOr<int64_t> quota = ParseInteger(fields[0], path);
  if (!quota.ok()) return quota.status();
  if (*quota <= 0) return absl::InvalidArgumentError(absl::StrCat(path, ": quota ", *quota));
  if (limit.period_us <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": period ", limit.period_us));
  }
  limit.limited = true;
  limit.quota_us = *quota;
  return limit;
}

// cgroup v1: cpu.cfs_quota_us (-1 = no limit) and cpu.cfs_period_us.
absl::StatusOr<Limit> ParseCfs(absl::string_view quota_text, absl::string_view quota_path,
                               absl::string_view period_text, absl::string_view period_path) {
  absl::StatusOr<int64_t> quota = ParseInteger(quota_text, quota_path);
  if (!quota.ok()) return quota.status();
  if (*quota == -1) return Limit{};
  if (*quota <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(quota_path, ": quota ", *quota));
  }
  absl::StatusOr<int64_t> period = ParseInteger(period_text, period_path);
  if (!period.ok()) return period.status();
  if (*period <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(period_path, ": period ", *period));
  }
  return Limit{true, *quota, *period};
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string UnescapeMountField(absl::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      absl::string_view digits = field.substr(i + 1, 3);
      if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(
            static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

struct Mount {
  std::string root;         // the path inside the hierarchy that is mounted
  std::string mount_point;  // where, in our mount namespace
  std::string fs_type;      // "cgroup" | "cgroup2"
  std::vector<std::string> super_options;
};

std::vector<Mount> ParseCgroupMounts(absl::string_view mountinfo) {
  std::vector<Mount> mounts;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (dash == fields.end() || dash - fields.begin() < 6 || fields.end() - dash < 4) continue;
    Mount mount;
    mount.fs_type = std::string(dash[1]);
    if (mount.fs_type != "cgroup" && mount.fs_type != "cgroup2") continue;
    mount.root = UnescapeMountField(fields[3]);
    mount.mount_point = UnescapeMountField(fields[4]);
    for (absl::string_view option : absl::StrSplit(dash[3], ',')) {
      mount.super_options.emplace_back(option);
    }
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

// One line of /proc/self/cgroup: "hierarchy-id:controller,list:/path".
struct Membership {
  std::string hierarchy;
  std::vector<std::string> controllers;
  std::string path;
};

std::vector<Membership> ParseMemberships(absl::string_view text) {
  std::vector<Membership> memberships;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    Membership membership;
    membership.hierarchy = std::string(parts[0]);
    for (absl::string_view controller : absl::StrSplit(parts[1], ',', absl::SkipEmpty())) {
      membership.controllers.emplace_back(controller);
    }
    membership.path = std::string(parts[2]);
    memberships.push_back(std::move(membership));
  }
  return memberships;
}

bool Contains(const std::vector<std::string>& list, absl::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// The cgroup path relative to the mount's root, or nullopt when the cgroup is not below the root
// (the process sits outside what this mount shows, e.g. moved out of a container's namespace).
std::optional<std::string> RelativeToRoot(absl::string_view path, absl::string_view root) {
  if (!absl::StartsWith(path, "/")) return std::nullopt;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return std::nullopt;
  }
  if (root == "/" || root.empty()) return std::string(path);
  absl::string_view trimmed_root = absl::StripSuffix(root, "/");
  if (path == trimmed_root) return std::string("/");
  if (absl::StartsWith(path, trimmed_root) && path[trimmed_root.size()] == '/') {
    return std::string(path.substr(trimmed_root.size()));
  }
  return std::nullopt;
}

// Where we look for a mount point: its place under cgroup_root when it is under /sys/fs/cgroup.
std::string MapMountPoint(const std::string& mount_point, const std::string& cgroup_root) {
  if (mount_point == kDefaultCgroupRoot) return cgroup_root;
  if (absl::StartsWith(mount_point, kDefaultCgroupRoot) &&
      mount_point[kDefaultCgroupRoot.size()] == '/') {
    return absl::StrCat(cgroup_root, mount_point.substr(kDefaultCgroupRoot.size()));
  }
  return mount_point;
}

int DefaultAffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

int DefaultHostCpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 0;
}

class CpuQuotaReaderImpl final : public CpuQuotaReader {
 public:
  explicit CpuQuotaReaderImpl(CpuQuotaOptions options)
      : options_(std::move(options)),
        self_cgroup_(absl::StrCat(options_.proc_root, "/self/cgroup")) {}

  CpuQuota Read() override {
    CpuQuota result;
    std::vector<std::string> reasons;
    absl::StatusOr<std::string> memberships = self_cgroup_.Read();
    if (!memberships.ok()) {
      reasons.push_back(std::string(memberships.status().message()));
      levels_.clear();
      resolve_reason_.clear();
      resolved_for_.reset();
    } else if (!resolved_for_.has_value() || *resolved_for_ != *memberships) {
      Resolve(*memberships);
      resolved_for_ = *memberships;
    }
    if (!resolve_reason_.empty()) reasons.push_back(resolve_reason_);

    Limit tightest;
    std::string tightest_dir;
    ReadLevels(&tightest, &tightest_dir, &reasons);

    result.host_cpus = options_.host_cpus ? options_.host_cpus() : DefaultHostCpus();
    result.cpuset_cpus = options_.affinity_cpus ? options_.affinity_cpus() : DefaultAffinityCpus();
    if (result.host_cpus <= 0) result.host_cpus = std::max(1, result.cpuset_cpus);
    if (result.cpuset_cpus <= 0) {
      reasons.push_back("sched_getaffinity failed; assuming every online CPU");
      result.cpuset_cpus = result.host_cpus;
    }
    if (tightest.limited) {
      result.quota_us = tightest.quota_us;
      result.period_us = tightest.period_us;
      result.cgroup_dir = tightest_dir;
    }

    int cpus = result.cpuset_cpus;
    if (tightest.limited) {
      int quota_cpus = Round(tightest);
      if (quota_cpus <= result.cpuset_cpus) {
        cpus = quota_cpus;
        result.source = version_ == 2 ? "cgroup2" : "cgroup1";
      } else {
        result.source = "cpuset";
      }
    } else {
      result.source = result.cpuset_cpus < result.host_cpus ? "cpuset" : "none";
    }
    result.effective_cpus = cpus;

    if (options_.override_cpus > 0) {
      result.source = "override";
      result.effective_cpus = options_.override_cpus;
      reasons.insert(reasons.begin(), absl::StrCat("override: ", options_.override_cpus,
                                                   " CPUs from --cpus/SHIPPER_CPUS (detected ",
                                                   cpus, "); re-tuning is off"));
      if (options_.override_cpus > result.cpuset_cpus) {
        reasons.push_back(absl::StrCat("override exceeds the ", result.cpuset_cpus,
                                       " CPUs of the affinity mask"));
      }
    }
    result.reason = absl::StrJoin(reasons, "; ");
    return result;
  }

 private:
  // The quota files of one cgroup directory: v1 quota + period, or v2 cpu.max.
  struct Level {
    std::string dir;
    std::unique_ptr<ReopenableFile> quota;   // cpu.cfs_quota_us | cpu.max
    std::unique_ptr<ReopenableFile> period;  // cpu.cfs_period_us (v1 only)
  };

  int Round(const Limit& limit) const {
    if (options_.rounding == Rounding::kCeil) {
      int64_t cpus = (limit.quota_us + limit.period_us - 1) / limit.period_us;
      return static_cast<int>(std::min<int64_t>(cpus, 1 << 20));
    }
    return static_cast<int>(std::clamp<int64_t>(limit.quota_us / limit.period_us, 1, 1 << 20));
  }

  // Finds the cgroup directory and its ancestors up to the mount point, and opens their files.
  void Resolve(const std::string& memberships_text) {
    levels_.clear();
    version_ = 0;
    resolve_reason_.clear();
    std::vector<Membership> memberships = ParseMemberships(memberships_text);

    std::string mountinfo_path = absl::StrCat(options_.proc_root, "/self/mountinfo");
    absl::StatusOr<std::string> mountinfo = ReadWholeFile(mountinfo_path);
    if (!mountinfo.ok()) {
      resolve_reason_ = std::string(mountinfo.status().message());
      return;
    }
    std::vector<Mount> mounts = ParseCgroupMounts(*mountinfo);

    // A v1 hierarchy carrying the cpu controller wins over v2 on hybrid hosts (as in Go and Rust):
    // there the cgroup2 mount has no cpu controller.
    const Membership* v1 = nullptr;
    const Membership* v2 = nullptr;
    for (const Membership& m : memberships) {
      if (Contains(m.controllers, "cpu")) v1 = &m;
      if (m.hierarchy == "0" && m.controllers.empty()) v2 = &m;
    }
    std::vector<std::string> notes;
    if (v1 != nullptr) {
      if (TryMount(*v1, mounts, "cgroup", &notes)) {
        version_ = 1;
        resolve_reason_ = absl::StrJoin(notes, "; ");
        return;
      }
    }
    if (v2 != nullptr) {
      if (TryMount(*v2, mounts, "cgroup2", &notes)) {
        version_ = 2;
        resolve_reason_ = absl::StrJoin(notes, "; ");
        return;
      }
    }
    if (v1 == nullptr && v2 == nullptr) {
      notes.push_back(absl::StrCat("no cpu cgroup in ", self_cgroup_.path()));
    }
    resolve_reason_ = absl::StrJoin(notes, "; ");
  }

  // Maps the membership through a matching mount (the one with the longest root that contains
  // the path) and opens the quota files from the cgroup up to the mount point.
  bool TryMount(const Membership& membership, const std::vector<Mount>& mounts,
                absl::string_view fs_type, std::vector<std::string>* notes) {
    const Mount* best = nullptr;
    std::string relative;
    bool any_mount = false;
    for (const Mount& mount : mounts) {
      if (mount.fs_type != fs_type) continue;
      if (fs_type == "cgroup" && !Contains(mount.super_options, "cpu")) continue;
      any_mount = true;
      std::optional<std::string> rel = RelativeToRoot(membership.path, mount.root);
      if (!rel.has_value()) continue;
      if (best == nullptr || mount.root.size() > best->root.size()) {
        best = &mount;
        relative = *rel;
      }
    }
    if (best == nullptr) {
      if (any_mount) {
        notes->push_back(absl::StrCat(fs_type == "cgroup" ? "cgroup v1 cpu" : "cgroup v2", " path ",
                                      membership.path, " is outside every mount's root"));
      } else {
        notes->push_back(absl::StrCat("no ", fs_type == "cgroup" ? "cgroup v1 cpu" : "cgroup2",
                                      " mount in mountinfo"));
      }
      return false;
    }
    std::string base = MapMountPoint(best->mount_point, options_.cgroup_root);
    std::string dir = absl::StrCat(base, relative == "/" ? "" : relative);
    for (;;) {
      Level level;
      level.dir = dir;
      if (fs_type == "cgroup") {
        level.quota = std::make_unique<ReopenableFile>(dir + "/cpu.cfs_quota_us");
        level.period = std::make_unique<ReopenableFile>(dir + "/cpu.cfs_period_us");
      } else {
        level.quota = std::make_unique<ReopenableFile>(dir + "/cpu.max");
      }
      levels_.push_back(std::move(level));
      if (dir.size() <= base.size()) break;
      dir = dir.substr(0, dir.rfind('/'));
      if (dir.size() < base.size()) dir = base;
    }
    return true;
  }

  void ReadLevels(Limit* tightest, std::string* tightest_dir, std::vector<std::string>* reasons) {
    int missing_cpu_max = 0;
    for (size_t i = 0; i < levels_.size(); ++i) {
      Level& level = levels_[i];
      absl::StatusOr<Limit> limit;
      absl::StatusOr<std::string> quota = level.quota->Read();
      if (version_ == 2) {
        // No cpu.max: the cpu controller is not enabled there, or it is the root. Normal.
        if (absl::IsNotFound(quota.status())) {
          ++missing_cpu_max;
          continue;
        }
        limit = quota.ok() ? ParseCpuMax(*quota, level.quota->path()) : quota.status();
      } else if (i > 0 && absl::IsNotFound(quota.status())) {
        continue;  // v1 makes the files in every cgroup; an ancestor without them is not a limit
      } else if (!quota.ok()) {
        limit = quota.status();
      } else if (absl::StripAsciiWhitespace(*quota) == "-1") {
        limit = Limit{};  // no need to read the period
      } else {
        absl::StatusOr<std::string> period = level.period->Read();
        limit = period.ok() ? ParseCfs(*quota, level.quota->path(), *period, level.period->path())
                            : period.status();
      }
      if (!limit.ok()) {
        reasons->push_back(absl::StrCat(limit.status().message(), " (treated as no limit)"));
        continue;
      }
      if (Tighter(*limit, *tightest)) {
        *tightest = *limit;
        *tightest_dir = level.dir;
      }
    }
    if (version_ == 2 && !levels_.empty() && missing_cpu_max == static_cast<int>(levels_.size())) {
      reasons->push_back(absl::StrCat("no cpu.max from ", levels_.front().dir,
                                      " up to the mount (cpu controller not enabled)"));
    }
  }

  const CpuQuotaOptions options_;
  ReopenableFile self_cgroup_;
  std::optional<std::string> resolved_for_;  // the /proc/self/cgroup text levels_ were built for
  int version_ = 0;                          // 1, 2, or 0 when no cgroup was found
  std::string resolve_reason_;
  std::vector<Level> levels_;  // from our cgroup up to the mount point
};

}  // namespace

absl::StatusOr<Rounding> ParseRounding(absl::string_view text) {
  if (text == "floor") return Rounding::kFloor;
  if (text == "ceil") return Rounding::kCeil;
  return absl::InvalidArgumentError(
      absl::StrCat("cpu rounding must be \"floor\" or \"ceil\", not \"", text, "\""));
}

double CpuQuota::quota_cpus() const {
  if (quota_us <= 0 || period_us <= 0) return 0;
  return static_cast<double>(quota_us) / static_cast<double>(period_us);
}

std::string CpuQuota::ToString() const {
  return absl::StrCat("source=", source, " quota=", quota_us < 0 ? "max" : absl::StrCat(quota_us),
                      " period=", period_us, " cpuset=", cpuset_cpus,
                      " effective_cpus=", effective_cpus);
}

bool CpuQuota::operator==(const CpuQuota& o) const {
  return source == o.source && quota_us == o.quota_us && period_us == o.period_us &&
         cgroup_dir == o.cgroup_dir && cpuset_cpus == o.cpuset_cpus && host_cpus == o.host_cpus &&
         effective_cpus == o.effective_cpus && reason == o.reason;
}

absl::StatusOr<int> ParseCpusOverride(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return 0;
  int cpus;
  if (!absl::SimpleAtoi(text, &cpus) || cpus < 0 || cpus > 1 << 20) {
    return absl::InvalidArgumentError(
        absl::StrCat("CPU override must be a positive whole number of CPUs, not \"", text, "\""));
  }
  return cpus;
}

absl::StatusOr<int> OverrideFromEnv(const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr) return 0;
  absl::StatusOr<int> cpus = ParseCpusOverride(value);
  if (!cpus.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(variable, ": ", cpus.status().message()));
  }
  return cpus;
}

std::unique_ptr<CpuQuotaReader> CpuQuotaReader::Create(CpuQuotaOptions options) {
  return std::make_unique<CpuQuotaReaderImpl>(std::move(options));
}

CpuQuota DetectCpuQuota(const CpuQuotaOptions& options) {
  return CpuQuotaReader::Create(options)->Read();
}

}  // namespace shipper::runtime
