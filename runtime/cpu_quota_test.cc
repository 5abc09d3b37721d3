#include "runtime/cpu_quota.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cgroup_fixture.h"

namespace shipper::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class CpuQuotaTest : public ::testing::Test {
 protected:
  CpuQuotaOptions Options(int affinity = 4, int host = 4,
                          Rounding rounding = Rounding::kFloor) const {
    CpuQuotaOptions options;
    options.proc_root = fixture_.proc_root();
    options.cgroup_root = fixture_.cgroup_root();
    options.rounding = rounding;
    options.affinity_cpus = [affinity] { return affinity; };
    options.host_cpus = [host] { return host; };
    return options;
  }

  std::string V1Dir(absl::string_view dir) const {
    return absl::StrCat(fixture_.cgroup_root(), "/cpu,cpuacct", dir);
  }

  CgroupFixture fixture_;
};

TEST_F(CpuQuotaTest, CgroupV1HalfCpuFloorsToOne) {
  fixture_.SetUpV1("/", "/docker/abc");
  fixture_.SetV1Quota("/docker/abc", "50000", "100000");
  CpuQuota quota = DetectCpuQuota(Options());
  EXPECT_EQ(quota.ToString(), "source=cgroup1 quota=50000 period=100000 cpuset=4 effective_cpus=1");
  EXPECT_EQ(quota.cgroup_dir, V1Dir("/docker/abc"));
  EXPECT_DOUBLE_EQ(quota.quota_cpus(), 0.5);
  EXPECT_THAT(quota.reason, IsEmpty());
}

TEST_F(CpuQuotaTest, QuotaBelowOneCpuCeilsToOne) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "20000", "100000");
  EXPECT_EQ(DetectCpuQuota(Options(4, 4, Rounding::kCeil)).effective_cpus, 1);
  EXPECT_EQ(DetectCpuQuota(Options(4, 4, Rounding::kFloor)).effective_cpus, 1);
}

TEST_F(CpuQuotaTest, FractionalQuotaRounding) {
  fixture_.SetUpV2("/", "/app.slice/shipper");
  fixture_.SetV2Max("/app.slice/shipper", "150000 100000");
  EXPECT_EQ(DetectCpuQuota(Options(8, 8, Rounding::kFloor)).effective_cpus, 1);
  EXPECT_EQ(DetectCpuQuota(Options(8, 8, Rounding::kCeil)).effective_cpus, 2);
  fixture_.SetV2Max("/app.slice/shipper", "300000 100000");
  EXPECT_EQ(DetectCpuQuota(Options(8, 8, Rounding::kFloor)).effective_cpus, 3);
  EXPECT_EQ(DetectCpuQuota(Options(8, 8, Rounding::kCeil)).effective_cpus, 3);
}

TEST_F(CpuQuotaTest, CgroupV1MinusOneIsNoLimit) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "-1", "100000");
  fixture_.SetV1Quota("/", "-1", "100000");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.ToString(), "source=none quota=max period=0 cpuset=4 effective_cpus=4");
  EXPECT_THAT(quota.reason, IsEmpty());
}

TEST_F(CpuQuotaTest, CgroupV2) {
  fixture_.SetUpV2("/", "/kubepods.slice/pod1/c1");
  fixture_.SetV2Max("/kubepods.slice/pod1/c1", "200000 100000");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.ToString(),
            "source=cgroup2 quota=200000 period=100000 cpuset=4 effective_cpus=2");
  EXPECT_EQ(quota.cgroup_dir, fixture_.cgroup_root() + "/kubepods.slice/pod1/c1");
  EXPECT_THAT(quota.reason, IsEmpty());
}

TEST_F(CpuQuotaTest, CgroupV2MaxIsNoLimit) {
  fixture_.SetUpV2("/", "/a");
  for (const char* text : {"max", "max 100000", "max\n"}) {
    fixture_.SetV2Max("/a", text);
    CpuQuota quota = DetectCpuQuota(Options(2, 2));
    EXPECT_EQ(quota.ToString(), "source=none quota=max period=0 cpuset=2 effective_cpus=2") << text;
    EXPECT_THAT(quota.reason, IsEmpty()) << text;
  }
}

