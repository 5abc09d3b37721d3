#include "runtime/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace shipper::runtime {
namespace {

// One process-wide test: the mask must be set before any thread starts.
TEST(SignalsTest, WaitReturnsTheSignalSentToTheProcess) {
  BlockTerminationSignals();
  for (int expected : {SIGTERM, SIGINT}) {
    std::atomic<int> received{0};
    // A thread started after the block inherits it; the process-directed signal stays pending
    // until the waiter takes it, whichever thread the kernel picks.
    std::thread waiter([&] { received = WaitForTerminationSignal(); });
    ASSERT_EQ(kill(getpid(), expected), 0);
    waiter.join();
    EXPECT_EQ(received.load(), expected);
  }
}

TEST(SignalsTest, PendingSignalIsNotLost) {
  BlockTerminationSignals();
  // Sent before anyone waits: still delivered to the next wait.
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);
  EXPECT_EQ(WaitForTerminationSignal(), SIGTERM);
}

}  // namespace
}  // namespace shipper::runtime
