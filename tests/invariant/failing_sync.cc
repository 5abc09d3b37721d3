// Preloaded into Shipper (LD_PRELOAD) by the invariant test's file cases, for two faults. No
// failing device is at hand; this fails the very calls Shipper makes, and nothing else.
// - "fdatasync-eio": while the file SHIPPER_TEST_FAIL_SYNC names exists, fdatasync fails with EIO
//   on the file output's NDJSON file and on the disk queue's segments, as on a device that cannot
//   write back.
// - "write-errors": while the file SHIPPER_TEST_FAIL_WRITE names exists, writes to the NDJSON
//   file (write, writev, pwrite) fail in short bursts: of every 8 such calls the first writes
//   half its bytes (a short write, leaving a torn line), the next fails with EIO and the one
//   after with ENOSPC, as a failing or full device would; the other five go through. A counter,
//   not a random choice: how long the fault lasts is the test's (seeded) choice. The disk
//   queue's segments are left alone: this fault is the file output's.
#include <dlfcn.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// Whether `fd` is open on a file whose path ends with `suffix`.
bool Names(int fd, const char* suffix) {
  char path[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), path, sizeof(path) - 1);
  if (n <= 0) return false;
  const size_t len = std::strlen(suffix);
  return static_cast<size_t>(n) >= len && std::memcmp(path + n - len, suffix, len) == 0;
}

// Whether a fault is on: its trigger file (named by the environment, or null) exists.
bool On(const char* trigger) { return trigger != nullptr && ::access(trigger, F_OK) == 0; }

enum class WriteFate { kWrite, kShort, kEio, kNoSpace };

// What becomes of a write to `fd`: the trigger is looked at first, so that no other write pays
// for the readlink.
WriteFate Fate(int fd) {
  static const char* const trigger = std::getenv("SHIPPER_TEST_FAIL_WRITE");
  if (!On(trigger) || !Names(fd, "/shipper.ndjson")) return WriteFate::kWrite;
  static std::atomic<unsigned> calls{0};
  switch (calls.fetch_add(1, std::memory_order_relaxed) % 8) {
    case 0:
      return WriteFate::kShort;
    case 1:
      return WriteFate::kEio;
    case 2:
      return WriteFate::kNoSpace;
    default:
      return WriteFate::kWrite;
  }
}

template <typename F>
F Real(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

// A write of `count` bytes to `fd` met its Fate: `real(n)` writes the first n of them.
template <typename Call>
ssize_t FaultedWrite(int fd, size_t count, Call real) {
  switch (Fate(fd)) {
    case WriteFate::kEio:
      errno = EIO;
      return -1;
    case WriteFate::kNoSpace:
      errno = ENOSPC;
      return -1;
    case WriteFate::kShort:
      return real(count > 1 ? count / 2 : count);
    case WriteFate::kWrite:
      break;
  }
  return real(count);
}

}  // namespace

extern "C" int fdatasync(int fd) {
  static const auto real = Real<int (*)(int)>("fdatasync");
  static const char* const trigger = std::getenv("SHIPPER_TEST_FAIL_SYNC");
  if (On(trigger) && (Names(fd, "/shipper.ndjson") || Names(fd, ".seg"))) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

extern "C" ssize_t write(int fd, const void* buf, size_t count) {
  static const auto real = Real<ssize_t (*)(int, const void*, size_t)>("write");
  return FaultedWrite(fd, count, [&](size_t n) { return real(fd, buf, n); });
}

extern "C" ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static const auto real = Real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  return FaultedWrite(fd, count, [&](size_t n) { return real(fd, buf, n, offset); });
}

// A short writev writes the first buffer alone (or the first half of its only one).
extern "C" ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  static const auto real = Real<ssize_t (*)(int, const struct iovec*, int)>("writev");
  if (iovcnt == 1) {
    return FaultedWrite(fd, iov[0].iov_len, [&](size_t n) {
      const struct iovec part = {iov[0].iov_base, n};
      return real(fd, &part, 1);
    });
  }
  size_t total = 0;
  for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
  return FaultedWrite(fd, total, [&](size_t n) {
    return n == total || iovcnt < 1 ? real(fd, iov, iovcnt) : real(fd, iov, 1);
  });
}