TEST_F(CpuQuotaTest, CgroupV2OneFieldUsesDefaultPeriod) {
  fixture_.SetUpV2("/", "/a");
  fixture_.SetV2Max("/a", "250000");
  CpuQuota quota = DetectCpuQuota(Options(8, 8));
  EXPECT_EQ(quota.ToString(),
            "source=cgroup2 quota=250000 period=100000 cpuset=8 effective_cpus=2");
}

TEST_F(CpuQuotaTest, CgroupV2WithoutCpuControllerIsNoLimitWithReason) {
  fixture_.SetUpV2("/", "/a/b");
  fixture_.WriteCgroup("a/b/cgroup.procs", "1\n");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.source, "none");
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("cpu controller not enabled"));
}

TEST_F(CpuQuotaTest, HybridPrefersV1CpuController) {
  fixture_.SetUpV1("/", "/system.slice/shipper.service", /*unified=*/true);
  fixture_.SetV1Quota("/system.slice/shipper.service", "100000", "100000");
  // A cgroup2 cpu.max would never bind on a hybrid host; make it differ to see which one is read.
  fixture_.WriteCgroup("unified/user.slice/cpu.max", "300000 100000\n");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.ToString(),
            "source=cgroup1 quota=100000 period=100000 cpuset=4 effective_cpus=1");
}

TEST_F(CpuQuotaTest, HybridWithoutV1CpuMountFallsBackToV2) {
  fixture_.WriteProc("self/mountinfo",
                     "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
  fixture_.WriteProc("self/cgroup", "2:cpu,cpuacct:/a\n0::/b\n");
  fixture_.WriteCgroup("unified/b/cpu.max", "300000 100000\n");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.source, "cgroup2");
  EXPECT_EQ(quota.effective_cpus, 3);
  EXPECT_THAT(quota.reason, HasSubstr("no cgroup v1 cpu mount"));
}

TEST_F(CpuQuotaTest, TighterParentBindsChildWithoutQuotaV1) {
  fixture_.SetUpV1("/", "/kubepods/pod1/c1");
  fixture_.SetV1Quota("/kubepods/pod1/c1", "-1", "100000");
  fixture_.SetV1Quota("/kubepods/pod1", "50000", "100000");
  fixture_.SetV1Quota("/kubepods", "400000", "100000");
  fixture_.SetV1Quota("/", "-1", "100000");
  CpuQuota quota = DetectCpuQuota(Options(8, 8));
  EXPECT_EQ(quota.ToString(), "source=cgroup1 quota=50000 period=100000 cpuset=8 effective_cpus=1");
  EXPECT_EQ(quota.cgroup_dir, V1Dir("/kubepods/pod1"));
}

TEST_F(CpuQuotaTest, TighterParentComparesRatiosNotQuotasV2) {
  fixture_.SetUpV2("/", "/p/c/g");
  // Parent: 150000/200000 = 0.75 CPU, tighter than the child's 80000/100000 = 0.8 although its
  // quota number is larger.
  fixture_.SetV2Max("/p", "150000 200000");
  fixture_.SetV2Max("/p/c", "max 100000");
  fixture_.SetV2Max("/p/c/g", "80000 100000");
  CpuQuota quota = DetectCpuQuota(Options(8, 8, Rounding::kCeil));
  EXPECT_EQ(quota.quota_us, 150000);
  EXPECT_EQ(quota.period_us, 200000);
  EXPECT_EQ(quota.cgroup_dir, fixture_.cgroup_root() + "/p");
  EXPECT_EQ(quota.effective_cpus, 1);

  fixture_.SetV2Max("/p", "600000 200000");  // 3 CPUs: now the grandchild's 0.8 binds
  quota = DetectCpuQuota(Options(8, 8, Rounding::kCeil));
  EXPECT_EQ(quota.cgroup_dir, fixture_.cgroup_root() + "/p/c/g");
  EXPECT_EQ(quota.quota_us, 80000);
}

