#include "shipper/config/memory_sizing.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shipper {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMiB = size_t{1} << 20;

runtime::MemoryLimit Limit(int64_t bytes) {
  runtime::MemoryLimit limit;
  limit.source = "cgroup2";
  limit.bytes = bytes;
  limit.cgroup_dir = "/sys/fs/cgroup/pod/c1";
  return limit;
}

// SizeMemory on `config`, the keys in `given` being the ones the config file set; the problems,
// one per line.
std::string Size(const runtime::MemoryLimit& limit, Config* config,
                 const std::set<std::string>& given = {}) {
  Problems problems;
  SizeMemory(
      limit, [&given](absl::string_view key) { return given.count(std::string(key)) > 0; }, config,
      &problems);
  return std::string(problems.ToStatus().message());
}

TEST(MemorySizingTest, WithoutAMemoryLimitTheDefaultsStay) {
  Config config;
  EXPECT_EQ(Size(runtime::MemoryLimit{}, &config), "");
  EXPECT_EQ(config.queue.max_bytes, 64 * kMiB);
  EXPECT_EQ(config.server.limits.max_receive_memory, 128 * kMiB);
  EXPECT_EQ(config.server.limits.max_message_size, 64 * kMiB);
  EXPECT_FALSE(config.memory_limit.limited());
}

TEST(MemorySizingTest, UnsetBudgetsAreAQuarterOfTheMemoryLimitEach) {
  Config config;
  EXPECT_EQ(Size(Limit(256 * kMiB), &config), "");
  EXPECT_EQ(config.queue.max_bytes, 64 * kMiB);
  EXPECT_EQ(config.server.limits.max_receive_memory, 64 * kMiB);
  EXPECT_EQ(config.server.limits.max_message_size, 64 * kMiB);
  EXPECT_EQ(config.memory_limit.bytes, int64_t{256} * int64_t{kMiB});

  // A smaller limit: max_message_size follows max_receive_memory down, so requests still fit.
  config = Config();
  EXPECT_EQ(Size(Limit(128 * kMiB), &config), "");
  EXPECT_EQ(config.queue.max_bytes, 32 * kMiB);
  EXPECT_EQ(config.server.limits.max_receive_memory, 32 * kMiB);
  EXPECT_EQ(config.server.limits.max_message_size, 32 * kMiB);

  // One set, the other derived.
  config = Config();
  config.queue.max_bytes = 100 * kMiB;
  EXPECT_EQ(Size(Limit(512 * kMiB), &config, {"shipper.queue.mem.bytes"}), "");
  EXPECT_EQ(config.queue.max_bytes, 100 * kMiB);
  EXPECT_EQ(config.server.limits.max_receive_memory, 128 * kMiB);
}

TEST(MemorySizingTest, BudgetsThatDoNotFitTheMemoryLimitAreRefusedNamingKeysAndLimit) {
  Config config;
  config.queue.max_bytes = 128 * kMiB;
  config.server.limits.max_receive_memory = 128 * kMiB;
  std::string message = Size(Limit(256 * kMiB), &config,
                             {"shipper.queue.mem.bytes", "shipper.server.max_receive_memory"});
  EXPECT_THAT(message, HasSubstr("shipper.queue.mem.bytes + shipper.server.max_receive_memory"));
  EXPECT_THAT(message, HasSubstr("268435456 bytes, cgroup2 /sys/fs/cgroup/pod/c1"));

  config = Config();
  config.queue.max_bytes = 0;
  EXPECT_THAT(Size(Limit(256 * kMiB), &config, {"shipper.queue.mem.bytes"}),
              HasSubstr("shipper.queue.mem.bytes is 0"));

  config = Config();
  EXPECT_THAT(Size(Limit(32 * kMiB), &config), HasSubstr("raise the limit"));

  // The disk queue's buffer counts too.
  config = Config();
  config.disk_queue = true;
  config.disk.path = "/tmp/q";
  config.disk.buffer_size = 100 * kMiB;
  EXPECT_THAT(Size(Limit(256 * kMiB), &config), HasSubstr("shipper.queue.disk.buffer_size"));

  // So does a memory queue ring larger than the default's: 10,000,000 events hold 512 MiB (2^24
  // slots of 32 bytes) from the start, whether events come or not.
  config = Config();
  config.queue.max_events = 10000000;
  EXPECT_EQ(ExtraRingBytes(config), 512 * kMiB - 2 * kMiB);
  EXPECT_THAT(Size(Limit(256 * kMiB), &config), HasSubstr("shipper.queue.mem.events"));
  EXPECT_EQ(Size(Limit(1024 * kMiB), &config), "");  // the budgets are sized from what it leaves
  EXPECT_EQ(config.queue.max_bytes, 128 * kMiB);
  config.queue.max_bytes = 384 * kMiB;
  EXPECT_THAT(Size(Limit(1024 * kMiB), &config, {"shipper.queue.mem.bytes"}),
              HasSubstr("the ring of shipper.queue.mem.events"));
  config = Config();
  EXPECT_EQ(ExtraRingBytes(config), 0);
  config.queue.max_events = 10000000;
  config.disk_queue = true;
  EXPECT_EQ(ExtraRingBytes(config), 0);
}

}  // namespace
}  // namespace shipper
