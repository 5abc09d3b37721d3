#include "shipper/output/output.h"

#include <unistd.h>

#include "absl/synchronization/mutex.h"
#include "shipper/output/batch_json.h"
#include "shipper/output/file_output.h"
#include "shipper/output/file_util.h"
#include "shipper/output/redis_output.h"
#include "shipper/output/shipper_output.h"

namespace shipper {
namespace {

// NDJSON to stdout, for debugging.
class ConsoleOutput final : public Output {
 public:
  absl::Status Write(const queue::Batch& batch, std::vector<Rejection>*) override {
    thread_local BatchJson json;
    json.Encode(batch);
    absl::MutexLock lock(&mu_);
    return WriteAll(STDOUT_FILENO, json.ndjson(), "stdout");
  }

 private:
  absl::Mutex mu_;  // keeps each batch's lines together
};

// Counts and drops: measures everything but the output itself.
class DiscardOutput final : public Output {
 public:
  absl::Status Write(const queue::Batch&, std::vector<Rejection>*) override {
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Output>> NewOutput(const Config& config) {
  switch (config.output) {
    case OutputKind::kFile:
      return NewFileOutput(config.file);
    case OutputKind::kConsole:
      return std::make_unique<ConsoleOutput>();
    case OutputKind::kDiscard:
      return std::make_unique<DiscardOutput>();
    case OutputKind::kRedis:
      return NewRedisOutput(config.redis);
    case OutputKind::kShipper:
      return NewShipperOutput(config.shipper);
  }
  return absl::InternalError("unknown output kind");
}

}  // namespace shipper
