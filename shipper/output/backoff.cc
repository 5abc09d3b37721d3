#include "shipper/output/backoff.h"

#include <algorithm>

#include "glog/logging.h"

namespace shipper {

Backoff::Backoff(absl::Duration init, absl::Duration max) : max_(max), ceiling_(init) {
  CHECK(absl::ZeroDuration() <= init && init <= max) << init << " " << max;
}

absl::Duration Backoff::Next() {
  const absl::Duration half = ceiling_ / 2;
  const absl::Duration wait =
      half + absl::Nanoseconds(absl::Uniform<int64_t>(absl::IntervalClosed, gen_, 0,
                                                      absl::ToInt64Nanoseconds(half)));
  ceiling_ = std::min(2 * ceiling_, max_);
  return wait;
}

}  // namespace shipper
