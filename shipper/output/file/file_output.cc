#include "shipper/output/file/file_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "runtime/mutex.h"
#include "shipper/config/preflight.h"
#include "shipper/output/batch_json.h"
#include "shipper/output/file_util.h"

namespace shipper {
namespace {

using SyncFunction = std::function<int(int fd)>;

absl::Status Errno(absl::string_view what, absl::string_view path) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// An open file and what of it is durable; closed when the last holder lets go (the output, the
// syncer, and the finishes of batches not yet confirmed).
//
// An fdatasync makes durable every byte written before it started. The file tracks the bytes
// written (set under FileOutput::mu_ after each write) and the bytes known durable; Sync() reads
// the first before it flushes, and AwaitSynced(end) waits until a Sync() has covered `end`.
//
// A failed fdatasync loses the file: Linux reports a writeback error once, may have dropped the
// pages it could not write, and the next fdatasync returns 0 ("fsyncgate"). So nothing written
// after the last sync that passed counts as durable any more, whatever later syncs say: those
// batches fail, and the output cuts the file back to what was synced and writes them again
// (FileOutput::Write).
class OpenFile {
 public:
  // `dir` holds the file: its entry may be new, so the first sync flushes the directory too. Its
  // first `synced` bytes of `size` are known durable.
  OpenFile(int fd, std::string path, uint64_t size, uint64_t synced, std::string dir,
           SyncFunction sync)
      : fd_(fd),
        path_(std::move(path)),
        sync_(std::move(sync)),
        written_(size),
        synced_(synced),
        dir_(std::move(dir)) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() { ::close(fd_); }
  int fd() const { return fd_; }
  uint64_t written() const { return written_.load(std::memory_order_acquire); }

  // The file now holds `size` bytes, all written by completed write() calls.
  void Wrote(uint64_t size) { written_.store(size, std::memory_order_release); }

  // Makes every byte written so far durable (and the file's directory entry, if pending). Called
  // by one thread at a time (the Syncer's).
  void Sync() {
    // Every byte up to `target` was written before the sync starts, so it covers them.
    const uint64_t target = written();
    std::string dir;
    {
      runtime::MutexLock lock(&mu_);
      if (target <= synced_ || !failure_.ok()) return;
      dir = dir_;
    }
    absl::Status status = dir.empty() ? absl::OkStatus() : SyncDirectory(dir);
    if (status.ok() && sync_(fd_) != 0) status = Errno("flushing", path_);
    runtime::MutexLock lock(&mu_);
    if (status.ok()) {
      synced_ = target;
      dir_.clear();
    } else {
      failure_ = status;
    }
    synced_or_failed_.SignalAll();
  }

  // Whether a sync failed: then only the first synced() bytes count, for good.
  bool lost() {
    runtime::MutexLock lock(&mu_);
    return !failure_.ok();
  }
  uint64_t synced() {
    runtime::MutexLock lock(&mu_);
    return synced_;
  }

  // Waits until a Sync() has covered the first `end` bytes, or Cancel(), and says whether they
  // are durable. REQUIRES: they were written (Wrote() was called with at least `end`) and a Sync()
  // is to come after.
  absl::Status AwaitSynced(uint64_t end) {
    runtime::MutexLock lock(&mu_);
    while (end > synced_ && failure_.ok() && !cancelled_) synced_or_failed_.Wait(&mu_);
    if (end <= synced_) return absl::OkStatus();
    if (!failure_.ok()) return failure_;
    return absl::UnavailableError(
        absl::StrCat("flushing ", path_, ": cancelled at shutdown before the flush ended"));
  }

  // Ends every AwaitSynced() now and to come that a Sync() has not yet answered: a flush may hang
  // on a failing device, and shutdown must not wait for it.
  void Cancel() {
    runtime::MutexLock lock(&mu_);
    cancelled_ = true;
    synced_or_failed_.SignalAll();
  }

 private:
  // Constant after construction.
  const int fd_;
  const std::string path_;   // for errors; the file may have been renamed since
  const SyncFunction sync_;  // ::fdatasync but in tests

