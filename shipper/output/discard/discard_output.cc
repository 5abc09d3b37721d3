#include "shipper/output/discard/discard_output.h"

namespace shipper {
namespace {

class DiscardOutput final : public Output {
 public:
  absl::Status Write(const Events&, Outcome*) override { return absl::OkStatus(); }
};

struct DiscardSettings final : OutputSettings {
  absl::StatusOr<std::unique_ptr<Output>> Build() const override {
    return std::make_unique<DiscardOutput>();
  }
  std::string Destination() const override { return "discard (events are counted and dropped)"; }
};

}  // namespace

OutputType DiscardOutputType() {
  return MakeOutputType<DiscardSettings>("discard", "count and drop events, for benchmarks", {});
}

}  // namespace shipper
