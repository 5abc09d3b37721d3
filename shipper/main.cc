// shipper: receives events from agents over gRPC and ships them to one output.
// Thin by design: flags and signals here, everything else in Shipper (shipper.h).
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"
#include "runtime/allocator.h"
#include "runtime/cpu_quota.h"
#include "runtime/memory_limit.h"
#include "runtime/signals.h"
#include "shipper/config/config.h"
#include "shipper/config/memory_sizing.h"
#include "shipper/shipper.h"
#include "shipper/version.h"

ABSL_FLAG(std::string, c, "",
          "YAML config file; without it, built-in defaults (listen on 127.0.0.1:50051, file "
          "output into ./data/shipper.ndjson)");
ABSL_FLAG(bool, check_config, false,
          "validate the configuration as start would (keys, files, directories, addresses), "
          "report every problem, and exit: 0 if it would start, 2 if not; creates, binds and "
          "writes nothing");
ABSL_FLAG(int, cpus, 0,
          "use this many CPUs for thread pools instead of the detected container CPU quota "
          "(also SHIPPER_CPUS); turns re-tuning off");

namespace {

constexpr char kUsage[] = R"(ships events that agents publish over gRPC to one output.

Usage: shipper [-c FILE] [-E key=value ...] [--cpus=N] [--check_config]

  -E key=value   override a config key (repeatable; the value is read as YAML: quote one
                 that YAML would misread, -E 'shipper.output.redis.key="%{[a]}-x"')

--check_config runs every check start runs before it creates, binds or writes anything (keys,
TLS files, directories, listen addresses, the output's own), prints every problem it finds and
exits 2, or 0 when start would go ahead.

Memory: under a container memory limit (cgroup v2 memory.max or v1 memory.limit_in_bytes, the
tightest up the hierarchy), shipper.queue.mem.bytes and shipper.server.max_receive_memory left
unset are a quarter of the limit each; set ones must fit the limit with Shipper's fixed overhead
(64MiB) or start and --check_config refuse them, naming the keys and the limit. Peak memory stays
below the two budgets plus that overhead: when they are spent, clients get partial acceptance.
Without a limit the defaults below hold. Keys of the archived elastic-agent-shipper (type,
monitoring.enabled, http.expvar.enabled) are taken; see docs/operations.md "Migrating".

Config keys (defaults shown):
)";

// -E may repeat, which Abseil flags cannot express: take every "-E k=v" / "-E=k=v" out of argv.
std::vector<std::string> TakeOverrides(int* argc, char** argv) {
  std::vector<std::string> overrides;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    absl::string_view arg = argv[i];
    if ((arg == "-E" || arg == "--E") && i + 1 < *argc) {
      overrides.push_back(argv[++i]);
    } else if (absl::StartsWith(arg, "-E=") || absl::StartsWith(arg, "--E=")) {
      overrides.emplace_back(arg.substr(arg.find('=') + 1));
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return overrides;
}

// Config problems, one line each, and the exit code for them.
int Refuse(const absl::Status& status) {
  for (absl::string_view line : absl::StrSplit(status.message(), '\n')) {
    std::cerr << "shipper: " << line << "\n";
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string allocator = shipper::runtime::ConfigureAllocator();  // before any thread
  shipper::runtime::BlockTerminationSignals();
  // A write past RLIMIT_FSIZE fails with EFBIG, which the outputs and the disk queue retry as they
  // retry a full disk, instead of SIGXFSZ killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  // Debian builds Abseil with mutex deadlock detection on; its bookkeeping showed in profiles
  // (gRPC takes absl::Mutex on every call) and finds nothing a test run would not.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);

  absl::SetProgramUsageMessage(absl::StrCat(kUsage, shipper::ConfigKeysHelp()));
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "shipper/main.cc");
  };
  usage.version_string = [] { return absl::StrCat("shipper ", shipper::kVersion, "\n"); };
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string> overrides = TakeOverrides(&argc, argv);
  absl::ParseCommandLine(argc, argv);

  // Start and --check_config refuse the same configs with the same words: both run these.
  const shipper::runtime::MemoryLimit memory_limit = shipper::runtime::DetectMemoryLimit();
  absl::StatusOr<shipper::Config> config =
      shipper::LoadConfig(absl::GetFlag(FLAGS_c), overrides, memory_limit);
  if (!config.ok()) return Refuse(config.status());
  if (absl::Status preflight = shipper::Preflight(*config); !preflight.ok()) {
    return Refuse(preflight);
  }
  absl::StatusOr<int> env_cpus = shipper::runtime::OverrideFromEnv();
  if (!env_cpus.ok()) return Refuse(env_cpus.status());
  config->cpu.override_cpus = absl::GetFlag(FLAGS_cpus) > 0 ? absl::GetFlag(FLAGS_cpus) : *env_cpus;
  for (const std::string& warning : config->warnings) LOG(WARNING) << warning;
  for (const std::string& note : config->notes) LOG(INFO) << note;
  std::string memory =
      absl::StrCat("memory limit: ", memory_limit.ToString(),
                   "; budgets: shipper.queue.mem.bytes=", config->queue.max_bytes,
                   " shipper.server.max_receive_memory=", config->server.limits.max_receive_memory,
                   " (+", shipper::kFixedMemoryOverhead, " fixed");
  if (const size_t ring = shipper::ExtraRingBytes(*config); ring > 0) {
    absl::StrAppend(&memory, " +", ring, " for the ring of shipper.queue.mem.events");
  }
  memory += ")";
  if (!memory_limit.reason.empty()) LOG(WARNING) << "memory limit: " << memory_limit.reason;
  LOG(INFO) << memory;
  LOG(INFO) << allocator;
  const std::string destination = config->output_settings->Destination();
  if (absl::GetFlag(FLAGS_check_config)) {
    std::cout << "config OK: listen on " << config->server.address << ", output " << destination
              << "; " << memory << "\n";
    return 0;
  }

  absl::StatusOr<std::unique_ptr<shipper::Shipper>> shipper = shipper::Shipper::Start(*config);
  if (!shipper.ok()) {
    LOG(ERROR) << shipper.status().message();
    return 1;
  }
  LOG(INFO) << "Shipper " << shipper::kVersion << " listening on " << (*shipper)->address()
            << " (uuid " << (*shipper)->uuid() << "), events go to " << destination;

  int signal = shipper::runtime::WaitForTerminationSignal();
  LOG(INFO) << strsignal(signal) << ": draining for up to " << config->shutdown_timeout
            << " (a second signal exits at once)";
  std::thread([] {
    int again = shipper::runtime::WaitForTerminationSignal();
    LOG(WARNING) << strsignal(again) << " again: exiting without draining; clients resend "
                 << "what was not reported persisted";
    google::FlushLogFiles(google::GLOG_INFO);
    _exit(1);
  }).detach();
  shipper::Shipper::StopReport report = (*shipper)->Stop();
  LOG(INFO) << "stopped: " << report.delivered << " events delivered, " << report.left
            << " left undelivered (never reported persisted; clients resend them)"
            << (config->disk_queue
                    ? absl::StrCat(", ", report.kept, " kept in the disk queue for the next start")
                    : "");
  return 0;
}