TEST_F(CpuQuotaTest, QuotaAboveCpusetIsCappedByCpuset) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "800000", "100000");
  CpuQuota quota = DetectCpuQuota(Options(/*affinity=*/2, /*host=*/16));
  EXPECT_EQ(quota.ToString(), "source=cpuset quota=800000 period=100000 cpuset=2 effective_cpus=2");
}

TEST_F(CpuQuotaTest, CpusetWithoutQuota) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "-1", "100000");
  EXPECT_EQ(DetectCpuQuota(Options(3, 16)).ToString(),
            "source=cpuset quota=max period=0 cpuset=3 effective_cpus=3");
}

TEST_F(CpuQuotaTest, RealAffinityIsUsedByDefault) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "-1", "100000");
  CpuQuotaOptions options = Options();
  options.affinity_cpus = nullptr;
  options.host_cpus = nullptr;
  CpuQuota quota = DetectCpuQuota(options);
  EXPECT_GE(quota.cpuset_cpus, 1);
  EXPECT_LE(quota.cpuset_cpus, quota.host_cpus);
  EXPECT_EQ(quota.effective_cpus, quota.cpuset_cpus);
}

TEST_F(CpuQuotaTest, NamespaceRootV2) {
  // In a cgroup namespace the process sees itself at "/" and the mount's root is "/": the
  // limit is in the mount point itself.
  fixture_.SetUpV2("/", "/");
  fixture_.SetV2Max("/", "100000 100000");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.ToString(),
            "source=cgroup2 quota=100000 period=100000 cpuset=4 effective_cpus=1");
  EXPECT_EQ(quota.cgroup_dir, fixture_.cgroup_root());
}

TEST_F(CpuQuotaTest, BindMountedContainerCgroupV1) {
  // Docker without a cgroup namespace: the container's cgroup is bind-mounted as the mount point,
  // the mount's root field is that cgroup, /proc/self/cgroup shows the full host path.
  fixture_.SetUpV1("/docker/0123abcd", "/docker/0123abcd");
  fixture_.SetV1Quota("/", "150000", "100000");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.ToString(),
            "source=cgroup1 quota=150000 period=100000 cpuset=4 effective_cpus=1");
  EXPECT_EQ(quota.cgroup_dir, V1Dir(""));

  fixture_.SetUpV1("/docker/0123abcd", "/docker/0123abcd/worker");
  fixture_.SetV1Quota("/worker", "-1", "100000");
  EXPECT_EQ(DetectCpuQuota(Options(4, 4)).quota_us, 150000);
}

TEST_F(CpuQuotaTest, PathOutsideMountRootIsNoLimitWithReason) {
  fixture_.SetUpV1("/docker/0123abcd", "/docker/other");
  fixture_.SetV1Quota("/", "50000", "100000");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.source, "none");
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("outside every mount's root"));

  // A prefix that is not a whole path component is outside too.
  fixture_.SetUpV1("/docker/0123abcd", "/docker/0123abcdef");
  EXPECT_THAT(DetectCpuQuota(Options(4, 4)).reason, HasSubstr("outside"));
  // So is a namespace-relative path that climbs out ("/../sibling").
  fixture_.SetUpV2("/", "/../sibling");
  EXPECT_THAT(DetectCpuQuota(Options(4, 4)).reason, HasSubstr("outside"));
}

TEST_F(CpuQuotaTest, LongestMatchingMountRootWins) {
  fixture_.WriteProc("self/mountinfo",
                     "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
                     "33 31 0:29 /a/b /sys/fs/cgroup/cpu_b rw - cgroup cgroup rw,cpu\n");
  fixture_.WriteProc("self/cgroup", "2:cpu:/a/b/c\n");
  fixture_.WriteCgroup("cpu_b/c/cpu.cfs_quota_us", "200000\n");
  fixture_.WriteCgroup("cpu_b/c/cpu.cfs_period_us", "100000\n");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.effective_cpus, 2);
  EXPECT_EQ(quota.cgroup_dir, fixture_.cgroup_root() + "/cpu_b/c");
}

