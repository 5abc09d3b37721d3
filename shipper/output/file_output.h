// The file output: NDJSON appended to path/filename, rotated by size with Beats' names.
//
// Before a write would take the file past rotate_every_kb, the file is rotated: filename.N-1 is
// deleted, filename.i becomes filename.i+1, filename becomes filename.1, and a new filename is
// created with `permissions`. Rotation happens between events, so every file holds whole lines
// and stays within rotate_every_kb unless one event alone is larger. With fsync: batch, a batch
// counts as written only after fdatasync of every file it went into (a rotated file is flushed
// before it is renamed); with fsync: never, the kernel decides when data reaches the disk.
//
// Thread safety: Write() from several threads at once; lines of one batch stay together in
// order, and flushes of concurrent batches overlap.
#ifndef SHIPPER_SHIPPER_OUTPUT_FILE_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_FILE_OUTPUT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "shipper/config.h"
#include "shipper/output/output.h"

namespace shipper {

// Creates the directory if needed and opens the file for appending. INVALID_ARGUMENT names the
// setting to fix.
absl::StatusOr<std::unique_ptr<Output>> NewFileOutput(const Config::FileOutput& config);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_FILE_OUTPUT_H_
