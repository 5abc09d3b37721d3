#include "shipper/config/preflight.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "shipper/config/address.h"
#include "shipper/config/pem.h"

namespace shipper {
namespace {

// The directory that holds `path` ("." for a bare name).
std::string Parent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// A problem with `dir`, which exists and should be a writable directory; empty if none.
std::string WritableDirectory(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return absl::StrCat("'", dir, "': ", std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return absl::StrCat("'", dir, "' is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::StrCat("directory '", dir, "' is not writable (", std::strerror(errno), ")");
  }
  return "";
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

void CheckPem(Problems* problems, absl::string_view key, const std::string& path,
              absl::string_view what) {
  problems->Add(ReadPem(key, path, what).status());
}

void CheckDirectory(Problems* problems, absl::string_view key, const std::string& dir) {
  std::string existing = dir;
  while (!Exists(existing) && existing != "." && existing != "/") existing = Parent(existing);
  const std::string problem = WritableDirectory(existing);
  if (problem.empty()) return;
  if (existing == dir) {
    problems->Add(absl::StrCat(key, ": ", problem));
  } else {
    problems->Add(absl::StrCat(key, ": cannot create directory '", dir, "': ", problem));
  }
}

void CheckAppendFile(Problems* problems, absl::string_view key, const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      problems->Add(absl::StrCat(key, ": '", path, "' is a directory; name a file"));
    } else if (::access(path.c_str(), W_OK) != 0) {
      problems->Add(
          absl::StrCat(key, ": '", path, "' is not writable (", std::strerror(errno), ")"));
    }
    return;
  }
  CheckDirectory(problems, key, Parent(path));
}

void CheckListenAddress(Problems* problems, absl::string_view key, const std::string& address) {
  const auto cannot = [&](absl::string_view why) {
    problems->Add(absl::StrCat("cannot listen on '", address, "' (", why, "): change ", key));
  };
  absl::StatusOr<Address> parsed = ParseAddress(address, kListenAddress);
  if (!parsed.ok()) return cannot(parsed.status().message());
  const std::string& path = parsed->unix_path;
  if (path.empty()) {
    absl::StatusOr<AddressList> found = ResolveListenAddress(*parsed);
    if (!found.ok()) cannot(found.status().message());
    return;
  }
  if (path.size() >= sizeof(sockaddr_un::sun_path)) return cannot("path too long");
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    return problems->Add(
        absl::StrCat("'", path, "' exists and is not a socket: remove it or change ", key));
  }
  if (std::string problem = WritableDirectory(Parent(path)); !problem.empty()) cannot(problem);
}

absl::Status MakeDirectories(absl::string_view key, const std::string& dir, mode_t mode) {
  if (dir.empty() || Exists(dir)) return absl::OkStatus();
  if (absl::Status parent = MakeDirectories(key, Parent(dir), mode); !parent.ok()) return parent;
  if (::mkdir(dir.c_str(), mode) != 0) {
    if (errno == EEXIST) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": cannot create directory '", dir, "': ", std::strerror(errno)));
  }
  if (absl::Status synced = SyncDirectory(Parent(dir)); !synced.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": created directory '", dir, "' but ", synced.message()));
  }
  return absl::OkStatus();
}

absl::Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("opening directory ", dir, ": ", std::strerror(errno)));
  }
  const int synced = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (synced != 0) {
    return absl::UnavailableError(
        absl::StrCat("flushing directory ", dir, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace shipper