TEST_F(CpuQuotaTest, EscapedMountPoint) {
  fixture_.WriteProc("self/mountinfo",
                     "32 31 0:29 / /sys/fs/cgroup/cpu\\040x rw - cgroup cgroup rw,cpuacct,cpu\n");
  fixture_.WriteProc("self/cgroup", "2:cpuacct,cpu:/\n");
  fixture_.WriteCgroup("cpu x/cpu.cfs_quota_us", "100000\n");
  fixture_.WriteCgroup("cpu x/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(DetectCpuQuota(Options(4, 4)).ToString(),
            "source=cgroup1 quota=100000 period=100000 cpuset=4 effective_cpus=1");
}

TEST_F(CpuQuotaTest, ControllerNamesMatchWhole) {
  // "cpuset" and "cpuacct" alone are not "cpu".
  fixture_.WriteProc("self/mountinfo",
                     "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
                     "33 31 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n");
  fixture_.WriteProc("self/cgroup", "3:cpuset:/a\n2:cpuacct:/a\n");
  fixture_.WriteCgroup("cpuset/a/cpu.cfs_quota_us", "100000\n");
  fixture_.WriteCgroup("cpuset/a/cpu.cfs_period_us", "100000\n");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.source, "none");
  EXPECT_THAT(quota.reason, HasSubstr("no cpu cgroup"));
}

TEST_F(CpuQuotaTest, MissingFilesAreNoLimitWithReason) {
  // No /proc/self/cgroup at all.
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.ToString(), "source=none quota=max period=0 cpuset=4 effective_cpus=4");
  EXPECT_THAT(quota.reason, HasSubstr("self/cgroup: No such file"));

  // No mountinfo.
  fixture_.WriteProc("self/cgroup", "2:cpu:/a\n");
  quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("self/mountinfo: No such file"));

  // Mounted, but the cgroup files are missing.
  fixture_.SetUpV1("/", "/a");
  quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.source, "none");
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("cpu.cfs_quota_us: No such file"));

  // Quota present, period missing.
  fixture_.WriteCgroup("cpu,cpuacct/a/cpu.cfs_quota_us", "50000\n");
  quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("cpu.cfs_period_us: No such file"));
}

TEST_F(CpuQuotaTest, UnreadableFilesAreNoLimitWithReason) {
  fixture_.SetUpV1("/", "/a");
  fixture_.MakeUnreadable("cpu,cpuacct/a/cpu.cfs_quota_us");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("cannot read"));

  // A tighter readable parent still binds.
  fixture_.SetV1Quota("/", "100000", "100000");
  EXPECT_EQ(DetectCpuQuota(Options(4, 4)).effective_cpus, 1);
}

TEST_F(CpuQuotaTest, PermissionDeniedIsNoLimitWithReason) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  fixture_.SetUpV2("/", "/a");
  fixture_.SetV2Max("/a", "100000 100000");
  chmod((fixture_.cgroup_root() + "/a/cpu.max").c_str(), 0);
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("Permission denied"));
}

TEST_F(CpuQuotaTest, ZeroPeriodIsNoLimitWithReason) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "50000", "0");
  CpuQuota quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("period 0"));

  fixture_.SetUpV2("/", "/b");
  fixture_.SetV2Max("/b", "50000 0");
  quota = DetectCpuQuota(Options(4, 4));
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("period 0"));
}

