#include "runtime/cpu_quota.h"

#include <sched.h>
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
#include "runtime/cgroup_files.h"

namespace shipper::runtime {
namespace {

using internal::ParseInteger;
using internal::ReopenableFile;

constexpr int64_t kDefaultPeriodUs = 100000;  // cgroup v2's default when cpu.max has one field

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
    internal::CgroupDirs found = internal::FindCgroupDirs(
        memberships_text, self_cgroup_.path(), "cpu", options_.proc_root, options_.cgroup_root);
    version_ = found.version;
    resolve_reason_ = std::move(found.reason);
    for (std::string& dir : found.dirs) {
      Level level;
      if (version_ == 1) {
        level.quota = std::make_unique<ReopenableFile>(dir + "/cpu.cfs_quota_us");
        level.period = std::make_unique<ReopenableFile>(dir + "/cpu.cfs_period_us");
      } else {
        level.quota = std::make_unique<ReopenableFile>(dir + "/cpu.max");
      }
      level.dir = std::move(dir);
      levels_.push_back(std::move(level));
    }
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
