#include "queue/disk_io.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "queue/faulty_disk_io.h"

namespace shipper::queue {
namespace {

using testing::DiskCall;
using testing::DiskFault;
using testing::FaultyDiskIo;

class DiskIoTest : public ::testing::Test {
 protected:
  DiskIoTest() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "/" + info->name();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<DiskFile> Open(DiskIo* io, const std::string& name, OpenMode mode) {
    absl::StatusOr<std::unique_ptr<DiskFile>> file = io->Open(dir_ + "/" + name, mode);
    EXPECT_TRUE(file.ok()) << file.status();
    return file.ok() ? *std::move(file) : nullptr;
  }

  std::string dir_;
};

TEST_F(DiskIoTest, PosixDoesWhatTheCallsSay) {
  DiskIo* io = DiskIo::Posix();
  ASSERT_TRUE(io->CreateDirs(dir_ + "/a/b").ok());
  EXPECT_TRUE(io->CreateDirs(dir_ + "/a/b").ok()) << "it exists: fine";
  std::unique_ptr<DiskFile> file = Open(io, "a/b/f", OpenMode::kReadWrite);
  EXPECT_EQ(file->name(), dir_ + "/a/b/f");
  ASSERT_TRUE(file->Write(0, "hello world").ok());
  ASSERT_TRUE(file->Sync().ok());
  EXPECT_EQ(*file->Size(), 11u);
  char buffer[32];
  EXPECT_EQ(*ReadFully(*file, 6, sizeof(buffer), buffer), 5u) << "the file ends first";
  EXPECT_EQ(std::string(buffer, 5), "world");
  ASSERT_TRUE(file->Truncate(5).ok());
  EXPECT_EQ(*file->Size(), 5u);
  EXPECT_EQ(*io->List(dir_ + "/a/b"), std::vector<std::string>{"f"});

  std::unique_ptr<DiskFile> dir = Open(io, "a", OpenMode::kDirectory);
  EXPECT_TRUE(dir->Sync().ok());
  ASSERT_TRUE(dir->Lock().ok());
  std::unique_ptr<DiskFile> again = Open(io, "a", OpenMode::kDirectory);
  EXPECT_EQ(again->Lock().code(), absl::StatusCode::kFailedPrecondition);
  dir.reset();
  EXPECT_TRUE(again->Lock().ok()) << "released with the file that held it";

  ASSERT_TRUE(io->Remove(dir_ + "/a/b/f").ok());
  const absl::Status gone = io->Remove(dir_ + "/a/b/f");
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound) << gone;
  EXPECT_NE(gone.message().find(dir_ + "/a/b/f"), std::string::npos) << gone;
  EXPECT_EQ(io->Open(dir_ + "/none", OpenMode::kRead).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(io->List(dir_ + "/none").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DiskIoTest, FaultyFailsTheChosenCallsOnTheChosenFilesOnly) {
  FaultyDiskIo io;
  ASSERT_TRUE(io.CreateDirs(dir_).ok());
  std::unique_ptr<DiskFile> seg = Open(&io, "1.seg", OpenMode::kReadWrite);
  std::unique_ptr<DiskFile> state = Open(&io, "state", OpenMode::kReadWrite);
  io.Fail(DiskCall::kSync, DiskFault::kEio, ".seg", /*times=*/2, /*skip=*/1);
  EXPECT_TRUE(seg->Sync().ok()) << "skipped";
  const absl::Status eio = seg->Sync();
  EXPECT_EQ(eio.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(eio.message(), "sync " + dir_ + "/1.seg: Input/output error");
  EXPECT_TRUE(state->Sync().ok()) << "another file";
  EXPECT_FALSE(seg->Sync().ok());
  EXPECT_TRUE(seg->Sync().ok()) << "twice, then no more";
  EXPECT_EQ(io.calls(DiskCall::kSync), 5);
  EXPECT_EQ(io.failures(DiskCall::kSync), 2);

  io.Fail(DiskCall::kWrite, DiskFault::kEnospc);
  EXPECT_EQ(seg->Write(0, "abcd").code(), absl::StatusCode::kResourceExhausted);
  io.Heal();
  io.Fail(DiskCall::kWrite, DiskFault::kShortWrite, "", 1);
  const absl::Status half = seg->Write(0, "abcd");
  EXPECT_EQ(half.code(), absl::StatusCode::kResourceExhausted) << half;
  EXPECT_EQ(*seg->Size(), 2u) << "the first half was written";
  ASSERT_TRUE(seg->Write(0, "abcd").ok());

  char buffer[4];
  io.Fail(DiskCall::kRead, DiskFault::kShortRead, "", 1);
  EXPECT_EQ(*seg->Read(0, 4, buffer), 2u);
  io.Fail(DiskCall::kRead, DiskFault::kShortRead, "", 1);
  EXPECT_EQ(*ReadFully(*seg, 0, 4, buffer), 4u) << "ReadFully reads on";
  io.Fail(DiskCall::kRead, DiskFault::kEndOfFile, "", 1);
  EXPECT_EQ(*ReadFully(*seg, 0, 4, buffer), 0u);

  io.Fail(DiskCall::kOpen, DiskFault::kEio, "2.seg");
  EXPECT_FALSE(io.Open(dir_ + "/2.seg", OpenMode::kReadWrite).ok());
  io.Fail(DiskCall::kList, DiskFault::kEio);
  EXPECT_FALSE(io.List(dir_).ok());
  io.Fail(DiskCall::kRemove, DiskFault::kEio);
  EXPECT_FALSE(io.Remove(dir_ + "/1.seg").ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/1.seg"));
  io.Heal();
  EXPECT_TRUE(io.Remove(dir_ + "/1.seg").ok());
}

}  // namespace
}  // namespace shipper::queue
