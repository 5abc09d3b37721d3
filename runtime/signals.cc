#include "runtime/signals.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "glog/logging.h"

namespace shipper::runtime {
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSignals();
  int error = pthread_sigmask(SIG_BLOCK, &set, nullptr);
  CHECK_EQ(error, 0) << "pthread_sigmask: " << strerror(error);
}

int WaitForTerminationSignal() {
  sigset_t set = TerminationSignals();
  int signal_number = 0;
  for (;;) {
    int error = sigwait(&set, &signal_number);
    if (error == 0) return signal_number;
    CHECK_EQ(error, EINTR) << "sigwait: " << strerror(error);
  }
}

}  // namespace shipper::runtime
