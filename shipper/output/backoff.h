// Exponential backoff with jitter, the retry policy every output shares.
//
// The n-th wait (from 0) is drawn uniformly from [d/2, d] with d = min(init * 2^n, max)
// ("equal jitter", as Beats does): waits grow quickly while the jitter keeps workers that failed
// together from retrying in lockstep.
//
// Thread safety: one thread uses a Backoff.
#ifndef SHIPPER_SHIPPER_OUTPUT_BACKOFF_H_
#define SHIPPER_SHIPPER_OUTPUT_BACKOFF_H_

#include "absl/random/random.h"
#include "absl/time/time.h"

namespace shipper {

class Backoff {
 public:
  // REQUIRES: absl::ZeroDuration() <= init <= max.
  Backoff(absl::Duration init, absl::Duration max);

  // How long to wait before the next attempt.
  absl::Duration Next();

 private:
  const absl::Duration max_;
  absl::Duration ceiling_;  // d of the next wait
  absl::BitGen gen_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_BACKOFF_H_
