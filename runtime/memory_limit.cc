#include "runtime/memory_limit.h"

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/cgroup_files.h"

namespace shipper::runtime {
namespace {

// cgroup v1 writes "no limit" as the largest page-aligned int64 (9223372036854771712); anything
// this large is no limit on any machine.
constexpr int64_t kV1Unlimited = int64_t{1} << 62;

// One level's limit: -1 for none, or the bytes.
absl::StatusOr<int64_t> ParseLimit(absl::string_view text, absl::string_view path, int version) {
  if (version == 2 && absl::StripAsciiWhitespace(text) == "max") return -1;
  absl::StatusOr<int64_t> bytes = internal::ParseInteger(text, path);
  if (!bytes.ok()) return bytes.status();
  if (version == 1 && (*bytes == -1 || *bytes >= kV1Unlimited)) return -1;
  if (*bytes < 0) return absl::InvalidArgumentError(absl::StrCat(path, ": negative limit"));
  return *bytes;
}

}  // namespace

std::string MemoryLimit::ToString() const {
  return absl::StrCat("source=", source, " limit=", limited() ? absl::StrCat(bytes) : "max",
                      cgroup_dir.empty() ? "" : " dir=", cgroup_dir);
}

MemoryLimit DetectMemoryLimit(const MemoryLimitOptions& options) {
  MemoryLimit result;
  std::vector<std::string> reasons;
  const std::string self_cgroup = absl::StrCat(options.proc_root, "/self/cgroup");
  absl::StatusOr<std::string> memberships = internal::ReadWholeFile(self_cgroup);
  if (!memberships.ok()) {
    result.reason = std::string(memberships.status().message());
    return result;
  }
  internal::CgroupDirs found = internal::FindCgroupDirs(*memberships, self_cgroup, "memory",
                                                        options.proc_root, options.cgroup_root);
  if (!found.reason.empty()) reasons.push_back(std::move(found.reason));
  const char* file = found.version == 1 ? "/memory.limit_in_bytes" : "/memory.max";
  for (size_t i = 0; i < found.dirs.size(); ++i) {
    const std::string path = found.dirs[i] + file;
    absl::StatusOr<std::string> text = internal::ReadWholeFile(path);
    // v2: no memory.max where the controller is not enabled, and at the root. v1: an ancestor
    // above the container's cgroup may not be visible. Neither is a limit.
    if (absl::IsNotFound(text.status()) && (found.version == 2 || i > 0)) continue;
    absl::StatusOr<int64_t> bytes =
        text.ok() ? ParseLimit(*text, path, found.version) : text.status();
    if (!bytes.ok()) {
      reasons.push_back(absl::StrCat(bytes.status().message(), " (treated as no limit)"));
      continue;
    }
    if (*bytes >= 0 && (result.bytes < 0 || *bytes < result.bytes)) {
      result.bytes = *bytes;
      result.cgroup_dir = found.dirs[i];
      result.source = found.version == 1 ? "cgroup1" : "cgroup2";
    }
  }
  result.reason = absl::StrJoin(reasons, "; ");
  return result;
}

}  // namespace shipper::runtime
