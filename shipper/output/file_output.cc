#include "shipper/output/file_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"
#include "shipper/output/batch_json.h"
#include "shipper/output/file_util.h"

namespace shipper {
namespace {

// An open file; closed when the last worker still flushing it lets go.
class OpenFile {
 public:
  explicit OpenFile(int fd) : fd_(fd) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  const int fd_;
};

absl::Status Errno(absl::string_view what, absl::string_view path) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Cuts a partial last line, left by a process killed in the middle of a write: those events
// were never reported persisted (their clients resend them), and appending after the fragment
// would corrupt the next line too.
void TrimPartialLine(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return;
  off_t end = st.st_size;
  char buf[4096];
  while (end > 0) {
    const off_t begin = end > static_cast<off_t>(sizeof buf) ? end - sizeof buf : 0;
    const ssize_t n = ::pread(fd, buf, static_cast<size_t>(end - begin), begin);
    if (n != end - begin) return;  // unreadable: leave the file as it is
    for (ssize_t i = n - 1; i >= 0; --i) {
      if (buf[i] != '\n') continue;
      const off_t keep = begin + i + 1;
      if (keep == st.st_size) return;
      LOG(WARNING) << path << ": cutting " << st.st_size - keep
                   << " bytes of a line a previous process did not finish";
      if (::ftruncate(fd, keep) != 0) PLOG(WARNING) << path << ": truncate";
      return;
    }
    end = begin;
  }
  LOG(WARNING) << path << ": cutting " << st.st_size << " bytes without a whole line";
  if (::ftruncate(fd, 0) != 0) PLOG(WARNING) << path << ": truncate";
}

// Opens path/filename for appending, creating it with the configured permissions (less the
// process umask, as for any file the process creates).
absl::StatusOr<std::shared_ptr<OpenFile>> Open(const Config::FileOutput& config) {
  const std::string path = absl::StrCat(config.path, "/", config.filename);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC,
                  static_cast<mode_t>(config.permissions));
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("shipper.output.file: cannot open '", path,
                                                   "' for appending: ", std::strerror(errno)));
  }
  TrimPartialLine(fd, path);
  return std::make_shared<OpenFile>(fd);
}

class FileOutput final : public Output {
 public:
  FileOutput(const Config::FileOutput& config, std::shared_ptr<OpenFile> file, size_t size)
      : config_(config),
        path_(absl::StrCat(config.path, "/", config.filename)),
        limit_(config.rotate_every_kb * 1024),
        file_(std::move(file)),
        size_(size) {}

  absl::Status Write(const queue::Batch& batch, std::vector<Rejection>*) override {
    thread_local BatchJson json;
    json.Encode(batch);
    std::shared_ptr<OpenFile> last;  // the file the batch ended in
    {
      absl::MutexLock lock(&mu_);
      // Writes runs of lines that fit the current file, rotating between runs.
      size_t run_begin = 0, run_bytes = 0;
      for (size_t i = 0; i < json.size(); ++i) {
        const size_t bytes = json.line(i).size();
        if (size_ + run_bytes > 0 && size_ + run_bytes + bytes > limit_) {
          if (absl::Status s = WriteRunLocked(json, run_begin, i, run_bytes); !s.ok()) return s;
          if (absl::Status s = RotateLocked(); !s.ok()) return s;
          run_begin = i;
          run_bytes = 0;
        }
        run_bytes += bytes;
      }
      if (absl::Status s = WriteRunLocked(json, run_begin, json.size(), run_bytes); !s.ok()) {
        return s;
      }
      last = file_;
    }
    // Outside the lock, so concurrent workers' flushes coalesce in the kernel. Files the batch
    // went into before were flushed by their rotation; `last`, if rotated meanwhile, stays open
    // until this reference goes.
    if (config_.fsync == FsyncPolicy::kBatch && ::fdatasync(last->fd()) != 0) {
      return Errno("flushing", path_);
    }
    return absl::OkStatus();
  }

 private:
  absl::Status WriteRunLocked(const BatchJson& json, size_t begin, size_t end, size_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (begin == end) return absl::OkStatus();
    const absl::string_view first = json.line(begin);
    absl::Status status = WriteAll(file_->fd(), {first.data(), bytes}, path_);
    // Even a failed write may have appended part of the run: count what the file holds.
    struct stat st;
    size_ = ::fstat(file_->fd(), &st) == 0 ? static_cast<size_t>(st.st_size) : size_ + bytes;
    return status;
  }

  std::string Numbered(size_t n) const { return absl::StrCat(path_, ".", n); }

  absl::Status RotateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (config_.fsync == FsyncPolicy::kBatch && ::fdatasync(file_->fd()) != 0) {
      return Errno("flushing", path_);
    }
    const size_t last = config_.number_of_files - 1;
    if (::unlink(Numbered(last).c_str()) != 0 && errno != ENOENT) {
      return Errno("rotating: deleting", Numbered(last));
    }
    for (size_t n = last; n > 1; --n) {
      if (::rename(Numbered(n - 1).c_str(), Numbered(n).c_str()) != 0 && errno != ENOENT) {
        return Errno("rotating: renaming", Numbered(n - 1));
      }
    }
    if (::rename(path_.c_str(), Numbered(1).c_str()) != 0) {
      return Errno("rotating: renaming", path_);
    }
    absl::StatusOr<std::shared_ptr<OpenFile>> file = Open(config_);
    if (!file.ok()) return file.status();
    file_ = *std::move(file);
    size_ = 0;
    if (config_.fsync == FsyncPolicy::kBatch) {
      // The renames and the new file must survive a crash too.
      int dir = ::open(config_.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dir < 0) return Errno("opening directory", config_.path);
      const int synced = ::fsync(dir);
      ::close(dir);
      if (synced != 0) return Errno("flushing directory", config_.path);
    }
    return absl::OkStatus();
  }

 private:
  // Constant after construction.
  const Config::FileOutput config_;
  const std::string path_;
  const size_t limit_;  // bytes

  absl::Mutex mu_;  // keeps each batch's lines together and orders rotations
  std::shared_ptr<OpenFile> file_ ABSL_GUARDED_BY(mu_);
  size_t size_ ABSL_GUARDED_BY(mu_);  // of file_
};

}  // namespace

absl::StatusOr<std::unique_ptr<Output>> NewFileOutput(const Config::FileOutput& config) {
  if (::mkdir(config.path.c_str(), 0750) != 0 && errno != EEXIST) {
    return absl::InvalidArgumentError(
        absl::StrCat("shipper.output.file.path: cannot create directory '", config.path,
                     "': ", std::strerror(errno)));
  }
  absl::StatusOr<std::shared_ptr<OpenFile>> file = Open(config);
  if (!file.ok()) return file.status();
  struct stat st;
  const size_t size = ::fstat((*file)->fd(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
  return std::make_unique<FileOutput>(config, *std::move(file), size);
}

}  // namespace shipper

