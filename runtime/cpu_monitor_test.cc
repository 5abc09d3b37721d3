#include "runtime/cpu_monitor.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cgroup_fixture.h"
#include "runtime/eventually.h"
#include "runtime/worker_pool.h"

namespace shipper::runtime {
namespace {

class CpuMonitorTest : public ::testing::Test {
 protected:
  CpuMonitorTest() {
    fixture_.SetUpV1("/", "/shipper");
    SetCpus("0.5");
  }

  // Quota as a fraction of 100000 us periods.
  void SetCpus(const char* cpus) {
    fixture_.SetV1Quota("/shipper", std::to_string(static_cast<long>(std::stod(cpus) * 100000)),
                        "100000");
  }

  CpuQuotaOptions Options() const {
    CpuQuotaOptions options;
    options.proc_root = fixture_.proc_root();
    options.cgroup_root = fixture_.cgroup_root();
    options.affinity_cpus = [] { return 8; };
    options.host_cpus = [] { return 8; };
    return options;
  }

  CgroupFixture fixture_;
};

TEST_F(CpuMonitorTest, DetectsAtConstruction) {
  CpuMonitor monitor(Options(), absl::ZeroDuration());
  EXPECT_FALSE(monitor.retuning());
  EXPECT_EQ(monitor.effective_cpus(), 1);
  EXPECT_EQ(monitor.current().ToString(),
            "source=cgroup1 quota=50000 period=100000 cpuset=8 effective_cpus=1");
}

TEST_F(CpuMonitorTest, RefreshCallsListenersOncePerChange) {
  CpuMonitor monitor(Options(), absl::ZeroDuration());
  std::vector<std::pair<int, int>> changes;
  monitor.AddListener(
      [&](int old_cpus, int new_cpus) { changes.emplace_back(old_cpus, new_cpus); });
  EXPECT_FALSE(monitor.Refresh());
  SetCpus("2");
  EXPECT_TRUE(monitor.Refresh());
  EXPECT_FALSE(monitor.Refresh());
  SetCpus("2.5");  // still 2 with floor: no change to report
  EXPECT_FALSE(monitor.Refresh());
  EXPECT_EQ(monitor.current().quota_us, 250000);
  SetCpus("4");
  EXPECT_TRUE(monitor.Refresh());
  EXPECT_EQ(changes, (std::vector<std::pair<int, int>>{{1, 2}, {2, 4}}));
  EXPECT_EQ(monitor.effective_cpus(), 4);
}

TEST_F(CpuMonitorTest, PeriodicRetuneResizesAPool) {
  CpuMonitor monitor(Options(), absl::Milliseconds(10));
  EXPECT_TRUE(monitor.retuning());
  WorkerPool pool("retune", monitor.effective_cpus(), [](const WorkerPool::Worker& self) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  monitor.AddListener([&pool](int, int new_cpus) { pool.Resize(new_cpus); });
  EXPECT_EQ(pool.size(), 1);
  SetCpus("3");
  EXPECT_TRUE(Eventually([&] { return pool.size() == 3; }));
  SetCpus("0.2");
  EXPECT_TRUE(Eventually([&] { return pool.size() == 1; }));
  EXPECT_EQ(monitor.effective_cpus(), 1);
}

TEST_F(CpuMonitorTest, StopEndsPeriodicListenerCalls) {
  CpuMonitor monitor(Options(), absl::Milliseconds(5));
  std::atomic<int> calls{0};
  monitor.AddListener([&](int, int) { ++calls; });
  SetCpus("2");
  EXPECT_TRUE(Eventually([&] { return calls.load() >= 1 && monitor.effective_cpus() == 2; }));
  monitor.Stop();
  monitor.Stop();  // idempotent
  const int calls_before = calls.load();
  SetCpus("3");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(calls.load(), calls_before);
  EXPECT_EQ(monitor.effective_cpus(), 2);
  EXPECT_TRUE(monitor.Refresh());  // an explicit refresh still works
  EXPECT_EQ(calls.load(), calls_before + 1);
}

TEST_F(CpuMonitorTest, OverrideTurnsRetuningOff) {
  CpuQuotaOptions options = Options();
  options.override_cpus = 3;
  CpuMonitor monitor(options, absl::Milliseconds(10));
  EXPECT_FALSE(monitor.retuning());
  EXPECT_EQ(monitor.effective_cpus(), 3);
  EXPECT_EQ(monitor.current().source, "override");
  SetCpus("6");
  EXPECT_FALSE(monitor.Refresh());
  EXPECT_EQ(monitor.effective_cpus(), 3);
}

TEST_F(CpuMonitorTest, ConcurrentReadersAndRefreshers) {
  CpuMonitor monitor(Options(), absl::Milliseconds(1));
  std::atomic<int> calls{0};
  monitor.AddListener([&](int, int) { ++calls; });
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      while (!stop) {
        EXPECT_GE(monitor.effective_cpus(), 1);
        (void)monitor.current().ToString();
        monitor.Refresh();
      }
    });
  }
  for (const char* cpus : {"1", "2", "3", "1", "4"}) {
    SetCpus(cpus);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_TRUE(Eventually([&] { return monitor.effective_cpus() == 4; }));
  EXPECT_GE(calls.load(), 1);
}

}  // namespace
}  // namespace shipper::runtime
