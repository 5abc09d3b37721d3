// Process plumbing for a clean shutdown on SIGTERM / SIGINT without signal handlers.
//
// Call BlockTerminationSignals() first thing in main, before any thread starts: threads inherit
// the signal mask, so afterwards no thread (ours, gRPC's, glog's) is interrupted by these
// signals; they stay pending until WaitForTerminationSignal() takes one with sigwait(2). The
// waiting thread sleeps in the kernel: no busy wait, no async-signal-safety concerns.
//
// Thread safety: BlockTerminationSignals() from main before threads exist; then any one thread
// may wait. A second signal while shutting down stays pending; wait again to act on it (e.g. to
// force an exit).
#ifndef SHIPPER_RUNTIME_SIGNALS_H_
#define SHIPPER_RUNTIME_SIGNALS_H_

namespace shipper::runtime {

// Blocks SIGTERM and SIGINT in the calling thread (and so in every thread it starts later).
void BlockTerminationSignals();

// Blocks until SIGTERM or SIGINT is delivered to the process; returns its number.
// REQUIRES: BlockTerminationSignals() was called before any other thread started.
int WaitForTerminationSignal();

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_SIGNALS_H_
