#include "shipper/config/preflight.h"

#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

// The directories this binary fsyncs, in order: fsync is interposed here (the executable's
// definition wins over libc's for every library in it) and forwarded to libc's.
std::mutex synced_mu;
std::vector<std::string> synced_dirs;

extern "C" int fsync(int fd) {
  char path[PATH_MAX];
  const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), path, sizeof(path));
  struct stat st;
  if (n > 0 && ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    std::lock_guard<std::mutex> lock(synced_mu);
    synced_dirs.emplace_back(path, n);
  }
  static auto* real = reinterpret_cast<int (*)(int)>(::dlsym(RTLD_NEXT, "fsync"));
  return real(fd);
}

namespace shipper {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Dir() {
  std::string dir = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(PreflightTest, DirectoriesThatExistOrCanBeCreatedPass) {
  const std::string dir = Dir();
  Problems problems;
  CheckDirectory(&problems, "k", dir);
  CheckDirectory(&problems, "k", dir + "/new/deeper");
  EXPECT_THAT(problems.all(), IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(dir + "/new")) << "a check creates nothing";
}

TEST(PreflightTest, AFileWhereADirectoryShouldBeIsNamed) {
  const std::string dir = Dir();
  std::ofstream(dir + "/file") << "x";
  Problems problems;
  CheckDirectory(&problems, "shipper.output.file.path", dir + "/file");
  CheckDirectory(&problems, "shipper.output.file.path", dir + "/file/sub");
  ASSERT_EQ(problems.all().size(), 2u);
  EXPECT_THAT(problems.all()[0], HasSubstr("shipper.output.file.path: '"));
  EXPECT_THAT(problems.all()[0], HasSubstr("/file' is not a directory"));
  EXPECT_THAT(problems.all()[1], HasSubstr("cannot create directory"));
}

TEST(PreflightTest, AppendFile) {
  const std::string dir = Dir();
  Problems problems;
  CheckAppendFile(&problems, "shipper.dead_letter.path", dir + "/dl.ndjson");
  CheckAppendFile(&problems, "shipper.dead_letter.path", dir + "/missing/dl.ndjson");
  EXPECT_THAT(problems.all(), IsEmpty());
  CheckAppendFile(&problems, "shipper.dead_letter.path", dir);
  EXPECT_THAT(problems.all(), ElementsAre(HasSubstr("is a directory; name a file")));
  EXPECT_FALSE(std::filesystem::exists(dir + "/dl.ndjson"));
}

TEST(PreflightTest, ListenAddresses) {
  // Short: a socket's path has at most 107 bytes, and the test's temp dir is deep.
  char short_dir[] = "/tmp/preflight-XXXXXX";
  ASSERT_NE(mkdtemp(short_dir), nullptr);
  const std::string dir = short_dir;
  Problems problems;
  CheckListenAddress(&problems, "shipper.server.server", "127.0.0.1:0");
  CheckListenAddress(&problems, "shipper.server.server", absl::StrCat("unix://", dir, "/s.sock"));
  EXPECT_THAT(problems.all(), IsEmpty());
  CheckListenAddress(&problems, "shipper.server.server", "999.1.1.1:80");
  CheckListenAddress(&problems, "shipper.server.server", "no-port");
  CheckListenAddress(&problems, "shipper.server.server", "unix:///no/such/dir/s.sock");
  std::ofstream(dir + "/plain") << "x";
  CheckListenAddress(&problems, "shipper.server.server", absl::StrCat("unix://", dir, "/plain"));
  ASSERT_EQ(problems.all().size(), 4u);
  EXPECT_THAT(problems.all()[0], HasSubstr("cannot listen on '999.1.1.1:80' ("));
  EXPECT_THAT(problems.all()[0], HasSubstr("): change shipper.server.server"));
  EXPECT_THAT(problems.all()[1], HasSubstr("not host:port or unix:///path"));
  EXPECT_THAT(problems.all()[2], HasSubstr("'/no/such/dir'"));
  EXPECT_THAT(problems.all()[3], HasSubstr("exists and is not a socket"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/s.sock"));
  std::filesystem::remove_all(dir);
}

TEST(PreflightTest, PemFiles) {
  const std::string dir = Dir();
  std::ofstream(dir + "/not.pem") << "hello";
  Problems problems;
  CheckPem(&problems, "shipper.server.ssl.certificate", dir + "/missing.crt", "CERTIFICATE");
  CheckPem(&problems, "shipper.server.ssl.certificate", dir + "/not.pem", "CERTIFICATE");
  ASSERT_EQ(problems.all().size(), 2u);
  for (const std::string& p : problems.all()) {
    EXPECT_THAT(p, HasSubstr("shipper.server.ssl.certificate"));
  }
}

TEST(PreflightTest, MakeDirectoriesCreatesParents) {
  const std::string dir = Dir();
  EXPECT_TRUE(MakeDirectories("k", dir + "/a/b/c", 0750).ok());
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/a/b/c"));
  std::ofstream(dir + "/f") << "x";
  absl::Status status = MakeDirectories("shipper.output.file.path", dir + "/f/sub", 0750);
  EXPECT_THAT(status.message(), HasSubstr("shipper.output.file.path: cannot create directory"));
}

// A directory's entry is durable only once its parent is flushed: a power loss after mkdir would
// otherwise take the directory, and the files about to be synced into it, away.
TEST(PreflightTest, MakeDirectoriesFlushesTheParentOfEachDirectoryItCreates) {
  const std::string dir = std::filesystem::canonical(Dir());
  std::filesystem::create_directories(dir + "/there");
  {
    std::lock_guard<std::mutex> lock(synced_mu);
    synced_dirs.clear();
  }
  ASSERT_TRUE(MakeDirectories("k", dir + "/there/a/b", 0750).ok());
  std::lock_guard<std::mutex> lock(synced_mu);
  EXPECT_THAT(synced_dirs, ElementsAre(dir + "/there", dir + "/there/a"));
}

TEST(ProblemsTest, EveryProblemOneLine) {
  Problems problems;
  EXPECT_TRUE(problems.ToStatus().ok());
  problems.Add(absl::OkStatus());
  problems.Add(absl::InvalidArgumentError("a: wrong"));
  problems.Add("b: wrong too");
  EXPECT_EQ(problems.ToStatus().message(), "a: wrong\nb: wrong too");
  EXPECT_EQ(problems.ToStatus().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shipper
