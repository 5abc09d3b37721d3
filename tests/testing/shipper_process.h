// Runs the real shipper binary as a child process for end-to-end tests.
//
// The child listens on an ephemeral loopback port unless the arguments say otherwise; Start()
// waits for its "listening on ADDRESS" log line and reads the address from it. Its stderr goes
// to a file in the test's temp dir, which failures print.
//
// Thread safety: one thread uses a ShipperProcess.
#ifndef SHIPPER_TESTS_TESTING_SHIPPER_PROCESS_H_
#define SHIPPER_TESTS_TESTING_SHIPPER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shipper::testing {

class ShipperProcess {
 public:
  // Starts `binary` (default: the shipper in the test's runfiles) with `args` plus
  // -E shipper.server.server=127.0.0.1:0 unless `args` sets the server address, and
  // -E http.port=0 unless `args` sets a shipper.http key.
  static absl::StatusOr<ShipperProcess> Start(std::vector<std::string> args,
                                              std::string binary = "shipper/shipper");
  ShipperProcess(ShipperProcess&& other) noexcept;
  ShipperProcess& operator=(ShipperProcess&&) = delete;
  // Kills the child if it still runs.
  ~ShipperProcess();

  const std::string& address() const { return address_; }
  const std::string& uuid() const { return uuid_; }
  // host:port of the /metrics endpoint; empty when it is off.
  const std::string& metrics_address() const { return metrics_address_; }
  pid_t pid() const { return pid_; }

  void Signal(int signal) const;
  // Waits for the child to exit; its exit code, or 128 + signal when a signal killed it, or
  // DEADLINE_EXCEEDED.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  // Everything the child logged so far.
  std::string Log() const;

 private:
  ShipperProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}

  pid_t pid_;
  std::string log_path_;
  std::string address_;
  std::string uuid_;
  std::string metrics_address_;
};

// Runs the shipper binary to completion (e.g. --check_config); returns {exit code, output}.
std::pair<int, std::string> RunShipper(const std::vector<std::string>& args,
                                       const std::string& binary = "shipper/shipper");

}  // namespace shipper::testing

#endif  // SHIPPER_TESTS_TESTING_SHIPPER_PROCESS_H_
