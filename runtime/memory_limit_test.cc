#include "runtime/memory_limit.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cgroup_fixture.h"

namespace shipper::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kMiB = int64_t{1} << 20;

class MemoryLimitTest : public ::testing::Test {
 protected:
  MemoryLimit Detect() const {
    MemoryLimitOptions options;
    options.proc_root = fixture_.proc_root();
    options.cgroup_root = fixture_.cgroup_root();
    return DetectMemoryLimit(options);
  }

  CgroupFixture fixture_;
};

TEST_F(MemoryLimitTest, CgroupV2) {
  fixture_.SetUpV2("/", "/kubepods.slice/pod1/c1");
  fixture_.SetV2MemoryMax("/kubepods.slice/pod1/c1", "268435456");
  const MemoryLimit limit = Detect();
  EXPECT_EQ(limit.source, "cgroup2");
  EXPECT_EQ(limit.bytes, 256 * kMiB);
  EXPECT_EQ(limit.cgroup_dir, absl::StrCat(fixture_.cgroup_root(), "/kubepods.slice/pod1/c1"));
  EXPECT_THAT(limit.reason, IsEmpty());
  EXPECT_EQ(limit.ToString(), absl::StrCat("source=cgroup2 limit=268435456 dir=",
                                           fixture_.cgroup_root(), "/kubepods.slice/pod1/c1"));
}

TEST_F(MemoryLimitTest, CgroupV1) {
  fixture_.SetUpV1("/", "/docker/abc");
  fixture_.SetV1MemoryLimit("/docker/abc", "536870912");
  const MemoryLimit limit = Detect();
  EXPECT_EQ(limit.source, "cgroup1");
  EXPECT_EQ(limit.bytes, 512 * kMiB);
  EXPECT_EQ(limit.cgroup_dir, absl::StrCat(fixture_.cgroup_root(), "/memory/docker/abc"));
  EXPECT_THAT(limit.reason, IsEmpty());
}

TEST_F(MemoryLimitTest, V2MaxIsNoLimit) {
  fixture_.SetUpV2("/", "/a");
  fixture_.SetV2MemoryMax("/a", "max");
  const MemoryLimit limit = Detect();
  EXPECT_FALSE(limit.limited());
  EXPECT_EQ(limit.source, "none");
  EXPECT_THAT(limit.reason, IsEmpty());
  EXPECT_EQ(limit.ToString(), "source=none limit=max");
}

TEST_F(MemoryLimitTest, V1UnlimitedIsNoLimit) {
  fixture_.SetUpV1("/", "/a");
  fixture_.SetV1MemoryLimit("/a", "9223372036854771712");
  EXPECT_FALSE(Detect().limited());
  fixture_.SetV1MemoryLimit("/a", "-1");
  EXPECT_FALSE(Detect().limited());
  EXPECT_THAT(Detect().reason, IsEmpty());
}

TEST_F(MemoryLimitTest, TighterParentBindsV2) {
  fixture_.SetUpV2("/", "/pod/c1");
  fixture_.SetV2MemoryMax("/pod/c1", "max");
  fixture_.SetV2MemoryMax("/pod", "134217728");
  MemoryLimit limit = Detect();
  EXPECT_EQ(limit.bytes, 128 * kMiB);
  EXPECT_EQ(limit.cgroup_dir, absl::StrCat(fixture_.cgroup_root(), "/pod"));
  // A looser parent does not: the child's own limit binds.
  fixture_.SetV2MemoryMax("/pod/c1", "67108864");
  limit = Detect();
  EXPECT_EQ(limit.bytes, 64 * kMiB);
  EXPECT_EQ(limit.cgroup_dir, absl::StrCat(fixture_.cgroup_root(), "/pod/c1"));
}

TEST_F(MemoryLimitTest, TighterParentBindsV1) {
  fixture_.SetUpV1("/", "/kubepods/pod1/c1");
  fixture_.SetV1MemoryLimit("/kubepods/pod1/c1", "9223372036854771712");
  fixture_.SetV1MemoryLimit("/kubepods/pod1", "268435456");
  fixture_.SetV1MemoryLimit("/kubepods", "1073741824");
  const MemoryLimit limit = Detect();
  EXPECT_EQ(limit.bytes, 256 * kMiB);
  EXPECT_EQ(limit.cgroup_dir, absl::StrCat(fixture_.cgroup_root(), "/memory/kubepods/pod1"));
}

TEST_F(MemoryLimitTest, GarbageIsIgnoredWithReason) {
  fixture_.SetUpV2("/", "/pod/c1");
  for (const char* text : {"lots", "12 34", "", "-5"}) {
    fixture_.SetV2MemoryMax("/pod/c1", text);
    const MemoryLimit limit = Detect();
    EXPECT_FALSE(limit.limited()) << text;
    EXPECT_THAT(limit.reason, HasSubstr("memory.max")) << text;
    EXPECT_THAT(limit.reason, HasSubstr("treated as no limit")) << text;
  }
  // Garbage in one level does not hide a limit in another.
  fixture_.SetV2MemoryMax("/pod", "268435456");
  const MemoryLimit limit = Detect();
  EXPECT_EQ(limit.bytes, 256 * kMiB);
  EXPECT_THAT(limit.reason, HasSubstr("treated as no limit"));
}

TEST_F(MemoryLimitTest, V2WithoutMemoryControllerIsNoLimit) {
  fixture_.SetUpV2("/", "/a/b");
  fixture_.WriteCgroup("a/b/cgroup.procs", "1\n");
  const MemoryLimit limit = Detect();
  EXPECT_FALSE(limit.limited());
  EXPECT_THAT(limit.reason, IsEmpty());
}

TEST_F(MemoryLimitTest, MissingFilesAreNoLimitWithReason) {
  EXPECT_THAT(Detect().reason, HasSubstr("self/cgroup: No such file"));
  fixture_.WriteProc("self/cgroup", "0::/a\n");
  EXPECT_THAT(Detect().reason, HasSubstr("self/mountinfo: No such file"));
  fixture_.SetUpV1("/", "/a");
  const MemoryLimit limit = Detect();  // v1 file of our own cgroup missing
  EXPECT_FALSE(limit.limited());
  EXPECT_THAT(limit.reason, HasSubstr("memory.limit_in_bytes: No such file"));
}

TEST_F(MemoryLimitTest, NoMemoryCgroupIsNoLimitWithReason) {
  fixture_.WriteProc("self/mountinfo", "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n");
  fixture_.WriteProc("self/cgroup", "2:cpu:/a\n");
  EXPECT_THAT(Detect().reason, HasSubstr("no memory cgroup"));
}

}  // namespace
}  // namespace shipper::runtime
