#include "shipper/output/dead_letters.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "runtime/mutex.h"
#include "shipper/config/preflight.h"
#include "shipper/event/event_json.h"
#include "shipper/output/file_util.h"

namespace shipper {

namespace {
constexpr char kKey[] = "shipper.dead_letter.path";
}  // namespace

absl::StatusOr<std::unique_ptr<DeadLetters>> DeadLetters::Open(const std::string& path) {
  if (path.empty()) return std::unique_ptr<DeadLetters>(new DeadLetters(-1, "", 0));
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    absl::Status dir = MakeDirectories(kKey, path.substr(0, slash), 0750);
    if (!dir.ok()) return dir;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kKey, ": cannot open '", path, "' for appending: ", std::strerror(errno)));
  }
  // The file's entry may be new: flushed once, so that the letters later flushed into it cannot
  // vanish with it in a power loss.
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (absl::Status synced = SyncDirectory(dir); !synced.ok()) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat(kKey, ": ", synced.message()));
  }
  struct stat st;
  const uint64_t size = ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return std::unique_ptr<DeadLetters>(new DeadLetters(fd, path, size));
}

DeadLetters::~DeadLetters() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status DeadLetters::Record(const Events& events, absl::Span<const Rejection> rejected) {
  rapidjson::StringBuffer lines;
  rapidjson::StringBuffer document;
  for (const Rejection& r : rejected) {
    document.Clear();
    AppendEventJson(events.bytes(r.event), events.index(r.event), &document);
    rapidjson::Writer<rapidjson::StringBuffer> w(lines);
    w.StartObject();
    w.Key("reason");
    w.String(r.reason.data(), static_cast<rapidjson::SizeType>(r.reason.size()));
    w.Key("event");
    w.RawValue(document.GetString(), document.GetSize() - 1, rapidjson::kObjectType);  // no '\n'
    w.EndObject();
    lines.Put('\n');
  }
  if (fd_ < 0) {
    LOG(ERROR) << "dead letters (set shipper.dead_letter.path to keep them in a file):\n"
               << absl::string_view(lines.GetString(), lines.GetSize());
    return absl::OkStatus();
  }
  runtime::MutexLock lock(&mu_);
  absl::Status status = AppendLines(fd_, size_, {lines.GetString(), lines.GetSize()}, path_);
  if (!status.ok()) return status;
  if (::fdatasync(fd_) != 0) {
    // The kernel may have dropped the pages it could not write, and reports that once: these
    // lines stay past size_, and the retry's AppendLines cuts them and writes them again.
    return absl::UnavailableError(absl::StrCat("flushing ", path_, ": ", std::strerror(errno)));
  }
  size_ += lines.GetSize();
  return absl::OkStatus();
}

}  // namespace shipper
