// Checks that the machine can run a configuration: files readable, directories writable,
// addresses resolvable. They create, bind and write nothing, so --check_config can run them
// anywhere; start runs the very same checks first (config.h: Preflight).
//
// Each check adds what it finds to `problems`, one line naming `key`.
//
// Thread safety: stateless; call from any thread.
#ifndef SHIPPER_SHIPPER_CONFIG_PREFLIGHT_H_
#define SHIPPER_SHIPPER_CONFIG_PREFLIGHT_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "shipper/config/problems.h"

namespace shipper {

// The file at `path` is readable and holds a `what` PEM block ("CERTIFICATE", "PRIVATE KEY").
void CheckPem(Problems* problems, absl::string_view key, const std::string& path,
              absl::string_view what);

// `dir` is a writable directory, or MakeDirectories could create it: its nearest existing
// ancestor is a writable directory.
void CheckDirectory(Problems* problems, absl::string_view key, const std::string& dir);

// A file that will be opened for appending (and created if missing): it is not a directory and
// is writable if it exists, and its directory passes CheckDirectory.
void CheckAppendFile(Problems* problems, absl::string_view key, const std::string& path);

// A listen address: host:port resolves, or unix:///path's directory exists and is writable and
// the path holds nothing but perhaps a socket (a stale one is replaced at start).
void CheckListenAddress(Problems* problems, absl::string_view key, const std::string& address);

// Creates `dir` and any missing parent with `mode` (mkdir -p), flushing the parent of each one it
// creates (SyncDirectory), so that a power loss cannot take a directory away with the files
// later made durable in it. INVALID_ARGUMENT names `key`.
absl::Status MakeDirectories(absl::string_view key, const std::string& dir, mode_t mode);

// Flushes the directory `dir` (fsync): the entries created or renamed in it so far survive a power
// loss. UNAVAILABLE, naming `dir`, on an error.
absl::Status SyncDirectory(const std::string& dir);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_PREFLIGHT_H_
