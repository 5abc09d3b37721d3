#include "runtime/cgroup_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shipper::runtime::internal {
namespace {

constexpr absl::string_view kDefaultCgroupRoot = "/sys/fs/cgroup";

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

}  // namespace

ReopenableFile::~ReopenableFile() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::string> ReopenableFile::Read() {
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

absl::Status ReopenableFile::Error(absl::string_view what) {
  int error = errno;
  std::string message = absl::StrCat("cannot ", what, " ", path_, ": ", strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::UnavailableError(message);
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  return ReopenableFile(path).Read();
}

absl::StatusOr<int64_t> ParseInteger(absl::string_view text, absl::string_view path) {
  int64_t value;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an integer: \"", absl::CHexEscape(text.substr(0, 64)), "\""));
  }
  return value;
}

CgroupDirs FindCgroupDirs(absl::string_view memberships_text, absl::string_view memberships_path,
                          absl::string_view controller, const std::string& proc_root,
                          const std::string& cgroup_root) {
  CgroupDirs found;
  const std::string mountinfo_path = absl::StrCat(proc_root, "/self/mountinfo");
  absl::StatusOr<std::string> mountinfo = ReadWholeFile(mountinfo_path);
  if (!mountinfo.ok()) {
    found.reason = std::string(mountinfo.status().message());
    return found;
  }
  const std::vector<Mount> mounts = ParseCgroupMounts(*mountinfo);
  const std::vector<Membership> memberships = ParseMemberships(memberships_text);
  const Membership* v1 = nullptr;
  const Membership* v2 = nullptr;
  for (const Membership& m : memberships) {
    if (Contains(m.controllers, controller)) v1 = &m;
    if (m.hierarchy == "0" && m.controllers.empty()) v2 = &m;
  }
  const std::string v1_name = absl::StrCat("cgroup v1 ", controller);
  std::vector<std::string> notes;
  // Maps the membership through the matching mount with the longest root that contains its
  // path, and lists the directories from the cgroup up to the mount point.
  const auto try_mount = [&](const Membership& membership, absl::string_view fs_type) {
    const bool is_v1 = fs_type == "cgroup";
    const Mount* best = nullptr;
    std::string relative;
    bool any_mount = false;
    for (const Mount& mount : mounts) {
      if (mount.fs_type != fs_type) continue;
      if (is_v1 && !Contains(mount.super_options, controller)) continue;
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
        notes.push_back(absl::StrCat(is_v1 ? v1_name : "cgroup v2", " path ", membership.path,
                                     " is outside every mount's root"));
      } else {
        notes.push_back(absl::StrCat("no ", is_v1 ? v1_name : "cgroup2", " mount in mountinfo"));
      }
      return false;
    }
    const std::string base = MapMountPoint(best->mount_point, cgroup_root);
    std::string dir = absl::StrCat(base, relative == "/" ? "" : relative);
    for (;;) {
      found.dirs.push_back(dir);
      if (dir.size() <= base.size()) break;
      dir = dir.substr(0, dir.rfind('/'));
      if (dir.size() < base.size()) dir = base;
    }
    found.version = is_v1 ? 1 : 2;
    return true;
  };
  if (!(v1 != nullptr && try_mount(*v1, "cgroup")) &&
      !(v2 != nullptr && try_mount(*v2, "cgroup2")) && v1 == nullptr && v2 == nullptr) {
    notes.push_back(absl::StrCat("no ", controller, " cgroup in ", memberships_path));
  }
  found.reason = absl::StrJoin(notes, "; ");
  return found;
}

}  // namespace shipper::runtime::internal
