#include "shipper/metrics/proc_stats.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shipper::metrics {
namespace {

using ::testing::HasSubstr;

// A fresh directory under the test's temp dir.
std::string TempDir(absl::string_view name) {
  std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  mkdir(dir.c_str(), 0755);
  return dir;
}

void Write(const std::string& path, absl::string_view content) { std::ofstream(path) << content; }

TEST(ProcessStatsTest, ReadsFixtureFiles) {
  const std::string proc = TempDir("proc");
  mkdir((proc + "/self").c_str(), 0755);
  mkdir((proc + "/self/fd").c_str(), 0755);
  for (const char* fd : {"0", "1", "2", "7"}) Write(absl::StrCat(proc, "/self/fd/", fd), "");
  // The command name holds a space and a parenthesis; fields 14, 15, 20, 22 and 24 matter.
  Write(proc + "/self/stat",
        "42 (ship per) x) S 1 42 42 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 9 0 5000 "
        "123456789 1000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n");
  Write(proc + "/stat", "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n");
  absl::StatusOr<ProcessStats> stats = ReadProcessStats(proc);
  ASSERT_TRUE(stats.ok()) << stats.status();
  const double ticks = sysconf(_SC_CLK_TCK);
  EXPECT_EQ(stats->resident_bytes, 1000u * sysconf(_SC_PAGESIZE));
  EXPECT_EQ(stats->threads, 9u);
  EXPECT_EQ(stats->open_fds, 4u);
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 400 / ticks);
  EXPECT_DOUBLE_EQ(stats->start_time_seconds, 1700000000 + 5000 / ticks);
}

TEST(ProcessStatsTest, ReadsThisProcess) {
  absl::StatusOr<ProcessStats> stats = ReadProcessStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->resident_bytes, 100u << 10);
  EXPECT_GE(stats->threads, 1u);
  EXPECT_GE(stats->open_fds, 3u);  // stdin, stdout, stderr at least
  EXPECT_LE(stats->start_time_seconds, absl::ToUnixSeconds(absl::Now()) + 1);
  EXPECT_GT(stats->start_time_seconds, absl::ToUnixSeconds(absl::Now()) - 600);
}

TEST(ProcessStatsTest, GarbageNamesTheFile) {
  const std::string proc = TempDir("proc-garbage");
  mkdir((proc + "/self").c_str(), 0755);
  Write(proc + "/self/stat", "42 (x) S 1 2\n");
  absl::StatusOr<ProcessStats> stats = ReadProcessStats(proc);
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr(proc + "/self/stat"));
}

TEST(CpuThrottlingTest, ReadsCgroupV2) {
  const std::string dir = TempDir("v2");
  Write(dir + "/cpu.stat",
        "usage_usec 9000\nuser_usec 5000\nsystem_usec 4000\nnr_periods 120\nnr_throttled 30\n"
        "throttled_usec 2500000\n");
  absl::StatusOr<CpuThrottling> t = ReadCpuThrottling(dir);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->periods, 120u);
  EXPECT_EQ(t->throttled_periods, 30u);
  EXPECT_DOUBLE_EQ(t->throttled_seconds, 2.5);
}

TEST(CpuThrottlingTest, ReadsCgroupV1Nanoseconds) {
  const std::string dir = TempDir("v1");
  Write(dir + "/cpu.stat", "nr_periods 7\nnr_throttled 2\nthrottled_time 1500000000\n");
  absl::StatusOr<CpuThrottling> t = ReadCpuThrottling(dir);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->periods, 7u);
  EXPECT_EQ(t->throttled_periods, 2u);
  EXPECT_DOUBLE_EQ(t->throttled_seconds, 1.5);
}

TEST(CpuThrottlingTest, MissingOrIncompleteFileNamesIt) {
  const std::string dir = TempDir("none");
  absl::StatusOr<CpuThrottling> t = ReadCpuThrottling(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr(dir + "/cpu.stat"));
  Write(dir + "/cpu.stat", "usage_usec 1\n");
  t = ReadCpuThrottling(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("nr_periods"));
}

}  // namespace
}  // namespace shipper::metrics
