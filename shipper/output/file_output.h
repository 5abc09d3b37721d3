// The file output: NDJSON appended to path/filename, rotated by size with Beats' names.
//
// Before a write would take the file past rotate_every_kb, the file is rotated: filename.N-1 is
// deleted, filename.i becomes filename.i+1, filename becomes filename.1, and a new filename is
// created with `permissions`. Rotation happens between events, so every file holds whole lines
// and stays within rotate_every_kb unless one event alone is larger. With fsync: batch, a batch
// counts as written only after fdatasync of every file it went into, up to its last byte there,
// and of the directory since each file was created; with fsync: never, the kernel decides when
// data reaches the disk. A rotated file is flushed after its rename, so after a power loss it
// may, like the current file, end in part of a batch that was never confirmed (only the current
// file's partial line is cut at start).
//
// Thread safety: Write() from several threads at once; lines of one batch stay together in
// order. Only writing and renaming hold the output's lock: encoding, flushing and freeing the
// deleted file's blocks happen outside it. Flushes are group commits: a worker whose bytes a
// flush started after its write has covered does not flush again, and workers that finish
// writing while a flush runs share the next one.
#ifndef SHIPPER_SHIPPER_OUTPUT_FILE_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_FILE_OUTPUT_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "shipper/config.h"
#include "shipper/output/output.h"

namespace shipper {

// Creates the directory if needed and opens the file for appending. INVALID_ARGUMENT names the
// setting to fix.
absl::StatusOr<std::unique_ptr<Output>> NewFileOutput(const Config::FileOutput& config);

// The same, flushing a file by calling `fdatasync` (with ::fdatasync's contract, errno
// included) instead of ::fdatasync: lets tests see which flushes cover a batch.
absl::StatusOr<std::unique_ptr<Output>> NewFileOutput(const Config::FileOutput& config,
                                                       std::function<int(int fd)> fdatasync);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_FILE_OUTPUT_H_
