#include "queue/faulty_disk_io.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

namespace shipper::queue::testing {
namespace {

absl::string_view CallName(DiskCall call) {
  switch (call) {
    case DiskCall::kOpen:
      return "open";
    case DiskCall::kRead:
      return "read";
    case DiskCall::kWrite:
      return "write";
    case DiskCall::kSync:
      return "sync";
    case DiskCall::kSize:
      return "stat";
    case DiskCall::kTruncate:
      return "truncate";
    case DiskCall::kLock:
      return "lock";
    case DiskCall::kList:
      return "list";
    case DiskCall::kCreateDirs:
      return "create";
    case DiskCall::kRemove:
      return "delete";
  }
  return "call";
}

// What a failing call returns: ENOSPC or EIO (the faults that only reads and writes can show
// fail other calls with EIO). Not for kStall, which passes.
absl::Status FaultError(DiskFault fault, DiskCall call, const std::string& path) {
  return ErrnoError(fault == DiskFault::kEnospc || fault == DiskFault::kShortWrite ? ENOSPC : EIO,
                    CallName(call), path);
}

}  // namespace

class FaultyFile final : public DiskFile {
 public:
  FaultyFile(std::unique_ptr<DiskFile> base, FaultyDiskIo* io)
      : DiskFile(base->name()), base_(std::move(base)), io_(io) {}

  absl::StatusOr<size_t> Read(uint64_t offset, size_t size, char* out) override {
    io_->CountRead(size);
    DiskFault fault;
    if (!Faulty(DiskCall::kRead, &fault)) return base_->Read(offset, size, out);
    if (fault == DiskFault::kShortRead) return base_->Read(offset, size > 1 ? size / 2 : 1, out);
    if (fault == DiskFault::kEndOfFile) return 0;
    return FaultError(fault, DiskCall::kRead, name());
  }

  absl::Status Write(uint64_t offset, absl::string_view data) override {
    {
      internal::MutexLock lock(&mu_);
      unsynced_.push_back({offset, data.size()});
    }
    DiskFault fault;
    if (!Faulty(DiskCall::kWrite, &fault)) return base_->Write(offset, data);
    if (fault == DiskFault::kShortWrite) {
      absl::Status half = base_->Write(offset, data.substr(0, data.size() / 2));
      if (!half.ok()) return half;
    }
    return FaultError(fault, DiskCall::kWrite, name());
  }

  absl::Status Sync() override {
    DiskFault fault;
    const bool faulty = Faulty(DiskCall::kSync, &fault);
    std::vector<std::pair<uint64_t, size_t>> unsynced;  // written before the sync (or failure)
    {
      internal::MutexLock lock(&mu_);
      unsynced.swap(unsynced_);
    }
    if (faulty && fault == DiskFault::kLostWrites) {
      for (const auto& [offset, size] : unsynced) {
        absl::Status zeroed = base_->Write(offset, std::string(size, '\0'));
        if (!zeroed.ok()) return zeroed;
      }
      base_->Sync().IgnoreError();  // what a later sync would find: zeros, durable
      return FaultError(fault, DiskCall::kSync, name());
    }
    absl::Status status = faulty ? FaultError(fault, DiskCall::kSync, name()) : base_->Sync();
    if (!status.ok()) {  // not known lost: a later kLostWrites loses them
      internal::MutexLock lock(&mu_);
      unsynced_.insert(unsynced_.begin(), unsynced.begin(), unsynced.end());
    }
    return status;
  }

  absl::StatusOr<uint64_t> Size() override {
    DiskFault fault;
    if (Faulty(DiskCall::kSize, &fault)) return FaultError(fault, DiskCall::kSize, name());
    return base_->Size();
  }

  absl::Status Truncate(uint64_t size) override {
    DiskFault fault;
    if (Faulty(DiskCall::kTruncate, &fault)) {
      return FaultError(fault, DiskCall::kTruncate, name());
    }
    return base_->Truncate(size);
  }

  absl::Status Lock() override {
    DiskFault fault;
    if (Faulty(DiskCall::kLock, &fault)) return FaultError(fault, DiskCall::kLock, name());
    return base_->Lock();
  }

 private:
  bool Faulty(DiskCall call, DiskFault* fault) { return io_->Faulty(call, name(), fault); }