TEST_F(CpuQuotaTest, GarbageIsNoLimitWithReason) {
  fixture_.SetUpV2("/", "/a");
  for (const char* text : {"", "lots", "50000 100000 7", "-5 100000", "0 100000", "1e5 100000",
                           "50000 x", "99999999999999999999 100000", "\x01\x02"}) {
    fixture_.SetV2Max("/a", text);
    CpuQuota quota = DetectCpuQuota(Options(4, 4));
    EXPECT_EQ(quota.effective_cpus, 4) << text;
    EXPECT_EQ(quota.source, "none") << text;
    EXPECT_THAT(quota.reason, HasSubstr("treated as no limit")) << text;
  }
  fixture_.SetUpV1("/", "/a");
  for (const char* text : {"", "-2", "abc", "0"}) {
    fixture_.SetV1Quota("/a", text, "100000");
    CpuQuota quota = DetectCpuQuota(Options(4, 4));
    EXPECT_EQ(quota.effective_cpus, 4) << text;
    EXPECT_THAT(quota.reason, HasSubstr("treated as no limit")) << text;
  }
  // Garbage in /proc/self/cgroup and mountinfo.
  fixture_.WriteProc("self/cgroup", "garbage\n::\n:::\n");
  fixture_.WriteProc("self/mountinfo", "a b c\n - - -\n");
  EXPECT_EQ(DetectCpuQuota(Options(4, 4)).effective_cpus, 4);
}

TEST_F(CpuQuotaTest, HugeQuotaDoesNotOverflow) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "9223372036854775807", "1");
  fixture_.SetV1Quota("/", "9223372036854775000", "3");
  CpuQuota quota = DetectCpuQuota(Options(64, 64, Rounding::kCeil));
  EXPECT_EQ(quota.effective_cpus, 64);
  EXPECT_EQ(quota.source, "cpuset");
}

TEST_F(CpuQuotaTest, QuotaChangingBetweenReads) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "50000", "100000");
  std::unique_ptr<CpuQuotaReader> reader = CpuQuotaReader::Create(Options(4, 4));
  EXPECT_EQ(reader->Read().effective_cpus, 1);
  fixture_.SetV1Quota("/a", "200000", "100000");
  EXPECT_EQ(reader->Read().effective_cpus, 2);
  fixture_.SetV1Quota("/a", "-1", "100000");
  EXPECT_EQ(reader->Read().effective_cpus, 4);
  fixture_.SetV1Quota("/a", "100000", "0");
  CpuQuota quota = reader->Read();
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("period 0"));
  fixture_.SetV1Quota("/a", "300000", "100000");
  quota = reader->Read();
  EXPECT_EQ(quota.effective_cpus, 3);
  EXPECT_THAT(quota.reason, IsEmpty());
}

TEST_F(CpuQuotaTest, ReaderKeepsFilesOpen) {
  fixture_.SetUpV2("/", "/a");
  fixture_.SetV2Max("/a", "100000 100000");
  std::unique_ptr<CpuQuotaReader> reader = CpuQuotaReader::Create(Options(4, 4));
  EXPECT_EQ(reader->Read().effective_cpus, 1);
  // A new file at the same path is a different inode; the reader still reads the one it opened.
  std::string path = fixture_.cgroup_root() + "/a/cpu.max";
  ASSERT_EQ(unlink(path.c_str()), 0);
  fixture_.SetV2Max("/a", "300000 100000");
  EXPECT_EQ(reader->Read().effective_cpus, 1);
  // A fresh reader opens the new one.
  EXPECT_EQ(DetectCpuQuota(Options(4, 4)).effective_cpus, 3);
}

TEST_F(CpuQuotaTest, ReaderRetriesFilesThatWereMissing) {
  fixture_.SetUpV1("/", "/a");
  std::unique_ptr<CpuQuotaReader> reader = CpuQuotaReader::Create(Options(4, 4));
  EXPECT_EQ(reader->Read().effective_cpus, 4);
  fixture_.SetV1Quota("/a", "200000", "100000");
  CpuQuota quota = reader->Read();
  EXPECT_EQ(quota.effective_cpus, 2);
  EXPECT_THAT(quota.reason, IsEmpty());
}