  std::atomic<uint64_t> written_;
  runtime::Mutex mu_;
  uint64_t synced_ ABSL_GUARDED_BY(mu_);       // bytes known durable
  absl::Status failure_ ABSL_GUARDED_BY(mu_);  // the first failed sync's error: the file is lost
  std::string dir_ ABSL_GUARDED_BY(mu_);       // to flush on the next sync, if not empty
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  runtime::CondVar synced_or_failed_;  // synced_ grew or failure_ was set
};

// Flushes files on a thread of its own, as soon as they are asked for: a worker's batch is made
// durable while it encodes and writes its next one. Files asked for while a flush runs share the
// next flush (group commit). Its thread shares what it uses (State, the files), so that after
// Abandon() it may outlive the Syncer.
class Syncer {
 public:
  Syncer() : state_(std::make_shared<State>()), thread_([state = state_] { Run(*state); }) {}
  Syncer(const Syncer&) = delete;
  Syncer& operator=(const Syncer&) = delete;
  // Flushes what was asked for, then stops; after Abandon(), returns at once and the thread ends
  // by itself.
  ~Syncer() {
    {
      runtime::MutexLock lock(&state_->mu);
      state_->stopping = true;
      state_->asked_or_stopping.Signal();
    }
    if (abandoned_.load(std::memory_order_acquire)) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

  // A Sync() of `file` is to come, covering every byte it holds now.
  void Ask(std::shared_ptr<OpenFile> file) {
    runtime::MutexLock lock(&state_->mu);
    for (const std::shared_ptr<OpenFile>& asked : state_->asked) {
      if (asked == file) return;
    }
    state_->asked.push_back(std::move(file));
    state_->asked_or_stopping.Signal();
  }

  // The destructor will not wait for a flush that may hang (shutdown, FileOutput::Cancel).
  void Abandon() { abandoned_.store(true, std::memory_order_release); }

 private:
  struct State {
    runtime::Mutex mu;
    runtime::CondVar asked_or_stopping;
    std::vector<std::shared_ptr<OpenFile>> asked ABSL_GUARDED_BY(mu);
    bool stopping ABSL_GUARDED_BY(mu) = false;
  };

  static void Run(State& state) {
    std::vector<std::shared_ptr<OpenFile>> files;
    while (true) {
      {
        runtime::MutexLock lock(&state.mu);
        while (state.asked.empty() && !state.stopping) state.asked_or_stopping.Wait(&state.mu);
        if (state.asked.empty()) return;  // stopping
        files.swap(state.asked);
      }
      for (const std::shared_ptr<OpenFile>& file : files) file->Sync();
      files.clear();
    }
  }

  const std::shared_ptr<State> state_;
  std::atomic<bool> abandoned_{false};
  std::thread thread_;  // last: starts once the rest is built
};

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
absl::StatusOr<std::shared_ptr<OpenFile>> Open(const FileSettings& config,
                                               const SyncFunction& sync) {
  std::string path = absl::StrCat(config.path, "/", config.filename);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC,
                  static_cast<mode_t>(config.permissions));
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("shipper.output.file: cannot open '", path,
                                                   "' for appending: ", std::strerror(errno)));
  }
  TrimPartialLine(fd, path);
  struct stat st;
  const uint64_t size = ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return std::make_shared<OpenFile>(fd, std::move(path), size, 0, config.path, sync);
}

// A file descriptor closed by its destructor.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_;
};

class FileOutput final : public Output {
 public:
  FileOutput(const FileSettings& config, std::shared_ptr<OpenFile> file, SyncFunction sync)
      : config_(config),
        path_(absl::StrCat(config.path, "/", config.filename)),
        limit_(config.rotate_every_kb * 1024),
        sync_(std::move(sync)),
        syncer_(config.fsync == FsyncPolicy::kBatch ? std::make_unique<Syncer>() : nullptr),
        file_(std::move(file)),
        size_(file_->written()) {
    Track(file_);
  }

