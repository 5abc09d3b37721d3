// A DiskIo for tests (after LevelDB's fault-injection Env): passes every call to another DiskIo,
// the file system by default, and fails the calls a test chose the way a failing disk would.
//
//   FaultyDiskIo io;
//   io.Fail(DiskCall::kSync, DiskFault::kEio, ".seg", 3);  // the next 3 segment syncs fail
//   options.io = &io;
//
// Thread safety: safe for concurrent use, as DiskIo; Fail and Heal may be called while the queue
// runs.
#ifndef SHIPPER_QUEUE_FAULTY_DISK_IO_H_
#define SHIPPER_QUEUE_FAULTY_DISK_IO_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "queue/disk_io.h"
#include "queue/mutex.h"

namespace shipper::queue::testing {

// DiskIo's and DiskFile's calls.
enum class DiskCall {
  kOpen,
  kRead,
  kWrite,
  kSync,
  kSize,
  kTruncate,
  kLock,
  kList,
  kCreateDirs,
  kRemove,
};
constexpr int kDiskCalls = 10;

enum class DiskFault {
  kEio,         // fails with EIO
  kEnospc,      // fails with ENOSPC
  kShortRead,   // a read returns half the bytes asked for (at least one): callers must read on
  kEndOfFile,   // a read returns no bytes, as if the file ended there
  kShortWrite,  // a write writes the first half of its bytes, then fails with ENOSPC
  kStall,       // a call waits until Heal() or Release(), then goes on (see Release)
  // A sync fails with EIO, and what was written through that file since its last sync that
  // passed reads back as zeros: the kernel dropped the pages it could not write back, and will
  // not say so again (Linux; "fsyncgate"). Other calls fail with EIO.
  kLostWrites,
};

class FaultyDiskIo final : public DiskIo {
 public:
  explicit FaultyDiskIo(DiskIo* base = DiskIo::Posix()) : base_(base) {}

  // From now on `call` on a path that contains `path_part` (any path if empty) fails with
  // `fault`, after `skip` such calls passed, `times` times (every time if negative). A call that
  // matches several failures takes the first one added.
  void Fail(DiskCall call, DiskFault fault, absl::string_view path_part = "", int times = -1,
            int skip = 0);
  // Ends every failure: calls pass again, stalled ones go on.
  void Heal();
  // The `call`s stalled so far go on, to the next failure that matches them if there is one (a
  // sync that takes its time, then fails); the failures stay.
  void Release(DiskCall call);
  // How many `call`s were made, and how many of them failed.
  int calls(DiskCall call) const;
  int failures(DiskCall call) const;
  // The most bytes one read asked for: what a reader was ready to hold at once.
  size_t largest_read() const;

  absl::StatusOr<std::unique_ptr<DiskFile>> Open(const std::string& path, OpenMode mode) override;
  absl::StatusOr<std::vector<std::string>> List(const std::string& path) override;
  absl::Status CreateDirs(const std::string& path) override;
  absl::Status Remove(const std::string& path) override;

 private:
  friend class FaultyFile;
  struct Failure {
    DiskCall call;
    DiskFault fault;
    std::string path_part;
    int times;
    int skip;
  };

  // Counts `call` on `path` as made; true and its fault if it is to fail. A stall waits here
  // (until Heal() or Release(call)) and then goes on to the next failure that matches, if any.
  bool Faulty(DiskCall call, const std::string& path, DiskFault* fault);
  // The first failure that matches, taken. REQUIRES: mu_ held.
  bool TakeLocked(DiskCall call, const std::string& path, DiskFault* fault)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CountRead(size_t size);

  DiskIo* const base_;
  mutable internal::Mutex mu_;
  std::vector<Failure> failures_ ABSL_GUARDED_BY(mu_);
  int calls_[kDiskCalls] ABSL_GUARDED_BY(mu_) = {};
  int failed_[kDiskCalls] ABSL_GUARDED_BY(mu_) = {};
  size_t largest_read_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t heals_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t releases_[kDiskCalls] ABSL_GUARDED_BY(mu_) = {};
  internal::CondVar healed_;
};

}  // namespace shipper::queue::testing

#endif  // SHIPPER_QUEUE_FAULTY_DISK_IO_H_
