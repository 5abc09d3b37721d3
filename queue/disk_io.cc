#include "queue/disk_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace shipper::queue {
namespace {

class PosixFile final : public DiskFile {
 public:
  PosixFile(std::string name, int fd, bool directory)
      : DiskFile(std::move(name)), fd_(fd), directory_(directory) {}
  ~PosixFile() override { close(fd_); }

  absl::StatusOr<size_t> Read(uint64_t offset, size_t size, char* out) override {
    for (;;) {
      const ssize_t n = pread(fd_, out, size, offset);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return ErrnoError(errno, "read", name());
    }
  }

  absl::Status Write(uint64_t offset, absl::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = pwrite(fd_, data.data(), data.size(), offset);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError(errno, "write", name());
      data.remove_prefix(n);
      offset += n;
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if ((directory_ ? fsync(fd_) : fdatasync(fd_)) != 0) return ErrnoError(errno, "sync", name());
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Size() override {
    struct stat st;
    if (fstat(fd_, &st) != 0) return ErrnoError(errno, "stat", name());
    return static_cast<uint64_t>(st.st_size);
  }

  absl::Status Truncate(uint64_t size) override {
    if (ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return ErrnoError(errno, "truncate", name());
    }
    return absl::OkStatus();
  }

  absl::Status Lock() override {
    if (flock(fd_, LOCK_EX | LOCK_NB) == 0) return absl::OkStatus();
    if (errno == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat("lock ", name(), ": held by another"));
    }
    return ErrnoError(errno, "lock", name());
  }

 private:
  const int fd_;
  const bool directory_;
};

class PosixIo final : public DiskIo {
 public:
  absl::StatusOr<std::unique_ptr<DiskFile>> Open(const std::string& path, OpenMode mode) override {
    int flags = O_CLOEXEC;
    switch (mode) {
      case OpenMode::kRead:
        flags |= O_RDONLY;
        break;
      case OpenMode::kReadWrite:
        flags |= O_RDWR | O_CREAT;
        break;
      case OpenMode::kDirectory:
        flags |= O_RDONLY | O_DIRECTORY;
        break;
    }
    const int fd = open(path.c_str(), flags, 0644);
    if (fd < 0) return ErrnoError(errno, "open", path);
    return std::make_unique<PosixFile>(path, fd, mode == OpenMode::kDirectory);
  }

  absl::StatusOr<std::vector<std::string>> List(const std::string& path) override {
    DIR* dir = opendir(path.c_str());
    if (dir == nullptr) return ErrnoError(errno, "list", path);
    std::vector<std::string> names;
    for (;;) {
      errno = 0;
      const struct dirent* entry = readdir(dir);
      if (entry == nullptr) break;
      const absl::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    const int err = errno;
    closedir(dir);
    if (err != 0) return ErrnoError(err, "list", path);
    return names;
  }

  absl::Status CreateDirs(const std::string& path) override {
    // Each missing ancestor in turn, from the outermost.
    for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
      const std::string dir = path.substr(0, end);
      if (!dir.empty() && mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoError(errno, "create", dir);
      }
      if (end == std::string::npos) break;
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return ErrnoError(errno, "create", path);
    if (!S_ISDIR(st.st_mode)) return ErrnoError(ENOTDIR, "create", path);
    return absl::OkStatus();
  }

  absl::Status Remove(const std::string& path) override {
    if (unlink(path.c_str()) != 0) return ErrnoError(errno, "delete", path);
    return absl::OkStatus();
  }
};

}  // namespace

absl::Status ErrnoError(int err, absl::string_view call, absl::string_view path) {
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  if (err == ENOSPC || err == EDQUOT) code = absl::StatusCode::kResourceExhausted;
  if (err == ENOENT) code = absl::StatusCode::kNotFound;
  return absl::Status(code, absl::StrCat(call, " ", path, ": ", strerror(err)));
}

DiskIo* DiskIo::Posix() {
  static DiskIo* const io = new PosixIo;
  return io;
}

absl::StatusOr<size_t> ReadFully(DiskFile& file, uint64_t offset, size_t size, char* out) {
  size_t done = 0;
  while (done < size) {
    absl::StatusOr<size_t> n = file.Read(offset + done, size - done, out + done);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    done += *n;
  }
  return done;
}

}  // namespace shipper::queue