  absl::Status Write(const Events& events, Outcome* outcome) override {
    if (cancelled_.load(std::memory_order_acquire)) {
      return absl::UnavailableError(absl::StrCat("writing ", path_, ": cancelled at shutdown"));
    }
    thread_local BatchJson json;
    json.Encode(events);
    // The files the batch went into (more than one when it rotated) and where its bytes end.
    std::vector<std::pair<std::shared_ptr<OpenFile>, uint64_t>> written;
    // Deleted oldest files, still open: their blocks are freed when these close, after the
    // lock is released.
    std::vector<ScopedFd> deleted;
    {
      runtime::MutexLock lock(&mu_);
      // A lost file (OpenFile) takes no more lines: what it held unsynced is written again, here.
      if (file_->lost()) {
        if (absl::Status s = CutBackLocked(); !s.ok()) return s;
      }
      // Writes runs of lines that fit the current file, rotating between runs.
      size_t run_begin = 0, run_bytes = 0;
      for (size_t i = 0; i < json.size(); ++i) {
        const size_t bytes = json.line(i).size();
        if (size_ + run_bytes > 0 && size_ + run_bytes + bytes > limit_) {
          if (absl::Status s = WriteRunLocked(json, run_begin, i, run_bytes); !s.ok()) return s;
          if (run_bytes > 0) written.emplace_back(file_, size_);
          if (absl::Status s = RotateLocked(&deleted); !s.ok()) return s;
          run_begin = i;
          run_bytes = 0;
        }
        run_bytes += bytes;
      }
      if (absl::Status s = WriteRunLocked(json, run_begin, json.size(), run_bytes); !s.ok()) {
        return s;
      }
      written.emplace_back(file_, size_);
    }
    deleted.clear();
    if (syncer_ == nullptr) return absl::OkStatus();  // fsync: never
    // The syncer flushes while the worker writes its next batch; the finish waits for it. A file
    // rotated meanwhile stays open until its references here go.
    for (const auto& [file, end] : written) syncer_->Ask(file);
    outcome->finish = [written = std::move(written)](Outcome*) {
      for (const auto& [file, end] : written) {
        if (absl::Status s = file->AwaitSynced(end); !s.ok()) return s;
      }
      return absl::OkStatus();
    };
    return absl::OkStatus();
  }

  // Finishes waiting on a flush fail at once, and so do later writes; the output's destruction
  // no longer waits for a flush in progress.
  void Cancel() override {
    cancelled_.store(true, std::memory_order_release);
    if (syncer_ != nullptr) syncer_->Abandon();
    runtime::MutexLock lock(&files_mu_);
    for (const std::weak_ptr<OpenFile>& weak : files_) {
      if (std::shared_ptr<OpenFile> file = weak.lock()) file->Cancel();
    }
  }

 private:
  // Keeps `file` within Cancel()'s reach for as long as anyone holds it.
  void Track(const std::shared_ptr<OpenFile>& file) {
    runtime::MutexLock lock(&files_mu_);
    files_.erase(std::remove_if(files_.begin(), files_.end(),
                                [](const std::weak_ptr<OpenFile>& f) { return f.expired(); }),
                 files_.end());
    files_.push_back(file);
    // Opened by a write that began before Cancel(): cancelled all the same.
    if (cancelled_.load(std::memory_order_acquire)) file->Cancel();
  }

  absl::Status WriteRunLocked(const BatchJson& json, size_t begin, size_t end, size_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (begin == end) return absl::OkStatus();
    const absl::string_view first = json.line(begin);
    absl::Status status = AppendLines(file_->fd(), size_, {first.data(), bytes}, path_);
    if (!status.ok()) return status;
    size_ += bytes;
    file_->Wrote(size_);
    return status;
  }

  // Cuts the lost file back to what its last good sync covered and goes on in it, as a new
  // OpenFile (on a duplicate of its descriptor) whose bytes are all durable: the batches that wrote
  // past that point fail (the old OpenFile) and are written again. Not a rotation: a device whose
  // syncs keep failing would otherwise rotate once per retry and delete the oldest files, whose
  // batches were acknowledged.
  absl::Status CutBackLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t synced = file_->synced();
    const int fd = ::fcntl(file_->fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return Errno("after a failed flush, reopening", path_);
    if (::ftruncate(fd, static_cast<off_t>(synced)) != 0) {
      const absl::Status status = Errno("after a failed flush, cutting back", path_);
      ::close(fd);
      return status;
    }
    LOG(WARNING) << path_ << ": a flush failed; cut back to the " << synced
                 << " bytes flushed before it, the batches written since are written again";
    // The directory is flushed again with the next sync: the failed one may have been the first.
    file_ = std::make_shared<OpenFile>(fd, path_, synced, synced, config_.path, sync_);
    size_ = synced;
    Track(file_);
    return absl::OkStatus();
  }

  // Name(0) is filename, Name(n) filename.n.
  std::string Name(size_t n) const { return n == 0 ? path_ : absl::StrCat(path_, ".", n); }