TEST_F(CpuQuotaTest, ReaderRecoversWhenProcCgroupComesBack) {
  std::unique_ptr<CpuQuotaReader> reader = CpuQuotaReader::Create(Options(4, 4));
  CpuQuota quota = reader->Read();
  EXPECT_EQ(quota.effective_cpus, 4);
  EXPECT_THAT(quota.reason, HasSubstr("self/cgroup"));
  fixture_.SetUpV2("/", "/a");
  fixture_.SetV2Max("/a", "100000 100000");
  quota = reader->Read();
  EXPECT_EQ(quota.effective_cpus, 1);
  EXPECT_THAT(quota.reason, IsEmpty());
}

TEST_F(CpuQuotaTest, ReaderFollowsAMoveToAnotherCgroup) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "100000", "100000");
  fixture_.SetV1Quota("/b", "300000", "100000");
  std::unique_ptr<CpuQuotaReader> reader = CpuQuotaReader::Create(Options(4, 4));
  EXPECT_EQ(reader->Read().effective_cpus, 1);
  fixture_.SetUpV1("/", "/b");
  CpuQuota quota = reader->Read();
  EXPECT_EQ(quota.effective_cpus, 3);
  EXPECT_EQ(quota.cgroup_dir, V1Dir("/b"));
}

TEST_F(CpuQuotaTest, OverrideWins) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1Quota("/a", "50000", "100000");
  CpuQuotaOptions options = Options(4, 4);
  options.override_cpus = 3;
  CpuQuota quota = DetectCpuQuota(options);
  EXPECT_EQ(quota.ToString(),
            "source=override quota=50000 period=100000 cpuset=4 effective_cpus=3");
  EXPECT_THAT(quota.reason, HasSubstr("override: 3 CPUs"));
  EXPECT_THAT(quota.reason, HasSubstr("detected 1"));

  options.override_cpus = 6;
  quota = DetectCpuQuota(options);
  EXPECT_EQ(quota.effective_cpus, 6);
  EXPECT_THAT(quota.reason, HasSubstr("exceeds the 4 CPUs of the affinity mask"));
}

TEST(ParseRoundingTest, Values) {
  EXPECT_EQ(*ParseRounding("floor"), Rounding::kFloor);
  EXPECT_EQ(*ParseRounding("ceil"), Rounding::kCeil);
  EXPECT_FALSE(ParseRounding("round").ok());
  EXPECT_FALSE(ParseRounding("").ok());
  EXPECT_FALSE(ParseRounding("Floor").ok());
}

TEST(ParseCpusOverrideTest, Values) {
  EXPECT_EQ(*ParseCpusOverride(""), 0);
  EXPECT_EQ(*ParseCpusOverride("0"), 0);
  EXPECT_EQ(*ParseCpusOverride("4"), 4);
  EXPECT_EQ(*ParseCpusOverride(" 2\n"), 2);
  EXPECT_FALSE(ParseCpusOverride("-1").ok());
  EXPECT_FALSE(ParseCpusOverride("1.5").ok());
  EXPECT_FALSE(ParseCpusOverride("two").ok());
  EXPECT_FALSE(ParseCpusOverride("99999999999").ok());
}

TEST(OverrideFromEnvTest, Values) {
  unsetenv("SHIPPER_TEST_CPUS");
  EXPECT_EQ(*OverrideFromEnv("SHIPPER_TEST_CPUS"), 0);
  setenv("SHIPPER_TEST_CPUS", "3", 1);
  EXPECT_EQ(*OverrideFromEnv("SHIPPER_TEST_CPUS"), 3);
  setenv("SHIPPER_TEST_CPUS", "x", 1);
  absl::StatusOr<int> bad = OverrideFromEnv("SHIPPER_TEST_CPUS");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("SHIPPER_TEST_CPUS"));
  unsetenv("SHIPPER_TEST_CPUS");
}

}  // namespace
}  // namespace shipper::runtime
