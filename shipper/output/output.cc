#include "shipper/output/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "proto/messages.pb.h"
#include "shipper/event_json.h"

namespace shipper {
namespace {

using elastic::agent::shipper::v1::messages::Event;

// Encodes a batch as NDJSON. Each worker thread reuses its own buffer.
const rapidjson::StringBuffer& EncodeBatch(const queue::Batch& batch) {
  thread_local rapidjson::StringBuffer buffer;
  buffer.Clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    AppendEventJson(batch.event(i).As<Event>(), batch.first_index() + i, &buffer);
  }
  return buffer;
}

absl::Status WriteAll(int fd, const char* data, size_t size, absl::string_view what) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(absl::StrCat("writing ", what, ": ", std::strerror(errno)));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Appends NDJSON to one file and flushes each batch to disk before confirming it.
class FileOutput final : public Output {
 public:
  FileOutput(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileOutput() override { ::close(fd_); }

  absl::Status Write(const queue::Batch& batch) override {
    const rapidjson::StringBuffer& json = EncodeBatch(batch);
    {
      absl::MutexLock lock(&mu_);
      absl::Status status = WriteAll(fd_, json.GetString(), json.GetSize(), path_);
      if (!status.ok()) return status;
    }
    // Outside the lock, so concurrent workers' flushes coalesce in the kernel.
    if (::fdatasync(fd_) != 0) {
      return absl::UnavailableError(absl::StrCat("flushing ", path_, ": ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

 private:
  const int fd_;
  const std::string path_;
  absl::Mutex mu_;  // keeps each batch's lines together
};

// NDJSON to stdout, for debugging.
class ConsoleOutput final : public Output {
 public:
  absl::Status Write(const queue::Batch& batch) override {
    const rapidjson::StringBuffer& json = EncodeBatch(batch);
    absl::MutexLock lock(&mu_);
    return WriteAll(STDOUT_FILENO, json.GetString(), json.GetSize(), "stdout");
  }

 private:
  absl::Mutex mu_;
};

// Counts and drops: measures everything but the output itself.
class DiscardOutput final : public Output {
 public:
  absl::Status Write(const queue::Batch&) override { return absl::OkStatus(); }
};

absl::StatusOr<std::unique_ptr<Output>> NewFileOutput(const Config::FileOutput& config) {
  if (::mkdir(config.path.c_str(), 0750) != 0 && errno != EEXIST) {
    return absl::InvalidArgumentError(
        absl::StrCat("shipper.output.file.path: cannot create directory '", config.path,
                     "': ", std::strerror(errno)));
  }
  std::string path = absl::StrCat(config.path, "/", config.filename);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("shipper.output.file: cannot open '", path,
                                                   "' for appending: ", std::strerror(errno)));
  }
  return std::make_unique<FileOutput>(fd, path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Output>> NewOutput(const Config& config) {
  switch (config.output) {
    case OutputKind::kFile:
      return NewFileOutput(config.file);
    case OutputKind::kConsole:
      return std::make_unique<ConsoleOutput>();
    case OutputKind::kDiscard:
      return std::make_unique<DiscardOutput>();
  }
  return absl::InternalError("unknown output kind");
}

}  // namespace shipper
