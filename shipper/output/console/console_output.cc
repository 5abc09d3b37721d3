#include "shipper/output/console/console_output.h"

#include <unistd.h>

#include "absl/base/thread_annotations.h"
#include "runtime/mutex.h"
#include "shipper/output/batch_json.h"
#include "shipper/output/file_util.h"

namespace shipper {
namespace {

class ConsoleOutput final : public Output {
 public:
  absl::Status Write(const Events& events, Outcome*) override {
    thread_local BatchJson json;
    json.Encode(events);
    runtime::MutexLock lock(&mu_);
    return WriteAll(STDOUT_FILENO, json.ndjson(), "stdout");
  }

 private:
  runtime::Mutex mu_;  // keeps each batch's lines together
};

struct ConsoleSettings final : OutputSettings {
  absl::StatusOr<std::unique_ptr<Output>> Build() const override {
    return std::make_unique<ConsoleOutput>();
  }
  std::string Destination() const override { return "console (stdout)"; }
};

}  // namespace

OutputType ConsoleOutputType() {
  return MakeOutputType<ConsoleSettings>("console", "write NDJSON to stdout, for debugging", {});
}

}  // namespace shipper
