#include "shipper/config/problems.h"

#include <utility>

#include "absl/strings/str_join.h"

namespace shipper {

void Problems::Add(const absl::Status& status) {
  if (!status.ok()) problems_.emplace_back(status.message());
}

void Problems::Add(std::string problem) { problems_.push_back(std::move(problem)); }

absl::Status Problems::ToStatus() const {
  if (problems_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems_, "\n"));
}

}  // namespace shipper