  // Shifts filename.n to filename.n+1 from the first free name of the chain down (the oldest,
  // filename.N-1, is replaced if none is free), then opens a new filename. Any step may fail and
  // the rotation be retried without losing a file: a retry shifts only down from the gap the last
  // attempt left, and after a failed open none, as filename itself is the gap. Renames and opens
  // under the lock; the flushes of the rotated file and of the directory are the syncer's, and
  // the replaced oldest file is held open in `deleted` so that its blocks are freed outside the
  // lock.
  absl::Status RotateLocked(std::vector<ScopedFd>* deleted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const size_t last = config_.number_of_files - 1;
    size_t free = 0;
    while (free < last && Exists(Name(free))) ++free;
    if (free == last) {
      // While open, a replaced file's blocks stay (ext4 and most file systems free them on the
      // last close).
      const int oldest_fd = ::open(Name(last).c_str(), O_RDONLY | O_CLOEXEC);
      if (oldest_fd >= 0) deleted->emplace_back(oldest_fd);
    }
    for (size_t n = free; n > 0; --n) {
      if (::rename(Name(n - 1).c_str(), Name(n).c_str()) != 0) {
        return Errno("rotating: renaming", Name(n - 1));
      }
    }
    absl::StatusOr<std::shared_ptr<OpenFile>> file = Open(config_, sync_);
    if (!file.ok()) return file.status();
    file_ = *std::move(file);
    size_ = 0;
    Track(file_);
    return absl::OkStatus();
  }

  // Whether `path` may hold a file: only a name known free is used as the gap.
  static bool Exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 || errno != ENOENT;
  }

  // Constant after construction.
  const FileSettings config_;
  const std::string path_;
  const size_t limit_;  // bytes
  const SyncFunction sync_;
  const std::unique_ptr<Syncer> syncer_;  // null with fsync: never

  std::atomic<bool> cancelled_{false};
  // The files opened, for Cancel(); apart from mu_, which a write stuck in the kernel may hold.
  runtime::Mutex files_mu_;
  std::vector<std::weak_ptr<OpenFile>> files_ ABSL_GUARDED_BY(files_mu_);

  runtime::Mutex mu_;  // keeps each batch's lines together and orders rotations
  std::shared_ptr<OpenFile> file_ ABSL_GUARDED_BY(mu_);
  size_t size_ ABSL_GUARDED_BY(mu_);  // of file_
};

}  // namespace

absl::StatusOr<std::unique_ptr<Output>> NewFileOutput(const FileSettings& config,
                                                      std::function<int(int fd)> fdatasync) {
  absl::Status dir = MakeDirectories("shipper.output.file.path", config.path, 0750);
  if (!dir.ok()) return dir;
  absl::StatusOr<std::shared_ptr<OpenFile>> file = Open(config, fdatasync);
  if (!file.ok()) return file.status();
  return std::make_unique<FileOutput>(config, *std::move(file), std::move(fdatasync));
}

void FileSettings::Preflight(Problems* problems) const {
  const size_t before = problems->all().size();
  CheckDirectory(problems, "shipper.output.file.path", path);
  if (problems->all().size() == before) {  // else the file's problem is the directory's
    CheckAppendFile(problems, "shipper.output.file.filename", absl::StrCat(path, "/", filename));
  }
}

absl::StatusOr<std::unique_ptr<Output>> FileSettings::Build() const {
  return NewFileOutput(*this, ::fdatasync);
}

std::string FileSettings::Destination() const { return absl::StrCat("file ", path, "/", filename); }

OutputType FileOutputType() {
  using K = KeysOf<FileSettings>;
  return MakeOutputType<FileSettings>(
      "file", "write NDJSON to a file (the default output when none is enabled)",
      {
          K::String("shipper.output.file.path", "directory of the file output",
                    &FileSettings::path),
          K::String("shipper.output.file.filename", "file name inside path",
                    &FileSettings::filename),
          K::Size("shipper.output.file.rotate_every_kb",
                  "rotate the file before it grows past this many KiB", 1, false,
                  &FileSettings::rotate_every_kb),
          K::Size("shipper.output.file.number_of_files",
                  "files kept: filename, filename.1, ...; the oldest is deleted on rotation", 2,
                  false, &FileSettings::number_of_files),
          K::Permissions("shipper.output.file.permissions", "permissions of the files created",
                         &FileSettings::permissions),
          K::Choice<FsyncPolicy>(
              "shipper.output.file.fsync",
              "batch: flush each batch to disk before it counts as persisted; never: leave it "
              "to the kernel",
              {{"batch", FsyncPolicy::kBatch}, {"never", FsyncPolicy::kNever}},
              &FileSettings::fsync),
      });
}

}  // namespace shipper