  const std::unique_ptr<DiskFile> base_;
  FaultyDiskIo* const io_;
  internal::Mutex mu_;
  // Written since the last sync that passed (or failed otherwise than kLostWrites).
  std::vector<std::pair<uint64_t, size_t>> unsynced_ ABSL_GUARDED_BY(mu_);
};

void FaultyDiskIo::Fail(DiskCall call, DiskFault fault, absl::string_view path_part, int times,
                        int skip) {
  internal::MutexLock lock(&mu_);
  failures_.push_back({call, fault, std::string(path_part), times, skip});
}

void FaultyDiskIo::Heal() {
  {
    internal::MutexLock lock(&mu_);
    failures_.clear();
    ++heals_;
  }
  healed_.SignalAll();
}

void FaultyDiskIo::Release(DiskCall call) {
  {
    internal::MutexLock lock(&mu_);
    ++releases_[static_cast<int>(call)];
  }
  healed_.SignalAll();
}

int FaultyDiskIo::calls(DiskCall call) const {
  internal::MutexLock lock(&mu_);
  return calls_[static_cast<int>(call)];
}

int FaultyDiskIo::failures(DiskCall call) const {
  internal::MutexLock lock(&mu_);
  return failed_[static_cast<int>(call)];
}

size_t FaultyDiskIo::largest_read() const {
  internal::MutexLock lock(&mu_);
  return largest_read_;
}

void FaultyDiskIo::CountRead(size_t size) {
  internal::MutexLock lock(&mu_);
  largest_read_ = std::max(largest_read_, size);
}

bool FaultyDiskIo::Faulty(DiskCall call, const std::string& path, DiskFault* fault) {
  mu_.Lock();
  ++calls_[static_cast<int>(call)];
  for (;;) {
    if (!TakeLocked(call, path, fault)) break;
    if (*fault != DiskFault::kStall) {
      mu_.Unlock();
      return true;
    }
    // Counted under the same lock as the stall was taken: a Release() right after is not missed.
    const uint64_t heals = heals_;
    const uint64_t releases = releases_[static_cast<int>(call)];
    while (heals_ == heals && releases_[static_cast<int>(call)] == releases) {
      healed_.WaitAndUnlock(&mu_, absl::InfiniteFuture());
      mu_.Lock();
    }
  }
  mu_.Unlock();
  return false;
}

bool FaultyDiskIo::TakeLocked(DiskCall call, const std::string& path, DiskFault* fault) {
  for (auto it = failures_.begin(); it != failures_.end(); ++it) {
    if (it->call != call || path.find(it->path_part) == std::string::npos) continue;
    if (it->skip > 0) {
      --it->skip;
      return false;
    }
    *fault = it->fault;
    if (it->times > 0 && --it->times == 0) failures_.erase(it);
    ++failed_[static_cast<int>(call)];
    return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<DiskFile>> FaultyDiskIo::Open(const std::string& path,
                                                             OpenMode mode) {
  DiskFault fault;
  if (Faulty(DiskCall::kOpen, path, &fault)) return FaultError(fault, DiskCall::kOpen, path);
  absl::StatusOr<std::unique_ptr<DiskFile>> file = base_->Open(path, mode);
  if (!file.ok()) return file.status();
  return std::make_unique<FaultyFile>(*std::move(file), this);
}

absl::StatusOr<std::vector<std::string>> FaultyDiskIo::List(const std::string& path) {
  DiskFault fault;
  if (Faulty(DiskCall::kList, path, &fault)) return FaultError(fault, DiskCall::kList, path);
  return base_->List(path);
}

absl::Status FaultyDiskIo::CreateDirs(const std::string& path) {
  DiskFault fault;
  if (Faulty(DiskCall::kCreateDirs, path, &fault)) {
    return FaultError(fault, DiskCall::kCreateDirs, path);
  }
  return base_->CreateDirs(path);
}

absl::Status FaultyDiskIo::Remove(const std::string& path) {
  DiskFault fault;
  if (Faulty(DiskCall::kRemove, path, &fault)) return FaultError(fault, DiskCall::kRemove, path);
  return base_->Remove(path);
}

}  // namespace shipper::queue::testing
