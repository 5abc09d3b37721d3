// Test helper: waiting for something another thread does, without a fixed sleep.
#ifndef SHIPPER_RUNTIME_EVENTUALLY_H_
#define SHIPPER_RUNTIME_EVENTUALLY_H_

#include <chrono>
#include <thread>

namespace shipper::runtime {

// Polls `condition` every 10 ms for up to 10 s; whether it became true.
template <typename F>
bool Eventually(F condition) {
  for (int i = 0; i < 1000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_EVENTUALLY_H_
