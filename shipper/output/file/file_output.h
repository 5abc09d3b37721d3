// The file output: NDJSON appended to path/filename, rotated by size with Beats' names.
//
// Before a write would take the file past rotate_every_kb, the file is rotated: filename.i
// becomes filename.i+1 (filename.N-1, the oldest, is replaced), filename becomes filename.1, and a
// new filename is created with `permissions`. A rotation that fails at any step (a rename, the
// open) is retried by the next write from where it stopped, never deleting another file. Rotation
// happens between events, so every file holds whole lines and stays within rotate_every_kb unless
// one event alone is larger. With fsync: batch, a batch counts as written only after fdatasync of
// every file it went into, up to its last byte there, and of the directory since each file was
// created; with fsync: never, the kernel decides when data reaches the disk. A rotated file is
// flushed after its rename, so after a power loss it may, like the current file, end in part of a
// batch that was never confirmed (only the current file's partial line is cut at start). A write
// that fails part way (ENOSPC, EFBIG) is cut back to its last whole line at once. A failed
// fdatasync loses what the file holds past its last good one (fsyncgate: see OpenFile): every
// batch in it not yet flushed fails, and the next write cuts the file back to what was flushed,
// where the retries go. (Not a rotation, which would delete the oldest file on every retry while
// the device keeps failing.) Cancel() (shutdown, past the drain
// deadline) fails at once the finishes waiting on a flush and every later Write(), and the
// output's destruction no longer waits for a flush that may hang on a failing device.
//
// Thread safety: Write() from several threads at once; lines of one batch stay together in
// order. Only writing and renaming hold the output's lock: encoding, flushing and freeing the
// deleted file's blocks happen outside it. With fsync: batch, a thread of the output's own
// flushes as soon as a batch is written, while its worker encodes and writes the next one, and
// Write()'s finish (Outcome::finish) waits for that flush; batches written while a flush runs
// share the next one (group commit).
#ifndef SHIPPER_SHIPPER_OUTPUT_FILE_FILE_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_FILE_FILE_OUTPUT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shipper/output/output.h"

namespace shipper {

// When the file output flushes to disk: after every batch (before it counts as persisted), or
// never (the kernel decides; a machine crash may lose what was reported persisted).
enum class FsyncPolicy { kBatch, kNever };

// shipper.output.file.*
struct FileSettings final : OutputSettings {
  std::string path = "./data";  // a directory, created if missing
  std::string filename = "shipper.ndjson";
  size_t rotate_every_kb = 10240;  // Beats' default: 10 MiB per file
  size_t number_of_files = 7;      // filename, filename.1, ... filename.6
  uint32_t permissions = 0600;     // of files the output creates
  FsyncPolicy fsync = FsyncPolicy::kBatch;

  void Preflight(Problems* problems) const override;
  absl::StatusOr<std::unique_ptr<Output>> Build() const override;
  std::string Destination() const override;
};

// The registry's entry (registry.cc).
OutputType FileOutputType();

// Creates the directory if needed and opens the file for appending, flushing a file by calling
// `fdatasync` (with ::fdatasync's contract, errno included): tests see which flushes cover a
// batch. INVALID_ARGUMENT names the setting to fix.
absl::StatusOr<std::unique_ptr<Output>> NewFileOutput(const FileSettings& settings,
                                                      std::function<int(int fd)> fdatasync);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_FILE_FILE_OUTPUT_H_
