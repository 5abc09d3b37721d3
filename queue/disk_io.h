// The disk queue's I/O: every call it makes to the file system goes through a DiskIo (after
// LevelDB's Env), so that a test can make any of them fail (faulty_disk_io.h) and every error
// path of the queue has a test. DiskIo::Posix() is the file system itself.
//
// Errors name the call and the file ("read /q/00000000000000000001.seg: Input/output error"):
// RESOURCE_EXHAUSTED for ENOSPC and EDQUOT, NOT_FOUND for ENOENT, FAILED_PRECONDITION for a lock
// another file holds, UNAVAILABLE for every other errno (EIO among them).
//
// Thread safety: a DiskIo is safe for concurrent use. A DiskFile may be used from several threads
// at once, as a file descriptor can (reads, writes at distinct offsets, a sync); it is closed when
// it is destroyed.
#ifndef SHIPPER_QUEUE_DISK_IO_H_
#define SHIPPER_QUEUE_DISK_IO_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shipper::queue {

class DiskFile {
 public:
  virtual ~DiskFile() = default;

  // The path it was opened with.
  const std::string& name() const { return name_; }

  // Reads up to `size` bytes at `offset` into `out`; returns how many. Fewer means the end of
  // the file, or a file system that returned less (ReadFully reads on).
  virtual absl::StatusOr<size_t> Read(uint64_t offset, size_t size, char* out) = 0;
  // Writes all of `data` at `offset`. After an error, any part of it may have been written.
  virtual absl::Status Write(uint64_t offset, absl::string_view data) = 0;
  // Makes what was written durable: fdatasync for a file, fsync for a directory (its entries).
  virtual absl::Status Sync() = 0;
  // The file's size in bytes (fstat).
  virtual absl::StatusOr<uint64_t> Size() = 0;
  // Cuts the file to `size` bytes (ftruncate).
  virtual absl::Status Truncate(uint64_t size) = 0;
  // Takes an exclusive lock (flock), held until the file is destroyed. FAILED_PRECONDITION if
  // another open file holds it, in this process or another.
  virtual absl::Status Lock() = 0;

 protected:
  explicit DiskFile(std::string name) : name_(std::move(name)) {}

 private:
  const std::string name_;
};

enum class OpenMode {
  kRead,       // reading only
  kReadWrite,  // reading and writing; created (mode 0644) if missing
  kDirectory,  // a directory: to Sync its entries, or to Lock it
};

class DiskIo {
 public:
  virtual ~DiskIo() = default;

  // The file system. Never deleted.
  static DiskIo* Posix();

  virtual absl::StatusOr<std::unique_ptr<DiskFile>> Open(const std::string& path,
                                                         OpenMode mode) = 0;
  // The names of the entries of directory `path`, "." and ".." not included, in no order.
  virtual absl::StatusOr<std::vector<std::string>> List(const std::string& path) = 0;
  // Creates directory `path` and its missing parents; OK if it exists.
  virtual absl::Status CreateDirs(const std::string& path) = 0;
  // Removes file `path`; NOT_FOUND if there is none.
  virtual absl::Status Remove(const std::string& path) = 0;
};

// The error of `call` on `path` that failed with errno `err`, as DiskIo reports it.
absl::Status ErrnoError(int err, absl::string_view call, absl::string_view path);

// Reads `size` bytes at `offset` into `out`, as many DiskFile::Read calls as it takes; returns how
// many it read, fewer only if the file ends first.
absl::StatusOr<size_t> ReadFully(DiskFile& file, uint64_t offset, size_t size, char* out);

}  // namespace shipper::queue

#endif  // SHIPPER_QUEUE_DISK_IO_H_
