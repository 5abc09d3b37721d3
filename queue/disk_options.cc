#include "queue/disk_options.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace shipper::queue {
namespace {

constexpr uint64_t kMinSegmentSize = 4 << 10;
constexpr uint64_t kDefaultMinSegmentSize = 1 << 20;
constexpr uint64_t kDefaultBufferSize = 4 << 20;

absl::Status Problem(absl::string_view key, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("shipper.queue.disk.", key, ": ", message));
}

// The nearest existing ancestor of `path`, or `path` itself.
std::filesystem::path ExistingAncestor(std::filesystem::path path) {
  std::error_code error;
  path = std::filesystem::absolute(path, error);
  while (!std::filesystem::exists(path, error) && path.has_parent_path() &&
         path.parent_path() != path) {
    path = path.parent_path();
  }
  return path;
}

}  // namespace

uint64_t DiskSegmentSize(const DiskOptions& options) {
  if (options.segment_size != 0) return options.segment_size;
  return std::min(std::max(options.max_size / 10, kDefaultMinSegmentSize), options.max_size / 2);
}

uint64_t DiskBufferSize(const DiskOptions& options) {
  if (options.buffer_size != 0) return options.buffer_size;
  return std::max(kMinSegmentSize, std::min(kDefaultBufferSize, options.max_size / 4));
}

uint64_t DiskReadAhead(const DiskOptions& options) {
  if (options.read_ahead != 0) return options.read_ahead;
  return std::max(DiskSegmentSize(options), 4 * DiskBufferSize(options));
}

std::vector<absl::Status> ValidateDiskOptions(const DiskOptions& options) {
  std::vector<absl::Status> problems;
  auto problem = [&](absl::string_view key, absl::string_view message) {
    problems.push_back(Problem(key, message));
  };
  if (options.path.empty()) problem("path", "must not be empty");
  if (options.max_size < 2 * kMinSegmentSize) problem("max_size", "must be at least 8192 bytes");
  const uint64_t segment_size = DiskSegmentSize(options);
  if (segment_size < kMinSegmentSize || segment_size > options.max_size / 2) {
    problem("segment_size", absl::StrCat("must be between 4096 and max_size / 2 (",
                                         options.max_size / 2, "), got ", segment_size));
  }
  const uint64_t buffer_size = DiskBufferSize(options);
  if (buffer_size < kMinSegmentSize || buffer_size > options.max_size) {
    problem("buffer_size", absl::StrCat("must be between 4096 and max_size (", options.max_size,
                                        "), got ", buffer_size));
  }
  if (options.flush_timeout < absl::ZeroDuration()) {
    problem("flush.timeout", "must not be negative");
  }
  if (WaitStrategyName(options.wait_strategy) == "unknown") {
    problem("wait_strategy", "unknown value");
  } else if (options.wait_strategy == WaitStrategy::kSleeping &&
             !(options.sleep_min > absl::ZeroDuration() &&
               options.sleep_min <= options.sleep_max)) {
    problem("wait_strategy", "want 0 < sleep_min <= sleep_max for the sleeping wait strategy");
  }
  return problems;
}

absl::Status PreflightDiskPath(const DiskOptions& options) {
  if (options.path.empty()) return absl::OkStatus();
  const std::filesystem::path at = ExistingAncestor(options.path);
  std::error_code error;
  if (!std::filesystem::is_directory(at, error)) {
    return Problem("path", absl::StrCat(at.string(), " is not a directory"));
  }
  if (access(at.c_str(), W_OK | X_OK) != 0) {
    return Problem("path", absl::StrCat(at.string(), " is not writable: ", strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace shipper::queue
