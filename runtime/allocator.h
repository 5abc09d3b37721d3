// glibc malloc settings that keep freed memory from staying resident, so that peak RSS follows
// the memory budgets (runtime/memory_budget.h) instead of the allocator's history.
//
// Measured under floods with the output down (BENCHMARKS.md "Memory"): with glibc's defaults a
// request copy freed once acknowledged stays in the heap of whichever thread's arena it was
// allocated from (up to 8 arenas per core), and the mmap threshold grows with every large block
// freed until copies of up to 32 MiB come from those heaps too. Fixing the threshold (2 MiB) sends
// every large copy to its own mapping, returned to the kernel when freed, while the outputs'
// per-batch buffers below it are reused from the heaps; capping the arenas bounds what small
// allocations (gRPC's buffers, per-call objects) can strand.
//
// Thread safety: call ConfigureAllocator once, first thing in main, before any thread starts.
#ifndef SHIPPER_RUNTIME_ALLOCATOR_H_
#define SHIPPER_RUNTIME_ALLOCATOR_H_

#include <string>

namespace shipper::runtime {

// Applies the settings; a line for the log saying what was set (or that this is not glibc).
std::string ConfigureAllocator();

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_ALLOCATOR_H_
