// Small POSIX file helpers the file-writing parts of outputs share.
//
// Thread safety: stateless.
#ifndef SHIPPER_SHIPPER_OUTPUT_FILE_UTIL_H_
#define SHIPPER_SHIPPER_OUTPUT_FILE_UTIL_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shipper {

// Writes all of `data` to `fd`, resuming after short writes and EINTR. UNAVAILABLE, naming
// `what`, on an error (a full disk is transient for an output: retry later).
absl::Status WriteAll(int fd, absl::string_view data, absl::string_view what);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_FILE_UTIL_H_
