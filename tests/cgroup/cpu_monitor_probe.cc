// A stand-in for the shipper that exercises only runtime/: it logs the same "cpu quota:" line,
// keeps an "output" WorkerPool sized from the effective CPU count and re-tunes it, then waits for
// SIGTERM/SIGINT. The real-cgroup test runs it as well as the real shipper, so a failure can be
// told apart between runtime/ and its wiring.
//
// Usage: cpu_monitor_probe [--cpus=N] [-E shipper.cpu.retune_interval=1s] [-E
// shipper.cpu.rounding=ceil]
#include <string.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "runtime/cpu_monitor.h"
#include "runtime/cpu_quota.h"
#include "runtime/signals.h"
#include "runtime/worker_pool.h"
#include "shipper/config/config.h"

int main(int argc, char** argv) {
  shipper::runtime::BlockTerminationSignals();
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);

  shipper::runtime::CpuQuotaOptions options;
  absl::Duration interval = shipper::Config().cpu.retune_interval;  // the key's default
  absl::StatusOr<int> env_cpus = shipper::runtime::OverrideFromEnv();
  CHECK(env_cpus.ok()) << env_cpus.status();
  options.override_cpus = *env_cpus;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "-E" && i + 1 < argc) arg = argv[++i];
    if (absl::ConsumePrefix(&arg, "--cpus=")) {
      absl::StatusOr<int> cpus = shipper::runtime::ParseCpusOverride(arg);
      CHECK(cpus.ok()) << cpus.status();
      if (*cpus > 0) options.override_cpus = *cpus;
    } else if (absl::ConsumePrefix(&arg, "shipper.cpu.retune_interval=")) {
      CHECK(absl::ParseDuration(arg, &interval)) << arg;
    } else if (absl::ConsumePrefix(&arg, "shipper.cpu.rounding=")) {
      absl::StatusOr<shipper::runtime::Rounding> rounding = shipper::runtime::ParseRounding(arg);
      CHECK(rounding.ok()) << rounding.status();
      options.rounding = *rounding;
    }  // other -E keys are the shipper's; ignore them
  }

  auto monitor = std::make_unique<shipper::runtime::CpuMonitor>(options, interval);
  shipper::runtime::WorkerPool pool("output", monitor->effective_cpus(),
                                    [](const shipper::runtime::WorkerPool::Worker& self) {
                                      std::this_thread::sleep_for(std::chrono::milliseconds(100));
                                    });
  monitor->AddListener([&pool](int, int now) { pool.Resize(now); });
  pool.Resize(monitor->effective_cpus());  // a change between construction and AddListener
  LOG(INFO) << "probe ready";
  int signal_number = shipper::runtime::WaitForTerminationSignal();
  LOG(INFO) << strsignal(signal_number) << ": stopping";
  monitor->Stop();  // before the pool its listener resizes goes away
  return 0;
}
