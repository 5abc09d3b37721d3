// Small POSIX file helpers the file-writing parts of outputs share.
//
// Thread safety: stateless.
#ifndef SHIPPER_SHIPPER_OUTPUT_FILE_UTIL_H_
#define SHIPPER_SHIPPER_OUTPUT_FILE_UTIL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shipper {

// Writes all of `data` to `fd`, resuming after short writes and EINTR. UNAVAILABLE, naming
// `what`, on an error (a full disk is transient for an output: retry later).
absl::Status WriteAll(int fd, absl::string_view data, absl::string_view what);

// Appends `lines` (whole lines) to `fd`, opened with O_APPEND, whose first `end` bytes are whole
// lines. A failed or short append is cut back to `end` at once, and a fragment a failed cut left
// is cut before the next append: the next line would otherwise be glued to it, and a reader
// would lose both. UNAVAILABLE, naming `what`, on an error; then nothing of `lines` counts.
absl::Status AppendLines(int fd, uint64_t end, absl::string_view lines, absl::string_view what);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_FILE_UTIL_H_
