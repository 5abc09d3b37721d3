#include "tests/testing/shipper_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shipper::testing {
namespace {

std::string TempPath(absl::string_view stem) {
  const char* dir = std::getenv("TEST_TMPDIR");
  static int counter = 0;
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", stem, "-", getpid(), "-", ++counter,
                      ".log");
}

// Forks `binary args...` with stdout and stderr into `log_path`.
pid_t Spawn(const std::string& binary, const std::vector<std::string>& args,
            const std::string& log_path) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fd, STDOUT_FILENO);
  dup2(fd, STDERR_FILENO);
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  execv(binary.c_str(), argv.data());
  _exit(127);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

absl::StatusOr<ShipperProcess> ShipperProcess::Start(std::vector<std::string> args,
                                                     std::string binary) {
  bool has_address = false, has_http = false;
  for (const std::string& arg : args) {
    has_address |= absl::StrContains(arg, "server.server=");
    has_http |= absl::StrContains(arg, "http.");
  }
  if (!has_address) {
    args.insert(args.begin(), {"-E", "shipper.server.server=127.0.0.1:0"});
  }
  if (!has_http) args.insert(args.begin(), {"-E", "http.port=0"});
  std::string log_path = TempPath("shipper");
  ShipperProcess process(Spawn(binary, args, log_path), log_path);
  static const std::regex kListening("listening on (\\S+) \\(uuid ([0-9a-f-]+)\\)");
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    std::smatch match;
    std::string log = process.Log();
    if (std::regex_search(log, match, kListening)) {
      process.address_ = match[1];
      process.uuid_ = match[2];
      static const std::regex kMetrics("metrics on http://(\\S+)/metrics");
      if (std::regex_search(log, match, kMetrics)) process.metrics_address_ = match[1];
      return process;
    }
    int status;
    if (waitpid(process.pid_, &status, WNOHANG) == process.pid_) {
      process.pid_ = 0;
      return absl::FailedPreconditionError(absl::StrCat("shipper exited before serving:\n", log));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("shipper did not report listening within 30s:\n", process.Log()));
}

ShipperProcess::ShipperProcess(ShipperProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, 0)),
      log_path_(std::move(other.log_path_)),
      address_(std::move(other.address_)),
      uuid_(std::move(other.uuid_)),
      metrics_address_(std::move(other.metrics_address_)) {}

ShipperProcess::~ShipperProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void ShipperProcess::Signal(int signal) const { kill(pid_, signal); }

absl::StatusOr<int> ShipperProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("shipper still runs after ", absl::FormatDuration(timeout)));
}

std::string ShipperProcess::Log() const { return ReadFile(log_path_); }

std::pair<int, std::string> RunShipper(const std::vector<std::string>& args,
                                       const std::string& binary) {
  std::string log_path = TempPath("shipper-run");
  pid_t pid = Spawn(binary, args, log_path);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ReadFile(log_path)};
}

}  // namespace shipper::testing
