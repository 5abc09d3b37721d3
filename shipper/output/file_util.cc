#include "shipper/output/file_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace shipper {

absl::Status WriteAll(int fd, absl::string_view data, absl::string_view what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(absl::StrCat("writing ", what, ": ", std::strerror(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status AppendLines(int fd, uint64_t end, absl::string_view lines, absl::string_view what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::UnavailableError(absl::StrCat("writing ", what, ": ", std::strerror(errno)));
  }
  if (static_cast<uint64_t>(st.st_size) > end && ::ftruncate(fd, static_cast<off_t>(end)) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cutting a torn line of ", what, ": ", std::strerror(errno)));
  }
  absl::Status status = WriteAll(fd, lines, what);
  // If this cut fails too, the next call's cuts the fragment.
  if (!status.ok() && ::ftruncate(fd, static_cast<off_t>(end)) != 0) {
    status = absl::UnavailableError(
        absl::StrCat(status.message(), "; cutting the torn line: ", std::strerror(errno)));
  }
  return status;
}

}  // namespace shipper
