// A running Shipper: gRPC server → queue → output workers → acknowledgements.
//
// Start() builds every part from a Config and serves; Stop() drains gracefully. main() is a thin
// wrapper around this class; tests run the real binary (tests/testing/shipper_process.h).
//
// Thread safety: Stop() may be called from any one thread; the accessors from any thread.
#ifndef SHIPPER_SHIPPER_SHIPPER_H_
#define SHIPPER_SHIPPER_SHIPPER_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "shipper/config/config.h"

namespace shipper {

class Shipper {
 public:
  // Fails with INVALID_ARGUMENT (bad setting) or UNAVAILABLE (address in use) and a message
  // saying what to fix. REQUIRES: Preflight(config) (config.h) found no problem: start only
  // binds and creates what it checked.
  static absl::StatusOr<std::unique_ptr<Shipper>> Start(const Config& config);
  virtual ~Shipper() = default;

  // Where the server listens, with the real port when the config asked for port 0.
  virtual const std::string& address() const = 0;
  // This process's uuid, as replies report it.
  virtual const std::string& uuid() const = 0;

  struct StopReport {
    // Events the output took for good over the process's life (written, or dead-lettered); with
    // the disk queue, recovered ones included.
    uint64_t delivered = 0;
    uint64_t kept = 0;  // persisted in the disk queue, not delivered: delivered after a restart
    uint64_t left = 0;  // accepted but never persisted: their clients resend them
  };
  // Turns health NOT_SERVING, refuses new publishes (UNAVAILABLE), lets in-flight calls finish,
  // drains the queue into the output until config.shutdown_timeout, tells every PersistedIndex
  // stream the final index and shuts the server down. Idempotent.
  virtual StopReport Stop() = 0;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_SHIPPER_H_
